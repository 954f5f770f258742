"""The code format: how a word's K-bit binary code is packed into an integer and written as hex, and the one strict
parser of hex codes. Pure Python and numpy (no torch, no AllenNLP), so the light `allennlp bits` process
(`bitcode_allennlp.bits.light`) reads codes with it too; `bitcode_allennlp.common.codes` adds the torch side (scores
-> bits -> packed ints) and re-exports these names.

* **bits** -- K values, bit ``i`` from head ``i`` of the hash layer (``True`` / 1 when its score is > 0).
* **packed** -- one non-negative integer per word, ``K <= 63`` (a python ``int``, an ``int64`` tensor or a
  ``numpy.uint64``). Bit ``i`` is head ``i`` and **head 0 is the most significant bit**: ``int = sum_i bit_i *
  2 ** (K - 1 - i)``. So the hex string reads head 0 first, left to right, like the bits themselves.
* **hex** -- ``ceil(K / 4)`` lower-case hex digits, zero-padded (K = 24 -> 6 digits, K = 10 -> 3 digits;
  `num_hex_digits`). When K is not a multiple of 4 the unused high bits of the first digit are 0 (K = 10:
  ``"3ff"`` is the largest code). `parse_hex_code` is the one parser of hex codes (reader, indexer, predictor,
  ``allennlp bits``): exactly ``ceil(K / 4)`` characters of ``0-9 a-f A-F`` (upper case is read, lower case is
  written); no sign, ``0x``, ``_`` or whitespace; the value must fit in K bits.
* **K** -- ``1 <= K <= MAX_BITS = 63`` everywhere: the hash layer, the configs, this module and ``allennlp bits``.

**The strict check of codes and bits** (`check_codes`, `check_code`, `check_bits`), used by every public function
that takes packed codes or bits, here, in `bitcode_allennlp.common.codes` (torch) and in `bitcode_allennlp.bits.index`:

* codes are integers in ``[0, 2 ** K)``: no floats (not even whole ones), no bools, no strings; an integer array of
  another dtype (int64, int32, a tensor) is converted to uint64 when every value is in range, and refused otherwise;
* bits are 0 or 1: a bool array, or integers that are all 0 or 1; floats are refused;
* a refusal is a `TypeError` (wrong kind of value) or `ValueError` (a value out of range) in the format of
  `bitcode_allennlp.common.checks`, ``<argument> must be <what>, got <value> (<where>)``, naming the first offending
  value and its position (``entry 3``; ``entry [0, 3]`` in a 2-D array).

Callers go through `bitcode_allennlp.common.code_value.Codes`, the one value of codes, whose internals these
functions are (the check and `num_hex_digits` describe the format and are used directly).

The checks are vectorised (a min and a max per array); an array already of the right dtype costs no copy, and
`check_codes` without K (uint64 codes of any width) costs nothing for a uint64 array.
"""
import re
import sys
from typing import Any, List, Optional, Sequence, Type

import numpy as np

MAX_BITS = 63
"""The largest K anywhere (hash layer, configs, codes, `allennlp bits`): codes are packed into signed int64, so at
most 63 bits keep every packed value non-negative."""

_HEX = re.compile(r"[0-9a-fA-F]+")


def check_num_bits(num_bits: Any, name: str = "num_bits", error: Type[Exception] = ValueError) -> int:
    """`num_bits` if it is an int in `[1, MAX_BITS]`; else `error` (e.g. AllenNLP's `ConfigurationError` in a
    constructor), with one message everywhere K is checked."""
    if not isinstance(num_bits, int) or isinstance(num_bits, bool) or not 1 <= num_bits <= MAX_BITS:
        raise error(f"{name} must be an integer in 1..{MAX_BITS} (codes are packed into int64), got {num_bits!r}")
    return num_bits


def num_hex_digits(num_bits: int) -> int:
    """Number of hex digits of a ``num_bits``-bit code: ``ceil(num_bits / 4)`` (K = 24 -> 6)."""
    check_num_bits(num_bits)
    return (num_bits + 3) // 4


# ------------------------------------------------------------------------------------------------- the strict check
def _is_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")  # a tensor means torch is loaded
    return torch is not None and isinstance(value, torch.Tensor)


def _scalar(value: Any) -> Any:
    """A 0-d tensor or array in a list as its Python value (a list of them is a list of numbers)."""
    if (isinstance(value, np.ndarray) or _is_tensor(value)) and value.ndim == 0:
        return value.item()
    return value


def _as_array(values: Any) -> np.ndarray:
    """`values` as a numpy array: an array as it is (a memory map stays one), a torch tensor copied to the CPU
    (half and bfloat16 as float32, which numpy has), a (nested) list as an object array of its Python values, so
    that a bool or a float among ints is still seen."""
    if isinstance(values, np.ndarray):
        return values
    if _is_tensor(values):
        import torch

        values = values.detach().cpu()
        if values.dtype in (torch.float16, torch.bfloat16):
            values = values.float()
        return values.numpy()
    if isinstance(values, (list, tuple)):
        array = np.asarray(values, dtype=object)
        if array.ndim and any(map(_is_row, array.reshape(-1).tolist())):
            raise ValueError("a ragged nested list")  # rows of different lengths; callers split them
        return array
    return np.asarray(values)


def _position(array: np.ndarray, flat_index: int) -> str:
    """``entry 3`` (1-D), ``entry [0, 3]`` (n-D) or "" (a scalar) for an index into `array.reshape(-1)`."""
    if array.ndim == 0:
        return ""
    if array.ndim == 1:
        return f"entry {flat_index}"
    return f"entry {list(int(i) for i in np.unravel_index(flat_index, array.shape))}"


def _refuse(error: Type[Exception], name: str, what: str, array: np.ndarray, flat_index: int,
            kind: Optional[str] = None, detail: Optional[str] = None) -> None:
    """Raises `error` ``<name> must be <what>, got <value> (<position>[, <kind>])`` or, with `detail`,
    ``... got <value>: <detail>``."""
    value = array.reshape(-1)[flat_index]
    shown = repr(value.item() if isinstance(value, np.generic) else value)
    where = ", ".join(part for part in (_position(array, flat_index), kind) if part)
    if detail is not None:
        raise error(f"{name} must be {what}, got {shown}: {detail}")
    raise error(f"{name} must be {what}, got {shown}" + (f" ({where})" if where else ""))


def _first(mask: np.ndarray) -> int:
    """The flat index of the first True of `mask` (one exists)."""
    return int(np.flatnonzero(mask.reshape(-1))[0])


def _type_name(value: Any) -> str:
    """What a refused value is: ``a float``, ``a bool``, ``a str``."""
    if isinstance(value, (bool, np.bool_)):
        return "a bool"
    return f"a {type(value.item() if isinstance(value, np.generic) else value).__name__}"


def _kind(array: np.ndarray) -> str:
    """What a refused array is: ``a float64 array``, ``a string array``, or for a 0-d array its value's type."""
    if array.ndim == 0:
        return _type_name(array.item())
    return "a string array" if array.dtype.kind in "US" else f"a {array.dtype} array"


def _first_bad(array: np.ndarray, good: Any) -> int:
    """The flat index of the first value of a float array that is not `good` (whole, or 0 / 1), else 0 (the
    array's dtype is what is wrong)."""
    if array.dtype.kind != "f" or not array.size:
        return 0
    with np.errstate(invalid="ignore"):
        mask = good(array)
    return 0 if mask.all() else _first(~mask)


def check_codes(codes: Any, num_bits: Optional[int] = None, name: str = "codes") -> np.ndarray:
    """
    Packed codes, checked (module docstring, *The strict check*): integers in ``[0, 2 ** K)``, or with `num_bits`
    `None` any uint64 value (`hamming_distances`, which needs no K).

    # Parameters

    codes : array-like
        A numpy array (any shape; a memory map is fine), a torch tensor, a (nested) list of ints, or one int.
    num_bits : `Optional[int]`
        K (checked by `check_num_bits`), or `None`.
    name : `str`
        The argument, for the message.

    # Returns

    `np.ndarray` of dtype uint64 and the shape of `codes` (`codes` itself when it is already a uint64 array).

    # Raises

    `TypeError` for a float, bool, string or other non-integer value; `ValueError` for a negative value or one of
    more than K bits, naming `name`, the first offending value and its position.
    """
    if num_bits is not None:
        check_num_bits(num_bits)
    try:
        array = _as_array(codes)
    except ValueError:
        raise TypeError(f"{name} must be an array of codes, got a ragged nested list") from None
    kind = array.dtype.kind
    if kind == "u" and array.size and (num_bits is None or not int(array.max()) >> num_bits):
        return array if array.dtype == np.uint64 else array.astype(np.uint64)  # the fast path: one max
    what = _codes_what(num_bits, array.ndim)
    if kind == "O":
        flat = array.reshape(-1)
        for index, value in enumerate(map(_scalar, flat.tolist())):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                _refuse(TypeError, name, what, array, index, _type_name(value))
            value = int(value)
            if value < 0 or (num_bits is not None and value >> num_bits) or value >> 64:
                _range_error(name, what, array, index, value, num_bits)
        return np.array([int(_scalar(value)) for value in flat.tolist()], dtype=np.uint64).reshape(array.shape)
    if not array.size:
        return np.zeros(array.shape, dtype=np.uint64)  # no code given, none wrong (whatever the dtype)
    if kind not in "ui":
        whole = lambda values: np.isfinite(values) & (values == np.round(values))  # noqa: E731
        _refuse(TypeError, name, what, array, _first_bad(array, whole), _kind(array))
    if kind == "i" and int(array.min()) < 0:
        _range_error(name, what, array, _first(array < 0), None, num_bits)
    if num_bits is not None and int(array.max()) >> num_bits:
        high = array.astype(np.uint64, copy=False) >> np.uint64(num_bits)
        _range_error(name, what, array, _first(high != 0), None, num_bits)
    return array.astype(np.uint64, copy=False)


def _codes_what(num_bits: Optional[int], ndim: int) -> str:
    """What codes must be, for a message (one code when `ndim` is 0)."""
    if num_bits is None:
        return "a non-negative integer of at most 64 bits" if ndim == 0 else \
            "non-negative integers of at most 64 bits (uint64 codes)"
    return f"an integer in [0, 2 ** {num_bits}) (a {num_bits}-bit code)" if ndim == 0 else \
        f"integers in [0, 2 ** {num_bits}) ({num_bits}-bit codes)"


def _range_error(name: str, what: str, array: np.ndarray, index: int, value: Optional[int],
                 num_bits: Optional[int]) -> None:
    value = int(array.reshape(-1)[index]) if value is None else value
    if value < 0 or num_bits is None:
        _refuse(ValueError, name, what, array, index)
    position = _position(array, index)
    _refuse(ValueError, name, what, array, index, detail=f"code {value:x}" + (f" ({position})" if position else "")
            + f" has bits set above its K = {num_bits} bits")


def check_code(code: Any, num_bits: int, name: str = "code") -> int:
    """One packed code, checked as `check_codes` checks each (a Python or numpy int, or a 0-d array or tensor);
    returns it as a Python int."""
    if isinstance(code, (int, np.integer)) and not isinstance(code, (bool, np.bool_)):
        value = int(code)
        if value >= 0 and not value >> check_num_bits(num_bits):
            return value  # the fast path
    array = _as_array(code)
    if array.ndim != 0:
        raise TypeError(f"{name} must be one integer code, got an array of shape {tuple(array.shape)}")
    return int(check_codes(array, num_bits, name))


def check_bits(bits: Any, name: str = "bits") -> np.ndarray:
    """
    Bits, checked (module docstring, *The strict check*): 0 or 1, as bools or integers; floats are refused.

    # Returns

    `np.ndarray` of the shape of `bits`: `bits` itself for a bool array or an integer array of 0s and 1s, else
    (a list, a tensor) a new bool or integer array.

    # Raises

    `TypeError` for a float, string or other non-integer value; `ValueError` for an integer other than 0 and 1,
    naming `name`, the first offending value and its position.
    """
    what = "0 or 1 (bools, or integers 0 and 1)"
    try:
        array = _as_array(bits)
    except ValueError:
        raise TypeError(f"{name} must be an array of bits, got a ragged nested list") from None
    kind = array.dtype.kind
    if kind == "b":
        return array
    if kind == "O":
        flat = array.reshape(-1)
        for index, value in enumerate(map(_scalar, flat.tolist())):
            if not isinstance(value, (bool, np.bool_, int, np.integer)):
                _refuse(TypeError, name, what, array, index, _type_name(value))
            if value not in (0, 1):
                _refuse(ValueError, name, what, array, index)
        return np.array([bool(_scalar(value)) for value in flat.tolist()], dtype=bool).reshape(array.shape)
    if not array.size:
        return np.zeros(array.shape, dtype=bool)  # no bit given, none wrong (whatever the dtype)
    if kind not in "ui":
        binary = lambda values: (values == 0) | (values == 1)  # noqa: E731
        _refuse(TypeError, name, what, array, _first_bad(array, binary), _kind(array))
    if (int(array.max()) > 1 or (kind == "i" and int(array.min()) < 0)):
        _refuse(ValueError, name, what, array, _first((array != 0) & (array != 1)))
    return array


# ------------------------------------------------------------------------------------------------- packed -> hex
def int_to_hex(code: int, num_bits: int) -> str:
    """One packed code (checked: `check_code`) as `ceil(K / 4)` zero-padded lower-case hex digits."""
    return format(check_code(code, num_bits), f"0{num_hex_digits(num_bits)}x")


def _hex_strings(codes: np.ndarray, num_bits: int) -> List[str]:
    width = num_hex_digits(num_bits)
    return [format(code, f"0{width}x") for code in codes.reshape(-1).tolist()]


def _nested(strings: List[str], shape: Sequence[int]) -> Any:
    """`strings` (flat, C order) as nested lists of `shape` (`Tensor.tolist()`'s layout)."""
    if len(shape) <= 1:
        return strings
    step = len(strings) // shape[0] if shape[0] else 0
    return [_nested(strings[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]


def ints_to_hex(ints: Any, num_bits: int, name: str = "ints") -> List:
    """
    Packed codes to hex strings of `ceil(K / 4)` zero-padded lower-case digits (K = 24 -> `"00a3ff"`).

    # Parameters

    ints : `torch.Tensor`, `np.ndarray`, a (nested) sequence of ints, or one int
        Codes from `bitcode_allennlp.common.codes.bits_to_ints`, shape `(words,)` (or any shape), checked by
        `check_codes` (integers in `[0, 2 ** K)`; no floats or bools). Rows of a nested list may differ in length.
    num_bits : `int`
        K, which fixes the number of digits.

    # Returns

    `List[str]` for a 1-D input; in general nested lists with the shape of `ints` (as `Tensor.tolist()`),
    and a one-element list for a scalar.
    """
    check_num_bits(num_bits)
    if isinstance(ints, (list, tuple)):
        ints = np.asarray(ints, dtype=object)  # (...) Python values, so that a bool or a float still shows
        rows = ints.tolist() if ints.ndim == 1 else []
        if any(map(_is_row, rows)):  # ragged rows, one by one (a scalar among them gives one string)
            return [ints_to_hex(row, num_bits, f"{name}[{i}]") if _is_row(row)
                    else _hex_strings(check_codes(row, num_bits, f"{name}[{i}]"), num_bits)[0]
                    for i, row in enumerate(rows)]
    codes = check_codes(ints, num_bits, name)
    if codes.ndim == 0:
        return _hex_strings(codes, num_bits)  # one code: a one-element list
    return _nested(_hex_strings(codes, num_bits), codes.shape)


def _is_row(value: Any) -> bool:
    """A row of a nested list of codes: a list, a tuple, or an array or tensor of at least one dimension."""
    return isinstance(value, (list, tuple)) or bool(getattr(value, "ndim", 0))


def uint64_to_hex(codes: Any, num_bits: int) -> List[str]:
    """Packed codes (a uint64 array, or any integers; checked by `check_codes`: in `[0, 2 ** K)`) to zero-padded
    lower-case hex strings of `ceil(K / 4)` digits, flattened."""
    return _hex_strings(check_codes(codes, num_bits, "codes"), num_bits)


# ------------------------------------------------------------------------------------------------- hex -> packed
def parse_hex_code(code: Any, num_bits: int) -> int:
    """
    The strict parser of one hex code: exactly `ceil(K / 4)` characters of `0-9 a-f A-F`, no sign, `0x`, `_` or
    whitespace, and a value that fits in K bits. Returns the packed integer.

    # Raises

    `ValueError` naming the code (quoted with `repr`, so stray whitespace shows) and what is wrong.
    """
    check_num_bits(num_bits)
    expected = num_hex_digits(num_bits)
    if not isinstance(code, str):
        raise ValueError(f"code {code!r} is a {type(code).__name__}, expected a string of {expected} hex digits")
    if len(code) != expected:
        raise ValueError(f"a {num_bits}-bit code has {expected} hex digits, got {code!r}")
    if _HEX.fullmatch(code) is None:
        raise ValueError(f"not a hex code: {code!r} ({expected} characters of 0-9, a-f; no sign, 0x or _)")
    value = int(code, 16)
    if value >> num_bits:
        raise ValueError(f"hex code {code!r} does not fit in {num_bits} bits")
    return value


def hex_to_int(hex_code: str, num_bits: int) -> int:
    """A hex code back to its packed integer (`parse_hex_code`: strict)."""
    return parse_hex_code(hex_code, num_bits)


def hex_to_uint64(hex_codes: Sequence[str], num_bits: int) -> np.ndarray:
    """
    Hex codes (`ceil(K / 4)` digits each, as `ints_to_hex` writes them) to packed codes.

    # Returns

    `np.ndarray` of dtype uint64 and shape `(len(hex_codes),)`.

    # Raises

    `ValueError` for a code that `parse_hex_code` rejects (wrong length, a character outside 0-9 a-f A-F, a value
    that does not fit in K bits).
    """
    check_num_bits(num_bits)
    return np.array([parse_hex_code(code, num_bits) for code in hex_codes], dtype=np.uint64)  # (n,)


# ------------------------------------------------------------------------------------------------- packed <-> bits
def hex_to_bits(hex_code: str, num_bits: int) -> List[int]:
    """
    A hex code back to its K bits as 0/1 ints, head 0 first (the inverse of
    `ints_to_hex(bits_to_ints(bits), K)` for one word).
    """
    code = hex_to_int(hex_code, num_bits)
    return [(code >> (num_bits - 1 - i)) & 1 for i in range(num_bits)]


def unpack_bits(codes: Any, num_bits: int) -> np.ndarray:
    """
    Packed codes to their bits, head 0 first: `bits[..., i] = (codes[...] >> (K - 1 - i)) & 1`.

    # Parameters

    codes : `np.ndarray`
        uint64 codes of shape `(n,)` (any shape; checked by `check_codes`: integers in `[0, 2 ** K)`).

    # Returns

    `np.ndarray` of dtype uint8 and shape `(n, K)`.
    """
    codes = check_codes(codes, num_bits, "codes")  # (n,)
    shifts = np.arange(num_bits - 1, -1, -1, dtype=np.uint64)  # (K,)
    return ((codes[..., None] >> shifts) & np.uint64(1)).astype(np.uint8)  # (n, K)


def pack_bits(bits: Any) -> np.ndarray:
    """The inverse of `unpack_bits`: `(n, K)` bits (checked by `check_bits`: bools, or integers 0 and 1), head 0
    first, to `(n,)` uint64 codes."""
    bits = check_bits(bits, "bits")
    if bits.ndim == 0:
        raise ValueError(f"bits must have a last dimension of K bits, got a scalar {bits.item()!r}")
    num_bits = check_num_bits(bits.shape[-1], "the number of bits (the last dimension of bits)")
    shifts = np.arange(num_bits - 1, -1, -1, dtype=np.uint64)  # (K,)
    return np.bitwise_or.reduce(bits.astype(np.uint64) << shifts, axis=-1)  # (n,)

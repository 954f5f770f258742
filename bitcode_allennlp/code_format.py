"""The code format: how a word's K-bit binary code is packed into an integer and written as hex, and the one strict
parser of hex codes. Pure Python and numpy (no torch, no AllenNLP), so the light `allennlp bits` process
(`bitcode_allennlp.common.light_cli`) reads codes with it too; `bitcode_allennlp.codes` adds the torch side (scores
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
"""
import re
import sys
from typing import Any, List, Sequence, Type

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


# ------------------------------------------------------------------------------------------------- packed -> hex
def int_to_hex(code: int, num_bits: int) -> str:
    """One packed code as `ceil(K / 4)` zero-padded lower-case hex digits."""
    check_num_bits(num_bits)
    code = int(code)
    if not 0 <= code < (1 << num_bits):
        raise ValueError(f"code {code} does not fit in {num_bits} bits")
    return format(code, f"0{num_hex_digits(num_bits)}x")


def ints_to_hex(ints: Any, num_bits: int) -> List:
    """
    Packed codes to hex strings of `ceil(K / 4)` zero-padded lower-case digits (K = 24 -> `"00a3ff"`).

    # Parameters

    ints : `torch.Tensor` or a (nested) sequence of ints
        Codes from `bitcode_allennlp.codes.bits_to_ints`, shape `(words,)` (or any shape).
    num_bits : `int`
        K, which fixes the number of digits.

    # Returns

    `List[str]` for a 1-D input; in general nested lists with the shape of `ints` (as `Tensor.tolist()`),
    and a one-element list for a scalar.
    """
    torch = sys.modules.get("torch")  # a tensor means torch is loaded
    values = ints.tolist() if torch is not None and isinstance(ints, torch.Tensor) else ints
    if isinstance(values, (int,)) or not isinstance(values, (list, tuple)):
        return [int_to_hex(values, num_bits)]

    def convert(value):
        if isinstance(value, (list, tuple)):
            return [convert(v) for v in value]
        return int_to_hex(value, num_bits)

    return convert(values)


def uint64_to_hex(codes: Any, num_bits: int) -> List[str]:
    """Packed codes (any iterable of ints, e.g. a uint64 array) to zero-padded lower-case hex strings of
    `ceil(K / 4)` digits."""
    width = num_hex_digits(num_bits)
    return [format(int(code), f"0{width}x") for code in np.asarray(codes, dtype=np.uint64).reshape(-1)]


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


def unpack_bits(codes: np.ndarray, num_bits: int) -> np.ndarray:
    """
    Packed codes to their bits, head 0 first: `bits[n, i] = (codes[n] >> (K - 1 - i)) & 1`.

    # Parameters

    codes : `np.ndarray`
        uint64 codes of shape `(n,)`.

    # Returns

    `np.ndarray` of dtype uint8 and shape `(n, K)`.
    """
    check_num_bits(num_bits)
    shifts = np.arange(num_bits - 1, -1, -1, dtype=np.uint64)  # (K,)
    return ((np.asarray(codes, dtype=np.uint64)[:, None] >> shifts) & np.uint64(1)).astype(np.uint8)  # (n, K)


def pack_bits(bits: np.ndarray) -> np.ndarray:
    """The inverse of `unpack_bits`: `(n, K)` 0/1 bits, head 0 first, to `(n,)` uint64 codes."""
    bits = np.asarray(bits)
    num_bits = check_num_bits(bits.shape[-1])
    shifts = np.arange(num_bits - 1, -1, -1, dtype=np.uint64)  # (K,)
    return np.bitwise_or.reduce((bits.astype(np.uint64) & np.uint64(1)) << shifts, axis=-1)  # (n,)

"""`Codes`: one value for the codes of words -- packed uint64 codes of any shape and their K -- and the one place
where codes change shape (hex, bits, signs, ints, tensors).

The format is `bitcode_allennlp.common.code_format`'s, unchanged (bit ``i`` = head ``i``, head 0 the most
significant bit, ``ceil(K / 4)`` lower-case hex digits, ``1 <= K <= 63``); its functions and those of
`bitcode_allennlp.common.codes` (torch) are the internals of this value. Modules that read, write or show codes go
through `Codes` (the models' output, the predictors, `Encoded`, the readers, ``allennlp hash-corpus``, ``allennlp
bits``), so a sentence goes scores -> `Codes` -> hex or bits once, with no round trip through other shapes.

Plain numpy: torch is imported only by the methods that take or give tensors, so the light ``allennlp bits``
process (`bitcode_allennlp.bits.light`) uses `Codes` without loading torch. A value is immutable-ish: its array
is a read-only view (a memory map of an index stays one; nothing is copied).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

import numpy as np

from bitcode_allennlp.common import code_format as _format
from bitcode_allennlp.common import codes as _torch_codes

if TYPE_CHECKING:  # annotations only
    import torch


class HexCodeError(ValueError):
    """A hex code that `code_format.parse_hex_code` refuses, at `index` (0-based) of the codes given: the message
    is ``code <index + 1>: <reason>``; `reason` is the parser's message (callers that name the field their own
    way, e.g. the predictor's ``"codes"[3]: ...``, use `index` and `reason`)."""

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(f"code {index + 1}: {reason}")
        self.index = index
        self.reason = reason


def _is_tensor(value: Any) -> bool:
    return _format._is_tensor(value)


class Codes:
    """
    Packed K-bit codes (`code_format`): a uint64 array of any shape, e.g. `(words,)` or `(sentences, words)`, and
    K. Made by `Codes(packed, num_bits)` (packed codes, checked: integers in `[0, 2 ** K)`, no floats or bools),
    `from_scores`, `from_bits` or `from_hex`; read as `hex`, `bits`, `signs`, `ints`, `packed`, or tensors
    (`to_tensor`, `bits_tensor`, `signs_tensor`).

    # Parameters

    packed : array-like
        A numpy array (a memory map stays one), a torch tensor, a (nested) list of ints or one int; checked by
        `code_format.check_codes` (its messages).
    num_bits : `int`
        K, checked by `code_format.check_num_bits` (an integer in 1..63).
    """

    __slots__ = ("_packed", "_num_bits")

    def __init__(self, packed: Any, num_bits: int) -> None:
        self._num_bits = _format.check_num_bits(num_bits)
        array = _format.check_codes(packed, self._num_bits, "codes").view()  # (...) uint64, no copy
        array.flags.writeable = False
        self._packed = array

    # ---------------------------------------------------------------------------------------------- makers
    @classmethod
    def from_scores(cls, scores: Any) -> "Codes":
        """
        Hash scores to codes: bit ``i`` is ``scores[..., i] > 0``; an exact 0 gives bit 0 (code -1), as
        `codes.scores_to_bits` says (the paper's ``sign(s)`` with 0 rounded down).

        # Parameters

        scores : `torch.Tensor` or `np.ndarray`
            Real scores `(..., K)` (±1 signs and 0/1 bits map to themselves as well). A tensor is packed on its
            device and only the packed codes go to the CPU.
        """
        if _is_tensor(scores):
            return cls.from_bits(_torch_codes.scores_to_bits(scores.detach()))  # (..., K) bool
        array = np.asarray(scores)  # (..., K)
        if array.dtype.kind not in "biuf":
            raise TypeError(f"scores must be real numbers, got a {array.dtype} array")
        return cls.from_bits(array > 0)  # (..., K) bool

    @classmethod
    def from_bits(cls, bits: Any) -> "Codes":
        """Bits `(..., K)` (bools, or integers 0 and 1; checked by `code_format.check_bits`), head 0 first, to codes
        of shape `(...)`; K is the last dimension (1..63)."""
        if _is_tensor(bits):
            packed = _torch_codes.bits_to_ints(bits).cpu().numpy()  # (...) int64, every value in [0, 2 ** K)
            return cls._trusted(packed.astype(np.uint64), int(bits.shape[-1]))
        checked = _format.check_bits(bits, "bits")  # (..., K)
        packed = _format.pack_bits(checked)  # (...) uint64
        return cls._trusted(packed, int(checked.shape[-1]))

    @classmethod
    def from_hex(cls, strings: Sequence[str], num_bits: int) -> "Codes":
        """
        Hex codes (`ceil(K / 4)` digits each, as `hex` writes them; upper case is read) to codes of shape
        `(len(strings),)`, each parsed by the strict `code_format.parse_hex_code`.

        # Raises

        `HexCodeError` (a `ValueError`) ``code <n>: <what is wrong>`` for the first code the parser refuses, and
        `ValueError` for a K out of 1..63 or `strings` not a list of codes.
        """
        _format.check_num_bits(num_bits)
        if isinstance(strings, (str, bytes)) or not isinstance(strings, Sequence):
            raise ValueError(f"hex codes must be a list of strings, got {type(strings).__name__}")
        packed = np.empty(len(strings), dtype=np.uint64)  # (n,)
        for index, string in enumerate(strings):
            try:
                packed[index] = _format.parse_hex_code(string, num_bits)
            except ValueError as error:
                raise HexCodeError(index, str(error)) from None
        return cls._trusted(packed, num_bits)

    @classmethod
    def empty(cls, num_bits: int) -> "Codes":
        """No code (shape `(0,)`): a sentence of no words."""
        return cls._trusted(np.zeros(0, dtype=np.uint64), _format.check_num_bits(num_bits))  # (0,)

    @classmethod
    def concatenate(cls, values: Sequence["Codes"]) -> "Codes":
        """The codes of `values` (1-D, one K) end to end: shape `(sum of their lengths,)`."""
        if not values:
            raise ValueError("no codes to concatenate")
        num_bits = values[0].num_bits
        if any(value.num_bits != num_bits for value in values):
            raise ValueError(f"codes of different K: {sorted({value.num_bits for value in values})}")
        return cls._trusted(np.concatenate([value.packed.reshape(-1) for value in values]), num_bits)  # (n,)

    @classmethod
    def _trusted(cls, packed: np.ndarray, num_bits: int) -> "Codes":
        """A value of uint64 codes made here (already in range): no check."""
        value = cls.__new__(cls)
        array = packed.view()  # (...)
        array.flags.writeable = False
        value._num_bits, value._packed = num_bits, array
        return value

    # ---------------------------------------------------------------------------------------------- readers
    @property
    def num_bits(self) -> int:
        """K."""
        return self._num_bits

    @property
    def packed(self) -> np.ndarray:
        """The codes, uint64 of this value's shape (read-only)."""
        return self._packed

    @property
    def shape(self) -> Tuple[int, ...]:
        return tuple(self._packed.shape)

    @property
    def ints(self) -> Any:
        """The codes as Python ints: a list for 1-D codes (nested lists in general, one int for 0-d)."""
        return self._packed.tolist()

    @property
    def hex(self) -> Any:
        """The codes as `ceil(K / 4)` zero-padded lower-case hex digits (K = 24 -> ``"00a3ff"``): a list for 1-D
        codes, nested lists of the value's shape in general, a one-element list for 0-d codes."""
        strings = _format._hex_strings(self._packed, self._num_bits)
        return strings if self._packed.ndim == 0 else _format._nested(strings, self._packed.shape)

    @property
    def bits(self) -> np.ndarray:
        """bool `(..., K)`, bit ``i`` = head ``i``, head 0 the most significant bit of the packed code."""
        return _format.unpack_bits(self._packed, self._num_bits).astype(bool)  # (..., K)

    def bits_as(self, dtype: Any) -> np.ndarray:
        """The bits as 0 / 1 of `dtype` (e.g. uint8, to count or sum them), `(..., K)`."""
        return _format.unpack_bits(self._packed, self._num_bits).astype(dtype, copy=False)  # (..., K)

    @property
    def bit_lists(self) -> Any:
        """The bits as nested lists of 0 / 1 ints, `(..., K)` (what the predictors write as `"bits"`)."""
        return _format.unpack_bits(self._packed, self._num_bits).tolist()  # (..., K)

    @property
    def signs(self) -> np.ndarray:
        """The paper's codes in `{-1, +1}`, int8 `(..., K)`: bit 1 -> +1, bit 0 -> -1."""
        return _format.unpack_bits(self._packed, self._num_bits).astype(np.int8) * 2 - 1  # (..., K)

    def halves(self) -> Tuple[np.ndarray, np.ndarray]:
        """The packed codes split into 32-bit halves, `(high, low)`, each uint32 of this value's shape: `code =
        high * 2 ** 32 + low` (what the explorer page's JavaScript reads, having no 64-bit integers; `high` is 0
        for K <= 32)."""
        high = (self._packed >> np.uint64(32)).astype(np.uint32)  # (...)
        low = (self._packed & np.uint64(0xFFFFFFFF)).astype(np.uint32)  # (...)
        return high, low

    # ---------------------------------------------------------------------------------------------- tensors
    def to_tensor(self, device: Any = None) -> "torch.LongTensor":
        """The codes as an int64 tensor of this value's shape (K <= 63: every code fits)."""
        import torch

        return torch.as_tensor(self._packed.astype(np.int64), device=device)  # (...)

    def bits_tensor(self, device: Any = None) -> "torch.BoolTensor":
        """The bits as a bool tensor `(..., K)`."""
        import torch

        return torch.as_tensor(self.bits, device=device)  # (..., K)

    def signs_tensor(self, dtype: Optional["torch.dtype"] = None, device: Any = None) -> "torch.Tensor":
        """The ±1 codes as a tensor `(..., K)` (default dtype `torch.float`)."""
        return _torch_codes.bits_to_signs(self.bits_tensor(device), dtype)  # (..., K)

    @staticmethod
    def packed_tensor(scores_or_bits: "torch.Tensor") -> "torch.LongTensor":
        """
        For models that keep codes on their device (a batch's codes, the code metrics): a bool tensor of bits, or
        real scores (bit ``i`` = score > 0, as `from_scores`), `(..., K)`, packed to an int64 tensor `(...)` on the
        same device, with the format of this value (`Codes(tensor.cpu(), K)` reads it).
        """
        return _torch_codes.bits_to_ints(Codes.score_bits(scores_or_bits))  # (...)

    @staticmethod
    def score_bits(scores_or_bits: "torch.Tensor") -> "torch.BoolTensor":
        """The bits of scores on their device, `(..., K)`: bit ``i`` = score > 0 (exact 0 -> bit 0), as
        `from_scores`; a bool tensor is taken as bits already."""
        if scores_or_bits.dtype == _bool_dtype():
            return scores_or_bits
        return _torch_codes.scores_to_bits(scores_or_bits)  # (..., K)

    # ---------------------------------------------------------------------------------------------- value
    def __len__(self) -> int:
        if self._packed.ndim == 0:
            raise TypeError("len() of 0-d codes")
        return int(self._packed.shape[0])

    def __getitem__(self, index: Any) -> "Codes":
        """The codes at `index` (numpy indexing: an int, a slice, an array of indices or a mask), as a value."""
        return Codes._trusted(np.asarray(self._packed[index], dtype=np.uint64), self._num_bits)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Codes):
            return NotImplemented
        return self._num_bits == other._num_bits and self._packed.shape == other._packed.shape \
            and bool(np.array_equal(self._packed, other._packed))

    __hash__ = None  # type: ignore[assignment]  # mutable arrays inside: equal values need not hash alike

    def __repr__(self) -> str:
        shown: List[str] = _format._hex_strings(self._packed.reshape(-1)[:6], self._num_bits)
        more = ", ..." if self._packed.size > 6 else ""
        return f"Codes(num_bits={self._num_bits}, shape={self.shape}, hex=[{', '.join(map(repr, shown))}{more}])"

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, "_packed"):
            raise AttributeError("Codes are immutable; make a new value")
        object.__setattr__(self, name, value)


def _bool_dtype() -> Any:
    import torch

    return torch.bool

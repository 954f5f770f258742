"""Binary codes of words: hash scores -> bits -> packed integers -> hex strings, and back.

Where this sits in the pipeline: the hash layer (``hash_transformer``, paper §3.1) gives every word K scores,
the ego-attention diagonal ``s_ii``; the word's binary code is ``c_i = sign(s_ii)`` (paper §2.1, §3.1).
Re-annotation (``allennlp hash-corpus``), the predictors, the ``binary_codes`` reader and the code metrics
all move between the representations defined here, so the conventions below are fixed in one place:

* **bits** -- a ``BoolTensor`` of shape ``(..., K)``; bit ``i`` is ``True`` when ``scores[..., i] > 0``.
  A score of exactly 0 gives bit 0 (``torch.sign(0)`` is 0, which is not a code; we round it down to -1).
* **signs** -- the paper's codes ``c in {-1, +1}^K``: bit 1 -> +1, bit 0 -> -1 (Eq. 9 flips bit embeddings
  with them).
* **ints** -- one non-negative ``int64`` per word, ``K <= 63``. Bit ``i`` is head ``i`` and **head 0 is the
  most significant bit**: ``int = sum_i bit_i * 2 ** (K - 1 - i)``. So the hex string reads head 0 first,
  left to right, like the bits themselves.
* **hex** -- ``ceil(K / 4)`` lower-case hex digits, zero-padded (K = 24 -> 6 digits, K = 10 -> 3 digits).
  When K is not a multiple of 4 the unused high bits of the first digit are 0 (K = 10: ``"3ff"`` is the
  largest code). ``parse_hex_code`` is the one parser of hex codes (reader, indexer, predictor, ``allennlp
  bits``): exactly ``ceil(K / 4)`` characters of ``0-9 a-f A-F`` (upper case is read, lower case is written);
  no sign, ``0x``, ``_`` or whitespace; the value must fit in K bits.
* **K** -- ``1 <= K <= MAX_BITS = 63`` everywhere: the hash layer, the configs, this module and ``allennlp bits``.

No AllenNLP imports: this module is used by the reader, the predictor and the spaCy component alike. torch is
imported by the functions that need it, so that the hex-code parser and `MAX_BITS` cost nothing to import (the light
`allennlp bits` process, `bitcode_allennlp.common.light_cli`, runs without torch).
"""
from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Union

if TYPE_CHECKING:  # annotations only
    import torch

MAX_BITS = 63
"""The largest K anywhere (hash layer, configs, codes, `allennlp bits`): codes are packed into signed int64, so at
most 63 bits keep every packed value non-negative."""

_HEX = re.compile(r"[0-9a-fA-F]+")


def _check_num_bits(num_bits: int) -> None:
    if not isinstance(num_bits, int) or isinstance(num_bits, bool) or not 1 <= num_bits <= MAX_BITS:
        raise ValueError(f"num_bits must be an int in [1, {MAX_BITS}], got {num_bits!r}")


def check_num_bits(num_bits: Any) -> int:
    """`num_bits` if it is an int in `[1, MAX_BITS]`; else `ValueError`."""
    _check_num_bits(num_bits)
    return num_bits


def num_hex_digits(num_bits: int) -> int:
    """Number of hex digits of a ``num_bits``-bit code: ``ceil(num_bits / 4)`` (K = 24 -> 6)."""
    _check_num_bits(num_bits)
    return (num_bits + 3) // 4


def scores_to_bits(scores: torch.Tensor) -> torch.BoolTensor:
    """
    Hash scores to bits: bit ``i`` is ``scores[..., i] > 0``.

    The paper takes ``sign(s)``; ``torch.sign`` maps an exact 0 to 0, which is neither code. We map it to
    bit 0, i.e. code -1, so every word always gets a full K-bit code.

    # Parameters

    scores : `torch.Tensor`
        Real scores of shape `(..., K)`, e.g. `(batch, words, K)`. Any dtype: ±1 signs and 0/1 bits
        map to themselves as well.

    # Returns

    `torch.BoolTensor` of the same shape.
    """
    return scores > 0  # (..., K)


def bits_to_signs(bits: torch.Tensor, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """
    Bits to the paper's codes in `{-1, +1}`: bit 1 -> +1, bit 0 -> -1.

    # Parameters

    bits : `torch.Tensor`
        `(..., K)` bool (or 0/1 integer) tensor.
    dtype : `torch.dtype`, optional (default = `None`, i.e. `torch.float`)
        dtype of the result.
    """
    import torch

    bits = bits.bool()  # (..., K)
    return bits.to(torch.float if dtype is None else dtype) * 2 - 1  # (..., K) in {-1, +1}


def signs_to_bits(signs: torch.Tensor) -> torch.BoolTensor:
    """Codes in `{-1, +1}` (or any scores) back to bits; the inverse of `bits_to_signs`."""
    return scores_to_bits(signs)  # (..., K)


def _powers(num_bits: int, device: torch.device) -> torch.Tensor:
    """`2 ** (K - 1 - i)` for i = 0..K-1: head 0 is the most significant bit."""
    import torch

    exponents = torch.arange(num_bits - 1, -1, -1, device=device)  # (K,)
    return torch.ones(num_bits, dtype=torch.long, device=device) << exponents  # (K,)


def bits_to_ints(bits: torch.Tensor) -> torch.LongTensor:
    """
    Packs the last dimension of `bits` into one non-negative int64 per word.

    Head 0 is the most significant bit: `int = sum_i bit_i * 2 ** (K - 1 - i)`, so that
    `ints_to_hex` reads head 0 first.

    # Parameters

    bits : `torch.Tensor`
        `(..., K)` bool (or 0/1 integer) tensor with `1 <= K <= 63`.

    # Returns

    `torch.LongTensor` of shape `(...)`.
    """
    num_bits = bits.size(-1)
    _check_num_bits(num_bits)
    powers = _powers(num_bits, bits.device)  # (K,)
    return (bits.bool().long() * powers).sum(-1)  # (...)


def ints_to_bits(ints: torch.Tensor, num_bits: int) -> torch.BoolTensor:
    """
    Unpacks codes made by `bits_to_ints`; the inverse of it.

    # Parameters

    ints : `torch.Tensor`
        Integer tensor of shape `(...)` with values in `[0, 2 ** num_bits)`.
    num_bits : `int`
        K, at most 63.

    # Returns

    `torch.BoolTensor` of shape `(..., K)`, head 0 first.
    """
    import torch

    _check_num_bits(num_bits)
    ints = torch.as_tensor(ints, dtype=torch.long)  # (...)
    # (every non-negative int64 fits in 63 bits; 2 ** 63 itself is not an int64, so it is not compared)
    if ints.numel() and (ints.min() < 0 or (num_bits < MAX_BITS and ints.max() >= (1 << num_bits))):
        raise ValueError(f"codes must lie in [0, 2 ** {num_bits})")
    powers = _powers(num_bits, ints.device)  # (K,)
    return (ints.unsqueeze(-1) & powers) != 0  # (..., K)


def int_to_hex(code: int, num_bits: int) -> str:
    """One packed code as `ceil(K / 4)` zero-padded lower-case hex digits."""
    _check_num_bits(num_bits)
    code = int(code)
    if not 0 <= code < (1 << num_bits):
        raise ValueError(f"code {code} does not fit in {num_bits} bits")
    return format(code, f"0{num_hex_digits(num_bits)}x")


def ints_to_hex(ints: Union[torch.Tensor, Sequence[int], int], num_bits: int) -> List:
    """
    Packed codes to hex strings of `ceil(K / 4)` zero-padded lower-case digits (K = 24 -> `"00a3ff"`).

    # Parameters

    ints : `torch.Tensor` or a (nested) sequence of ints
        Codes from `bits_to_ints`, shape `(words,)` (or any shape).
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


def parse_hex_code(code: Any, num_bits: int) -> int:
    """
    The strict parser of one hex code: exactly `ceil(K / 4)` characters of `0-9 a-f A-F`, no sign, `0x`, `_` or
    whitespace, and a value that fits in K bits. Returns the packed integer.

    # Raises

    `ValueError` naming the code (quoted with `repr`, so stray whitespace shows) and what is wrong.
    """
    _check_num_bits(num_bits)
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


def hex_to_bits(hex_code: str, num_bits: int) -> List[int]:
    """
    A hex code back to its K bits as 0/1 ints, head 0 first (the inverse of
    `ints_to_hex(bits_to_ints(bits), K)` for one word).
    """
    code = hex_to_int(hex_code, num_bits)
    return [(code >> (num_bits - 1 - i)) & 1 for i in range(num_bits)]

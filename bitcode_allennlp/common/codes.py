"""Binary codes of words as tensors: hash scores -> bits -> packed integers (and the hex strings of
`bitcode_allennlp.common.code_format`, whose names this module re-exports).

Where this sits in the pipeline: the hash layer (``hash_transformer``, paper §3.1) gives every word K scores,
the ego-attention diagonal ``s_ii``; the word's binary code is ``c_i = sign(s_ii)`` (paper §2.1, §3.1).
Re-annotation (``allennlp hash-corpus``), the predictors, the ``binary_codes`` reader and the code metrics
all move between the representations below. The format itself (packing, hex, the strict parser, K <= 63) is
defined once, in `bitcode_allennlp.common.code_format`; this module adds the torch side:

* **bits** -- a ``BoolTensor`` of shape ``(..., K)``; bit ``i`` is ``True`` when ``scores[..., i] > 0``.
  A score of exactly 0 gives bit 0 (``torch.sign(0)`` is 0, which is not a code; we round it down to -1).
* **signs** -- the paper's codes ``c in {-1, +1}^K``: bit 1 -> +1, bit 0 -> -1 (Eq. 9 flips bit embeddings
  with them).
* **ints** -- one non-negative ``int64`` per word, packed as `code_format` says (head 0 the most significant bit),
  ``K <= 63``.

These functions are the torch internals of `bitcode_allennlp.common.code_value.Codes`, through which modules
convert codes (`flip_signs`, training noise on ±1 codes, is used directly).

No AllenNLP imports: this module is used by the reader, the predictor and the spaCy component alike. torch is
imported by the functions that need it, so that importing this module for the format's names costs nothing (the
light `allennlp bits` process, `bitcode_allennlp.bits.light`, runs without torch).

Bits and packed codes given to these functions are checked as `code_format` checks them (`check_bits`,
`check_codes`: bits 0 or 1, codes integers in ``[0, 2 ** K)``, no floats; the same messages): a bool tensor of bits
costs nothing, an integer tensor one min and max on its device (no copy), and only a refused tensor is copied to the
CPU to name its first offending value.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from bitcode_allennlp.common.code_format import (
    check_bits, check_codes, check_num_bits,
)

if TYPE_CHECKING:  # annotations only
    import torch


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

    bits = checked_bits(bits).bool()  # (..., K)
    return bits.to(torch.float if dtype is None else dtype) * 2 - 1  # (..., K) in {-1, +1}


def signs_to_bits(signs: torch.Tensor) -> torch.BoolTensor:
    """Codes in `{-1, +1}` (or any scores) back to bits; the inverse of `bits_to_signs`."""
    return scores_to_bits(signs)  # (..., K)


def checked_bits(bits: Any, name: str = "bits") -> torch.Tensor:
    """
    `bits` as a tensor, checked as `code_format.check_bits` checks bits (0 or 1, as bools or integers; no floats):
    a bool tensor as it is, an integer tensor after a min and a max on its device, anything else (a list, an
    array) through `check_bits`.

    # Raises

    `TypeError` or `ValueError` with `check_bits`'s message (the first offending value and its position).
    """
    import torch

    if not isinstance(bits, torch.Tensor):
        return torch.as_tensor(check_bits(bits, name))
    if bits.dtype == torch.bool:
        return bits
    if not (bits.is_floating_point() or bits.is_complex()) and (
            bits.numel() == 0 or (int(bits.min()) >= 0 and int(bits.max()) <= 1)):
        return bits
    check_bits(bits, name)  # raises, naming the first offending value
    return bits


def checked_ints(ints: Any, num_bits: int, name: str = "ints") -> torch.LongTensor:
    """
    `ints` as an int64 tensor (on its device), checked as `code_format.check_codes` checks packed codes (integers in
    `[0, 2 ** K)`; no floats or bools): an integer tensor after a min and a max on its device, anything else through
    `check_codes`.
    """
    import torch

    check_num_bits(num_bits)
    if not isinstance(ints, torch.Tensor):
        return torch.as_tensor(check_codes(ints, num_bits, name).astype("int64"))  # K <= 63: every code fits
    if ints.dtype != torch.bool and not (ints.is_floating_point() or ints.is_complex()) and (
            ints.numel() == 0 or (int(ints.min()) >= 0 and int(ints.max()) >> num_bits == 0)):
        return ints.long()
    check_codes(ints, num_bits, name)  # raises, naming the first offending value
    return ints.long()


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
        `(..., K)` bool (or 0/1 integer) tensor with `1 <= K <= 63` (checked: `checked_bits`).

    # Returns

    `torch.LongTensor` of shape `(...)`.
    """
    bits = checked_bits(bits)  # (..., K)
    if bits.dim() == 0:
        raise ValueError(f"bits must have a last dimension of K bits, got a scalar {bits.item()!r}")
    num_bits = check_num_bits(bits.size(-1), "the number of bits (the last dimension of bits)")
    powers = _powers(num_bits, bits.device)  # (K,)
    return (bits.bool().long() * powers).sum(-1)  # (...)


def ints_to_bits(ints: torch.Tensor, num_bits: int) -> torch.BoolTensor:
    """
    Unpacks codes made by `bits_to_ints`; the inverse of it.

    # Parameters

    ints : `torch.Tensor`
        Integer tensor of shape `(...)` with values in `[0, 2 ** num_bits)` (checked: `checked_ints`).
    num_bits : `int`
        K, at most 63.

    # Returns

    `torch.BoolTensor` of shape `(..., K)`, head 0 first.
    """
    ints = checked_ints(ints, num_bits)  # (...)
    powers = _powers(num_bits, ints.device)  # (K,)
    return (ints.unsqueeze(-1) & powers) != 0  # (..., K)


def flip_signs(signs: torch.Tensor, rate: float) -> torch.Tensor:
    """
    Training noise on codes (beyond the paper): each ±1 entry of `signs` negated with probability `rate`,
    independently (the validation stage's `bit_flip`, config variable `CODE_BIT_FLIP`). Gradients pass
    through (a flipped entry's gradient is negated).
    """
    import torch

    flips = torch.rand_like(signs) < rate  # (..., K)
    return torch.where(flips, -signs, signs)  # (..., K)

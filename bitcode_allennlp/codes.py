"""Binary codes of words as tensors: hash scores -> bits -> packed integers (and the hex strings of
`bitcode_allennlp.code_format`, whose names this module re-exports).

Where this sits in the pipeline: the hash layer (``hash_transformer``, paper §3.1) gives every word K scores,
the ego-attention diagonal ``s_ii``; the word's binary code is ``c_i = sign(s_ii)`` (paper §2.1, §3.1).
Re-annotation (``allennlp hash-corpus``), the predictors, the ``binary_codes`` reader and the code metrics
all move between the representations below. The format itself (packing, hex, the strict parser, K <= 63) is
defined once, in `bitcode_allennlp.code_format`; this module adds the torch side:

* **bits** -- a ``BoolTensor`` of shape ``(..., K)``; bit ``i`` is ``True`` when ``scores[..., i] > 0``.
  A score of exactly 0 gives bit 0 (``torch.sign(0)`` is 0, which is not a code; we round it down to -1).
* **signs** -- the paper's codes ``c in {-1, +1}^K``: bit 1 -> +1, bit 0 -> -1 (Eq. 9 flips bit embeddings
  with them).
* **ints** -- one non-negative ``int64`` per word, packed as `code_format` says (head 0 the most significant bit),
  ``K <= 63``.

No AllenNLP imports: this module is used by the reader, the predictor and the spaCy component alike. torch is
imported by the functions that need it, so that importing this module for the format's names costs nothing (the
light `allennlp bits` process, `bitcode_allennlp.common.light_cli`, runs without torch).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from bitcode_allennlp.code_format import (  # noqa: F401 (the format's names, re-exported: their old import path)
    MAX_BITS, check_num_bits, hex_to_bits, hex_to_int, int_to_hex, ints_to_hex, num_hex_digits,
    parse_hex_code,
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
    check_num_bits(num_bits)
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

    check_num_bits(num_bits)
    ints = torch.as_tensor(ints, dtype=torch.long)  # (...)
    # (every non-negative int64 fits in 63 bits; 2 ** 63 itself is not an int64, so it is not compared)
    if ints.numel() and (ints.min() < 0 or (num_bits < MAX_BITS and ints.max() >= (1 << num_bits))):
        raise ValueError(f"codes must lie in [0, 2 ** {num_bits})")
    powers = _powers(num_bits, ints.device)  # (K,)
    return (ints.unsqueeze(-1) & powers) != 0  # (..., K)


def flip_signs(signs: torch.Tensor, rate: float) -> torch.Tensor:
    """
    Training noise on codes (beyond the paper): each ±1 entry of `signs` negated with probability `rate`,
    independently (the validation stage's `bit_flip`, the code-reading head's `code_head_bit_flip`). Gradients pass
    through (a flipped entry's gradient is negated).
    """
    import torch

    flips = torch.rand_like(signs) < rate  # (..., K)
    return torch.where(flips, -signs, signs)  # (..., K)

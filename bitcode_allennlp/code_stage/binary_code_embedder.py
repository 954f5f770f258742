"""`binary_code` TokenEmbedder, paper Eq. 9: w = [c_1 b_1, …, c_K b_K] ∈ R^d with c ∈ {−1, +1}^K.

Each bit i owns a learned vector b_i ∈ R^{d/K}; a code flips the bits' vectors by its signs and concatenates
them. Built, not looked up: K·d/K = d parameters instead of a 2^K × d table. Input: the `binary_code` indexer's bits.
Beyond the paper, a training-only noise (off by default): `bit_flip`. Whole-code dropout (`code_dropout`, config
variable `CODE_DROPOUT`) was removed in 0.3.0, measured no help (CHANGELOG.md); archives that name it load without
it (`host/retired.py`).
"""
from typing import Optional

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.modules.token_embedders import TokenEmbedder

from bitcode_allennlp.common.codes import flip_signs
from bitcode_allennlp.common.checks import check_range


@TokenEmbedder.register("binary_code")
class BinaryCodeEmbedder(TokenEmbedder):
    """
    Embeds K-bit codes as the concatenation of sign-flipped bit embeddings (Eq. 9).

    Registered as a `TokenEmbedder` with name "binary_code".

    # Parameters

    num_bits : `int`
        K.
    embedding_dim : `int`
        d, a multiple of K; each bit gets d/K dimensions.
    bit_flip : `float`, optional (default = `0.0`)
        Beyond the paper, training only: each bit of each word is flipped with this probability. The train codes come
        from a hashing model trained on the same sentences, so they are cleaner than the dev codes; noise on them
        teaches the validation model not to trust one code fully.
    """

    def __init__(self, num_bits: int, embedding_dim: int, bit_flip: float = 0.0) -> None:
        super().__init__()
        if num_bits < 1 or embedding_dim % num_bits != 0:
            raise ConfigurationError(f"embedding_dim ({embedding_dim}) must be a positive multiple of num_bits "
                                     f"({num_bits}): each bit gets embedding_dim / num_bits dimensions")
        check_range("bit_flip", bit_flip, 0, 1, high_open=True)
        self.num_bits = num_bits
        self.embedding_dim = embedding_dim
        self.bit_flip = bit_flip
        self.bit_embeddings = torch.nn.Parameter(torch.randn(num_bits, embedding_dim // num_bits))  # (K, d/K)

    def get_output_dim(self) -> int:
        return self.embedding_dim

    def forward(self, bits: torch.Tensor, mask: Optional[torch.BoolTensor] = None) -> torch.Tensor:  # type: ignore
        """`bits` (batch, words, K) in {0, 1} → (batch, words, d); padding (mask False) gives zeros."""
        if bits.size(-1) != self.num_bits:
            raise ConfigurationError(f"the codes have {bits.size(-1)} bits but the embedder was built for "
                                     f"{self.num_bits} (set K to the hashing model's number of bits)")
        signs = bits.to(self.bit_embeddings.dtype) * 2 - 1  # (batch, words, K) in {-1, +1}
        if self.training and self.bit_flip > 0:
            signs = flip_signs(signs, self.bit_flip)  # (batch, words, K)
        flipped = signs.unsqueeze(-1) * self.bit_embeddings  # (batch, words, K, d/K)
        embedded = flipped.flatten(-2)  # (batch, words, d)
        if mask is not None:
            embedded = embedded * mask.unsqueeze(-1).to(embedded.dtype)  # (batch, words, d)
        return embedded

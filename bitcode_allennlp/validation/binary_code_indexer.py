"""`binary_code` TokenIndexer: a token whose text is a hex code (as `hash-corpus` writes it) → its K bits.

No vocabulary: the bits are read from the code itself, so the validation-stage model sees codes, never words.
Bit i is head i of the hashing model, head 0 the most significant bit (`bitcode_allennlp.code_format`).
"""
from typing import Dict, List, Optional

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import Token, Vocabulary
from allennlp.data.token_indexers import TokenIndexer
from allennlp.data.token_indexers.token_indexer import IndexedTokenList

from bitcode_allennlp.code_format import MAX_BITS, hex_to_bits


@TokenIndexer.register("binary_code")
class BinaryCodeIndexer(TokenIndexer):
    """
    Indexes each token's hex code as its bits: `{"bits": (words, K) 0/1, "mask": (words,)}`.

    Registered as a `TokenIndexer` with name "binary_code".

    # Parameters

    num_bits : `int`
        K, the number of bits of every code; a code that does not fit in K bits is an error.
    token_min_padding_length : `int`, optional (default = `0`)
    """

    def __init__(self, num_bits: int, token_min_padding_length: int = 0) -> None:
        super().__init__(token_min_padding_length)
        if not 1 <= num_bits <= MAX_BITS:
            raise ConfigurationError(f"num_bits must be in 1..{MAX_BITS}, got {num_bits}")
        self.num_bits = num_bits

    def count_vocab_items(self, token: Token, counter: Dict[str, Dict[str, int]]) -> None:
        pass  # codes are not looked up

    def tokens_to_indices(self, tokens: List[Token], vocabulary: Vocabulary) -> IndexedTokenList:
        return {"bits": [hex_to_bits(token.text, self.num_bits) for token in tokens], "mask": [True] * len(tokens)}

    def get_empty_token_list(self) -> IndexedTokenList:
        return {"bits": [], "mask": []}

    def as_padded_tensor_dict(
        self, tokens: IndexedTokenList, padding_lengths: Dict[str, int]
    ) -> Dict[str, torch.Tensor]:
        length = padding_lengths["bits"]
        bits = torch.zeros(length, self.num_bits, dtype=torch.long)  # (words, K)
        mask = torch.zeros(length, dtype=torch.bool)  # (words,)
        if tokens["bits"]:
            bits[: len(tokens["bits"])] = torch.tensor(tokens["bits"], dtype=torch.long)
            mask[: len(tokens["mask"])] = True
        return {"bits": bits, "mask": mask}

    def get_padding_lengths(self, indexed_tokens: IndexedTokenList) -> Dict[str, int]:
        return {"bits": max(len(indexed_tokens["bits"]), self._token_min_padding_length)}

"""`binary_code` TokenIndexer: a token whose text is a hex code (as `hash-corpus` writes it) → its K bits.

No vocabulary: the bits are read from the code itself, so the validation-stage model sees codes, never words.
Bit i is head i of the hashing model, head 0 the most significant bit (`bitcode_allennlp.common.code_format`).
"""
from typing import Dict, List, Sequence

import numpy as np
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import Token, Vocabulary
from allennlp.data.token_indexers import TokenIndexer
from allennlp.data.token_indexers.token_indexer import IndexedTokenList

from bitcode_allennlp.common.code_format import check_num_bits
from bitcode_allennlp.common.code_value import Codes
from bitcode_allennlp.common.batch_tensors import left_aligned


@TokenIndexer.register("binary_code")
class BinaryCodeIndexer(TokenIndexer):
    """
    Indexes each token's hex code as its bits: `{"bits": (words, K) 0/1, "mask": (words,)}` (kept as one
    packed integer per token until padding, where the bits are taken out of all of them at once).

    Registered as a `TokenIndexer` with name "binary_code".

    # Parameters

    num_bits : `int`
        K, the number of bits of every code; a code that does not fit in K bits is an error.
    token_min_padding_length : `int`, optional (default = `0`)
    """

    def __init__(self, num_bits: int, token_min_padding_length: int = 0) -> None:
        super().__init__(token_min_padding_length)
        self.num_bits = check_num_bits(num_bits, error=ConfigurationError)

    def count_vocab_items(self, token: Token, counter: Dict[str, Dict[str, int]]) -> None:
        pass  # codes are not looked up

    def tokens_to_indices(self, tokens: List[Token], vocabulary: Vocabulary) -> IndexedTokenList:
        codes = Codes.from_hex([token.text for token in tokens], self.num_bits)  # (words,)
        return {"codes": codes.ints, "mask": [True] * len(tokens)}

    def get_empty_token_list(self) -> IndexedTokenList:
        return {"codes": [], "mask": []}

    def as_padded_tensor_dict(
        self, tokens: IndexedTokenList, padding_lengths: Dict[str, int]
    ) -> Dict[str, torch.Tensor]:
        length = padding_lengths["bits"]
        codes, _ = left_aligned([tokens["codes"]], length)  # (1, words) packed codes, 0 at padding
        bits = torch.from_numpy(Codes(codes[0], self.num_bits).bits_as(np.int64))  # (words, K), head 0 first
        mask = torch.arange(length) < len(tokens["mask"])  # (words,)
        return {"bits": bits, "mask": mask}

    def get_padding_lengths(self, indexed_tokens: IndexedTokenList) -> Dict[str, int]:
        return {"bits": max(len(indexed_tokens["codes"]), self._token_min_padding_length)}

    def batch_tensor_dict(self, token_lists: Sequence[IndexedTokenList]) -> Dict[str, torch.Tensor]:
        """
        The batched `{"bits": (batch, words, K), "mask": (batch, words)}` of several sentences' indexed tokens in one
        go: what `as_padded_tensor_dict` for each (padded to the longest, at least `token_min_padding_length`), then
        stacked (`TextField.batch_tensors`), gives, without a tensor per sentence (`bitcode_allennlp.common.
        batch_tensors`, the CPU prediction path, finds this method by name).
        """
        rows = [tokens["codes"] for tokens in token_lists]
        codes, mask = left_aligned(rows, max([self._token_min_padding_length, *map(len, rows)]))  # (batch, words)
        bits = Codes(codes, self.num_bits).bits_as(np.int64)  # (batch, words, K), head 0 first
        return {"bits": torch.from_numpy(bits), "mask": torch.from_numpy(mask)}

"""`binary_code` TokenIndexer: a token whose text is a hex code (as `hash-corpus` writes it) → its K bits.

No vocabulary: the bits are read from the code itself, so the validation-stage model sees codes, never words.
Bit i is head i of the hashing model, head 0 the most significant bit (`bitcode_allennlp.code_format`).
"""
from itertools import chain
from typing import Dict, List, Sequence, Tuple

import numpy
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import Token, Vocabulary
from allennlp.data.token_indexers import TokenIndexer
from allennlp.data.token_indexers.token_indexer import IndexedTokenList

from bitcode_allennlp.code_format import MAX_BITS, hex_to_int


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
        if not 1 <= num_bits <= MAX_BITS:
            raise ConfigurationError(f"num_bits must be in 1..{MAX_BITS}, got {num_bits}")
        self.num_bits = num_bits
        self._shifts = torch.arange(num_bits - 1, -1, -1)  # (K,) head 0 is the most significant bit

    def count_vocab_items(self, token: Token, counter: Dict[str, Dict[str, int]]) -> None:
        pass  # codes are not looked up

    def tokens_to_indices(self, tokens: List[Token], vocabulary: Vocabulary) -> IndexedTokenList:
        return {"codes": [hex_to_int(token.text, self.num_bits) for token in tokens], "mask": [True] * len(tokens)}

    def get_empty_token_list(self) -> IndexedTokenList:
        return {"codes": [], "mask": []}

    def as_padded_tensor_dict(
        self, tokens: IndexedTokenList, padding_lengths: Dict[str, int]
    ) -> Dict[str, torch.Tensor]:
        length = padding_lengths["bits"]
        codes = torch.zeros(length, dtype=torch.long)  # (words,) packed codes, 0 at padding
        codes[: len(tokens["codes"])] = torch.tensor(tokens["codes"], dtype=torch.long)
        bits = (codes.unsqueeze(-1) >> self._shifts) & 1  # (words, K)
        mask = torch.arange(length) < len(tokens["mask"])  # (words,)
        return {"bits": bits, "mask": mask}

    def get_padding_lengths(self, indexed_tokens: IndexedTokenList) -> Dict[str, int]:
        return {"bits": max(len(indexed_tokens["codes"]), self._token_min_padding_length)}

    def batch_tensor_dict(self, token_lists: Sequence[IndexedTokenList]) -> Dict[str, torch.Tensor]:
        """
        The batched `{"bits": (batch, words, K), "mask": (batch, words)}` of several sentences' indexed tokens in one
        go: what `as_padded_tensor_dict` for each (padded to the longest, at least `token_min_padding_length`), then
        stacked (`TextField.batch_tensors`), gives, without a tensor per sentence (`bitcode_allennlp.code_stage.
        code_batch`, the CPU prediction path).
        """
        rows = [tokens["codes"] for tokens in token_lists]
        codes, mask = left_aligned(rows, max([self._token_min_padding_length, *map(len, rows)]))  # (batch, words)
        bits = (codes[:, :, None] >> self._shifts.numpy()) & 1  # (batch, words, K)
        return {"bits": torch.from_numpy(bits), "mask": torch.from_numpy(mask)}


def left_aligned(rows: Sequence[Sequence[int]], width: int) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """
    The int64 `(len(rows), width)` array of `rows` (ragged lists of ints), each left-aligned and padded with 0, and
    its boolean mask (True on the values): one padded tensor per row, stacked, in one numpy assignment.
    """
    lengths = numpy.array([len(row) for row in rows], dtype=numpy.int64)  # (batch,)
    mask = numpy.arange(width) < lengths[:, None]  # (batch, width)
    padded = numpy.zeros((len(rows), width), dtype=numpy.int64)  # (batch, width)
    padded[mask] = numpy.fromiter(chain.from_iterable(rows), dtype=numpy.int64, count=int(lengths.sum()))
    return padded, mask

"""
Hashing stage on a budget: the PLM **frozen** (eval mode, no gradients) and each sentence's word vectors computed
once per process, then read from a cache. Only the hash layer and the task head train, so a grid of many cells
(K, β, similarity × objective, seeds; `benchmarks/reproduce.py`) pays for one PLM pass per sentence instead of one
per step of every cell. The paper fine-tunes the PLM; configs use this embedder only when `FREEZE_PLM=true`:
`frozen_plm_words` (the `plm_words` embedder frozen). The legacy `frozen_transformer_mismatched` (AllenNLP's
mismatched embedder frozen, for archives made before `plm_words`) was removed in 0.3.0 (CHANGELOG.md); an archive
that names it is refused with a message that says so (`host/retired.py`).

The frozen PLM is shared by every embedder of the process that names the same `model_name` (loaded once) and is
not a sub-module: its weights are not in the model's state dict, checkpoints or archive (they never change), so
an archive of such a model needs the PLM directory at `model_name` when it is loaded. `count_parameters` still
counts them (`frozen_parameters()`).

A frozen PLM in eval mode gives both views of a sentence the same vectors, and the hash layer has no dropout
before its ego-attention scores, so the two views would be identical. `dropout` on the cached vectors stands in
for the PLM's own dropout: in training each view draws its own mask (SimCSE-style views, as in the paper).
"""
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.modules.token_embedders import TokenEmbedder

from bitcode_allennlp.modules.plm_words_embedder import PlmWordsEmbedder, fill_empty_words


def sentence_outputs(cache: Dict[bytes, Tuple[torch.Tensor, ...]], keys: List[bytes], lengths: List[int],
                      words: int, device: torch.device,
                      compute: Callable[[torch.Tensor], Sequence[torch.Tensor]]) -> List[torch.Tensor]:
    """
    The frozen PLM's outputs for a batch of sentences (their cache `keys` and numbers of words `lengths`), padded to
    `words`, on `device`: `compute(rows)` (without gradients) gives them, each `(rows, words, ...)`, for the sentences
    not in `cache` yet; every sentence's first `lengths[i]` rows are kept there. One `(batch, words, ...)` tensor per
    output of `compute`.
    """
    missing = [i for i, key in enumerate(keys) if key not in cache]
    if missing:
        with torch.no_grad():
            computed = compute(torch.tensor(missing, device=device))  # (missing,) rows
        for j, i in enumerate(missing):
            cache[keys[i]] = tuple(t[j, : lengths[i]].clone() for t in computed)  # (words_i, ...) each
    rows = [cache[key] for key in keys]
    outputs = []
    for k, first in enumerate(rows[0]):
        shape = (len(keys), words, *first.shape[1:])  # (batch, words, ...)
        padded = torch.zeros(shape, dtype=first.dtype, device=device)  # (batch, words, ...)
        for i, row in enumerate(rows):
            padded[i, : lengths[i]] = row[k].to(device)  # (words_i, ...)
        outputs.append(padded)
    return outputs


def clear_cache() -> None:
    """Drops every cached sentence (the PLMs stay loaded)."""
    for _, cache in _WORD_PLMS.values():
        cache.clear()


def cached_sentences() -> int:
    """How many sentences are cached, over all PLMs."""
    return sum(len(cache) for _, cache in _WORD_PLMS.values())


# (model_name, max_length, layer) -> the frozen `plm_words` embedder and its sentence cache, shared in the process.
_WORD_PLMS: Dict[Tuple[str, Optional[int], str],
                 Tuple[PlmWordsEmbedder, Dict[bytes, Tuple[torch.Tensor, torch.Tensor]]]]
_WORD_PLMS = {}


@TokenEmbedder.register("frozen_plm_words")
class FrozenPlmWordsEmbedder(TokenEmbedder):
    """
    `plm_words` with the PLM frozen in eval mode, shared in the process and kept out of the state dict, and its
    word vectors cached per sentence (the module docstring); the vector of a word with no piece (`empty_word`)
    and the dropout are this embedder's own.

    Registered as a `TokenEmbedder` with name "frozen_plm_words".

    # Parameters

    model_name : `str`
        The PLM directory, as for the `plm_words` indexer.
    max_length : `int`, optional (default = `None`)
        The window in pieces, as given to the indexer.
    layer : `Union[int, str]`, optional (default = `"last"`)
        As for `plm_words`, but not `"mix"` (its weights would have to train).
    dropout : `float`, optional (default = `0.1`)
        Dropout on the cached word vectors in training (a fresh mask for each view); none in eval mode.
    """

    def __init__(self, model_name: str, max_length: Optional[int] = None, layer: Union[int, str] = "last",
                 dropout: float = 0.1) -> None:
        super().__init__()
        if layer == "mix":
            raise ConfigurationError("frozen_plm_words caches one layer of a frozen PLM: layer 'mix' needs "
                                     "the PLM in the model (FREEZE_PLM=false)")
        key = (model_name, max_length, str(layer))
        if key not in _WORD_PLMS:
            plm = PlmWordsEmbedder(model_name, max_length=max_length, layer=layer, train_parameters=False).eval()
            plm.requires_grad_(False)  # its empty-word vector too: this embedder has its own
            _WORD_PLMS[key] = (plm, {})
        self._key = key
        self._dropout = torch.nn.Dropout(dropout)
        self.empty_word = torch.nn.Parameter(torch.zeros(self.get_output_dim()))  # (d,) a word with no piece

    @property
    def plm(self) -> PlmWordsEmbedder:
        return _WORD_PLMS[self._key][0]

    def frozen_parameters(self) -> int:
        """Parameters of the frozen PLM (not sub-module parameters; `count_parameters` adds them)."""
        return sum(p.numel() for p in self.plm.transformer_model.parameters())

    def get_output_dim(self) -> int:
        return self.plm.get_output_dim()

    def forward(  # type: ignore
        self,
        token_ids: torch.LongTensor,
        mask: torch.BoolTensor,
        type_ids: torch.LongTensor,
        wordpiece_mask: torch.BoolTensor,
        piece_index: torch.LongTensor,
        piece_words: torch.LongTensor,
        piece_mask: torch.BoolTensor,
    ) -> torch.Tensor:
        plm, cache = _WORD_PLMS[self._key]
        lengths = mask.sum(-1).tolist()  # words per sentence
        keys = [b"|".join([str(lengths[i]).encode()] + [t.cpu().numpy().tobytes() for t in (
            token_ids[i][wordpiece_mask[i]], type_ids[i][wordpiece_mask[i]], piece_index[i][piece_mask[i]],
            piece_words[i][piece_mask[i]])]) for i in range(token_ids.size(0))]
        plm.to(token_ids.device)
        inputs = dict(token_ids=token_ids, mask=mask, type_ids=type_ids, wordpiece_mask=wordpiece_mask,
                      piece_index=piece_index, piece_words=piece_words, piece_mask=piece_mask)
        vectors, counts = sentence_outputs(  # (batch, words, d), (batch, words)
            cache, keys, lengths, mask.size(1), token_ids.device,
            lambda rows: plm.word_vectors({name: t.index_select(0, rows) for name, t in inputs.items()}))
        return self._dropout(fill_empty_words(vectors, counts, mask, self.empty_word))  # (batch, words, d)

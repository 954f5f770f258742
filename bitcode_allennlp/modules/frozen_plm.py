"""
Hashing stage on a budget: the PLM **frozen** (eval mode, no gradients) and each sentence's word vectors computed
once per process, then read from a cache. Only the hash layer and the task head train, so a grid of many cells
(K, β, similarity × objective, seeds; `benchmarks/reproduce.py`) pays for one PLM pass per sentence instead of one
per step of every cell. The paper fine-tunes the PLM; configs use this embedder only when `FREEZE_PLM=true`:
`frozen_plm_words` (the `plm_words` embedder frozen; the configs' choice) or `frozen_transformer_mismatched`
(AllenNLP's mismatched embedder frozen, which archives made before `plm_words` name).

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
from allennlp.modules.token_embedders import PretrainedTransformerMismatchedEmbedder, TokenEmbedder

from bitcode_allennlp.modules.plm_words_embedder import PlmWordsEmbedder, fill_empty_words
from bitcode_allennlp.plm import check_plm_folder, reading_plm, resolve_plm_name

# (model_name, max_length, sub_token_mode) -> the frozen PLM and its sentence cache, shared in the process.
_PLMS: Dict[Tuple[str, Optional[int], str],
            Tuple[PretrainedTransformerMismatchedEmbedder, Dict[bytes, Tuple[torch.Tensor, ...]]]]
_PLMS = {}


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
    for _, cache in [*_PLMS.values(), *_WORD_PLMS.values()]:
        cache.clear()


def cached_sentences() -> int:
    """How many sentences are cached, over all PLMs."""
    return sum(len(cache) for _, cache in [*_PLMS.values(), *_WORD_PLMS.values()])


@TokenEmbedder.register("frozen_transformer_mismatched")
class FrozenTransformerMismatchedEmbedder(TokenEmbedder):
    """
    `pretrained_transformer_mismatched` (last layer, sub-tokens averaged per word) with the transformer frozen in
    eval mode, shared in the process and kept out of the state dict, and its word vectors cached per sentence;
    see the module docstring.

    # Parameters

    model_name : `str`
        The PLM directory, as for `pretrained_transformer_mismatched` (its indexer must use the same name).
    max_length : `int`, optional (default = `None`)
        As for `pretrained_transformer_mismatched`: longer inputs are folded into segments.
    sub_token_mode : `str`, optional (default = `"avg"`)
    dropout : `float`, optional (default = `0.1`)
        Dropout on the cached word vectors in training (a fresh mask for each view); none in eval mode.
    """

    def __init__(self, model_name: str, max_length: Optional[int] = None, sub_token_mode: str = "avg",
                 dropout: float = 0.1) -> None:
        super().__init__()
        key = (model_name, max_length, sub_token_mode)
        if key not in _PLMS:
            model_name = resolve_plm_name(model_name)  # a `package:` name: this environment's copy
            check_plm_folder(model_name)  # a folder that is not a model: one line, not transformers' traceback
            with reading_plm(model_name, "model"):
                plm = PretrainedTransformerMismatchedEmbedder(model_name, max_length=max_length,
                                                              train_parameters=False,
                                                              sub_token_mode=sub_token_mode).eval()
            _PLMS[key] = (plm, {})
        self._key = key
        self._dropout = torch.nn.Dropout(dropout)

    @property
    def plm(self) -> PretrainedTransformerMismatchedEmbedder:
        return _PLMS[self._key][0]

    def frozen_parameters(self) -> int:
        """Parameters of the frozen PLM (not sub-module parameters; `count_parameters` adds them)."""
        return sum(p.numel() for p in self.plm.parameters())

    def get_output_dim(self) -> int:
        return self.plm.get_output_dim()

    def forward(  # type: ignore
        self,
        token_ids: torch.LongTensor,
        mask: torch.BoolTensor,
        offsets: torch.LongTensor,
        wordpiece_mask: torch.BoolTensor,
        type_ids: Optional[torch.LongTensor] = None,
        segment_concat_mask: Optional[torch.BoolTensor] = None,
    ) -> torch.Tensor:
        plm, cache = _PLMS[self._key]
        lengths = mask.sum(-1).tolist()  # words per sentence
        keys: List[bytes] = []
        for i in range(token_ids.size(0)):
            # Inputs past max_length come folded into segments: then segment_concat_mask marks token_ids' entries.
            ids_mask = wordpiece_mask[i] if segment_concat_mask is None else segment_concat_mask[i]
            key = [token_ids[i][ids_mask], offsets[i][mask[i]]]
            if type_ids is not None:
                key.append(type_ids[i][ids_mask])
            keys.append(b"|".join(t.cpu().numpy().tobytes() for t in key))
        plm.to(token_ids.device)

        def compute(rows: torch.Tensor) -> Tuple[torch.Tensor]:
            def pick(t: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
                return None if t is None else t.index_select(0, rows)  # (missing, ...)

            return (plm(pick(token_ids), pick(mask), pick(offsets), pick(wordpiece_mask), pick(type_ids),
                        pick(segment_concat_mask)),)  # (missing, words, d)

        output, = sentence_outputs(cache, keys, lengths, mask.size(1), token_ids.device, compute)  # (batch, words, d)
        return self._dropout(output)  # (batch, words, d)


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

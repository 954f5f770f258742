"""
Words → a PLM's word pieces of the **running text**, for any Hugging Face tokenizer (indexer `plm_words`; its
embedder is `modules/plm_words_embedder.py`).

AllenNLP's `pretrained_transformer_mismatched` indexer tokenizes each word on its own. For byte-level BPE
(RoBERTa, GPT-2, Llama-3, Qwen2, GPT-NeoX, ModernBERT) that splits every word as if it began the text ("visits" →
`v is its`, where the running text gives `Ġvis its`), and its folding of long inputs calls
`build_inputs_with_special_tokens`, which the generic `PreTrainedTokenizerFast` lacks. Here a sentence is tokenized
once, as the text `" ".join(words)`, with the model's own template; each piece goes to the word its characters
come from (the tokenizer's offsets). So the PLM sees exactly what it would see for that text: byte-level BPE's `Ġ`,
sentencepiece's `▁` and WordPiece's `##` come out as the tokenizer makes them, whatever its family. Tokenizers
without offsets (slow, Python-only ones) fall back to one call per word, each word after the first preceded by a
space (unless the tokenizer adds one itself), and the model's `build_inputs_with_special_tokens` template.

Special-token strings in the text (a tweet that says "[SEP]" or "<|endoftext|>") are tokenized as text
(`split_special_tokens`). A word whose characters give no piece (a zero-width space under BERT's normalizer, an empty
string) has no pieces; its embedder gives it a learned vector. A piece that spans two words goes to the first.

**Windows.** A sentence longer than `max_length` pieces (special tokens included) is read in windows of
`max_length`, each with the template's special tokens, starting every `stride` pieces (default: half a window);
each piece is read from one window: for a bidirectional PLM the one where it has the most context on its
poorer side, for a causal PLM the earliest one that holds it (it then has at least `max_length - stride` pieces of
left context, after the first window). A causal piece's window depends on its position only, so the codes of a
prefix of a sentence are the first codes of the whole sentence. `max_length` is at most the PLM's own window (the
tokenizer's `model_max_length` and the config's positions, where they say), and `max_length: null` is that window.

Output, per sentence: `token_ids`, `type_ids`, `wordpiece_mask` (the windows, concatenated: every window but the
last is exactly `max_length` long), `mask` (one per word), `piece_index` (for each piece of the text, in order: its
position in `token_ids`), `piece_words` (its word) and `piece_mask`.
"""
import logging
import math
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.common.util import pad_sequence_to_length
from allennlp.data.token_indexers import TokenIndexer
from allennlp.data.token_indexers.token_indexer import IndexedTokenList
from allennlp.data.tokenizers import Token
from allennlp.data.vocabulary import Vocabulary

from bitcode_allennlp.plm import check_plm_folder, reading_plm, resolve_plm_name

logger = logging.getLogger(__name__)

UNLIMITED = 1_000_000  # a tokenizer's model_max_length above this means "not set" (transformers uses 1e30)


def load_tokenizer(model_name: str, tokenizer_kwargs: Optional[Dict[str, Any]] = None):
    """The Hugging Face tokenizer of `model_name` (a directory or hub name), cached in the process. A folder that is
    not a model folder, or whose tokenizer transformers cannot read, is a one-line `ConfigurationError`
    (`bitcode_allennlp.plm.check_plm_folder`, `reading_plm`)."""
    from allennlp.common import cached_transformers

    check_plm_folder(model_name)
    with reading_plm(model_name, "tokenizer"):
        tokenizer = cached_transformers.get_tokenizer(model_name, **(tokenizer_kwargs or {}))
    if os.path.isdir(model_name) and len(tokenizer) <= len(set(tokenizer.all_special_ids)):
        # transformers 5 builds an empty tokenizer (its special tokens alone) for a folder without tokenizer files
        raise ConfigurationError(f"{model_name}: transformers cannot read its tokenizer (it has no vocabulary beyond "
                                 f"its {len(tokenizer)} special tokens: are the tokenizer files missing?)")
    return tokenizer


def load_config(model_name: str):
    """The Hugging Face config of `model_name` (checked first, as `load_tokenizer` checks it)."""
    from transformers import AutoConfig

    check_plm_folder(model_name)
    with reading_plm(model_name, "config"):
        return AutoConfig.from_pretrained(model_name)


def is_causal(config) -> bool:
    """Whether a PLM (its config) is a decoder (left-to-right attention): the config says `is_decoder`, or its model
    type has a causal-LM head in transformers and no masked-LM head (GPT-2, Llama, Qwen2, GPT-NeoX, ...; not BERT,
    RoBERTa, ModernBERT)."""
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_MASKED_LM_MAPPING_NAMES)

    if getattr(config, "is_decoder", False):
        return True
    model_type = getattr(config, "model_type", None)
    return model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES


# Models whose position ids start after the padding index (RoBERTa's scheme): that many positions fewer to use.
PADDING_OFFSET_POSITIONS = ("roberta", "xlm-roberta", "camembert", "longformer", "roberta-prelayernorm",
                            "data2vec-text", "xmod", "ibert", "mpnet", "xlm-roberta-xl")


def model_positions(config) -> Optional[int]:
    """How many positions the PLM (its config) reads, where its config says; `None` where it does not."""
    for name in ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            pad = getattr(config, "pad_token_id", None)
            if getattr(config, "model_type", None) in PADDING_OFFSET_POSITIONS and isinstance(pad, int):
                value -= pad + 1
            return value if value > 0 else None
    return None


def window_length(tokenizer, config, max_length: Optional[int], model_name: str) -> Optional[int]:
    """The window in pieces that `max_length` asks for (indexer and embedder alike): `max_length`, at most the PLM's
    own window (the tokenizer's `model_max_length` and the config's positions, where they say); `None` gives the
    latter (`None` when neither says)."""
    limits = [getattr(tokenizer, "model_max_length", None), model_positions(config)]
    limits = [n for n in limits if isinstance(n, int) and 0 < n < UNLIMITED]
    own = min(limits) if limits else None
    if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int)
                                   or max_length <= 0):
        raise ConfigurationError(f"plm_words: max_length must be a positive integer or null, not {max_length!r}")
    if max_length is not None and own is not None and max_length > own:
        logger.warning("plm_words: max_length %d is over the window of %s (%d); using %d", max_length, model_name,
                       own, own)
        return own
    return max_length if max_length is not None else own


def pieces_to_words(words: Sequence[str], spans: Sequence[Tuple[int, int]]) -> List[int]:
    """
    The word of each piece of `" ".join(words)`, given the pieces' character spans (start, end): the word of the
    first character at or after `start` that is not a space between words (a leading-space marker such as `Ġ` or
    `▁` belongs to the word it precedes). Never decreasing, so each word's pieces are contiguous.
    """
    next_word: List[int] = []  # for each character of the text (and its end): the word at or after it
    for index, word in enumerate(words):
        if index:
            next_word.append(index)  # the space between words: the next word
        next_word.extend([index] * len(word))
    next_word.append(max(len(words) - 1, 0))
    result, last = [], 0
    for start, _ in spans:
        last = max(last, next_word[min(max(start, 0), len(next_word) - 1)])
        result.append(last)
    return result


def window_plan(num_pieces: int, size: int, stride: int, causal: bool) -> Tuple[List[int], List[int]]:
    """
    Windows over `num_pieces` pieces, at most `size` pieces each (special tokens not counted), starting every
    `stride` pieces, as few as cover them all; returns the windows' starts and, for each piece, the window it is
    read from (module docstring).
    """
    if num_pieces <= size:
        return [0], [0] * num_pieces
    starts = [k * stride for k in range(1 + math.ceil((num_pieces - size) / stride))]  # last one reaches the end
    source = []
    for t in range(num_pieces):
        first = max(0, math.ceil((t - size + 1) / stride))  # the earliest window holding t
        if causal:
            source.append(first)
            continue
        last = min(t // stride, len(starts) - 1)
        best = max(range(first, last + 1),
                   key=lambda k: (min(t - starts[k], min(starts[k] + size, num_pieces) - 1 - t), -k))
        source.append(best)
    return starts, source


@TokenIndexer.register("plm_words")
class PlmWordsIndexer(TokenIndexer):
    """
    A sentence's words as the word pieces a PLM's tokenizer gives their running text, with one window or several
    (module docstring). Use with the `plm_words` (or `frozen_plm_words`) embedder of the same `model_name` and
    `max_length`, which averages each word's pieces.

    Registered as a `TokenIndexer` with name "plm_words".

    # Parameters

    model_name : `str`
        The PLM: a directory (or a hub name, which needs the network).
    max_length : `int`, optional (default = `None`)
        The window in pieces, the template's special tokens included; longer sentences are read in windows. At most,
        and by default, the PLM's own window (the tokenizer's `model_max_length`, the config's positions); when
        neither says, `None` is one window whatever the length.
    stride : `int`, optional (default = `None`)
        Pieces between the starts of two windows: half a window's text pieces by default; a full window's gives
        windows that do not overlap.
    causal : `bool`, optional (default = `None`)
        Whether the PLM reads left to right (how a piece's window is chosen); `None` asks the PLM's config.
    tokenizer_kwargs : `Dict[str, Any]`, optional (default = `None`)
        For `AutoTokenizer.from_pretrained`.
    namespace : `str`, optional (default = `"tags"`)
        Where the PLM's vocabulary is copied in AllenNLP's `Vocabulary` (as `pretrained_transformer` does).
    """

    def __init__(
        self,
        model_name: str,
        max_length: Optional[int] = None,
        stride: Optional[int] = None,
        causal: Optional[bool] = None,
        tokenizer_kwargs: Optional[Dict[str, Any]] = None,
        namespace: str = "tags",
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self._model_name = model_name
        model_name = resolve_plm_name(model_name)  # a `package:` name: this environment's copy
        self._namespace = namespace
        self._tokenizer_kwargs = tokenizer_kwargs
        self._tokenizer = load_tokenizer(model_name, tokenizer_kwargs)
        self._fast = bool(getattr(self._tokenizer, "is_fast", False))
        config = load_config(model_name)
        self._causal = is_causal(config) if causal is None else causal
        self._added_to_vocabulary = False
        (self._start_ids, self._end_ids, self._start_types, self._end_types,
         self._text_type) = self._template()
        specials = len(self._start_ids) + len(self._end_ids)
        self._max_length = window_length(self._tokenizer, config, max_length, model_name)
        if self._max_length is not None and self._max_length <= specials:
            raise ConfigurationError(f"plm_words: max_length {self._max_length} leaves no room for text: the "
                                     f"tokenizer of {model_name} adds {specials} special tokens")
        self._size = None if self._max_length is None else self._max_length - specials  # text pieces per window
        if stride is not None and (stride <= 0 or (self._size is not None and stride > self._size)):
            raise ConfigurationError(f"plm_words: stride must be in 1..{self._size} (text pieces per window), "
                                     f"not {stride}")
        self._stride = stride if stride is not None else (None if self._size is None else max(1, self._size // 2))
        pad = getattr(self._tokenizer, "pad_token_id", None)
        self._pad_id = pad if isinstance(pad, int) else 0

    @property
    def max_length(self) -> Optional[int]:
        """The window in pieces, special tokens included (`None`: one window)."""
        return self._max_length

    def _template(self) -> Tuple[List[int], List[int], List[int], List[int], int]:
        """The ids and type ids the model's template puts before and after a single text, and the text's type id."""
        if self._fast:
            encoding = self._tokenizer("a", return_token_type_ids=True)
            sequence = encoding.sequence_ids()
            text = [i for i, s in enumerate(sequence) if s is not None]
            if not text:
                raise ConfigurationError(f"plm_words: the tokenizer of {self._model_name} gives no piece for 'a'")
            ids, types = encoding["input_ids"], encoding["token_type_ids"]
            first, last = text[0], text[-1]
            return ids[:first], ids[last + 1:], types[:first], types[last + 1:], types[first]
        marker = -7  # slow tokenizers build the template around a list of ids
        ids = self._tokenizer.build_inputs_with_special_tokens([marker])
        types = self._tokenizer.create_token_type_ids_from_sequences([marker])
        at = ids.index(marker)
        return ids[:at], ids[at + 1:], types[:at], types[at + 1:], types[at]

    def word_pieces(self, words: Sequence[str]) -> Tuple[List[int], List[int]]:
        """The ids of the pieces of the running text of `words` (no special tokens) and each piece's word."""
        if not self._fast:
            ids: List[int] = []
            owners: List[int] = []
            spaced = not getattr(self._tokenizer, "add_prefix_space", False)  # else it adds the space itself
            for index, word in enumerate(words):
                pieces = self._tokenizer.tokenize(" " + word if index and spaced else word) if word else []
                ids.extend(self._tokenizer.convert_tokens_to_ids(pieces))
                owners.extend([index] * len(pieces))
            return ids, owners
        text = " ".join(words)
        options = {"add_special_tokens": False, "return_offsets_mapping": True, "verbose": False}
        try:
            encoding = self._tokenizer(text, split_special_tokens=True, **options)
        except TypeError:  # a tokenizer without split_special_tokens
            encoding = self._tokenizer(text, **options)
        ids = list(encoding["input_ids"])
        return ids, pieces_to_words(words, encoding["offset_mapping"])

    def count_vocab_items(self, token: Token, counter: Dict[str, Dict[str, int]]):
        pass  # the PLM's vocabulary is fixed

    def _add_encoding_to_vocabulary_if_needed(self, vocab: Vocabulary) -> None:
        if not self._added_to_vocabulary:
            vocab.add_transformer_vocab(self._tokenizer, self._namespace)
            self._added_to_vocabulary = True

    def tokens_to_indices(self, tokens: List[Token], vocabulary: Vocabulary) -> IndexedTokenList:
        self._add_encoding_to_vocabulary_if_needed(vocabulary)
        ids, owners = self.word_pieces([token.ensure_text() for token in tokens])
        size = self._size if self._size is not None else max(len(ids), 1)
        stride = self._stride if self._stride is not None else size
        starts, source = window_plan(len(ids), size, stride, self._causal)
        start = len(self._start_ids)
        token_ids: List[int] = []
        type_ids: List[int] = []
        offsets = []  # where each window starts in token_ids
        for first in starts:
            chunk = ids[first: first + size]
            offsets.append(len(token_ids))
            token_ids.extend(self._start_ids + chunk + self._end_ids)
            type_ids.extend(self._start_types + [self._text_type] * len(chunk) + self._end_types)
        piece_index = [offsets[k] + start + t - starts[k] for t, k in enumerate(source)]
        return {
            "token_ids": token_ids,
            "type_ids": type_ids,
            "wordpiece_mask": [True] * len(token_ids),
            "mask": [True] * len(tokens),
            "piece_index": piece_index,
            "piece_words": owners,
            "piece_mask": [True] * len(ids),
        }

    def get_empty_token_list(self) -> IndexedTokenList:
        return {key: [] for key in ("token_ids", "type_ids", "wordpiece_mask", "mask", "piece_index",
                                    "piece_words", "piece_mask")}

    def as_padded_tensor_dict(self, tokens: IndexedTokenList, padding_lengths: Dict[str, int]
                              ) -> Dict[str, torch.Tensor]:
        tensors = {}
        for key, values in tokens.items():
            if key.endswith("mask"):
                tensors[key] = torch.tensor(pad_sequence_to_length(values, padding_lengths[key], lambda: False),
                                            dtype=torch.bool)
            else:
                fill = self._pad_id if key == "token_ids" else 0
                tensors[key] = torch.tensor(pad_sequence_to_length(values, padding_lengths[key], lambda: fill),
                                            dtype=torch.long)
        return tensors

    def __eq__(self, other):
        if isinstance(other, PlmWordsIndexer):
            return all(value == other.__dict__.get(key) for key, value in self.__dict__.items()
                       if key != "_tokenizer")
        return NotImplemented

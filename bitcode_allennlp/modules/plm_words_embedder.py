"""
One vector per word from a PLM (embedder `plm_words`, for the `plm_words` indexer of
`data/token_indexers/plm_words.py`): the PLM reads the running text's word pieces, window by window, and each
word's vector is the average of its pieces' hidden states at a chosen layer. A word with no piece gets a learned
vector (`empty_word`).

Layers (`layer`): `"last"` (the PLM's output), an index into the hidden states (`0` the embeddings, `i` the output
of layer i, negative from the top), or `"mix"`, AllenNLP's scalar mix of all layers (learned weights). A large
frozen PLM keeps much of its syntax in its middle layers.

Beyond the 24-bit paper, from the authors' later paper (Wang & Utiyama 2024): `mask_probability` replaces each word
piece by the tokenizer's mask token with that probability, in training only, for harder negatives: a fresh draw
each call and each sentence, so the two views of a training step get different masks (but `views: "hash_layer"` runs
the PLM once: one mask for both). Only the pieces of words (`piece_index`), never the template's special tokens
nor padding; in overlapping windows, a piece is masked in the window it is read from, its copies in other windows
(context only) are kept.
"""
import inspect
import logging
import math
from typing import Any, Dict, Optional, Tuple, Union

import torch
import torch.nn.functional as F
from allennlp.common.checks import ConfigurationError
from allennlp.modules.scalar_mix import ScalarMix
from allennlp.modules.token_embedders import TokenEmbedder

from bitcode_allennlp.common.checks import check_range
from bitcode_allennlp.data.token_indexers.plm_words import load_config, load_tokenizer, window_length
from bitcode_allennlp.plm import reading_plm, resolve_plm_name

logger = logging.getLogger(__name__)


def check_layer(layer: Union[int, str], num_layers: int, model_name: str) -> Union[int, str]:
    """`layer` as the embedder reads it: "last", "mix", or an index into the `num_layers + 1` hidden states."""
    if layer in ("last", "mix"):
        return layer
    if isinstance(layer, str):
        try:
            layer = int(layer)
        except ValueError:
            raise ConfigurationError(f"plm_words: layer must be 'last', 'mix' or a layer number, not {layer!r}")
    if isinstance(layer, bool) or not isinstance(layer, int) or not -num_layers - 1 <= layer <= num_layers:
        raise ConfigurationError(f"plm_words: layer {layer!r} is not one of {model_name}'s hidden states (0 = the "
                                 f"embeddings .. {num_layers} = the last layer, or -1 .. -{num_layers + 1})")
    return layer % (num_layers + 1)


@TokenEmbedder.register("plm_words")
class PlmWordsEmbedder(TokenEmbedder):
    """
    The word vectors of a PLM over the running text's pieces (module docstring). Its input is the `plm_words`
    indexer's output for the same `model_name` and `max_length`.

    Registered as a `TokenEmbedder` with name "plm_words".

    # Parameters

    model_name : `str`
        The PLM: a directory (or a hub name, which needs the network).
    max_length : `int`, optional (default = `None`)
        The window in pieces, as given to the indexer.
    layer : `Union[int, str]`, optional (default = `"last"`)
        Which hidden states: `"last"`, a layer number (`0` the embeddings, negative from the top), or `"mix"`.
    train_parameters : `bool`, optional (default = `True`)
        Whether the PLM's weights train (fine-tuning, as the paper does).
    load_weights : `bool`, optional (default = `True`)
        `False` builds the PLM from its config only (loading an archive, whose state dict has the weights).
    gradient_checkpointing : `bool`, optional (default = `None`)
        `True` turns on the PLM's gradient checkpointing (less memory, more time).
    tokenizer_kwargs : `Dict[str, Any]`, optional (default = `None`)
        For `AutoTokenizer.from_pretrained`, as given to the indexer.
    transformer_kwargs : `Dict[str, Any]`, optional (default = `None`)
        For `AutoModel.from_pretrained`.
    mask_probability : `float`, optional (default = `0.0`)
        In training, each word piece becomes the tokenizer's mask token with this probability (module docstring;
        from the authors' later paper, beyond the 24-bit paper). Needs a tokenizer with a mask token.
    """

    def __init__(
        self,
        model_name: str,
        max_length: Optional[int] = None,
        layer: Union[int, str] = "last",
        train_parameters: bool = True,
        load_weights: bool = True,
        gradient_checkpointing: Optional[bool] = None,
        tokenizer_kwargs: Optional[Dict[str, Any]] = None,
        transformer_kwargs: Optional[Dict[str, Any]] = None,
        mask_probability: float = 0.0,
    ) -> None:
        super().__init__()
        from allennlp.common import cached_transformers

        check_range("mask_probability", mask_probability, 0, 1, high_open=True)
        model_name = resolve_plm_name(model_name)  # a `package:` name: this environment's copy
        tokenizer = load_tokenizer(model_name, tokenizer_kwargs)
        self._mask_probability = float(mask_probability)
        self._mask_id = getattr(tokenizer, "mask_token_id", None) if mask_probability > 0 else None
        if mask_probability > 0 and not isinstance(self._mask_id, int):
            raise ConfigurationError(f"plm_words: mask_probability {mask_probability} needs a mask token, and the "
                                     f"tokenizer of {model_name} has none")
        self._window = window_length(tokenizer, load_config(model_name), max_length, model_name)
        pad = getattr(tokenizer, "pad_token_id", None)
        self._pad_id = pad if isinstance(pad, int) else 0
        with reading_plm(model_name, "weights"):  # a folder without them: one line (the folder is checked above)
            self.transformer_model = cached_transformers.get(model_name, True, load_weights=load_weights,
                                                             **(transformer_kwargs or {}))
        config = self.transformer_model.config
        if getattr(config, "is_encoder_decoder", False) and hasattr(self.transformer_model, "get_encoder"):
            self.transformer_model = self.transformer_model.get_encoder()  # T5, BART: the encoder reads the text
        embeddings = self.transformer_model.get_input_embeddings()
        if embeddings is not None and len(tokenizer) > embeddings.num_embeddings:  # added tokens: grow, never shrink
            self.transformer_model.resize_token_embeddings(len(tokenizer))
        if gradient_checkpointing and getattr(self.transformer_model, "supports_gradient_checkpointing", False):
            self.transformer_model.gradient_checkpointing_enable()
        # type ids only where the tokenizer gives them (GPT-2 takes them too, but adds their token embeddings)
        self._takes_types = ("token_type_ids" in getattr(tokenizer, "model_input_names", ())
                             and "token_type_ids" in inspect.signature(self.transformer_model.forward).parameters)
        num_layers = int(getattr(config, "num_hidden_layers", 0) or 0)
        self._layer = check_layer(layer, num_layers, model_name)
        self._scalar_mix = ScalarMix(num_layers) if self._layer == "mix" else None
        self.output_dim = int(config.hidden_size)
        self.empty_word = torch.nn.Parameter(torch.zeros(self.output_dim))  # (d,) a word with no piece
        self.train_parameters = train_parameters
        if not train_parameters:
            for parameter in self.transformer_model.parameters():
                parameter.requires_grad = False

    def get_output_dim(self) -> int:
        return self.output_dim

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
        vectors, counts = self.word_vectors(dict(  # (batch, words, d), (batch, words)
            token_ids=token_ids, mask=mask, type_ids=type_ids, wordpiece_mask=wordpiece_mask,
            piece_index=piece_index, piece_words=piece_words, piece_mask=piece_mask))
        return fill_empty_words(vectors, counts, mask, self.empty_word)  # (batch, words, d)

    def word_vectors(self, tokens: Dict[str, torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
        """Each word's average piece vector (zero for a word with no piece) and its number of pieces, from the
        `plm_words` indexer's tensors (`forward`'s arguments, by name)."""
        token_ids, mask, wordpiece_mask = tokens["token_ids"], tokens["mask"], tokens["wordpiece_mask"]
        piece_index, piece_words, piece_mask = tokens["piece_index"], tokens["piece_words"], tokens["piece_mask"]
        type_ids = tokens["type_ids"]
        if self.training and self._mask_probability > 0:
            token_ids = mask_pieces(token_ids, piece_index, piece_mask, self._mask_id,
                                    self._mask_probability)  # (batch, width)
        batch, width = token_ids.shape
        words, d = mask.size(1), self.output_dim
        counts = piece_mask.new_zeros((batch, words), dtype=torch.float)  # (batch, words)
        if width == 0 or piece_index.size(1) == 0:  # no piece in the whole batch: the PLM has nothing to read
            return counts.new_zeros((batch, words, d)), counts  # (batch, words, d), (batch, words)
        size = self._window if self._window is not None and width > self._window else width
        windows = math.ceil(width / size)
        extra = windows * size - width

        def fold(tensor: torch.Tensor, value) -> torch.Tensor:
            return F.pad(tensor, (0, extra), value=value).reshape(batch * windows, size)  # (batch·windows, size)

        attention = fold(wordpiece_mask, False)  # (batch·windows, size)
        attention[:, 0] = True  # a window of padding only reads one pad token (its output is never used)
        hidden = self._hidden(fold(token_ids, self._pad_id), attention, fold(type_ids, 0))  # (batch·windows, size, d)
        hidden = hidden.reshape(batch, windows * size, d)  # (batch, windows·size, d)
        pieces = hidden.gather(1, piece_index.unsqueeze(-1).expand(-1, -1, d))  # (batch, pieces, d)
        weights = piece_mask.to(pieces.dtype)  # (batch, pieces)
        sums = pieces.new_zeros((batch, words, d)).scatter_add(
            1, piece_words.unsqueeze(-1).expand(-1, -1, d), pieces * weights.unsqueeze(-1))  # (batch, words, d)
        counts = counts.to(pieces.dtype).scatter_add(1, piece_words, weights)  # (batch, words)
        return sums / counts.clamp_min(1).unsqueeze(-1), counts  # (batch, words, d), (batch, words)

    def _hidden(self, token_ids: torch.LongTensor, attention: torch.BoolTensor, type_ids: torch.LongTensor
                ) -> torch.Tensor:
        """The chosen layer's states of windows of pieces: (windows, size) ids → (windows, size, d)."""
        inputs = {"input_ids": token_ids, "attention_mask": attention.long()}
        if self._takes_types:
            inputs["token_type_ids"] = type_ids
        if self._layer == "last":
            return self.transformer_model(**inputs).last_hidden_state  # (windows, size, d)
        states = self.transformer_model(**inputs, output_hidden_states=True).hidden_states  # layers+1 × (…, d)
        if self._scalar_mix is not None:
            return self._scalar_mix(list(states[1:]))  # (windows, size, d)
        return states[self._layer]  # (windows, size, d)


def mask_pieces(token_ids: torch.LongTensor, piece_index: torch.LongTensor, piece_mask: torch.BoolTensor,
                mask_id: int, probability: float) -> torch.LongTensor:
    """`token_ids` with each word piece (`piece_index` where `piece_mask`: no special token, no padding) replaced by
    `mask_id` with `probability`, independently, a fresh draw each call."""
    chosen = piece_mask & (torch.rand(piece_mask.shape, device=piece_mask.device) < probability)  # (batch, pieces)
    hits = torch.zeros_like(token_ids).scatter_add(1, piece_index, chosen.long())  # (batch, width) padding adds 0
    return token_ids.masked_fill(hits > 0, mask_id)  # (batch, width)


def fill_empty_words(vectors: torch.Tensor, counts: torch.Tensor, mask: torch.BoolTensor,
                     empty_word: torch.Tensor) -> torch.Tensor:
    """`vectors` with `empty_word` for every real word (`mask`) that has no piece (`counts` 0)."""
    empty = ((counts == 0) & mask).unsqueeze(-1)  # (batch, words, 1)
    return torch.where(empty, empty_word.to(vectors.dtype), vectors)  # (batch, words, d)

"""What every model of both stages shares: words → embedder → encoder, and, with a hash layer, codes, the hash loss
and the optional code-reading head; and the order of a forward pass, views → losses → output → decode → metrics.

The tagger (`hash_crf_tagger`) and the parser (`hash_span_parser`) subclass `HashingModel`; their `forward` reads
its fields and hands them to `HashingModel.task_forward`, which runs the three steps through the task's hooks:

1. views: `_view` (one forward pass with its own dropout → a `View` of its task scores and the ego-attention scores
   s); `_scores_output` (the scores put in the output);
2. losses: `_task_loss` (one view against the gold) and `_loss_divisor` (what a loss summed over the batch is
   divided by); `two_view_step` adds the views' task losses, β·L_hash, the code-reading head's loss and the task's
   own code-reading loss (`_code_reading_loss`, by default none);
3. decode (eval mode, and in training when `training_metrics`): `_decode_view` (scores → the task output, a
   `Decoding`), `_update_metrics` (the decoded output against the gold), `_decoded_metrics` (their values);
   `_human_readable` (ids → strings, in `make_output_human_readable`).

Hashing stage: the encoder is `hash_transformer`; a training step runs two views with independent dropout,
L = L_task1 + L_task2 + β·(L_hash(s1, s2) + L_hash(s2, s1)) (paper Eq. 10, Algorithm 1), plus, beyond the paper, the
code-reading head's loss on view 1 (`code_head.py`). Validation stage: any encoder, β = 0, one view.
"""
import hashlib
from functools import lru_cache
from typing import Any, Dict, FrozenSet, List, NamedTuple, Optional, Tuple, Union

import torch
from allennlp.common import Lazy
from allennlp.common.checks import ConfigurationError, check_dimensions_match
from allennlp.data import Instance, TextFieldTensors, Vocabulary
from allennlp.models.model import Model
from allennlp.modules import Seq2SeqEncoder, TextFieldEmbedder
from allennlp.nn import util
from allennlp.training.metrics import Average

from bitcode_allennlp.common.checks import check_choice, check_range
from bitcode_allennlp.common.code_value import Codes
from bitcode_allennlp.model.code_head import REACHES, CodeHead
from bitcode_allennlp.modules.hash_loss import ContrastiveHashLoss
from bitcode_allennlp.modules.hash_transformer import HashTransformerEncoder
from bitcode_allennlp.training.metrics.code_metrics import CodeMetrics
from bitcode_allennlp.common.batch_tensors import batch_tensors, split_outputs


@lru_cache(maxsize=2 ** 20)
def word_identity(word: str) -> int:
    """A stable 63-bit id of a word string: equal strings, equal ids, in every process (unlike `hash`)."""
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little") >> 1


VIEW_MODES = ("sequential", "batched", "hash_layer")
"""How the two views of a training step run (`HashingModel`'s `views`)."""


def split_batch(value: Any, size: int) -> Tuple[Any, Any]:
    """A model output over a stacked batch (tensors with 2·`size` rows, in tuples or named tuples, or None) cut into
    the outputs of its two halves."""
    if value is None:
        return None, None
    if isinstance(value, torch.Tensor):
        return value[:size], value[size:]  # (size, ...) each
    halves = [split_batch(item, size) for item in value]
    make = type(value)._make if hasattr(value, "_make") else type(value)
    return make(h[0] for h in halves), make(h[1] for h in halves)


class View(NamedTuple):
    """
    One forward pass of a task model (`HashingModel._view`), read by name.

    scores :
        The task's own scores: the tagger's tag logits (batch, words, tags); the parser's `SpanScores` (span and
        label scores). Only the task model reads them (`_task_loss`, decoding).
    hash_scores : `Optional[torch.Tensor]`
        The ego-attention scores s (batch, words, K) that make the codes, read by the hash loss, the code-reading
        head and the code metrics; `None` without a hash layer.
    cut_scores : `Optional[torch.Tensor]`
        s computed again from the hash layer's inputs cut from the graph (batch, words, K), in training when a loss
        on the codes stops at the hash layer (`hash_loss_reach`, the code-reading head's `reach`): what that loss
        reads in place of `hash_scores` (the same values; with the Q/K-only layer, another dropout draw); otherwise
        `None`.
    """

    scores: Any
    hash_scores: Optional[torch.Tensor]
    cut_scores: Optional[torch.Tensor] = None


class Decoding(NamedTuple):
    """
    What a task model decodes from its first view (`HashingModel._decode_view`), read by name.

    output : `Dict[str, Any]`
        The decoded keys of the model's output: the tagger's `tags` (tag ids per sentence); the parser's `spans`,
        `span_label_ids` and, with metadata, `nltk_trees` and `trees`.
    predicted : `Any`
        What `_update_metrics` compares with the gold: the tagger's Viterbi paths (batch, words); the parser's trees
        as one-line strings (`None` without metadata).
    """

    output: Dict[str, Any]
    predicted: Any


class HashingModel(Model):
    """
    Base class (not registered): the embedder and encoder of both stages, the two-view hash loss, codes, and the
    optional code-reading head.

    # Parameters

    vocab : `Vocabulary`
    text_field_embedder : `TextFieldEmbedder`
        One vector per word: `plm_words` (hashing stage; word pieces averaged per word) or
        `binary_code` (validation stage).
    encoder : `Lazy[Seq2SeqEncoder]`
        `hash_transformer` in the hashing stage; any encoder (e.g. a one-layer `pytorch_transformer`) otherwise.
        Built with `input_dim` = the embedder's output size, so configs need not repeat the PLM's hidden size.
        Codes and the hash loss need a `HashTransformerEncoder`.
    hash_loss : `ContrastiveHashLoss`, optional (default = `None`)
        `None` means the default ("contrastive_hash": τ = 0.1, cos_sign, hash objective).
    beta : `float`, optional (default = `0.0`)
        β of Eq. 10. 0 trains a plain baseline.
    two_views : `bool`, optional (default = `True`)
        Run two forward passes with independent dropout in training and add both task losses, whatever β: Algorithm
        1's `fine_tuning_step` sums two task losses, so the β = 0 baseline differs from the hashing model by the hash
        loss alone (and costs the same). `False` trains one view (β must then be 0; the validation-stage configs).
        The configs' default is the same (config variable `TWO_VIEWS`, default true).
    views : `str`, optional (default = `"sequential"`)
        How the two views of a training step run (`VIEW_MODES`): `"sequential"`, two forward passes, one after the
        other; `"batched"`, one forward pass over the batch stacked twice, each copy with its own dropout (the same
        views in distribution, in fewer, larger operations); `"hash_layer"` (beyond the paper), the PLM runs once and
        the views differ only from the hash layer on (its dropout and the task head's), which halves the PLM's cost.
    hash_loss_reach : `str`, optional (default = `"plm"`)
        How far the hash loss's gradient goes (`REACHES`, as the code-reading head's `reach`; config variable
        `HASH_LOSS_REACH`): `"plm"`, through the hash layer into the PLM (the paper); `"hash_layer"` (beyond the
        paper), only into the hash layer's query and key projections (it reads `View.cut_scores`), so that with
        the Q/K-only hash layer and a head of `reach="hash_layer"` the PLM is fit by the task loss alone.

    The optional code-reading head (beyond the paper, `code_head.py`) is a task model's constructor parameter
    `code_head: Optional[Lazy[CodeHead]]`; the task model hands it to `_add_code_head` with the namespace of its
    per-word labels, after its own layers (so that a seed initialises them as before the head existed), and
    `two_view_step` adds its loss, `hashing_metrics` its `code_head_accuracy`.
    """

    # Whether `add_codes` gets per-word gold labels (tags); without them the pair statistics are not reported.
    codes_have_labels = True
    # Whether training forwards decode too, for training metrics (eval mode always decodes); a task model may set it.
    training_metrics = False
    # Where the code-reading head's per-word labels come from, for the error when the vocabulary has none.
    word_labels_source = "the reader's per-word tags"

    def __init__(
        self,
        vocab: Vocabulary,
        text_field_embedder: TextFieldEmbedder,
        encoder: Lazy[Seq2SeqEncoder],
        hash_loss: Optional[ContrastiveHashLoss] = None,
        beta: float = 0.0,
        two_views: bool = True,
        views: str = "sequential",
        hash_loss_reach: str = "plm",
        **kwargs,
    ) -> None:
        super().__init__(vocab, **kwargs)
        check_choice("views", views, VIEW_MODES)
        check_choice("hash_loss_reach", hash_loss_reach, REACHES)
        built = encoder.construct(input_dim=text_field_embedder.get_output_dim())
        check_dimensions_match(text_field_embedder.get_output_dim(), built.get_input_dim(),
                               "text field embedding dim", "encoder input dim")
        check_range("beta", beta, 0)
        if beta > 0 and not isinstance(built, HashTransformerEncoder):
            raise ConfigurationError("beta > 0 needs a 'hash_transformer' encoder (the hash loss reads its "
                                     f"ego-attention scores), got {type(built).__name__}")
        if beta > 0 and not two_views:
            raise ConfigurationError("beta > 0 needs two_views (the hash loss contrasts two dropout views)")
        self.text_field_embedder = text_field_embedder
        self.encoder = built
        self.beta = beta
        self.hash_loss = hash_loss if hash_loss is not None else ContrastiveHashLoss()
        self.two_views = two_views
        self.views = views
        self.hash_loss_reach = hash_loss_reach
        self.num_bits = built.num_bits if isinstance(built, HashTransformerEncoder) else None
        self.code_metrics = CodeMetrics() if self.num_bits is not None else None
        self.mean_hash_loss = Average()
        self.code_head: Optional[CodeHead] = None

    def _add_code_head(self, code_head: Optional[Lazy[CodeHead]], namespace: str) -> None:
        """Builds the code-reading head (`None`: none) with `num_bits` = K and `num_labels` = the size of the
        vocabulary `namespace` of the per-word gold labels; it needs a hash layer and those labels."""
        if code_head is None:
            return
        if self.num_bits is None:
            raise ConfigurationError(f"code_head reads the codes: it needs a 'hash_transformer' encoder, got "
                                     f"{type(self.encoder).__name__}")
        num_labels = self.vocab.get_vocab_size(namespace)
        if num_labels == 0:
            raise ConfigurationError(f"code_head is trained on per-word gold labels, and the vocabulary has none "
                                     f"(namespace {namespace!r} is empty): {self.word_labels_source}")
        self.code_head = code_head.construct(num_bits=self.num_bits, num_labels=num_labels)

    def forward_on_instances(self, instances: List[Instance]) -> List[Dict[str, Any]]:
        """
        AllenNLP's `forward_on_instances` (tensorize, forward, `make_output_human_readable`, split per instance),
        with the same outputs, faster for the validation-stage model on the CPU: instances whose only model input
        is the codes (`binary_codes` reader) are tensorized for the whole batch at once and not walked by
        `move_to_device` (`bitcode_allennlp.common.batch_tensors`). On a GPU, or for other instances (words
        through a PLM, parser gold spans), AllenNLP's own path.
        """
        if self._get_prediction_device() < 0:
            with torch.no_grad():
                model_input = batch_tensors(instances, self.vocab)
                if model_input is not None:
                    return split_outputs(self, self.make_output_human_readable(self(**model_input)), len(instances))
        return super().forward_on_instances(instances)

    def encode(
        self, tokens: TextFieldTensors, mask: torch.BoolTensor, embedded: Optional[torch.Tensor] = None,
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor], Optional[torch.Tensor]]:
        """Word vectors (batch, words, d), ego-attention scores (batch, words, K) or None without a hash layer, and
        the same scores cut from the PLM (`View.cut_scores`) or None; `embedded` (batch, words, d): the embedder's
        output, when it has run already (`views="hash_layer"`)."""
        if embedded is None:
            embedded = self.text_field_embedder(tokens)  # (batch, words, d)
        if not isinstance(self.encoder, HashTransformerEncoder):
            return self.encoder(embedded, mask), None, None  # (batch, words, d)
        encoded, scores = self.encoder.forward_with_scores(embedded, mask)  # (batch, words, d), (batch, words, K)
        cut = None
        if self.training and self._cut_losses():
            cut = self.encoder.ego_scores(embedded.detach())  # (batch, words, K), no gradient to the PLM
        return encoded, scores, cut

    def _cut_losses(self) -> FrozenSet[str]:
        """The losses on the codes that stop at the hash layer, the one place that decides it: `"hash"`
        (`hash_loss_reach`, with β > 0), `"head"` (the code-reading head's `reach`)."""
        hash_cut = self.hash_loss_reach == "hash_layer" and self.beta > 0
        head_cut = self.code_head is not None and self.code_head.reach == "hash_layer"
        return frozenset(name for name, cut in (("hash", hash_cut), ("head", head_cut)) if cut)

    def predict_codes(self, tokens: TextFieldTensors) -> Tuple[torch.LongTensor, torch.BoolTensor]:
        """
        Re-annotation (Algorithm 1 `reannotate`): each word's code as an int64, bit i = sign of head i (head 0
        most significant), and the word mask, without running the task head. Call in eval mode (no dropout).
        """
        if self.num_bits is None:
            raise ConfigurationError(f"{type(self.encoder).__name__} is not a hash layer: this model has no codes "
                                     "(re-annotate with a hashing-stage model, encoder 'hash_transformer')")
        mask = util.get_text_field_mask(tokens)  # (batch, words)
        _, scores, _ = self.encode(tokens, mask)  # (batch, words, K)
        return Codes.packed_tensor(scores), mask  # (batch, words), (batch, words)

    def train_second_view(self) -> bool:
        return self.training and self.two_views

    def task_forward(
        self, tokens: TextFieldTensors, gold: Any, metadata: Optional[List[Dict[str, Any]]],
        word_labels: Optional[torch.LongTensor] = None,
    ) -> Dict[str, Any]:
        """
        The forward pass of every task model: views and losses (`two_view_step`), the output (the task's
        `_scores_output`, `mask`, the losses, `codes` with a hash layer, `words` with metadata), then, when it
        decodes (`_decodes`), the task's `_decode_view` into the output and `_update_metrics`.

        # Parameters

        tokens : `TextFieldTensors`
            The words, as indexed by the text field's indexers.
        gold : `Any`
            The gold annotation as the task's `_task_loss` and `_update_metrics` read it; `None`: no losses.
        metadata : `Optional[List[Dict[str, Any]]]`
            One dict per sentence with at least `"words"` (the hash loss's word identities, the output's `words`).
        word_labels : `torch.LongTensor`, optional (default = `None`)
            Per-word gold labels (batch, words): the code-reading head's targets, and the code metrics' labels
            when `codes_have_labels`.
        """
        mask = util.get_text_field_mask(tokens)  # (batch, words)
        view, losses = self.two_view_step(tokens, mask, gold, metadata, word_labels)
        output: Dict[str, Any] = {**self._scores_output(view), "mask": mask, **losses}
        self.add_codes(output, view.hash_scores, mask, word_labels if self.codes_have_labels else None)
        if metadata is not None:
            output["words"] = [m["words"] for m in metadata]
        if self._decodes():
            decoding = self._decode_view(view, mask, metadata)
            output.update(decoding.output)
            self._update_metrics(view, decoding, gold, mask, metadata)
        return output

    def _decodes(self) -> bool:
        """Eval mode always decodes; training mode only for the training metrics (`training_metrics`)."""
        return not self.training or self.training_metrics

    def make_output_human_readable(self, output_dict: Dict[str, Any]) -> Dict[str, Any]:
        """The task's `_human_readable` (ids → strings), then `code_hex` (per word, padding removed)."""
        self._human_readable(output_dict)
        self.add_code_hex(output_dict)
        return output_dict

    def get_metrics(self, reset: bool = False) -> Dict[str, float]:
        """The task's `_decoded_metrics` when it decodes (`_decodes`), then the `hashing_metrics`."""
        metrics = self._decoded_metrics(reset) if self._decodes() else {}
        metrics.update(self.hashing_metrics(reset))
        return metrics

    # The task's hooks, step 1, views.

    def _view(self, tokens: TextFieldTensors, mask: torch.BoolTensor, embedded: Optional[torch.Tensor] = None) -> View:
        """One forward pass, with its own dropout: the task's scores and the ego-attention scores s (batch, words,
        K), or None without a hash layer; from `embedded` (the embedder's output) when given. Defined by each task
        model (it passes `embedded` to `encode`)."""
        raise NotImplementedError

    def _scores_output(self, view: View) -> Dict[str, Any]:
        """The task scores of the first view as the output shows them (e.g. `logits`). Defined by each task
        model."""
        raise NotImplementedError

    # The task's hooks, step 2, losses.

    def _task_loss(self, view: View, gold: Any, mask: torch.BoolTensor) -> torch.Tensor:
        """The task loss of one view against the gold annotation. Defined by each task model."""
        raise NotImplementedError

    def _loss_divisor(self, mask: torch.BoolTensor) -> Union[int, torch.Tensor]:
        """What a loss summed over the batch is divided by, as the task loss is (sentences, words or 1); the
        code-reading head's loss is divided alike. Defined by each task model."""
        raise NotImplementedError

    def _code_reading_loss(self, view: View, gold: Any, mask: torch.BoolTensor) -> Optional[torch.Tensor]:
        """Beyond the paper: a task model's own code-reading loss on the first view against the gold (the parser's
        span head, `parsing/models/span_code_head.py`), added to `loss` by `two_view_step`; by default none."""
        return None

    # The task's hooks, step 3, decode.

    def _decode_view(self, view: View, mask: torch.BoolTensor, metadata: Optional[List[Dict[str, Any]]]) -> Decoding:
        """The task output decoded from the scores of `view`. Defined by each task model."""
        raise NotImplementedError

    def _update_metrics(self, view: View, decoding: Decoding, gold: Any, mask: torch.BoolTensor,
                        metadata: Optional[List[Dict[str, Any]]]) -> None:
        """Updates the task metrics with `decoding` against the gold (`gold`, or the gold in `metadata`).
        Defined by each task model."""
        raise NotImplementedError

    def _decoded_metrics(self, reset: bool) -> Dict[str, float]:
        """The task metrics' values (`get_metrics` asks for them when the model decodes). Defined by each task
        model."""
        raise NotImplementedError

    def _human_readable(self, output: Dict[str, Any]) -> None:
        """Turns the decoded ids of `output` into strings, in place; by default nothing to turn."""

    def two_view_step(
        self, tokens: TextFieldTensors, mask: torch.BoolTensor, gold: Any, metadata: Optional[List[Dict[str, Any]]],
        word_labels: Optional[torch.LongTensor] = None,
    ) -> Tuple[View, Dict[str, torch.Tensor]]:
        """
        The first view (the one decoded and coded), and with `gold` (`None`: no losses) the losses of paper Eq. 10:
        `loss` = L_task(view 1), in training with two views + L_task(view 2) + β·(L_hash(s1, s2) + L_hash(s2, s1))
        (the hash part also as `hash_loss`, when β > 0), then, with a code-reading head and per-word gold labels
        `word_labels` (batch, words), + the head's weighted loss on view 1 (without labels the head is skipped), then
        + the task's own code-reading loss on view 1 (`_code_reading_loss`, e.g. the parser's span head). The
        losses come as a dict, `hash_loss` before `loss`, to put in the output after the task's own keys.
        """
        second = gold is not None and self.train_second_view()
        view, view2 = self._two_views(tokens, mask) if second else (self._view(tokens, mask), None)
        losses: Dict[str, torch.Tensor] = {}
        if gold is None:
            return view, losses
        loss = self._task_loss(view, gold, mask)
        if view2 is not None:  # the second dropout view
            loss = loss + self._task_loss(view2, gold, mask)
            if self.beta > 0:
                cut = "hash" in self._cut_losses()
                s1, s2 = self._loss_scores(view, cut), self._loss_scores(view2, cut)  # (batch, words, K) each
                losses["hash_loss"] = self.hash_loss_of_views(s1, s2, metadata, mask)
                loss = loss + self.beta * losses["hash_loss"]
        if self.code_head is not None and word_labels is not None:
            read = self._loss_scores(view, "head" in self._cut_losses())  # (batch, words, K)
            loss = loss + self.code_head(read, word_labels, mask, self._loss_divisor(mask))
        reading = self._code_reading_loss(view, gold, mask)
        if reading is not None:
            loss = loss + reading
        losses["loss"] = loss
        return view, losses

    @staticmethod
    def _loss_scores(view: View, cut: bool) -> torch.Tensor:
        """What a loss on the codes reads: `view.cut_scores` when it stops at the hash layer (`cut`) and they were
        made (in training), else `view.hash_scores` (in eval mode, e.g. the dev loss, both are the same values)."""
        return view.cut_scores if cut and view.cut_scores is not None else view.hash_scores

    def _two_views(self, tokens: TextFieldTensors, mask: torch.BoolTensor) -> Tuple[View, View]:
        """The two views of a training step, as `views` says."""
        if self.views == "batched":
            doubled = {name: {key: torch.cat([t, t]) for key, t in fields.items()} for name, fields in tokens.items()}
            both = self._view(doubled, torch.cat([mask, mask]))  # every tensor (2·batch, ...)
            return split_batch(both, mask.shape[0])
        if self.views == "hash_layer":
            embedded = self.text_field_embedder(tokens)  # (batch, words, d), one PLM pass
            return self._view(tokens, mask, embedded), self._view(tokens, mask, embedded)
        return self._view(tokens, mask), self._view(tokens, mask)

    def hash_loss_of_views(
        self, scores1: torch.Tensor, scores2: torch.Tensor, metadata: Optional[List[Dict[str, Any]]],
        mask: torch.BoolTensor,
    ) -> torch.Tensor:
        """L_hash(s1, s2) + L_hash(s2, s1) over the words of the batch (padding removed)."""
        word_ids = self._word_ids(metadata, mask)  # (batch, words)
        loss = self.hash_loss.symmetric(scores1[mask], scores2[mask], word_ids[mask])  # (words, K) each
        self.mean_hash_loss(loss.detach())
        return loss

    def _word_ids(self, metadata: Optional[List[Dict[str, Any]]], mask: torch.BoolTensor) -> torch.LongTensor:
        if metadata is None or any("words" not in m for m in metadata):
            raise ConfigurationError("the hash loss needs metadata with 'words' (word identities, §2.2); "
                                     "use one of bitcode_allennlp's dataset readers")
        ids = torch.zeros(mask.shape, dtype=torch.long)  # (batch, words)
        for i, m in enumerate(metadata):
            ids[i, : len(m["words"])] = torch.tensor([word_identity(w) for w in m["words"]], dtype=torch.long)
        return ids.to(mask.device)

    def add_codes(self, output: Dict[str, Any], scores: Optional[torch.Tensor], mask: torch.BoolTensor,
                  labels: Optional[torch.Tensor] = None) -> None:
        """Puts `codes` (batch, words) int64 into `output` and updates the code metrics (labels optional)."""
        if scores is None:
            return
        bits = Codes.score_bits(scores.detach())  # (batch, words, K) bool, bit i = score > 0: made once
        output["codes"] = Codes.packed_tensor(bits)  # (batch, words)
        if self.code_metrics is not None:
            self.code_metrics(bits, labels, mask)

    def add_code_hex(self, output: Dict[str, Any]) -> None:
        """`code_hex`: per sentence, one hex string per word (padding removed), from the batch's `Codes`."""
        if "codes" in output:
            lengths = output["mask"].sum(dim=-1).tolist()
            batch = Codes(output["codes"].detach().cpu(), self.num_bits)  # (batch, words)
            output["code_hex"] = [batch[i, :n].hex for i, n in enumerate(lengths)]

    def hashing_metrics(self, reset: bool) -> Dict[str, float]:
        metrics: Dict[str, float] = {}
        if self.code_head is not None:
            metrics["code_head_accuracy"] = self.code_head.get_metric(reset=reset)
        if self.code_metrics is not None:
            codes = self.code_metrics.get_metric(reset=reset)
            if not self.codes_have_labels:
                codes = {k: v for k, v in codes.items() if "label" not in k}
            metrics.update(codes)
        if self.training and self.beta > 0:
            metrics["hash_loss"] = self.mean_hash_loss.get_metric(reset=reset)
        return metrics

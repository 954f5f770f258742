"""What every model of both stages shares: words → embedder → encoder, and, with a hash layer, codes and the hash loss.

The tagger (`hash_crf_tagger`) and the parser (`hash_span_parser`) subclass `HashingModel` and add a task head:
each defines one view (`_view`: one forward pass with its own dropout → its task scores and the ego-attention
scores s) and its task loss (`_task_loss`); `two_view_step` does the rest for both. Hashing stage: the encoder is
`hash_transformer`; a training step runs two views with independent dropout, L = L_task1 + L_task2 +
β·(L_hash(s1, s2) + L_hash(s2, s1)) (paper Eq. 10, Algorithm 1). Validation stage: any encoder, β = 0, one view.
"""
import hashlib
from functools import lru_cache
from typing import Any, Dict, List, Optional, Tuple

import torch
from allennlp.common import Lazy
from allennlp.common.checks import ConfigurationError, check_dimensions_match
from allennlp.data import Instance, TextFieldTensors, Vocabulary
from allennlp.models.model import Model
from allennlp.modules import Seq2SeqEncoder, TextFieldEmbedder
from allennlp.nn import util
from allennlp.training.metrics import Average

from bitcode_allennlp.common.checks import check_range
from bitcode_allennlp.common.codes import bits_to_ints, scores_to_bits
from bitcode_allennlp.common.code_format import ints_to_hex
from bitcode_allennlp.modules.hash_loss import ContrastiveHashLoss
from bitcode_allennlp.modules.hash_transformer import HashTransformerEncoder
from bitcode_allennlp.training.metrics.code_metrics import CodeMetrics
from bitcode_allennlp.common.batch_tensors import batch_tensors, split_outputs


@lru_cache(maxsize=2 ** 20)
def word_identity(word: str) -> int:
    """A stable 63-bit id of a word string: equal strings, equal ids, in every process (unlike `hash`)."""
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little") >> 1


def straight_through_signs(scores: torch.Tensor, mask: torch.BoolTensor) -> torch.Tensor:
    """
    The code as ±1 in the forward pass (sign(s), 0 counts as -1 like bit 0) with the gradient of hardtanh on the
    standardised scores in the backward pass: c = clamp(s/σ, -1, 1) + (sign(s) - clamp(s/σ, -1, 1)).detach(), σ the
    standard deviation of the real words' scores (not differentiated). An identity straight-through on raw scores
    froze bits in the study (`shared/studies/codes-carry-the-task.md`, item 5).
    """
    sigma = scores.detach()[mask].std().clamp(min=1e-6) if mask.sum() > 1 else scores.new_tensor(1.0)  # ()
    soft = (scores / sigma).clamp(-1.0, 1.0)  # (batch, words, K)
    hard = torch.where(scores > 0, torch.ones_like(scores), -torch.ones_like(scores))  # (batch, words, K)
    return soft + (hard - soft).detach()  # (batch, words, K)


class HashingModel(Model):
    """
    Base class (not registered): the embedder and encoder of both stages, the two-view hash loss, and codes.

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
    two_views : `bool`, optional (default = `None`)
        Run two forward passes with independent dropout in training and add both task losses. `None` means
        "when beta > 0". A β = 0 baseline with `two_views: true` costs the same as the hashing model.
    """

    # Whether `add_codes` gets per-word gold labels (tags); without them the pair statistics are not reported.
    codes_have_labels = True

    def __init__(
        self,
        vocab: Vocabulary,
        text_field_embedder: TextFieldEmbedder,
        encoder: Lazy[Seq2SeqEncoder],
        hash_loss: Optional[ContrastiveHashLoss] = None,
        beta: float = 0.0,
        two_views: Optional[bool] = None,
        **kwargs,
    ) -> None:
        super().__init__(vocab, **kwargs)
        built = encoder.construct(input_dim=text_field_embedder.get_output_dim())
        check_dimensions_match(text_field_embedder.get_output_dim(), built.get_input_dim(),
                               "text field embedding dim", "encoder input dim")
        check_range("beta", beta, 0)
        if beta > 0 and not isinstance(built, HashTransformerEncoder):
            raise ConfigurationError("beta > 0 needs a 'hash_transformer' encoder (the hash loss reads its "
                                     f"ego-attention scores), got {type(built).__name__}")
        self.text_field_embedder = text_field_embedder
        self.encoder = built
        self.beta = beta
        self.hash_loss = hash_loss if hash_loss is not None else ContrastiveHashLoss()
        self.two_views = beta > 0 if two_views is None else two_views
        if beta > 0 and not self.two_views:
            raise ConfigurationError("beta > 0 needs two_views (the hash loss contrasts two dropout views)")
        self.num_bits = built.num_bits if isinstance(built, HashTransformerEncoder) else None
        self.code_metrics = CodeMetrics() if self.num_bits is not None else None
        self.mean_hash_loss = Average()

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

    def encode(self, tokens: TextFieldTensors, mask: torch.BoolTensor) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """Word vectors (batch, words, d) and ego-attention scores (batch, words, K), or None without a hash layer."""
        embedded = self.text_field_embedder(tokens)  # (batch, words, d)
        if isinstance(self.encoder, HashTransformerEncoder):
            return self.encoder.forward_with_scores(embedded, mask)  # (batch, words, d), (batch, words, K)
        return self.encoder(embedded, mask), None  # (batch, words, d)

    def predict_codes(self, tokens: TextFieldTensors) -> Tuple[torch.LongTensor, torch.BoolTensor]:
        """
        Re-annotation (Algorithm 1 `reannotate`): each word's code as an int64, bit i = sign of head i (head 0
        most significant), and the word mask, without running the task head. Call in eval mode (no dropout).
        """
        if self.num_bits is None:
            raise ConfigurationError(f"{type(self.encoder).__name__} is not a hash layer: this model has no codes "
                                     "(re-annotate with a hashing-stage model, encoder 'hash_transformer')")
        mask = util.get_text_field_mask(tokens)  # (batch, words)
        _, scores = self.encode(tokens, mask)  # (batch, words, K)
        return bits_to_ints(scores_to_bits(scores)), mask  # (batch, words), (batch, words)

    def train_second_view(self) -> bool:
        return self.training and self.two_views

    def _view(self, tokens: TextFieldTensors, mask: torch.BoolTensor) -> Tuple[Any, ...]:
        """
        One forward pass, with its own dropout: the task's scores (any number of tensors), and last the
        ego-attention scores s (batch, words, K), or None without a hash layer. Defined by each task model.
        """
        raise NotImplementedError

    def _task_loss(self, view: Tuple[Any, ...], gold: Any, mask: torch.BoolTensor) -> torch.Tensor:
        """The task loss of one view (as `_view` returns it) against the gold annotation. Defined by each task model."""
        raise NotImplementedError

    def _extra_loss(self, view: Tuple[Any, ...], gold: Any, mask: torch.BoolTensor) -> Optional[torch.Tensor]:
        """A loss added once, on the first view, after the others (the tagger's code-reading head); `None`: none."""
        return None

    def two_view_step(
        self, tokens: TextFieldTensors, mask: torch.BoolTensor, gold: Any, metadata: Optional[List[Dict[str, Any]]],
    ) -> Tuple[Tuple[Any, ...], Dict[str, torch.Tensor]]:
        """
        The first view (the one decoded and coded), and with `gold` (`None`: no losses) the losses of paper Eq. 10:
        `loss` = L_task(view 1), in training with two views + L_task(view 2) + β·(L_hash(s1, s2) + L_hash(s2, s1))
        (the hash part also as `hash_loss`, when β > 0), then + `_extra_loss`. The losses come as a dict, `hash_loss`
        before `loss`, to put in the output after the task's own keys.
        """
        view = self._view(tokens, mask)
        losses: Dict[str, torch.Tensor] = {}
        if gold is None:
            return view, losses
        loss = self._task_loss(view, gold, mask)
        if self.train_second_view():
            view2 = self._view(tokens, mask)  # second dropout view
            loss = loss + self._task_loss(view2, gold, mask)
            if self.beta > 0:
                losses["hash_loss"] = self.hash_loss_of_views(view[-1], view2[-1], metadata, mask)
                loss = loss + self.beta * losses["hash_loss"]
        extra = self._extra_loss(view, gold, mask)
        if extra is not None:
            loss = loss + extra
        losses["loss"] = loss
        return view, losses

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
        bits = scores_to_bits(scores.detach())  # (batch, words, K)
        output["codes"] = bits_to_ints(bits)  # (batch, words)
        if self.code_metrics is not None:
            self.code_metrics(bits, labels, mask)

    def add_code_hex(self, output: Dict[str, Any]) -> None:
        """`code_hex`: per sentence, one hex string per word (padding removed)."""
        if "codes" in output:
            lengths = output["mask"].sum(dim=-1).tolist()
            output["code_hex"] = [ints_to_hex(output["codes"][i, :n], self.num_bits) for i, n in enumerate(lengths)]

    def hashing_metrics(self, reset: bool) -> Dict[str, float]:
        metrics: Dict[str, float] = {}
        if self.code_metrics is not None:
            codes = self.code_metrics.get_metric(reset=reset)
            if not self.codes_have_labels:
                codes = {k: v for k, v in codes.items() if "label" not in k}
            metrics.update(codes)
        if self.training and self.beta > 0:
            metrics["hash_loss"] = self.mean_hash_loss.get_metric(reset=reset)
        return metrics

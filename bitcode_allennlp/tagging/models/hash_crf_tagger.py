"""The CRF tagger of both stages (POS, NER): words → embedder → encoder → linear → CRF, Viterbi decoding.

Hashing stage (paper §3.2, Eq. 10): embedder = PLM with sub-tokens averaged per word
(`plm_words`), encoder = `hash_transformer`, and in training two forward passes with
independent dropout, L = L_task1 + L_task2 + β·(L_hash(s1, s2) + L_hash(s2, s1)) (`HashingModel.task_forward` runs
the steps; this class defines the view (tag logits), the CRF loss and the decoding (batched Viterbi, accuracy and
span F1); the optional code-reading head, `model/code_head.py`, reads the gold tags).
Validation stage (§3.3): the same class with a `binary_code` embedder, a plain one-layer transformer, β = 0.
Outputs carry each word's code (int and hex) for predictors and re-annotation.
"""
from typing import Any, Dict, List, Optional, Union

import torch
from allennlp.common import Lazy
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models.model import Model
from allennlp.modules import Seq2SeqEncoder, TextFieldEmbedder
from allennlp.modules.conditional_random_field import ConditionalRandomField
from allennlp.modules.conditional_random_field.conditional_random_field import allowed_transitions
from allennlp.nn import InitializerApplicator
from allennlp.training.metrics import CategoricalAccuracy

from bitcode_allennlp.common.checks import check_choice
from bitcode_allennlp.model.code_head import CodeHead
from bitcode_allennlp.model.hashing_model import Decoding, HashingModel, View
from bitcode_allennlp.modules.hash_loss import ContrastiveHashLoss
from bitcode_allennlp.structs.viterbi import paths_to_lists, viterbi_decode
from bitcode_allennlp.training.metrics.span_f1 import DistributedSpanF1


@Model.register("hash_crf_tagger")
class HashCrfTagger(HashingModel):
    """
    Linear-chain CRF tagger over an encoder that may be the hash layer, trained with the contrastive hash loss.

    Registered as a `Model` with name "hash_crf_tagger".

    # Parameters

    vocab, text_field_embedder, encoder, hash_loss, beta, two_views
        As in `HashingModel` (β: paper POS 0.05, NER 0.005).
    code_head : `Lazy[CodeHead]`, optional (default = `None`)
        Beyond the paper: a code-reading head (`model/code_head.py`, e.g. `{"type": "mlp", "weight": 1}`), trained
        on the gold tags of the first view, its cross-entropy normalised as `task_loss`; built with K and the tag
        count. It pushes the task into the bits (what it gains: REPRODUCTION.md). Not used for prediction;
        `code_head_accuracy` reports how well the bits alone predict the tags. Config variables `CODE_HEAD` (the
        weight; 0: no head), `CODE_HEAD_DIM`.
    label_namespace : `str`, optional (default = `"labels"`)
    label_encoding : `str`, optional (default = `None`)
        "BIOUL", "BIO", "IOB1" or "BMES": constrains CRF transitions and reports span F1 (NER). `None`: no
        constraint, accuracy only (POS).
    dropout : `float`, optional (default = `0.0`)
        Dropout on the encoder output before the tag projection.
    task_loss : `str`, optional (default = `"mean"`)
        How the CRF negative log-likelihoods of the sentences of a batch are combined: "mean" (over sentences),
        "sum", or "word" (summed, divided by the words of the batch; per-word like the hash loss, which sets what
        β weighs against).
    training_metrics : `bool`, optional (default = `True`)
        Whether training forwards decode (Viterbi) to report training `accuracy` (and span F1). `False` skips
        decoding in training mode: the output then has no `tags`, and `get_metrics` in training mode leaves out
        `accuracy` and the span F1 keys (the loss, hash loss, code metrics and `code_head_accuracy` need no
        decoding and stay). Evaluation and prediction (eval mode) always decode, so dev metrics are exact either
        way. The default keeps the training metrics (decoding is batched and cheap beside a forward pass of the
        hashing model); `False` saves the decoding time of the small validation-stage model's training steps.
        Config variable `TRAINING_METRICS`.
    initializer : `InitializerApplicator`, optional
    """

    default_predictor = "hash_tagger"

    def __init__(
        self,
        vocab: Vocabulary,
        text_field_embedder: TextFieldEmbedder,
        encoder: Lazy[Seq2SeqEncoder],
        hash_loss: Optional[ContrastiveHashLoss] = None,
        beta: float = 0.0,
        two_views: bool = True,
        code_head: Optional[Lazy[CodeHead]] = None,
        label_namespace: str = "labels",
        label_encoding: Optional[str] = None,
        dropout: float = 0.0,
        task_loss: str = "mean",
        training_metrics: bool = True,
        initializer: InitializerApplicator = InitializerApplicator(),
        **kwargs,
    ) -> None:
        super().__init__(vocab, text_field_embedder, encoder, hash_loss, beta, two_views, **kwargs)
        check_choice("task_loss", task_loss, ("mean", "sum", "word"))
        self.label_namespace = label_namespace
        self.label_encoding = label_encoding
        self.task_loss = task_loss
        self.training_metrics = training_metrics
        self.num_tags = vocab.get_vocab_size(label_namespace)
        self.dropout = torch.nn.Dropout(dropout)
        self.tag_projection = torch.nn.Linear(self.encoder.get_output_dim(), self.num_tags)

        constraints = None
        if label_encoding is not None:
            labels = vocab.get_index_to_token_vocabulary(label_namespace)
            constraints = allowed_transitions(label_encoding, labels)
        self.crf = ConditionalRandomField(self.num_tags, constraints, include_start_end_transitions=True)
        self._add_code_head(code_head, label_namespace)

        self.accuracy = CategoricalAccuracy()
        self.span_f1 = (
            DistributedSpanF1(vocab, tag_namespace=label_namespace, label_encoding=label_encoding)
            if label_encoding is not None else None
        )
        initializer(self)

    def _view(self, tokens: TextFieldTensors, mask: torch.BoolTensor, embedded: Optional[torch.Tensor] = None) -> View:
        """One forward pass: tag logits (batch, words, tags) as `scores`, ego-attention scores (batch, words, K) or
        None as `hash_scores`."""
        encoded, scores, cut_scores = self.encode(tokens, mask, embedded)  # (batch, words, d), (batch, words, K) x2
        logits = self.tag_projection(self.dropout(encoded))  # (batch, words, tags)
        return View(scores=logits, hash_scores=scores, cut_scores=cut_scores)

    def _scores_output(self, view: View) -> Dict[str, Any]:
        return {"logits": view.scores}

    def _loss_divisor(self, mask: torch.BoolTensor) -> Union[int, torch.Tensor]:
        """`task_loss`: "mean" divides by the sentences, "word" by the words of the batch, "sum" by 1."""
        if self.task_loss == "mean":
            return mask.shape[0]
        if self.task_loss == "word":
            return mask.sum().clamp(min=1)
        return 1

    def _crf_loss(self, logits: torch.Tensor, tags: torch.LongTensor, mask: torch.BoolTensor) -> torch.Tensor:
        summed = -self.crf(logits, tags, mask)  # crf: log-likelihood summed over sentences
        return summed / self._loss_divisor(mask)

    def _task_loss(self, view: View, tags: torch.LongTensor, mask: torch.BoolTensor) -> torch.Tensor:
        return self._crf_loss(view.scores, tags, mask)

    def decode(self, logits: torch.Tensor, mask: torch.BoolTensor) -> torch.LongTensor:
        """Viterbi paths (batch, words) of the CRF, batched (`structs.viterbi`), as `self.crf.viterbi_tags`;
        0 at padding."""
        crf = self.crf
        start_end = crf.include_start_end_transitions
        paths, _ = viterbi_decode(logits, mask, crf.transitions, crf.start_transitions if start_end else None,
                                  crf.end_transitions if start_end else None, crf._constraint_mask)
        return paths  # type: ignore[return-value]

    def _decode_view(self, view: View, mask: torch.BoolTensor, metadata: Optional[List[Dict[str, Any]]]) -> Decoding:
        """`tags`: the Viterbi paths (`decode`) of the view's logits as one list of tag ids per sentence."""
        paths = self.decode(view.scores, mask)  # (batch, words)
        return Decoding(output={"tags": paths_to_lists(paths, mask)}, predicted=paths)

    def _update_metrics(self, view: View, decoding: Decoding, tags: Optional[torch.LongTensor],
                        mask: torch.BoolTensor, metadata: Optional[List[Dict[str, Any]]]) -> None:
        """Accuracy (and span F1) of the Viterbi paths against the gold tags, when there are any."""
        if tags is None:
            return
        paths = decoding.predicted  # (batch, words)
        one_hot = torch.zeros_like(view.scores).scatter_(2, paths.unsqueeze(2), 1.0)  # (batch, words, tags)
        self.accuracy(one_hot, tags, mask)
        if self.span_f1 is not None:
            self.span_f1(one_hot, tags, mask)

    def _decoded_metrics(self, reset: bool) -> Dict[str, float]:
        metrics = {"accuracy": self.accuracy.get_metric(reset=reset)}
        if self.span_f1 is not None:
            span = self.span_f1.get_metric(reset=reset)
            metrics.update({k: v for k, v in span.items() if k.endswith("-overall")})
        return metrics

    def _human_readable(self, output: Dict[str, Any]) -> None:
        """Tag ids → tag strings."""
        labels = self.vocab.get_index_to_token_vocabulary(self.label_namespace)  # id → tag, looked up directly
        output["tags"] = [[labels[t] for t in path] for path in output["tags"]]

    def forward(  # type: ignore
        self,
        tokens: TextFieldTensors,
        tags: Optional[torch.LongTensor] = None,
        metadata: Optional[List[Dict[str, Any]]] = None,
        **kwargs,
    ) -> Dict[str, Any]:
        """
        `HashingModel.task_forward` with the gold tags as the gold and the code-reading head's labels.

        # Parameters

        tokens : `TextFieldTensors`
            The words, as indexed by the text field's indexers.
        tags : `torch.LongTensor`, optional (default = `None`)
            `(batch, words)` gold tag ids.
        metadata : `List[Dict[str, Any]]`, optional (default = `None`)
            One dict per sentence with at least `"words"` (needed by the hash loss for word identities).

        # Returns

        `logits` (batch, words, tags), `mask`, `loss` (and `hash_loss`) when tags are given, with a hash layer
        `codes` (batch, words) int64 (bit i = head i, head 0 most significant), `words` with metadata, and `tags`
        (Viterbi paths, one list of tag ids per sentence; left out in training forwards when `training_metrics`
        is false).
        """
        return self.task_forward(tokens, tags, metadata, word_labels=tags)

"""The CRF tagger of both stages (POS, NER): words → embedder → encoder → linear → CRF, Viterbi decoding.

Hashing stage (paper §3.2, Eq. 10): embedder = PLM with sub-tokens averaged per word
(`pretrained_transformer_mismatched`), encoder = `hash_transformer`, and in training two forward passes with
independent dropout, L = L_task1 + L_task2 + β·(L_hash(s1, s2) + L_hash(s2, s1)) (`HashingModel`).
Validation stage (§3.3): the same class with a `binary_code` embedder, a plain one-layer transformer, β = 0.
Outputs carry each word's code (int and hex) for predictors and re-annotation.
"""
from typing import Any, Dict, List, Optional, Tuple, cast

import torch
from allennlp.common import Lazy
from allennlp.common.checks import ConfigurationError
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models.model import Model
from allennlp.modules import Seq2SeqEncoder, TextFieldEmbedder
from allennlp.modules.conditional_random_field import ConditionalRandomField
from allennlp.modules.conditional_random_field.conditional_random_field import allowed_transitions
from allennlp.nn import InitializerApplicator, util
from allennlp.training.metrics import CategoricalAccuracy

from bitcode_allennlp.common.hashing_model import HashingModel
from bitcode_allennlp.modules.hash_loss import ContrastiveHashLoss
from bitcode_allennlp.training.metrics.span_f1 import DistributedSpanF1


@Model.register("hash_crf_tagger")
class HashCrfTagger(HashingModel):
    """
    Linear-chain CRF tagger over an encoder that may be the hash layer, trained with the contrastive hash loss.

    Registered as a `Model` with name "hash_crf_tagger".

    # Parameters

    vocab, text_field_embedder, encoder, hash_loss, beta, two_views
        As in `HashingModel` (β: paper POS 0.05, NER 0.005).
    label_namespace : `str`, optional (default = `"labels"`)
    label_encoding : `str`, optional (default = `None`)
        "BIOUL", "BIO", "IOB1" or "BMES": constrains CRF transitions and reports span F1 (NER). `None`: no
        constraint, accuracy only (POS).
    dropout : `float`, optional (default = `0.0`)
        Dropout on the encoder output before the tag projection.
    task_loss : `str`, optional (default = `"mean"`)
        How the CRF negative log-likelihoods of the sentences of a batch are combined: "mean" or "sum".
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
        two_views: Optional[bool] = None,
        label_namespace: str = "labels",
        label_encoding: Optional[str] = None,
        dropout: float = 0.0,
        task_loss: str = "mean",
        initializer: InitializerApplicator = InitializerApplicator(),
        **kwargs,
    ) -> None:
        super().__init__(vocab, text_field_embedder, encoder, hash_loss, beta, two_views, **kwargs)
        if task_loss not in ("mean", "sum"):
            raise ConfigurationError(f"task_loss must be 'mean' or 'sum', got {task_loss!r}")
        self.label_namespace = label_namespace
        self.label_encoding = label_encoding
        self.task_loss = task_loss
        self.num_tags = vocab.get_vocab_size(label_namespace)
        self.dropout = torch.nn.Dropout(dropout)
        self.tag_projection = torch.nn.Linear(self.encoder.get_output_dim(), self.num_tags)

        constraints = None
        if label_encoding is not None:
            labels = vocab.get_index_to_token_vocabulary(label_namespace)
            constraints = allowed_transitions(label_encoding, labels)
        self.crf = ConditionalRandomField(self.num_tags, constraints, include_start_end_transitions=True)

        self.accuracy = CategoricalAccuracy()
        self.span_f1 = (
            DistributedSpanF1(vocab, tag_namespace=label_namespace, label_encoding=label_encoding)
            if label_encoding is not None else None
        )
        initializer(self)

    def _view(self, tokens: TextFieldTensors, mask: torch.BoolTensor) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """One forward pass: tag logits (batch, words, tags) and ego-attention scores (batch, words, K) or None."""
        encoded, scores = self.encode(tokens, mask)  # (batch, words, d), (batch, words, K)
        logits = self.tag_projection(self.dropout(encoded))  # (batch, words, tags)
        return logits, scores

    def _crf_loss(self, logits: torch.Tensor, tags: torch.LongTensor, mask: torch.BoolTensor) -> torch.Tensor:
        log_likelihood = self.crf(logits, tags, mask)  # summed over sentences
        return -log_likelihood / logits.shape[0] if self.task_loss == "mean" else -log_likelihood

    def forward(  # type: ignore
        self,
        tokens: TextFieldTensors,
        tags: Optional[torch.LongTensor] = None,
        metadata: Optional[List[Dict[str, Any]]] = None,
        **kwargs,
    ) -> Dict[str, Any]:
        """
        # Parameters
        tokens : the words, as indexed by the text field's indexers.
        tags : `(batch, words)` gold tag ids, optional.
        metadata : one dict per sentence with at least `"words"` (needed by the hash loss for word identities).

        # Returns
        `logits` (batch, words, tags), `mask`, `tags` (Viterbi paths), `loss` (and `hash_loss`) when tags are
        given, and with a hash layer `codes` (batch, words) int64 (bit i = head i, head 0 most significant).
        """
        mask = util.get_text_field_mask(tokens)  # (batch, words)
        logits, scores = self._view(tokens, mask)  # (batch, words, tags), (batch, words, K)
        output: Dict[str, Any] = {"logits": logits, "mask": mask}

        if tags is not None:
            loss = self._crf_loss(logits, tags, mask)
            if self.train_second_view():
                logits2, scores2 = self._view(tokens, mask)  # second dropout view
                loss = loss + self._crf_loss(logits2, tags, mask)
                if self.beta > 0:
                    output["hash_loss"] = self.hash_loss_of_views(scores, scores2, metadata, mask)
                    loss = loss + self.beta * output["hash_loss"]
            output["loss"] = loss

        predicted = cast(List[List[int]], [path for path, _ in self.crf.viterbi_tags(logits, mask)])
        output["tags"] = predicted
        self.add_codes(output, scores, mask, tags)
        if metadata is not None:
            output["words"] = [m["words"] for m in metadata]

        if tags is not None:
            one_hot = torch.zeros_like(logits)  # (batch, words, tags)
            for i, path in enumerate(predicted):
                one_hot[i, torch.arange(len(path)), torch.tensor(path, dtype=torch.long)] = 1
            self.accuracy(one_hot, tags, mask)
            if self.span_f1 is not None:
                self.span_f1(one_hot, tags, mask)
        return output

    def make_output_human_readable(self, output_dict: Dict[str, Any]) -> Dict[str, Any]:
        """Tag ids → tag strings; codes → per-word hex strings (padding removed)."""
        output_dict["tags"] = [
            [self.vocab.get_token_from_index(t, namespace=self.label_namespace) for t in path]
            for path in output_dict["tags"]
        ]
        self.add_code_hex(output_dict)
        return output_dict

    def get_metrics(self, reset: bool = False) -> Dict[str, float]:
        metrics = {"accuracy": self.accuracy.get_metric(reset=reset)}
        if self.span_f1 is not None:
            span = self.span_f1.get_metric(reset=reset)
            metrics.update({k: v for k, v in span.items() if k.endswith("-overall")})
        metrics.update(self.hashing_metrics(reset))
        return metrics

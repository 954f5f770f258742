"""The CRF tagger of both stages (POS, NER): words → embedder → encoder → linear → CRF, Viterbi decoding.

Hashing stage (paper §3.2, Eq. 10): embedder = PLM with sub-tokens averaged per word
(`pretrained_transformer_mismatched`), encoder = `hash_transformer`, and in training two forward passes with
independent dropout, L = L_task1 + L_task2 + β·(L_hash(s1, s2) + L_hash(s2, s1)).
Validation stage (§3.3): the same class with a `binary_code` embedder, a plain one-layer transformer, β = 0.
Outputs carry each word's code (int and hex) for predictors and re-annotation.
"""
import hashlib
import logging
from functools import lru_cache
from typing import Any, Dict, List, Optional, Tuple, cast

import torch
from allennlp.common import Lazy
from allennlp.common.checks import ConfigurationError, check_dimensions_match
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models.model import Model
from allennlp.modules import Seq2SeqEncoder, TextFieldEmbedder
from allennlp.modules.conditional_random_field import ConditionalRandomField
from allennlp.modules.conditional_random_field.conditional_random_field import allowed_transitions
from allennlp.nn import InitializerApplicator, util
from allennlp.training.metrics import Average, CategoricalAccuracy

from bitcode_allennlp.codes import bits_to_ints, ints_to_hex, scores_to_bits
from bitcode_allennlp.modules.hash_loss import ContrastiveHashLoss
from bitcode_allennlp.modules.hash_transformer import HashTransformerEncoder
from bitcode_allennlp.training.metrics.code_metrics import CodeMetrics
from bitcode_allennlp.training.metrics.span_f1 import DistributedSpanF1

logger = logging.getLogger(__name__)


@lru_cache(maxsize=2 ** 20)
def word_identity(word: str) -> int:
    """A stable 63-bit id of a word string: equal strings, equal ids, in every process (unlike `hash`)."""
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little") >> 1


@Model.register("hash_crf_tagger")
class HashCrfTagger(Model):
    """
    Linear-chain CRF tagger over an encoder that may be the hash layer, trained with the contrastive hash loss.

    Registered as a `Model` with name "hash_crf_tagger".

    # Parameters

    vocab : `Vocabulary`
    text_field_embedder : `TextFieldEmbedder`
        Gives one vector per word: `pretrained_transformer_mismatched` (hashing stage) or `binary_code`
        (validation stage).
    encoder : `Lazy[Seq2SeqEncoder]`
        `hash_transformer` in the hashing stage; any encoder (e.g. a one-layer `pytorch_transformer`) otherwise.
        Built with `input_dim` = the embedder's output size, so configs need not repeat the PLM's hidden size.
        Codes and the hash loss need a `HashTransformerEncoder`.
    hash_loss : `ContrastiveHashLoss`, optional (default = `None`)
        The contrastive hashing loss; `None` means the default ("contrastive_hash", τ = 0.1, cos_sign, hash)
        when `beta > 0`.
    beta : `float`, optional (default = `0.0`)
        β of Eq. 10 (paper: POS 0.05, NER 0.005). 0 trains a plain baseline.
    two_views : `bool`, optional (default = `None`)
        Run two forward passes with independent dropout in training and add both task losses. `None` means
        "when beta > 0". A β = 0 baseline with `two_views: true` costs the same as the hashing model.
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
        super().__init__(vocab, **kwargs)
        encoder = encoder.construct(input_dim=text_field_embedder.get_output_dim())
        check_dimensions_match(
            text_field_embedder.get_output_dim(), encoder.get_input_dim(),
            "text field embedding dim", "encoder input dim",
        )
        if beta < 0:
            raise ConfigurationError(f"beta must be >= 0, got {beta}")
        if beta > 0 and not isinstance(encoder, HashTransformerEncoder):
            raise ConfigurationError("beta > 0 needs a 'hash_transformer' encoder (the hash loss reads its "
                                     f"ego-attention scores), got {type(encoder).__name__}")
        if task_loss not in ("mean", "sum"):
            raise ConfigurationError(f"task_loss must be 'mean' or 'sum', got {task_loss!r}")
        self.text_field_embedder = text_field_embedder
        self.encoder = encoder
        self.beta = beta
        self.hash_loss = hash_loss if hash_loss is not None else ContrastiveHashLoss()
        self.two_views = beta > 0 if two_views is None else two_views
        if beta > 0 and not self.two_views:
            raise ConfigurationError("beta > 0 needs two_views (the hash loss contrasts two dropout views)")
        self.label_namespace = label_namespace
        self.label_encoding = label_encoding
        self.task_loss = task_loss
        self.num_tags = vocab.get_vocab_size(label_namespace)
        self.dropout = torch.nn.Dropout(dropout)
        self.tag_projection = torch.nn.Linear(encoder.get_output_dim(), self.num_tags)

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
        self.num_bits = encoder.num_bits if isinstance(encoder, HashTransformerEncoder) else None
        self.code_metrics = CodeMetrics() if self.num_bits is not None else None
        self.mean_hash_loss = Average()
        initializer(self)

    def _view(self, tokens: TextFieldTensors, mask: torch.BoolTensor) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """One forward pass: tag logits (batch, words, tags) and ego-attention scores (batch, words, K) or None."""
        embedded = self.text_field_embedder(tokens)  # (batch, words, d)
        if isinstance(self.encoder, HashTransformerEncoder):
            encoded, scores = self.encoder.forward_with_scores(embedded, mask)  # (batch, words, d), (batch, words, K)
        else:
            encoded, scores = self.encoder(embedded, mask), None  # (batch, words, d)
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
        `logits` (batch, words, tags), `mask`, `tags` (Viterbi paths), `loss` when tags are given, and with a
        hash layer `codes` (batch, words) int64 (bit i = head i, head 0 most significant) and `code_hex`.
        """
        mask = util.get_text_field_mask(tokens)  # (batch, words)
        logits, scores = self._view(tokens, mask)  # (batch, words, tags), (batch, words, K)
        output: Dict[str, Any] = {"logits": logits, "mask": mask}

        if tags is not None:
            loss = self._crf_loss(logits, tags, mask)
            if self.training and self.two_views:
                logits2, scores2 = self._view(tokens, mask)  # second dropout view
                loss = loss + self._crf_loss(logits2, tags, mask)
                if self.beta > 0:
                    hash_loss = self.hash_loss.symmetric(
                        scores[mask], scores2[mask], self._word_ids(metadata, mask)[mask]  # (words, K), (words,)
                    )
                    output["hash_loss"] = hash_loss
                    self.mean_hash_loss(hash_loss.detach())
                    loss = loss + self.beta * hash_loss
            output["loss"] = loss

        best_paths = self.crf.viterbi_tags(logits, mask)
        predicted = cast(List[List[int]], [path for path, _ in best_paths])
        output["tags"] = predicted
        if scores is not None:
            bits = scores_to_bits(scores.detach())  # (batch, words, K)
            output["codes"] = bits_to_ints(bits)  # (batch, words)
        if metadata is not None:
            output["words"] = [m["words"] for m in metadata]

        if tags is not None:
            one_hot = torch.zeros_like(logits)  # (batch, words, tags)
            for i, path in enumerate(predicted):
                one_hot[i, torch.arange(len(path)), torch.tensor(path, dtype=torch.long)] = 1
            self.accuracy(one_hot, tags, mask)
            if self.span_f1 is not None:
                self.span_f1(one_hot, tags, mask)
            if self.code_metrics is not None:
                self.code_metrics(bits, tags, mask)
        return output

    def _word_ids(self, metadata: Optional[List[Dict[str, Any]]], mask: torch.BoolTensor) -> torch.LongTensor:
        if metadata is None or any("words" not in m for m in metadata):
            raise ConfigurationError("the hash loss needs metadata with 'words' (word identities, §2.2); "
                                     "use one of bitcode_allennlp's dataset readers")
        ids = torch.zeros(mask.shape, dtype=torch.long)  # (batch, words)
        for i, m in enumerate(metadata):
            ids[i, : len(m["words"])] = torch.tensor([word_identity(w) for w in m["words"]], dtype=torch.long)
        return ids.to(mask.device)

    def make_output_human_readable(self, output_dict: Dict[str, Any]) -> Dict[str, Any]:
        """Tag ids → tag strings; codes → per-word hex strings (padding removed)."""
        lengths = output_dict["mask"].sum(dim=-1).tolist()
        output_dict["tags"] = [
            [self.vocab.get_token_from_index(t, namespace=self.label_namespace) for t in path]
            for path in output_dict["tags"]
        ]
        if "codes" in output_dict:
            codes = output_dict["codes"]
            output_dict["code_hex"] = [
                ints_to_hex(codes[i, :n], self.num_bits) for i, n in enumerate(lengths)
            ]
        return output_dict

    def get_metrics(self, reset: bool = False) -> Dict[str, float]:
        metrics = {"accuracy": self.accuracy.get_metric(reset=reset)}
        if self.span_f1 is not None:
            span = self.span_f1.get_metric(reset=reset)
            metrics.update({k: v for k, v in span.items() if k.endswith("-overall")})
        if self.code_metrics is not None:
            metrics.update(self.code_metrics.get_metric(reset=reset))
        if self.training and self.beta > 0:
            metrics["hash_loss"] = self.mean_hash_loss.get_metric(reset=reset)
        return metrics

    default_predictor = "hash_tagger"

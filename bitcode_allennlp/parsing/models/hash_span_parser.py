"""The CRF constituency parser of both stages (paper §3.2, Zhang et al. 2020), on top of `HashingModel`.

words → embedder → encoder (hash layer in the hashing stage) → fencepost (boundary) vectors → biaffine span
scorer (span existence) + biaffine label scorer; training: tree CRF loss (`structs.tree_crf_loss`) + label
cross-entropy on the gold spans of the binarized tree (`ptb_spans` reader), two views and β·L_hash as the tagger
(`HashingModel.task_forward` runs the steps; this class defines the view, the task loss and the decoding), and
optionally, beyond the paper, a code-reading head (`model/code_head.py`) trained on the gold POS tags of the
preterminals, and a span code-reading head (`span_code_head.py`) trained on the gold trees' spans; decoding
(`_decode_view`, eval mode only): CKY (`structs.cky`), a label per span,
`structs.binarization.build` back to an n-ary tree; EVALB F1 of those trees (`_update_metrics`).
"""
from typing import Any, Dict, List, NamedTuple, Optional, Tuple, Union

import torch
from allennlp.common import Lazy
from allennlp.common.checks import ConfigurationError
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models.model import Model
from allennlp.modules import Seq2SeqEncoder, TextFieldEmbedder
from allennlp.nn import InitializerApplicator, util
from nltk import Tree

from bitcode_allennlp.common.checks import check_choice
from bitcode_allennlp.model.code_head import CodeHead
from bitcode_allennlp.model.hashing_model import Decoding, HashingModel, View
from bitcode_allennlp.modules.hash_loss import ContrastiveHashLoss
from bitcode_allennlp.parsing.dataset_readers.ptb_spans import POS_TAG_NAMESPACE
from bitcode_allennlp.parsing.metrics.evalb import EvalbF1
from bitcode_allennlp.parsing.models.span_code_head import SpanCodeHead
from bitcode_allennlp.parsing.models.span_layers import MLP, Biaffine, fenceposts
from bitcode_allennlp.structs.binarization import build
from bitcode_allennlp.structs.trees import tree_to_string
from bitcode_allennlp.structs.tree_crf import cky, gold_chart, tree_crf_loss


class SpanScores(NamedTuple):
    """The parser's task scores of one view (`View.scores`), over fenceposts 0..n."""

    span: torch.Tensor  # (batch, n+1, n+1): span existence
    label: torch.Tensor  # (batch, n+1, n+1, labels): a label per span


def span_labels_of(label_ids: torch.Tensor, trees: List[List[Tuple[int, int]]]) -> List[List[int]]:
    """The label id of every span of every tree, `label_ids[b, i, j]`, gathered in one indexing (no per-span
    tensor access)."""
    flat = [(b, i, j) for b, tree in enumerate(trees) for i, j in tree]
    if not flat:
        return [[] for _ in trees]
    index = torch.tensor(flat, dtype=torch.long, device=label_ids.device)  # (spans, 3)
    ids = label_ids[index[:, 0], index[:, 1], index[:, 2]].tolist()  # (spans,)
    out, start = [], 0
    for tree in trees:
        out.append(ids[start:start + len(tree)])
        start += len(tree)
    return out


@Model.register("hash_span_parser")
class HashSpanParser(HashingModel):
    """
    Biaffine span parser with a tree CRF over binarized trees, CKY decoding and EVALB F1.

    Fencepost k (0 ≤ k ≤ n, between word k−1 and word k) is represented from the encoder outputs h with a learned
    boundary vector at each end (h_{-1} = BOS, h_n = EOS): `"split"` concatenates the first half of h_{k−1} and the
    second half of h_k (Zhang et al.'s forward/backward halves); `"left"` uses h_{k−1} alone, so a span (i, j)
    reads only words < j — the incremental (causal) variant, with a causal PLM and `causal: true` hash layer.

    Registered as a `Model` with name "hash_span_parser".

    # Parameters

    vocab, text_field_embedder, encoder, hash_loss, beta, two_views
        As in `HashingModel` (paper: β = 0.001 for parsing).
    code_head : `Lazy[CodeHead]`, optional (default = `None`)
        Beyond the paper: a code-reading head (`model/code_head.py`, e.g. `{"type": "mlp", "weight": 1}`) trained on
        the gold POS tags of the tree's preterminals (the `tags` field of `ptb_spans` with `tag_field: true`,
        namespace `"pos_tags"`), on the first view, its cross-entropy divided as `task_loss`; built with K and the
        tag count. A batch without tags skips it; a vocabulary without POS tags (a reader without `tag_field`) is a
        `ConfigurationError` here. `code_head_accuracy` is reported. Config variables `CODE_HEAD` (the weight; 0: no
        head), `CODE_HEAD_DIM`.
    code_span_head : `Lazy[SpanCodeHead]`, optional (default = `None`)
        Beyond the paper: a span code-reading head (`span_code_head.py`, e.g. `{"weight": 1, "hidden_dim": 256}`)
        that scores unlabelled spans from the codes alone, trained with the tree CRF loss on the gold spans, on the
        first view, divided as `task_loss`; built with K and `boundary`. It needs a hash layer (a
        `ConfigurationError` otherwise). `code_span_head_loss` is reported. Config variables `CODE_SPAN_HEAD` (the
        weight; 0: no head), `CODE_SPAN_HEAD_DIM`.
    span_mlp_dim : `int`, optional (default = `500`)
    label_mlp_dim : `int`, optional (default = `100`)
    mlp_dropout : `float`, optional (default = `0.33`)
    dropout : `float`, optional (default = `0.0`)
        Dropout on the encoder output.
    boundary : `str`, optional (default = `None`)
        "split" or "left"; `None` means "left" when the encoder is not bidirectional, else "split".
    label_namespace : `str`, optional (default = `"span_labels"`)
    task_loss : `str`, optional (default = `"mean"`)
        Tree CRF and label losses summed per sentence, then averaged over sentences ("mean") or summed ("sum").
    initializer : `InitializerApplicator`, optional
    """

    default_predictor = "hash_parser"
    codes_have_labels = False  # words carry no gold label here; code metrics are distinctness and bit statistics
    training_metrics = False  # training forwards do not decode: no CKY, no trees, no EVALB in training
    word_labels_source = ("the parser's code_head reads the gold POS tags of the trees: read them with the "
                          "'ptb_spans' reader's tag_field: true (the configs set it when CODE_HEAD > 0)")

    def __init__(
        self,
        vocab: Vocabulary,
        text_field_embedder: TextFieldEmbedder,
        encoder: Lazy[Seq2SeqEncoder],
        hash_loss: Optional[ContrastiveHashLoss] = None,
        beta: float = 0.0,
        two_views: bool = True,
        code_head: Optional[Lazy[CodeHead]] = None,
        code_span_head: Optional[Lazy[SpanCodeHead]] = None,
        span_mlp_dim: int = 500,
        label_mlp_dim: int = 100,
        mlp_dropout: float = 0.33,
        dropout: float = 0.0,
        boundary: Optional[str] = None,
        label_namespace: str = "span_labels",
        task_loss: str = "mean",
        initializer: InitializerApplicator = InitializerApplicator(),
        **kwargs,
    ) -> None:
        super().__init__(vocab, text_field_embedder, encoder, hash_loss, beta, two_views, **kwargs)
        boundary = boundary or ("split" if self.encoder.is_bidirectional() else "left")
        check_choice("boundary", boundary, ("split", "left"))
        check_choice("task_loss", task_loss, ("mean", "sum"))
        if vocab.get_vocab_size(label_namespace) == 0:
            raise ConfigurationError(f"the vocabulary has no {label_namespace!r} labels: read a 'ptb_spans' corpus")
        self.boundary = boundary
        self.label_namespace = label_namespace
        self.task_loss = task_loss
        dim = self.encoder.get_output_dim()
        self.bos = torch.nn.Parameter(torch.randn(dim) * 0.02)
        # EOS is read only by "split" fenceposts (the right half of fencepost n); "left" never looks past a word.
        self.eos = torch.nn.Parameter(torch.randn(dim) * 0.02) if boundary == "split" else None
        self.dropout = torch.nn.Dropout(dropout)
        self.span_left, self.span_right = MLP(dim, span_mlp_dim, mlp_dropout), MLP(dim, span_mlp_dim, mlp_dropout)
        self.label_left, self.label_right = MLP(dim, label_mlp_dim, mlp_dropout), MLP(dim, label_mlp_dim, mlp_dropout)
        self.span_attention = Biaffine(span_mlp_dim, 1, bias_x=True, bias_y=False)
        self.label_attention = Biaffine(label_mlp_dim, vocab.get_vocab_size(label_namespace))
        self._add_code_head(code_head, POS_TAG_NAMESPACE)
        self.code_span_head = self._span_code_head(code_span_head)
        self.evalb = EvalbF1()
        initializer(self)

    def _fenceposts(self, encoded: torch.Tensor, mask: torch.BoolTensor) -> torch.Tensor:
        """Fencepost vectors (batch, n+1, d) from word vectors (batch, n, d); EOS sits after each sentence's end."""
        return fenceposts(encoded, mask, self.boundary, self.bos, self.eos)  # (batch, n+1, d)

    def _span_code_head(self, code_span_head: Optional[Lazy[SpanCodeHead]]) -> Optional[SpanCodeHead]:
        """Builds the span code-reading head (`None`: none) with K and the parser's `boundary`; it needs codes."""
        if code_span_head is None:
            return None
        if self.num_bits is None:
            raise ConfigurationError(f"code_span_head reads the codes: it needs a 'hash_transformer' encoder, got "
                                     f"{type(self.encoder).__name__}")
        return code_span_head.construct(num_bits=self.num_bits, boundary=self.boundary)

    def _view(self, tokens: TextFieldTensors, mask: torch.BoolTensor, embedded: Optional[torch.Tensor] = None) -> View:
        """One forward pass: `SpanScores` (span (batch, n+1, n+1), label (batch, n+1, n+1, labels)) as `scores`,
        the ego-attention scores (batch, n, K) or None as `hash_scores`."""
        encoded, scores, cut_scores = self.encode(tokens, mask, embedded)  # (batch, n, d), (batch, n, K) x2
        fence = self._fenceposts(self.dropout(encoded), mask)  # (batch, n+1, d)
        span = self.span_attention(self.span_left(fence), self.span_right(fence)).squeeze(1)  # (batch, n+1, n+1)
        label = self.label_attention(self.label_left(fence), self.label_right(fence))  # (batch, L, n+1, n+1)
        label = label.permute(0, 2, 3, 1)  # (batch, n+1, n+1, L)
        return View(scores=SpanScores(span, label), hash_scores=scores, cut_scores=cut_scores)

    def _scores_output(self, view: View) -> Dict[str, Any]:
        return {"span_scores": view.scores.span}

    def _loss_divisor(self, mask: torch.BoolTensor) -> Union[int, torch.Tensor]:
        """`task_loss`: "mean" divides by the sentences of the batch, "sum" by 1."""
        return mask.shape[0] if self.task_loss == "mean" else 1

    def _task_loss(self, view: View, chart: torch.LongTensor, mask: torch.BoolTensor) -> torch.Tensor:
        """Tree CRF loss + label cross-entropy of the gold spans of `chart` (`gold_chart`), as `task_loss` says."""
        span, label = view.scores.span, view.scores.label  # (batch, n+1, n+1), (batch, n+1, n+1, L)
        gold = chart >= 0  # (batch, n+1, n+1)
        crf = tree_crf_loss(span, gold, mask.sum(dim=-1), reduction="sum")
        labels = torch.nn.functional.cross_entropy(label[gold], chart[gold], reduction="sum")  # over gold spans
        total = crf + labels
        return total / self._loss_divisor(mask)

    def _code_reading_loss(self, view: View, chart: torch.LongTensor, mask: torch.BoolTensor) -> Optional[torch.Tensor]:
        """The span code-reading head's weighted loss on the gold spans of `chart`, or None without the head."""
        if self.code_span_head is None:
            return None
        return self.code_span_head(view.hash_scores, chart, mask, self._loss_divisor(mask))

    def hashing_metrics(self, reset: bool) -> Dict[str, float]:
        """`HashingModel.hashing_metrics`, and `code_span_head_loss` with the span code-reading head."""
        metrics = super().hashing_metrics(reset)
        if self.code_span_head is not None:
            metrics["code_span_head_loss"] = self.code_span_head.get_metric(reset=reset)
        return metrics

    def _decode_view(self, view: View, mask: torch.BoolTensor, metadata: Optional[List[Dict[str, Any]]]) -> Decoding:
        """`spans` (per sentence, CKY's (i, j) fencepost spans), `span_label_ids` (each span's best label), and with
        metadata `nltk_trees` (built back to n-ary trees under `TOP`) and `trees` (the same as one-line PTB
        strings, also the `predicted` of the `Decoding`)."""
        span, label = view.scores.span, view.scores.label  # (batch, n+1, n+1), (batch, n+1, n+1, L)
        _, predicted = cky(span.detach(), mask.sum(dim=-1))
        label_ids = label.detach().argmax(dim=-1)  # (batch, n+1, n+1)
        output: Dict[str, Any] = {"spans": predicted, "span_label_ids": span_labels_of(label_ids, predicted)}
        if metadata is None:
            return Decoding(output=output, predicted=None)
        output["nltk_trees"] = self._trees(output, metadata)  # for predictors: words may contain brackets
        trees = output["trees"] = [tree_to_string(tree) for tree in output["nltk_trees"]]
        return Decoding(output=output, predicted=trees)

    def _trees(self, output: Dict[str, Any], metadata: List[Dict[str, Any]]) -> List[Tree]:
        trees = []
        for spans, ids, m in zip(output["spans"], output["span_label_ids"], metadata):
            labels = [self.vocab.get_token_from_index(i, namespace=self.label_namespace) for i in ids]
            trees.append(build(m["words"], [(i, j, lab) for (i, j), lab in zip(spans, labels)], m.get("pos_tags")))
        return trees

    def _update_metrics(self, view: View, decoding: Decoding, chart: Optional[torch.LongTensor],
                        mask: torch.BoolTensor, metadata: Optional[List[Dict[str, Any]]]) -> None:
        """EVALB of the decoded trees against the readers' gold trees (`gold_tree` in every sentence's
        metadata)."""
        if metadata is None:
            return
        gold = [m.get("gold_tree") for m in metadata]
        if all(g is not None for g in gold):
            self.evalb(decoding.predicted, gold)

    def _decoded_metrics(self, reset: bool) -> Dict[str, float]:
        return dict(self.evalb.get_metric(reset=reset))

    def forward(  # type: ignore
        self,
        tokens: TextFieldTensors,
        spans: Optional[torch.LongTensor] = None,
        span_labels: Optional[torch.LongTensor] = None,
        tags: Optional[torch.LongTensor] = None,
        metadata: Optional[List[Dict[str, Any]]] = None,
        **kwargs,
    ) -> Dict[str, Any]:
        """
        `HashingModel.task_forward` with the gold spans as a chart (`gold_chart`) for the gold and the POS tags
        for the code-reading head.

        # Parameters

        tokens : `TextFieldTensors`
            The words.
        spans : `torch.LongTensor`, optional (default = `None`)
            `(batch, 2n-1, 2)` gold binarized spans (inclusive ends).
        span_labels : `torch.LongTensor`, optional (default = `None`)
            Their label ids.
        tags : `torch.LongTensor`, optional (default = `None`)
            `(batch, n)` gold POS tag ids (`ptb_spans` with `tag_field: true`), read only by the code-reading head.
        metadata : `List[Dict[str, Any]]`, optional (default = `None`)
            `words`, `pos_tags` (for the built tree), `gold_tree` (for EVALB).

        # Returns

        `span_scores`, `mask`, `loss` with gold, with a hash layer `codes` (batch, words), `words` with metadata;
        in eval mode `spans` (per sentence, CKY's (i, j) fencepost spans), `span_label_ids`, and with metadata
        `nltk_trees` (`nltk.Tree`s under `TOP`) and `trees` (the same as one-line PTB strings).
        """
        chart = None  # (batch, n+1, n+1) label ids of the gold spans, -1 elsewhere
        if spans is not None and span_labels is not None:
            words = util.get_text_field_mask(tokens).shape[1]  # n, the batch's longest sentence
            chart = gold_chart(spans, span_labels, words)  # (batch, n+1, n+1)
        return self.task_forward(tokens, chart, metadata, word_labels=tags)

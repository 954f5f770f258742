"""The span code-reading head (beyond the paper): a small network that scores the parser's spans from the codes
alone and is trained with the tree CRF loss on the gold trees, so that the codes must carry constituency structure
(the word-level head, `model/code_head.py`, reads only the preterminals' POS tags).

Where this sits: `HashSpanParser` owns an optional `SpanCodeHead` (config key `code_span_head`, built lazily with
the model's K and fencepost `boundary`; config variables `CODE_SPAN_HEAD`, `CODE_SPAN_HEAD_DIM`) and adds its loss
on the first view whenever there is gold (`HashingModel._code_reading_loss`). It reads sign(s) as ±1 with the
word-level head's straight-through gradient (`straight_through_signs`), maps each word's code through an MLP, makes
fenceposts as the parser does (`span_layers.fenceposts`), scores unlabelled spans with a biaffine and takes the tree
CRF loss of the gold chart (`structs.tree_crf.tree_crf_loss`), divided as the parser's task loss and weighted. It is
never used for prediction; `code_span_head_loss` (the CRF loss per sentence, unweighted) is reported.
"""
from typing import Union

import torch
from allennlp.common import FromParams
from allennlp.training.metrics import Average

from bitcode_allennlp.common.checks import check_choice, check_range
from bitcode_allennlp.model.code_head import straight_through_signs
from bitcode_allennlp.parsing.models.span_layers import Biaffine, fenceposts
from bitcode_allennlp.structs.tree_crf import tree_crf_loss


class SpanCodeHead(torch.nn.Module, FromParams):
    """
    Codes as ±1 (batch, n, K) → MLP (K → `hidden_dim`, GELU) → fenceposts (batch, n+1, `hidden_dim`) → biaffine
    span scores (batch, n+1, n+1) → tree CRF loss of the gold (binarized, unlabelled) spans.

    # Parameters

    num_bits : `int`
        K, the bits of a code (given by the parser: configs leave it out).
    boundary : `str`
        The parser's fenceposts, "split" or "left" (given by the parser: configs leave it out).
    weight : `float`, optional (default = `1.0`)
        The head's loss is added to the parser's with this weight (> 0; config variable `CODE_SPAN_HEAD`, whose 0
        means no head).
    hidden_dim : `int`, optional (default = `256`)
        The size of each word's vector made from its code (config variable `CODE_SPAN_HEAD_DIM`).
    """

    def __init__(self, num_bits: int, boundary: str, weight: float = 1.0, hidden_dim: int = 256) -> None:
        super().__init__()
        check_range("code_span_head.weight", weight, 0, low_open=True)
        check_range("code_span_head.hidden_dim", hidden_dim, 1)
        check_choice("code_span_head.boundary", boundary, ("split", "left"))
        self.num_bits = num_bits
        self.boundary = boundary
        self.weight = weight
        self.words = torch.nn.Sequential(torch.nn.Linear(num_bits, hidden_dim), torch.nn.GELU())
        self.bos = torch.nn.Parameter(torch.randn(hidden_dim) * 0.02)  # (hidden,)
        self.eos = torch.nn.Parameter(torch.randn(hidden_dim) * 0.02) if boundary == "split" else None  # (hidden,)
        self.span_attention = Biaffine(hidden_dim, 1, bias_x=True, bias_y=False)
        # Not zero as the parser's: the codes get a gradient from the first step on.
        torch.nn.init.normal_(self.span_attention.weight, std=1.0 / hidden_dim)
        self.mean_loss = Average()

    def span_scores(self, scores: torch.Tensor, mask: torch.BoolTensor) -> torch.Tensor:
        """Span scores (batch, n+1, n+1) over fenceposts from the ego-attention scores `scores` (batch, n, K),
        through the codes sign(s) alone (straight-through gradient to `scores`)."""
        codes = straight_through_signs(scores, mask)  # (batch, n, K)
        fence = fenceposts(self.words(codes), mask, self.boundary, self.bos, self.eos)  # (batch, n+1, hidden)
        return self.span_attention(fence, fence).squeeze(1)  # (batch, n+1, n+1)

    def forward(self, scores: torch.Tensor, chart: torch.LongTensor, mask: torch.BoolTensor,
                divisor: Union[float, torch.Tensor] = 1.0) -> torch.Tensor:
        """
        The weighted loss of one view: `weight` · Σ_sentences tree CRF loss / `divisor` (the parser's task-loss
        divisor), of the span scores of `scores` (batch, n, K) against the gold spans of `chart` (batch, n+1, n+1;
        `gold_chart`: a label id at each gold span, -1 elsewhere); updates `code_span_head_loss`.
        """
        span = self.span_scores(scores, mask)  # (batch, n+1, n+1)
        summed = tree_crf_loss(span, chart >= 0, mask.sum(dim=-1), reduction="sum")  # ()
        self.mean_loss(summed.detach() / mask.shape[0])
        return self.weight * (summed / divisor)

    def get_metric(self, reset: bool = False) -> float:
        """`code_span_head_loss`: the tree CRF loss per sentence of the spans the codes alone score."""
        return self.mean_loss.get_metric(reset=reset)

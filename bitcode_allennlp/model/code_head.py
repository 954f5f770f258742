"""The code-reading head (beyond the paper): a small network trained to predict each word's gold label from its
code alone, so that the task is pushed into the bits.

Where this sits: `HashingModel` owns an optional `CodeHead` (config key `code_head`, built lazily with the model's K
and label count) and adds its loss once per training step, on the first dropout view, when the batch has per-word
gold labels (the tagger's tags; the parser's POS tags, from `ptb_spans` with `tag_field: true`). The head reads
sign(s_ii) as ±1 in the forward pass with a straight-through gradient (`straight_through_signs`); its cross-entropy
is divided as the task loss is, multiplied by `weight`, and its accuracy is reported as `code_head_accuracy`. It is
never used for prediction. What it does to the codes-only validation stage is measured in REPRODUCTION.md (UD EWT
POS and BTC NER, with and without the head).
"""
from typing import Union

import torch
from allennlp.common import Registrable
from allennlp.training.metrics import CategoricalAccuracy

from bitcode_allennlp.common.checks import check_choice, check_range

REACHES = ("plm", "hash_layer")
"""How far the code-reading head's gradient goes (`CodeHead`'s `reach`)."""


def straight_through_signs(scores: torch.Tensor, mask: torch.BoolTensor) -> torch.Tensor:
    """
    The code as ±1 in the forward pass (sign(s), 0 counts as -1 like bit 0) with the gradient of hardtanh on the
    standardised scores in the backward pass: c = clamp(s/σ, -1, 1) + (sign(s) - clamp(s/σ, -1, 1)).detach(), σ the
    standard deviation of the real words' scores (not differentiated), rather than an identity straight-through on
    the raw scores (why: docs/method.md, "Design decisions").
    """
    sigma = scores.detach()[mask].std().clamp(min=1e-6) if mask.sum() > 1 else scores.new_tensor(1.0)  # ()
    soft = (scores / sigma).clamp(-1.0, 1.0)  # (batch, words, K)
    hard = torch.where(scores > 0, torch.ones_like(scores), -torch.ones_like(scores))  # (batch, words, K)
    return soft + (hard - soft).detach()  # (batch, words, K)


class CodeHead(torch.nn.Module, Registrable):
    """
    Base class of code-reading heads: a subclass defines `read` (codes as ±1 → label logits); this class does the
    rest (straight-through signs, the weighted cross-entropy, the accuracy).

    # Parameters

    num_bits : `int`
        K, the bits of a code (given by the model: configs leave it out).
    num_labels : `int`
        The per-word labels (given by the model: the tagger's tags, the parser's POS tags).
    weight : `float`, optional (default = `1.0`)
        The head's loss is added to the model's with this weight (> 0; config variable `CODE_HEAD`, whose 0 means
        no head).
    reach : `str`, optional (default = `"plm"`)
        How far the head's gradient goes (`REACHES`; config variable `CODE_HEAD_REACH`): `"plm"`, through the hash
        layer into the PLM, like the task and hash losses; `"hash_layer"`, only into the hash layer's query and
        key projections: the head reads scores the model computes again from the hash layer's inputs cut from the
        graph (`View.cut_scores`), so the PLM is fit by the task and hash losses alone.

    Training-only bit flips on what the head reads (`bit_flip`, config variable `CODE_HEAD_FLIP`) were removed in
    0.3.0, measured no help (CHANGELOG.md); archives that name them load without them (`host/retired.py`).
    """

    default_implementation = "mlp"

    def __init__(self, num_bits: int, num_labels: int, weight: float = 1.0, reach: str = "plm") -> None:
        super().__init__()
        check_range("code_head.weight", weight, 0, low_open=True)
        check_choice("code_head.reach", reach, REACHES)
        self.num_bits = num_bits
        self.num_labels = num_labels
        self.weight = weight
        self.reach = reach
        self.accuracy = CategoricalAccuracy()

    def read(self, codes: torch.Tensor) -> torch.Tensor:
        """Label logits (batch, words, labels) from codes as ±1 (batch, words, K). Defined by each head."""
        raise NotImplementedError

    def forward(self, scores: torch.Tensor, labels: torch.LongTensor, mask: torch.BoolTensor,
                divisor: Union[float, torch.Tensor] = 1.0) -> torch.Tensor:
        """
        The weighted loss of one view: `weight` · Σ_words cross-entropy / `divisor` (the model's task-loss divisor:
        sentences, words or 1), on the ego-attention scores `scores` (batch, words, K) against `labels`
        (batch, words); updates `code_head_accuracy`.
        """
        codes = straight_through_signs(scores, mask)  # (batch, words, K)
        logits = self.read(codes)  # (batch, words, labels)
        self.accuracy(logits.detach(), labels, mask)
        summed = torch.nn.functional.cross_entropy(logits[mask], labels[mask], reduction="sum")  # ()
        return self.weight * (summed / divisor)

    def get_metric(self, reset: bool = False) -> float:
        """`code_head_accuracy`: how well the bits alone predict the labels (words the head read)."""
        return self.accuracy.get_metric(reset=reset)


@CodeHead.register("mlp")
class MlpCodeHead(CodeHead):
    """
    An MLP on the code: K → `hidden_dim` → labels, GELU between. Registered as a `CodeHead` with name "mlp" (the
    default).

    # Parameters

    num_bits, num_labels, weight, reach
        As in `CodeHead`.
    hidden_dim : `int`, optional (default = `256`)
        Hidden size (config variable `CODE_HEAD_DIM`).
    """

    def __init__(self, num_bits: int, num_labels: int, weight: float = 1.0, hidden_dim: int = 256,
                 reach: str = "plm") -> None:
        super().__init__(num_bits, num_labels, weight, reach)
        check_range("code_head.hidden_dim", hidden_dim, 1)
        self.layers = torch.nn.Sequential(torch.nn.Linear(num_bits, hidden_dim), torch.nn.GELU(),
                                          torch.nn.Linear(hidden_dim, num_labels))

    def read(self, codes: torch.Tensor) -> torch.Tensor:
        return self.layers(codes)  # (batch, words, labels)

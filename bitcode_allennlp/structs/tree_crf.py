"""Tree CRF over binary constituency trees: inside (log Z), marginals, CRF loss and CKY decoding.

Where this sits: the constituency parser of the hashing and validation stages (paper §4.2, following Zhang et al.
2020 and supar's ``ConstituencyCRF``) scores every span with a biaffine span classifier; this module turns those
span scores into the tree CRF loss (training) and the CKY argmax tree (decoding), and the readers' gold spans into
the target chart (``gold_chart``). Pure torch, no AllenNLP.

Conventions (the same as supar's ``ConstituencyCRF``):

* **fenceposts** -- a sentence of ``n`` words has fenceposts ``0..n``; span ``(i, j)``, ``0 <= i < j <= n``,
  covers words ``i..j-1``. ``scores: (batch, N+1, N+1)``, ``scores[b, i, j]`` is the score of span ``(i, j)``;
  only the upper triangle with ``j <= lengths[b]`` is read, everything else is ignored (and gets zero gradient).
* **trees** -- binary (CNF) trees over the words. A tree of a sentence of length ``n`` has ``2n - 1`` spans: the
  whole sentence ``(0, n)``, every single-word span ``(i, i + 1)`` and the ``n - 2`` internal ones. Its score
  is the sum of their scores; ``p(tree) = exp(score(tree) - log Z)``.
* **lengths** -- ``(batch,)`` integers, ``1 <= lengths[b] <= N``.
* **dtype** -- any floating dtype; float32 is fine for training, tests use float64. Scores inside each sentence
  must be finite.

Charts are kept as ``(N+1, N+1, batch)`` (batch last, like supar) and filled one span width at a time: the
``stripe`` views give, for all spans of width ``w`` at once, their ``w - 1`` left and right sub-spans, so there is
a Python loop over widths only. Memory is O(N^2) per sentence: the backward pass of ``inside`` is a hand-written
outside pass (reverse mode over the same stripes), not autograd through N in-place chart updates.
"""
from typing import List, Optional, Tuple

import torch

Span = Tuple[int, int]


def stripe(x: torch.Tensor, n: int, w: int, offset: Tuple[int, int] = (0, 0), horizontal: bool = True
           ) -> torch.Tensor:
    """
    A view of ``n`` diagonal stripes of width ``w`` of a contiguous chart ``x: (N+1, N+1, ...)``.

    Row ``r`` of the result is ``x[offset[0] + r, offset[1] + r : offset[1] + r + w]`` (horizontal) or
    ``x[offset[0] + r : offset[0] + r + w, offset[1] + r]`` (vertical). A view: in-place ops write into ``x``.
    """
    if not x.is_contiguous():
        raise ValueError("stripe needs a contiguous chart")
    size, numel = x.size(1), x.stride(1)  # numel: elements per chart cell
    return x.as_strided(size=(n, w, *x.shape[2:]),
                        stride=((size + 1) * numel, (1 if horizontal else size) * numel, *x.stride()[2:]),
                        storage_offset=x.storage_offset() + (offset[0] * size + offset[1]) * numel)  # (n, w, ...)


def _check(scores: torch.Tensor, lengths: torch.Tensor) -> int:
    """Validates shapes and lengths; returns the longest length."""
    if scores.dim() != 3 or scores.size(1) != scores.size(2):
        raise ValueError(f"scores must be (batch, N+1, N+1), got {tuple(scores.shape)}")
    if lengths.shape != scores.shape[:1]:
        raise ValueError(f"lengths must be (batch,) = {tuple(scores.shape[:1])}, got {tuple(lengths.shape)}")
    if lengths.numel() == 0:
        return 0
    low, high = int(lengths.min()), int(lengths.max())
    if low < 1 or high > scores.size(1) - 1:
        raise ValueError(f"lengths must lie in [1, {scores.size(1) - 1}], got [{low}, {high}]")
    return high


def _chart(scores: torch.Tensor, lengths: torch.Tensor, size: int) -> torch.Tensor:
    """``scores`` cut to ``size`` fenceposts, batch last, spans past each sentence's end set to 0."""
    x = scores[:, :size, :size].permute(1, 2, 0)  # (size, size, batch)
    past_end = torch.arange(size, device=scores.device).unsqueeze(-1) > lengths.to(scores.device)  # (size, batch)
    return x.masked_fill(past_end.unsqueeze(0), 0).contiguous()  # (size, size, batch)


def _inside_chart(x: torch.Tensor, keep_z: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """
    Inside pass over a chart ``x: (size, size, batch)``.

    Returns ``s`` (log-sum over all subtrees of span (i, j), its own score included) and, if ``keep_z``, ``z``
    (the same without the span's own score: the logsumexp over split points; 0 for width 1), both
    ``(size, size, batch)``; ``z`` is what the backward pass needs.
    """
    size = x.size(0)
    s = torch.zeros_like(x)  # (size, size, batch)
    z = torch.zeros_like(x) if keep_z else None  # (size, size, batch)
    s.diagonal(1).copy_(x.diagonal(1))  # (batch, size-1)
    for w in range(2, size):
        n = size - w
        a = stripe(s, n, w - 1, (0, 1)) + stripe(s, n, w - 1, (1, w), False)  # (n, w-1, batch)
        z_w = a.logsumexp(1)  # (n, batch)
        torch.add(z_w, x.diagonal(w).t(), out=s.diagonal(w).t())  # (n, batch)
        if keep_z:
            z.diagonal(w).t().copy_(z_w)  # (n, batch)
    return s, z


class _Inside(torch.autograd.Function):
    """log Z with an outside pass as backward: d log Z / d scores are the span marginals."""

    @staticmethod
    def forward(ctx, scores: torch.Tensor, lengths: torch.Tensor, size: int) -> torch.Tensor:
        x = _chart(scores, lengths, size)  # (size, size, batch)
        s, z = _inside_chart(x, keep_z=ctx.needs_input_grad[0])
        batch = torch.arange(scores.size(0), device=scores.device)  # (batch,)
        ends = lengths.to(scores.device)  # (batch,)
        ctx.save_for_backward(s, z, ends)
        ctx.shape = scores.shape
        return s[0, ends, batch]  # (batch,)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_log_z: torch.Tensor):
        s, z, ends = ctx.saved_tensors
        size = s.size(0)
        batch = torch.arange(s.size(-1), device=s.device)  # (batch,)
        g = torch.zeros_like(s)  # (size, size, batch), d log Z / d s
        g[0, ends, batch] = grad_log_z
        for w in range(size - 1, 1, -1):
            n = size - w
            a = stripe(s, n, w - 1, (0, 1)) + stripe(s, n, w - 1, (1, w), False)  # (n, w-1, batch)
            a.sub_(z.diagonal(w).t().unsqueeze(1)).exp_()  # (n, w-1, batch), p(split | span)
            a.mul_(g.diagonal(w).t().unsqueeze(1))  # (n, w-1, batch)
            stripe(g, n, w - 1, (0, 1)).add_(a)
            stripe(g, n, w - 1, (1, w), False).add_(a)
        grad = g.new_zeros(ctx.shape)  # (batch, N+1, N+1)
        grad[:, :size, :size] = g.permute(2, 0, 1)  # (batch, size, size)
        return grad, None, None


def inside(scores: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """
    Log-partition ``log Z`` over all binary trees of each sentence.

    scores: ``(batch, N+1, N+1)`` span scores; lengths: ``(batch,)``. Returns ``(batch,)``. Differentiable; the
    gradient is the span marginals (computed by an outside pass, O(N^2) memory per sentence).
    """
    size = _check(scores, lengths) + 1
    if size == 1:
        return scores.new_zeros(scores.shape[:1])  # (0,)
    return _Inside.apply(scores, lengths, size)  # (batch,)


def marginals(scores: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """
    Span marginals ``p((i, j) in tree)``, ``(batch, N+1, N+1)``: the gradient of ``log Z``.

    Zero outside each sentence's upper triangle. Not differentiable (detached from ``scores``).
    """
    with torch.enable_grad():
        leaf = scores.detach().requires_grad_()  # (batch, N+1, N+1)
        (grad,) = torch.autograd.grad(inside(leaf, lengths).sum(), leaf)  # (batch, N+1, N+1)
    return grad


def span_mask(lengths: torch.Tensor, size: int) -> torch.Tensor:
    """``(batch, size, size)`` bool: spans ``(i, j)`` with ``0 <= i < j <= lengths[b]``."""
    positions = torch.arange(size, device=lengths.device)  # (size,)
    upper = positions.unsqueeze(0) > positions.unsqueeze(1)  # (size, size), j > i
    return upper & (positions <= lengths.unsqueeze(-1)).unsqueeze(1)  # (batch, size, size)


def tree_score(scores: torch.Tensor, spans_mask: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Sum of ``scores`` over the spans marked in ``spans_mask: (batch, N+1, N+1)`` (valid spans only), ``(batch,)``."""
    keep = spans_mask.bool() & span_mask(lengths.to(scores.device), scores.size(1))  # (batch, N+1, N+1)
    return scores.masked_fill(~keep, 0).sum((1, 2))  # (batch,)


def tree_crf_loss(scores: torch.Tensor, gold_spans_mask: torch.Tensor, lengths: torch.Tensor,
                  reduction: str = "mean") -> torch.Tensor:
    """
    Negative log-likelihood of the gold trees, ``log Z - score(gold)``.

    gold_spans_mask: ``(batch, N+1, N+1)`` bool, the ``2 n - 1`` spans of each gold binary tree (single words
    and the whole sentence included; entries outside the sentence are ignored). reduction: ``"none"``
    (``(batch,)``), ``"sum"``, ``"mean"`` (over sentences) or ``"token_mean"`` (sum / total words, supar's choice).
    """
    loss = inside(scores, lengths) - tree_score(scores, gold_spans_mask, lengths)  # (batch,)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.mean()
    if reduction == "token_mean":
        return loss.sum() / lengths.sum()
    raise ValueError(f"reduction must be 'none', 'sum', 'mean' or 'token_mean', got {reduction!r}")


@torch.no_grad()
def cky(scores: torch.Tensor, lengths: torch.Tensor) -> Tuple[torch.Tensor, List[List[Span]]]:
    """
    CKY: the highest-scoring binary tree of each sentence.

    Returns ``best_scores: (batch,)`` (not differentiable; ``tree_score`` of ``spans_to_mask(spans)`` is) and,
    per sentence, its ``2 n - 1`` spans ``(i, j)`` in preorder, i.e. sorted by ``(i, -j)``.
    """
    size = _check(scores, lengths) + 1
    if size == 1:
        return scores.new_zeros(scores.shape[:1]), []
    x = _chart(scores, lengths, size)  # (size, size, batch)
    s = torch.zeros_like(x)  # (size, size, batch)
    split = torch.zeros(x.size(-1), size, size, dtype=torch.int32, device=x.device)  # (batch, size, size)
    s.diagonal(1).copy_(x.diagonal(1))  # (batch, size-1)
    for w in range(2, size):
        n = size - w
        a = stripe(s, n, w - 1, (0, 1)) + stripe(s, n, w - 1, (1, w), False)  # (n, w-1, batch)
        best, t = a.max(1)  # (n, batch), (n, batch)
        torch.add(best, x.diagonal(w).t(), out=s.diagonal(w).t())  # (n, batch)
        split.diagonal(w, 1, 2).copy_(t.t())  # (batch, n), split point k = i + 1 + t
    ends = lengths.to(x.device)  # (batch,)
    best_scores = s[0, ends, torch.arange(x.size(-1), device=x.device)]  # (batch,)
    split = split.cpu()  # (batch, size, size)
    trees = []
    for b, n in enumerate(lengths.tolist()):
        chart = split[b, :n + 1, :n + 1].tolist()  # (n+1, n+1) nested lists of t
        spans, stack = [], [(0, n)]
        while stack:
            i, j = stack.pop()
            spans.append((i, j))
            if j - i > 1:
                k = i + 1 + chart[i][j]
                stack.append((k, j))
                stack.append((i, k))
        trees.append(spans)
    return best_scores, trees


def spans_to_mask(spans: List[List[Span]], size: int, device=None) -> torch.Tensor:
    """Span lists (e.g. from ``cky``) to a ``(batch, size, size)`` bool mask; ``size`` is N+1."""
    mask = torch.zeros(len(spans), size, size, dtype=torch.bool)  # (batch, size, size)
    for b, tree in enumerate(spans):
        if tree:
            i, j = zip(*tree)
            mask[b, list(i), list(j)] = True
    return mask.to(device) if device is not None else mask


def gold_chart(spans: torch.LongTensor, span_labels: torch.LongTensor, num_tokens: int) -> torch.LongTensor:
    """
    The target chart of a batch of gold trees (the `"spans"` and `"span_labels"` fields of the `ptb_spans` and
    `binary_codes` readers): `chart[b, i, j]` is the label id of fencepost span (i, j) of sentence `b`, and -1 where
    there is no gold span (below the diagonal, padding).

    # Parameters

    spans : `torch.LongTensor`
        `(batch, num_spans, 2)`, the batched `"spans"` field: inclusive (start, end), padding (-1, -1).
    span_labels : `torch.LongTensor`
        `(batch, num_spans)`, the batched `"span_labels"` field (padding 0, masked by the spans).
    num_tokens : `int`
        The padded number of words n; the chart is `(batch, n + 1, n + 1)`.
    """
    chart = spans.new_full((spans.size(0), num_tokens + 1, num_tokens + 1), -1)  # (batch, n + 1, n + 1)
    batch, index = (spans[:, :, 0] >= 0).nonzero(as_tuple=True)  # (gold spans,) each
    starts = spans[batch, index, 0]  # (gold spans,)
    ends = spans[batch, index, 1] + 1  # (gold spans,) fencepost ends
    chart[batch, starts, ends] = span_labels[batch, index]
    return chart

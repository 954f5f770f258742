"""Batched Viterbi decoding of a linear-chain CRF: the best tag sequence of every sentence of a batch at once.

Where this sits: the CRF tagger of both stages (`tagging/models/hash_crf_tagger.py`) keeps AllenNLP's
``ConditionalRandomField`` for its parameters and its loss, and decodes with ``viterbi_decode`` instead of
``ConditionalRandomField.viterbi_tags``, which runs ``allennlp.nn.util.viterbi_decode`` sentence by sentence in
Python. Pure torch, no AllenNLP.

Semantics are exactly those of ``viterbi_tags(logits, mask)`` with ``top_k=None``:

* **states** -- the ``tags`` real tags plus a START (index ``tags``) and an END state (``tags + 1``). The
  ``(tags + 2, tags + 2)`` transition matrix is AllenNLP's (``crf_transitions``): ``-10000`` everywhere, then the
  tag-to-tag scores, START's row (``start_transitions``, or 0 without them) and END's column (``end_transitions``,
  or 0), each multiplied by the constraint mask and given ``-10000`` where the mask forbids the transition
  (``t * allowed + -10000 * (1 - allowed)``, the same expression, so the same floats). Transitions into START,
  out of END, and START -> END stay ``-10000``.
* **trellis** -- step 0 is START (score 0, every other state ``-10000``); word ``t`` gives each real tag its
  emission and START / END ``-10000``; a last step gives END 0 and every other state ``-10000``. The best path over
  all ``tags + 2`` states is followed back; the START and END steps are dropped. Penalised (forbidden) transitions
  are therefore possible but cost 10000 each, as in AllenNLP.
* **mask** -- ``(batch, words)``; a sentence is the positions where it is true (AllenNLP selects them with
  ``nonzero``, so any mask works, not only left-aligned ones). At a masked position the scores are carried over
  unchanged and the back-pointer is the identity, so the path at the unmasked positions is the sentence's path.
  A row with no true position gives the empty path and the score of going from START to END through the last
  step, ``max(-10000, max_k(-10000 + end[k]))``, which is what AllenNLP returns for it.
* **dtype** -- computed in the emissions' and transitions' dtype promoted to at least float32 (AllenNLP always
  uses float32, so float32 emissions give bit-identical scores; ties between equal scores may break differently,
  since ``argmax`` and AllenNLP's ``topk`` need not pick the same index).

Backends (``backend=``, or the environment variable ``BITCODE_VITERBI``; default ``auto``):

* ``numba`` -- a compiled loop (``numba.njit``, compiled on first use and cached on disk), one sentence at a
  time, only over its unmasked positions. The max over previous states runs as an element-wise running maximum
  over the next state (vectorized by the compiler, no reduction to reorder), then the emission is added: the same
  float additions as the torch backend, and a max is exact whatever the order, so the same scores and, with the
  argmax taken as the first maximum (as ``torch.argmax``), the same paths (its speed against the torch backend:
  docs/results.md, ``benchmarks/validation_speed.py``).
* ``torch`` -- the batched tensor code below; used where numba is not installed or the emissions are not on the
  CPU.
* ``auto`` -- ``numba`` for CPU tensors where numba imports, else ``torch``.

Cost of the torch backend: one ``(batch, tags + 2, tags + 2)`` add-and-max per word position (a Python loop over
positions only; values only, ``amax``, not ``max`` with indices), and a back-trace,
also batched, that recomputes the argmax for the chosen state of each sentence only (a ``(batch, tags + 2)``
add-and-argmax per position, over the same floats, so the same choice as back-pointers would give).
"""
import os
from typing import Any, List, Optional, Tuple

import numpy
import torch

PENALTY = -10000.0  # AllenNLP's score of a forbidden transition and of START / END at a word


def crf_transitions(
    transitions: torch.Tensor,
    start_transitions: Optional[torch.Tensor] = None,
    end_transitions: Optional[torch.Tensor] = None,
    constraint_mask: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """
    AllenNLP's ``(tags + 2, tags + 2)`` decoding transition matrix (``viterbi_tags``), START = ``tags``,
    END = ``tags + 1``. ``constraint_mask``: ``(tags + 2, tags + 2)``, 1 / True where allowed (a
    ``ConditionalRandomField``'s ``_constraint_mask``); ``None`` allows everything. Start / end transitions: ``None``
    means none (``include_start_end_transitions=False``), i.e. 0 where allowed.
    """
    tags = transitions.shape[0]
    dtype = torch.promote_types(transitions.dtype, torch.float32)
    trans = transitions.detach().to(dtype)  # (tags, tags)
    if constraint_mask is None:
        allowed = trans.new_ones(tags + 2, tags + 2)  # (tags+2, tags+2)
    else:
        allowed = constraint_mask.detach().to(device=trans.device, dtype=dtype)  # (tags+2, tags+2)
    penalty = PENALTY * (1 - allowed)  # (tags+2, tags+2)
    start = trans.new_zeros(tags) if start_transitions is None else start_transitions.detach().to(dtype)  # (tags,)
    end = trans.new_zeros(tags) if end_transitions is None else end_transitions.detach().to(dtype)  # (tags,)
    full = trans.new_full((tags + 2, tags + 2), PENALTY)  # (tags+2, tags+2)
    full[:tags, :tags] = trans * allowed[:tags, :tags] + penalty[:tags, :tags]
    full[tags, :tags] = start * allowed[tags, :tags] + penalty[tags, :tags]
    full[:tags, tags + 1] = end * allowed[:tags, tags + 1] + penalty[:tags, tags + 1]
    return full


def viterbi_decode(
    emissions: torch.Tensor,
    mask: torch.Tensor,
    transitions: torch.Tensor,
    start_transitions: Optional[torch.Tensor] = None,
    end_transitions: Optional[torch.Tensor] = None,
    constraint_mask: Optional[torch.Tensor] = None,
    backend: Optional[str] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """
    The best tag sequence of each sentence, as ``ConditionalRandomField.viterbi_tags(emissions, mask)``.

    # Parameters
    emissions : ``(batch, words, tags)`` tag scores; masked positions are ignored (any finite value).
    mask : ``(batch, words)`` bool (or 0/1), true at the words of each sentence.
    transitions : ``(tags, tags)``, ``transitions[i, j]`` scores tag ``i`` followed by tag ``j``.
    start_transitions, end_transitions : ``(tags,)`` or ``None`` (see ``crf_transitions``).
    constraint_mask : ``(tags + 2, tags + 2)`` allowed transitions including START / END, or ``None``.
    backend : ``"auto"``, ``"numba"`` or ``"torch"`` (module docstring); ``None``: ``$BITCODE_VITERBI`` or ``"auto"``.

    # Returns
    ``paths``: ``(batch, words)`` int64, the best tag at each unmasked position, 0 at masked ones (read the first
    ``mask.sum(-1)`` of a row for a left-aligned mask: ``paths_to_lists``); ``scores``: ``(batch,)`` the best paths'
    scores (AllenNLP's ``viterbi_score``). Neither carries gradient.
    """
    batch, words, tags = emissions.shape
    states = tags + 2
    full = crf_transitions(transitions, start_transitions, end_transitions, constraint_mask)  # (tags+2, tags+2)
    dtype = torch.promote_types(emissions.dtype, full.dtype)  # at least float32, float64 if either is
    kernel = _kernel_for(backend, emissions)
    if kernel is not None:
        return _decode_numba(kernel, emissions, mask, full, dtype)
    into = full.t().contiguous().to(device=emissions.device, dtype=dtype)  # (tags+2, tags+2): into[j, k] = k → j
    mask = mask.to(device=emissions.device, dtype=torch.bool)  # (batch, words)
    emit = emissions.new_full((words, batch, states), PENALTY, dtype=dtype)  # (words, batch, tags+2)
    emit[:, :, :tags] = emissions.detach().transpose(0, 1)  # START / END emit PENALTY at every word
    alphas = emit.new_empty(words + 1, batch, states)  # (words+1, batch, tags+2): alphas[t + 1] after word t
    alphas[0] = PENALTY
    alphas[0, :, tags] = 0.0  # step 0: START
    for t in range(words):
        best = (alphas[t].unsqueeze(1) + into).amax(dim=2)  # (batch, tags+2): best way into each state
        alphas[t + 1] = torch.where(mask[:, t].unsqueeze(1), best + emit[t], alphas[t])  # (batch, tags+2)
    last_step = emit.new_full((states,), PENALTY)  # (tags+2,) the step after the last word: only END scores 0
    last_step[tags + 1] = 0.0
    final = (alphas[words].unsqueeze(1) + into).amax(dim=2) + last_step  # (batch, tags+2)
    scores, state = final.max(dim=1)  # (batch,), (batch,) the best state of the last step (END)
    # Back-trace: the argmax is recomputed for the one chosen state per sentence (no back-pointer tensor).
    tag = (alphas[words] + into[state]).argmax(dim=1)  # (batch,) the state at the last position
    paths = torch.empty(batch, words, dtype=torch.long, device=emit.device)  # (batch, words)
    for t in range(words - 1, -1, -1):
        paths[:, t] = tag
        if t > 0:  # the state at position t - 1: where the best way into `tag` came from, if word t is there
            previous = (alphas[t] + into[tag]).argmax(dim=1)  # (batch,)
            tag = torch.where(mask[:, t], previous, tag)  # (batch,)
    paths.masked_fill_(~mask, 0)  # (batch, words)
    return paths, scores


BACKENDS = ("auto", "numba", "torch")
_KERNEL: List[Any] = []  # the compiled numba kernel, once built; [None] where numba does not import


def _kernel_for(backend: Optional[str], emissions: torch.Tensor) -> Any:
    """The numba kernel if ``backend`` asks for it (or ``auto`` and it can run here), else ``None`` (torch)."""
    backend = backend or os.environ.get("BITCODE_VITERBI", "auto")
    if backend not in BACKENDS:
        raise ValueError(f"Viterbi backend {backend!r} is not one of {', '.join(BACKENDS)} (BITCODE_VITERBI)")
    if backend == "torch" or emissions.device.type != "cpu":
        if backend == "numba":
            raise ValueError(f"the numba Viterbi backend runs on CPU tensors only, not on {emissions.device}")
        return None
    if not _KERNEL:
        _KERNEL.append(_build_kernel())
    if _KERNEL[0] is None and backend == "numba":
        raise ImportError("the numba Viterbi backend needs numba (pip install numba); BITCODE_VITERBI=torch avoids it")
    return _KERNEL[0]


def _decode_numba(kernel: Any, emissions: torch.Tensor, mask: torch.Tensor, full: torch.Tensor,
                  dtype: torch.dtype) -> Tuple[torch.Tensor, torch.Tensor]:
    """``viterbi_decode`` through the compiled kernel: numpy views in, torch tensors out."""
    import numpy

    batch, words, _ = emissions.shape
    emit = emissions.detach().to(dtype).contiguous().numpy()  # (batch, words, tags)
    allowed = mask.detach().to(device="cpu", dtype=torch.bool).contiguous().numpy()  # (batch, words)
    trans = full.to(dtype).contiguous().numpy()  # (tags+2, tags+2): trans[k, j] = k → j
    paths = numpy.zeros((batch, words), dtype=numpy.int64)  # (batch, words)
    scores = numpy.empty(batch, dtype=emit.dtype)  # (batch,)
    kernel(emit, allowed, trans, emit.dtype.type(PENALTY), paths, scores)
    return torch.from_numpy(paths), torch.from_numpy(scores)


def _viterbi_loop(emit, mask, trans, penalty, paths, scores):  # pragma: no cover (runs compiled)
    """One sentence at a time, AllenNLP's trellis over tags + 2 states (module docstring), written for numba.
    emit (batch, words, tags); mask (batch, words) bool; trans (tags+2, tags+2), trans[k, j] = k → j; penalty a
    scalar of emit's dtype; writes paths (batch, words) int64 (0 at masked positions) and scores (batch,)."""
    batch, words, tags = emit.shape
    states = tags + 2
    zero = penalty - penalty
    for b in range(batch):
        alphas = numpy.empty((words + 1, states), dtype=emit.dtype)  # alphas[t + 1] after word t
        alphas[0, :] = penalty
        alphas[0, tags] = zero  # step 0: START
        for t in range(words):
            if not mask[b, t]:  # carried over unchanged
                alphas[t + 1, :] = alphas[t, :]
                continue
            for j in range(states):  # from state 0, then a running maximum over the other previous states
                alphas[t + 1, j] = alphas[t, 0] + trans[0, j]
            for k in range(1, states):
                previous = alphas[t, k]
                for j in range(states):
                    alphas[t + 1, j] = max(alphas[t + 1, j], previous + trans[k, j])
            for j in range(tags):
                alphas[t + 1, j] += emit[b, t, j]
            alphas[t + 1, tags] += penalty  # START and END emit the penalty at a word
            alphas[t + 1, tags + 1] += penalty
        best_score = zero
        state = 0
        for j in range(states):  # the step after the last word: only END scores 0
            into_j = alphas[words, 0] + trans[0, j]
            for k in range(1, states):
                into_j = max(into_j, alphas[words, k] + trans[k, j])
            into_j += zero if j == tags + 1 else penalty
            if j == 0 or into_j > best_score:
                best_score = into_j
                state = j
        scores[b] = best_score
        for t in range(words, -1, -1):  # back-trace: the first best previous state of the chosen one
            if t < words:
                paths[b, t] = state if mask[b, t] else 0
                if t == 0 or not mask[b, t]:
                    continue
            best_previous = alphas[t, 0] + trans[0, state]
            chosen = 0
            for k in range(1, states):
                candidate = alphas[t, k] + trans[k, state]
                if candidate > best_previous:
                    best_previous = candidate
                    chosen = k
            state = chosen


def _build_kernel() -> Any:
    """``_viterbi_loop`` compiled by numba (cached on disk), or ``None`` where numba does not import."""
    try:
        import numba
    except ImportError:
        return None
    return numba.njit(cache=True, nogil=True)(_viterbi_loop)


def paths_to_lists(paths: torch.Tensor, mask: torch.Tensor) -> List[List[int]]:
    """``viterbi_decode``'s paths as one list of tag ids per sentence (its unmasked positions, in order)."""
    rows = paths.tolist()
    mask = mask.bool()  # (batch, words)
    if bool((mask[:, :-1] >= mask[:, 1:]).all()):  # left-aligned (or empty) rows: slice each row
        return [row[:n] for row, n in zip(rows, mask.sum(dim=1).tolist())]
    flags = mask.tolist()
    return [[tag for tag, on in zip(row, flag) if on] for row, flag in zip(rows, flags)]


def viterbi_tags(
    emissions: torch.Tensor, mask: torch.Tensor, *args: Any, **kwargs: Any
) -> List[Tuple[List[int], float]]:
    """``viterbi_decode(emissions, mask, ...)`` (the same arguments) in AllenNLP's return format: one
    ``(path, score)`` per sentence."""
    paths, scores = viterbi_decode(emissions, mask, *args, **kwargs)  # (batch, words), (batch,)
    return list(zip(paths_to_lists(paths, mask), scores.tolist()))

"""Batched Viterbi decoding of a linear-chain CRF: the best tag sequence of every sentence of a batch at once.

Where this sits: the CRF tagger of both stages (`tagging/models/hash_crf_tagger.py`) keeps AllenNLP's
``ConditionalRandomField`` for its parameters and its loss, and decodes with ``viterbi_decode`` instead of
``ConditionalRandomField.viterbi_tags``, which runs ``allennlp.nn.util.viterbi_decode`` sentence by sentence in
Python (and dominated the lightweight model's inference time). Pure torch, no AllenNLP.

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

Cost: one ``(batch, tags + 2, tags + 2)`` add-and-max per word position (a Python loop over positions only; values
only, ``amax``, which is about 3x faster on CPU than ``max`` with indices), and a back-trace, also batched, that
recomputes the argmax for the chosen state of each sentence only (a ``(batch, tags + 2)`` add-and-argmax per
position, over the same floats, so the same choice as back-pointers would give).
"""
from typing import List, Optional, Tuple

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
) -> Tuple[torch.Tensor, torch.Tensor]:
    """
    The best tag sequence of each sentence, as ``ConditionalRandomField.viterbi_tags(emissions, mask)``.

    # Parameters
    emissions : ``(batch, words, tags)`` tag scores; masked positions are ignored (any finite value).
    mask : ``(batch, words)`` bool (or 0/1), true at the words of each sentence.
    transitions : ``(tags, tags)``, ``transitions[i, j]`` scores tag ``i`` followed by tag ``j``.
    start_transitions, end_transitions : ``(tags,)`` or ``None`` (see ``crf_transitions``).
    constraint_mask : ``(tags + 2, tags + 2)`` allowed transitions including START / END, or ``None``.

    # Returns
    ``paths``: ``(batch, words)`` int64, the best tag at each unmasked position, 0 at masked ones (read the first
    ``mask.sum(-1)`` of a row for a left-aligned mask: ``paths_to_lists``); ``scores``: ``(batch,)`` the best paths'
    scores (AllenNLP's ``viterbi_score``). Neither carries gradient.
    """
    batch, words, tags = emissions.shape
    states = tags + 2
    full = crf_transitions(transitions, start_transitions, end_transitions, constraint_mask)  # (tags+2, tags+2)
    dtype = torch.promote_types(emissions.dtype, full.dtype)  # at least float32, float64 if either is
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


def paths_to_lists(paths: torch.Tensor, mask: torch.Tensor) -> List[List[int]]:
    """``viterbi_decode``'s paths as one list of tag ids per sentence (its unmasked positions, in order)."""
    rows = paths.tolist()
    mask = mask.bool()  # (batch, words)
    if bool((mask[:, :-1] >= mask[:, 1:]).all()):  # left-aligned (or empty) rows: slice each row
        return [row[:n] for row, n in zip(rows, mask.sum(dim=1).tolist())]
    flags = mask.tolist()
    return [[tag for tag, on in zip(row, flag) if on] for row, flag in zip(rows, flags)]


def viterbi_tags(
    emissions: torch.Tensor,
    mask: torch.Tensor,
    transitions: torch.Tensor,
    start_transitions: Optional[torch.Tensor] = None,
    end_transitions: Optional[torch.Tensor] = None,
    constraint_mask: Optional[torch.Tensor] = None,
) -> List[Tuple[List[int], float]]:
    """``viterbi_decode`` in AllenNLP's return format: one ``(path, score)`` per sentence."""
    paths, scores = viterbi_decode(emissions, mask, transitions, start_transitions, end_transitions, constraint_mask)
    return list(zip(paths_to_lists(paths, mask), scores.tolist()))

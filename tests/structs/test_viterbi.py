"""Oracles for the batched Viterbi decoder, each backend (numba, torch): AllenNLP's
`ConditionalRandomField.viterbi_tags` (sentence by sentence) on random batches of variable lengths, with and without
start/end transitions and BIOUL constraints, brute-force enumeration of every tag sequence of short sentences, and
the two backends against each other (the same paths and bit-identical scores)."""
import itertools

import pytest
import torch
from allennlp.modules.conditional_random_field import ConditionalRandomField
from allennlp.modules.conditional_random_field.conditional_random_field import allowed_transitions

from bitcode_allennlp.structs.viterbi import crf_transitions, paths_to_lists, viterbi_decode, viterbi_tags
from bitcode_allennlp.structs import viterbi as viterbi_module

numba = pytest.importorskip("numba")  # a runtime dependency (requirements.txt); the torch backend needs none
BACKENDS = ["numba", "torch"]

LENGTHS = [7, 1, 4, 7, 2, 5, 3, 6]  # 1 and the full length 7 included
BIOUL = ["O", "B-PER", "I-PER", "L-PER", "U-PER", "B-LOC", "I-LOC", "L-LOC", "U-LOC"]


def random_crf(num_tags, constrained, start_end, seed):
    torch.manual_seed(seed)
    constraints = allowed_transitions("BIOUL", dict(enumerate(BIOUL))) if constrained else None
    crf = ConditionalRandomField(num_tags, constraints, include_start_end_transitions=start_end)
    with torch.no_grad():  # larger than the default init, so that transitions change the best path
        crf.transitions.normal_(0, 2.0)
        if start_end:
            crf.start_transitions.normal_(0, 2.0)
            crf.end_transitions.normal_(0, 2.0)
    return crf


def random_batch(lengths, num_tags, seed, dtype=torch.float32):
    """Emissions (batch, words, tags) with large junk at the padded positions, and the left-aligned mask."""
    gen = torch.Generator().manual_seed(seed)
    words = max(lengths)
    emissions = torch.randn(len(lengths), words, num_tags, generator=gen, dtype=torch.float64) * 3  # (b, w, t)
    mask = torch.arange(words).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)  # (batch, words)
    emissions[~mask] = 1e4  # ignored, whatever they are
    return emissions.to(dtype), mask


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    """Each test that takes it runs once per backend, chosen as users do: BITCODE_VITERBI."""
    monkeypatch.setenv("BITCODE_VITERBI", request.param)
    return request.param


def ours(crf, emissions, mask):
    return viterbi_tags(emissions, mask, crf.transitions,
                        crf.start_transitions if crf.include_start_end_transitions else None,
                        crf.end_transitions if crf.include_start_end_transitions else None,
                        crf._constraint_mask)


@pytest.mark.parametrize("start_end", [True, False])
@pytest.mark.parametrize("constrained", [False, True])
def test_matches_allennlp_viterbi_tags(constrained, start_end, backend):
    num_tags = len(BIOUL)
    for seed in range(10):
        crf = random_crf(num_tags, constrained, start_end, seed)
        emissions, mask = random_batch(LENGTHS, num_tags, seed)
        expected = crf.viterbi_tags(emissions, mask)
        got = ours(crf, emissions, mask)
        assert [path for path, _ in got] == [path for path, _ in expected], seed
        assert [len(path) for path, _ in got] == LENGTHS
        # float32 as AllenNLP: the same additions in the same order, so the same scores
        assert [score for _, score in got] == [score for _, score in expected], seed


def is_bioul(path):
    labels = ["<s>"] + [BIOUL[t] for t in path] + ["</s>"]
    allowed = set(allowed_transitions("BIOUL", dict(enumerate(BIOUL))))
    index = {label: i for i, label in enumerate(BIOUL)}
    index.update({"<s>": len(BIOUL), "</s>": len(BIOUL) + 1})
    return all((index[a], index[b]) in allowed for a, b in zip(labels, labels[1:]))


def test_inputs_are_discriminative(backend):
    """The oracle tests would catch a decoder that ignores transitions or constraints: on these inputs the greedy
    argmax and the unconstrained Viterbi paths are often not valid BIOUL, and the constrained ones always are."""
    crf = random_crf(len(BIOUL), True, True, 0)
    emissions, mask = random_batch(LENGTHS, len(BIOUL), 0)
    constrained = [path for path, _ in ours(crf, emissions, mask)]
    greedy = paths_to_lists(emissions.argmax(-1), mask)
    free = [path for path, _ in viterbi_tags(emissions, mask, crf.transitions, crf.start_transitions,
                                             crf.end_transitions)]
    assert all(is_bioul(path) for path in constrained)
    assert sum(not is_bioul(path) for path in greedy) >= 3 and sum(not is_bioul(path) for path in free) >= 3
    assert constrained != free != greedy


def test_any_mask_and_an_all_padding_row_as_allennlp(backend):
    crf = random_crf(len(BIOUL), True, True, 1)
    emissions, _ = random_batch([6] * 5, len(BIOUL), 1)
    mask = torch.tensor([[1, 0, 1, 1, 0, 1], [0, 0, 0, 0, 0, 1], [1, 1, 1, 1, 1, 1], [0, 1, 1, 0, 0, 0],
                         [0, 0, 0, 0, 0, 0]], dtype=torch.bool)  # (batch, words): holes, and no word at all
    expected = crf.viterbi_tags(emissions, mask)
    assert expected[-1][0] == []  # AllenNLP: empty path, START -> END scored
    assert ours(crf, emissions, mask) == expected
    paths, scores = viterbi_decode(emissions, mask, crf.transitions, crf.start_transitions, crf.end_transitions,
                                   crf._constraint_mask)
    assert paths.shape == mask.shape and (paths[~mask] == 0).all() and scores.shape == (5,)


def brute_force(emissions, transitions, start, end, allowed=None):
    """Max score and the set of best tag sequences of one sentence (words, tags), by enumeration (float64)."""
    words, tags = emissions.shape
    best, argmaxes = -float("inf"), set()
    for seq in itertools.product(range(tags), repeat=words):
        if allowed is not None and not allowed(seq):
            continue
        total = start[seq[0]] + end[seq[-1]] + sum(emissions[i, y] for i, y in enumerate(seq))
        total = total + sum(transitions[a, b] for a, b in zip(seq, seq[1:]))
        total = float(total)
        if total > best + 1e-9:
            best, argmaxes = total, {seq}
        elif abs(total - best) <= 1e-9:
            argmaxes.add(seq)
    return best, argmaxes


@pytest.mark.parametrize("constrained", [False, True])
@pytest.mark.parametrize("start_end", [True, False])
def test_matches_brute_force_on_short_sentences(constrained, start_end, backend):
    lengths = [1, 2, 3, 4, 4, 3]
    num_tags = len(BIOUL) if constrained else 4
    for seed in range(4):
        crf = random_crf(num_tags, constrained, start_end, seed)
        emissions, mask = random_batch(lengths, num_tags, seed, dtype=torch.float64)
        trans = crf.transitions.detach().double()  # (tags, tags)
        zeros = torch.zeros(num_tags, dtype=torch.float64)
        start = crf.start_transitions.detach().double() if start_end else zeros
        end = crf.end_transitions.detach().double() if start_end else zeros
        results = ours(crf, emissions, mask)
        for b, n in enumerate(lengths):
            best, argmaxes = brute_force(emissions[b, :n], trans, start, end, is_bioul if constrained else None)
            path, score = results[b]
            assert tuple(path) in argmaxes, (seed, b)
            assert score == pytest.approx(best, abs=1e-9)


def test_decoding_transitions_are_allennlps():
    crf = random_crf(len(BIOUL), True, True, 2)
    full = crf_transitions(crf.transitions, crf.start_transitions, crf.end_transitions, crf._constraint_mask)
    start, end = len(BIOUL), len(BIOUL) + 1
    allowed = crf._constraint_mask.bool()
    assert full.shape == (start + 2, start + 2)
    assert (full[:start, :start][~allowed[:start, :start]] == -10000).all()
    assert torch.equal(full[:start, :start][allowed[:start, :start]], crf.transitions[allowed[:start, :start]])
    assert torch.equal(full[start, :start][allowed[start, :start]], crf.start_transitions[allowed[start, :start]])
    assert torch.equal(full[:start, end][allowed[:start, end]], crf.end_transitions[allowed[:start, end]])
    assert (full[:, start] == -10000).all() and (full[end, :] == -10000).all() and full[start, end] == -10000
    no_start_end = crf_transitions(crf.transitions, None, None, crf._constraint_mask)
    assert set(no_start_end[start, :start].tolist()) == {0.0, -10000.0}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_backends_agree_bit_for_bit(dtype):
    """Random masks with holes, empty rows, ties (integer emissions and transitions), many tags, large scores,
    constrained or not: the numba and torch backends give the same paths and the same score bits."""
    gen = torch.Generator().manual_seed(0)
    for trial in range(12):
        tags = [3, len(BIOUL), 49][trial % 3]
        crf = random_crf(tags, constrained=tags == len(BIOUL) and trial % 2 == 0, start_end=trial % 4 < 2, seed=trial)
        emissions = torch.randn(6, 9, tags, generator=gen, dtype=torch.float64) * (1e3 if trial == 5 else 3)
        if trial % 3 == 1:  # ties everywhere
            emissions = emissions.round()
            with torch.no_grad():
                crf.transitions.copy_(crf.transitions.round())
        mask = torch.rand(6, 9, generator=gen) < 0.7  # (batch, words): holes
        mask[0] = False  # a row without words
        args = (emissions.to(dtype), mask, crf.transitions,
                crf.start_transitions if crf.include_start_end_transitions else None,
                crf.end_transitions if crf.include_start_end_transitions else None,
                crf._constraint_mask if trial % 2 == 0 else None)
        paths_n, scores_n = viterbi_decode(*args, backend="numba")
        paths_t, scores_t = viterbi_decode(*args, backend="torch")
        assert torch.equal(paths_n, paths_t), trial
        assert scores_n.dtype == scores_t.dtype == torch.promote_types(dtype, torch.float32)
        assert torch.equal(scores_n, scores_t), trial
    empty = viterbi_decode(torch.zeros(2, 0, 3), torch.zeros(2, 0, dtype=torch.bool), torch.zeros(3, 3),
                           backend="numba")
    assert empty[0].shape == (2, 0) and torch.equal(empty[1], viterbi_decode(
        torch.zeros(2, 0, 3), torch.zeros(2, 0, dtype=torch.bool), torch.zeros(3, 3), backend="torch")[1])


def test_backend_choice_and_errors(monkeypatch):
    emissions, mask = random_batch([2, 1], 3, 0)
    monkeypatch.setenv("BITCODE_VITERBI", "cuda-magic")
    with pytest.raises(ValueError, match="'cuda-magic' is not one of auto, numba, torch"):
        viterbi_decode(emissions, mask, torch.zeros(3, 3))
    monkeypatch.setenv("BITCODE_VITERBI", "auto")
    calls = []
    monkeypatch.setattr(viterbi_module, "_decode_numba", lambda *a: calls.append(a) or (None, None))
    viterbi_decode(emissions, mask, torch.zeros(3, 3))
    assert len(calls) == 1  # auto takes numba on CPU tensors where it imports
    viterbi_decode(emissions, mask, torch.zeros(3, 3), backend="torch")
    assert len(calls) == 1
    monkeypatch.setattr(viterbi_module, "_KERNEL", [None])  # as where numba does not import
    viterbi_decode(emissions, mask, torch.zeros(3, 3))  # auto falls back to torch
    assert len(calls) == 1
    with pytest.raises(ImportError, match="pip install numba"):
        viterbi_decode(emissions, mask, torch.zeros(3, 3), backend="numba")

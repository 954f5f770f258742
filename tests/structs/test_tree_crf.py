"""Oracles for the tree CRF: brute-force enumeration of all binary trees, gradcheck, float32 vs float64."""
import itertools
import math

import pytest
import torch

from bitcode_allennlp.structs.tree_crf import (cky, inside, marginals, span_mask, spans_to_mask, tree_crf_loss,
                                               tree_score)

LENGTHS = [1, 3, 6, 2, 5, 4]


def binary_trees(i, j):
    """All binary trees over fenceposts i..j, each as a list of its 2(j-i)-1 spans in preorder."""
    if j - i == 1:
        return [[(i, j)]]
    return [[(i, j)] + left + right
            for k in range(i + 1, j)
            for left, right in itertools.product(binary_trees(i, k), binary_trees(k, j))]


def brute_force(scores, n):
    """log Z, best score, best tree and span marginals of one sentence, by enumeration (float64 python)."""
    trees = binary_trees(0, n)
    totals = [sum(scores[i, j].item() for i, j in tree) for tree in trees]
    log_z = math.log(sum(math.exp(t) for t in totals))
    best = max(range(len(trees)), key=totals.__getitem__)
    mu = torch.zeros_like(scores)
    for tree, total in zip(trees, totals):
        for i, j in tree:
            mu[i, j] += math.exp(total - log_z)
    return log_z, totals[best], trees[best], mu


def random_batch(lengths=LENGTHS, seed=0, dtype=torch.float64, garbage=True):
    """Continuous random scores; the ignored entries (lower triangle, past each end) hold garbage."""
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.tensor(lengths)
    size = int(lengths.max()) + 1
    scores = torch.randn(len(lengths), size, size, generator=gen, dtype=torch.float64) * 2
    if garbage:
        ignored = ~span_mask(lengths, size)
        junk = torch.tensor([float("nan"), float("inf"), -float("inf"), 1e30], dtype=torch.float64)
        scores[ignored] = junk[torch.randint(0, 4, (int(ignored.sum()),), generator=gen)]
    return scores.to(dtype), lengths


def test_enumerator_counts_catalan_trees():
    assert [len(binary_trees(0, n)) for n in range(1, 8)] == [1, 1, 2, 5, 14, 42, 132]
    assert all(len(set(t)) == 2 * 5 - 1 for t in binary_trees(0, 5))


def test_inside_matches_brute_force():
    scores, lengths = random_batch()
    log_z = inside(scores, lengths)
    expected = [brute_force(scores[b], n)[0] for b, n in enumerate(LENGTHS)]
    torch.testing.assert_close(log_z, torch.tensor(expected, dtype=torch.float64), rtol=0, atol=1e-9)


def test_inside_ignores_padding_width():
    """Extra padded fenceposts (N larger than the longest sentence) change nothing."""
    scores, lengths = random_batch()
    wide = torch.full((len(LENGTHS), 10, 10), float("nan"), dtype=torch.float64)
    wide[:, :7, :7] = scores
    torch.testing.assert_close(inside(wide, lengths), inside(scores, lengths), rtol=0, atol=0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cky_matches_brute_force(seed):
    scores, lengths = random_batch(seed=seed)
    best_scores, trees = cky(scores, lengths)
    for b, n in enumerate(LENGTHS):
        _, best, best_tree, _ = brute_force(scores[b], n)
        assert trees[b] == best_tree
        assert trees[b] == sorted(trees[b], key=lambda span: (span[0], -span[1]))
        assert abs(best_scores[b].item() - best) < 1e-9
    torch.testing.assert_close(tree_score(scores, spans_to_mask(trees, scores.size(1)), lengths), best_scores,
                               rtol=0, atol=1e-9)


def test_marginals_match_brute_force():
    scores, lengths = random_batch()
    mu = marginals(scores, lengths)
    assert not mu.requires_grad
    for b, n in enumerate(LENGTHS):
        expected = brute_force(scores[b], n)[3]
        torch.testing.assert_close(mu[b], expected, rtol=0, atol=1e-9)
        words = torch.arange(n)
        torch.testing.assert_close(mu[b, words, words + 1], torch.ones(n, dtype=torch.float64), rtol=0, atol=1e-12)
        assert abs(mu[b, 0, n].item() - 1) < 1e-12
        assert abs(mu[b].sum().item() - (2 * n - 1)) < 1e-9
    assert (mu[~span_mask(lengths, scores.size(1))] == 0).all()


def test_inside_gradcheck():
    scores, lengths = random_batch(garbage=False)
    scores.requires_grad_()
    assert torch.autograd.gradcheck(lambda s: inside(s, lengths), (scores,))


def test_tree_crf_loss_is_negative_log_probability_of_gold():
    scores, lengths = random_batch(seed=3)
    gen = torch.Generator().manual_seed(3)
    gold = torch.zeros(scores.shape, dtype=torch.bool)
    expected = []
    for b, n in enumerate(LENGTHS):
        trees = binary_trees(0, n)
        tree = trees[torch.randint(len(trees), (1,), generator=gen).item()]
        gold[b, [i for i, _ in tree], [j for _, j in tree]] = True
        log_z = brute_force(scores[b], n)[0]
        expected.append(log_z - sum(scores[b, i, j].item() for i, j in tree))
    gold |= ~span_mask(lengths, scores.size(1)) & (torch.rand(scores.shape, generator=gen) < 0.5)  # ignored
    expected = torch.tensor(expected, dtype=torch.float64)

    leaf = scores.clone().requires_grad_()
    loss = tree_crf_loss(leaf, gold, lengths, reduction="none")
    torch.testing.assert_close(loss, expected, rtol=0, atol=1e-9)
    assert (loss >= 0).all()
    torch.testing.assert_close(tree_crf_loss(scores, gold, lengths, reduction="sum"), expected.sum())
    torch.testing.assert_close(tree_crf_loss(scores, gold, lengths), expected.mean())
    torch.testing.assert_close(tree_crf_loss(scores, gold, lengths, reduction="token_mean"),
                               expected.sum() / lengths.sum())
    with pytest.raises(ValueError):
        tree_crf_loss(scores, gold, lengths, reduction="avg")

    loss.sum().backward()
    valid = span_mask(lengths, scores.size(1))
    assert torch.isfinite(leaf.grad).all()
    assert (leaf.grad[~valid] == 0).all()
    # d loss / d scores = marginals - gold
    torch.testing.assert_close(leaf.grad, marginals(scores, lengths) - (gold & valid).double(), rtol=0, atol=1e-9)


def test_lengths_are_checked():
    scores, _ = random_batch(garbage=False)
    with pytest.raises(ValueError):
        inside(scores, torch.tensor([0, 3, 6, 2, 5, 4]))
    with pytest.raises(ValueError):
        cky(scores, torch.tensor([7, 3, 6, 2, 5, 4]))


def test_long_sentence_runs_finite():
    n = 200
    scores = torch.randn(1, n + 1, n + 1, generator=torch.Generator().manual_seed(0)).requires_grad_()
    lengths = torch.tensor([n])
    log_z = inside(scores, lengths)
    log_z.sum().backward()
    assert torch.isfinite(log_z).all() and torch.isfinite(scores.grad).all()
    assert abs(scores.grad.sum().item() - (2 * n - 1)) < 1e-2
    best, trees = cky(scores.detach(), lengths)
    assert torch.isfinite(best).all() and len(trees[0]) == 2 * n - 1 and best.item() <= log_z.item()


def test_float32_agrees_with_float64():
    lengths = [60, 57, 43, 60]
    scores, lengths = random_batch(lengths, seed=5, garbage=False)
    log_z64, log_z32 = inside(scores, lengths), inside(scores.float(), lengths)
    torch.testing.assert_close(log_z32.double(), log_z64, rtol=1e-4, atol=0)
    torch.testing.assert_close(marginals(scores.float(), lengths).double(), marginals(scores, lengths),
                               rtol=0, atol=1e-4)
    best64, trees64 = cky(scores, lengths)
    best32, _ = cky(scores.float(), lengths)
    torch.testing.assert_close(best32.double(), best64, rtol=1e-4, atol=0)


def test_matches_supar():
    supar = pytest.importorskip("supar.structs")
    scores, lengths = random_batch(seed=7, garbage=False)
    dist = supar.ConstituencyCRF(scores.clone(), lengths)
    torch.testing.assert_close(inside(scores, lengths), dist.log_partition.detach(), rtol=0, atol=1e-9)
    torch.testing.assert_close(marginals(scores, lengths), dist.marginals, rtol=0, atol=1e-9)
    best, trees = cky(scores, lengths)
    torch.testing.assert_close(best, dist.max.detach(), rtol=0, atol=1e-9)
    assert trees == [[tuple(span) for span in tree] for tree in dist.argmax]

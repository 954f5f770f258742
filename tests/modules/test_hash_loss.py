"""The contrastive hashing loss against a naive per-word double loop (paper Eq. 3–4, Algorithm 1)."""
import math

import pytest
import torch

from bitcode_allennlp.modules.hash_loss import ContrastiveHashLoss


def naive(x, y, ids, tau, similarity, objective):
    """Word by word, pair by pair, straight from the paper's formulas (no vectorization, no masking tricks)."""
    n = len(x)

    def sim(a, b):
        b = [(1.0 if v > 0 else -1.0 if v < 0 else 0.0) for v in b] if similarity == "cos_sign" else list(b)
        dot = sum(p * q for p, q in zip(a, b))
        norm = math.sqrt(sum(p * p for p in a)) * math.sqrt(sum(q * q for q in b))
        return dot / max(norm, 1e-12) / tau

    total = 0.0
    for i in range(n):
        if objective == "hash":  # X^- = words different from x_i; the other view of x_i is the positive
            candidates = [j for j in range(n) if j == i or ids[j] != ids[i]]
        else:
            candidates = list(range(n))
        denominator = sum(math.exp(sim(x[i], y[j])) for j in candidates)
        if objective == "sup":
            positives = [j for j in range(n) if ids[j] == ids[i]]
            total += sum(-math.log(math.exp(sim(x[i], y[j])) / denominator) for j in positives) / len(positives)
        elif objective == "max_pos":  # the best of the positives (every occurrence of the word, j = i included)
            best = max(sim(x[i], y[j]) for j in range(n) if ids[j] == ids[i])
            total += -math.log(math.exp(best) / denominator)
        else:
            total += -math.log(math.exp(sim(x[i], y[i])) / denominator)
    return total / n


@pytest.mark.parametrize("similarity", ["cos_sign", "cos"])
@pytest.mark.parametrize("objective", ["hash", "self", "sup", "max_pos"])
def test_loss_equals_naive_double_loop(similarity, objective):
    torch.manual_seed(0)
    x, y = torch.randn(13, 8, dtype=torch.float64), torch.randn(13, 8, dtype=torch.float64)
    ids = torch.tensor([1, 2, 3, 1, 4, 2, 1, 5, 6, 7, 3, 8, 9])  # repeated words: 1 ×3, 2 ×2, 3 ×2
    loss = ContrastiveHashLoss(temperature=0.1, similarity=similarity, objective=objective)
    expected = naive(x.tolist(), y.tolist(), ids.tolist(), 0.1, similarity, objective)
    assert loss(x, y, ids).item() == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("similarity", ["cos_sign", "cos"])
def test_max_pos_equals_naive_on_random_scores_and_gradients_flow(similarity):
    loss = ContrastiveHashLoss(temperature=0.1, similarity=similarity, objective="max_pos")
    for seed in range(5):
        torch.manual_seed(seed)
        x = torch.randn(20, 8, dtype=torch.float64, requires_grad=True)
        y = torch.randn(20, 8, dtype=torch.float64, requires_grad=True)
        ids = torch.randint(0, 6, (20,))  # 6 word strings over 20 words: many repeats
        value = loss(x, y, ids)
        assert value.item() == pytest.approx(naive(x.tolist(), y.tolist(), ids.tolist(), 0.1, similarity, "max_pos"),
                                             rel=1e-9)
        both = loss.symmetric(x, y, ids)
        assert both.item() == pytest.approx((value + loss(y, x, ids)).item(), rel=1e-12)
        both.backward()
        assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0 and y.grad.abs().sum() > 0


@pytest.mark.parametrize("similarity", ["cos_sign", "cos"])
def test_max_pos_is_self_when_no_word_repeats(similarity):
    torch.manual_seed(3)
    x, y, ids = torch.randn(11, 8, dtype=torch.float64), torch.randn(11, 8, dtype=torch.float64), torch.arange(11)
    max_pos = ContrastiveHashLoss(similarity=similarity, objective="max_pos")
    self_ = ContrastiveHashLoss(similarity=similarity, objective="self")
    assert max_pos(x, y, ids).item() == self_(x, y, ids).item()
    assert max_pos.symmetric(x, y, ids).item() == self_.symmetric(x, y, ids).item()


def test_max_pos_takes_the_best_occurrence():
    """Words 0 and 2 are one string; y_2 matches x_0 better than x_0's own other view y_0 does."""
    r = 1 / math.sqrt(2)
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, -1.0]], dtype=torch.float64)
    y = torch.tensor([[1.0, 1.0], [0.0, 1.0], [1.0, 0.0]], dtype=torch.float64)
    ids = torch.tensor([7, 8, 7])
    # s (τ = 1, cos) of rows 0, 1, 2 against y_0, y_1, y_2: (r, 0, 1), (r, 1, 0), (0, −r, r).
    # Best positives: row 0 → y_2 (1, not its own y_0's r), row 1 → y_1 (1), row 2 → y_2 (r, over y_0's 0).
    expected = (2 * (math.log(math.exp(r) + 1 + math.e) - 1) + math.log(1 + math.exp(-r) + math.exp(r)) - r) / 3
    loss = ContrastiveHashLoss(temperature=1.0, similarity="cos", objective="max_pos")(x, y, ids)
    self_loss = ContrastiveHashLoss(temperature=1.0, similarity="cos", objective="self")(x, y, ids)
    assert loss.item() == pytest.approx(expected, rel=1e-12)
    assert self_loss.item() == pytest.approx(expected + (1 - r) / 3, rel=1e-12)  # row 0 keeps y_0


def test_other_occurrences_of_the_word_are_masked_out():
    """Words 0 and 2 are one string with the same scores: unmasked, each would be the other's near-perfect negative
    (e^10 in its denominator) and the loss would be ~0.46 instead of ~6e-5."""
    x = torch.tensor([[1.0, 1.0], [1.0, -1.0], [1.0, 1.0]], dtype=torch.float64)  # (3 words, K = 2)
    ids = torch.tensor([7, 8, 7])
    # s / τ: 10 for a word and its own other view (and for words 0 and 2), 0 between word 1 and the others.
    # Rows 0 and 2 see their positive and word 1; row 1 sees its positive and words 0 and 2.
    masked = (2 * math.log1p(math.exp(-10)) + math.log1p(2 * math.exp(-10))) / 3
    unmasked = (2 * math.log(2 + math.exp(-10)) + math.log1p(2 * math.exp(-10))) / 3
    hash_loss = ContrastiveHashLoss(temperature=0.1, objective="hash")(x, x.clone(), ids)
    self_loss = ContrastiveHashLoss(temperature=0.1, objective="self")(x, x.clone(), ids)  # L_self masks nothing
    assert hash_loss.item() == pytest.approx(masked, rel=1e-9)
    assert self_loss.item() == pytest.approx(unmasked, rel=1e-9)


def test_all_words_identical_gives_zero_not_nan():
    x, y = torch.randn(5, 6, requires_grad=True), torch.randn(5, 6)
    loss = ContrastiveHashLoss()(x, y, torch.zeros(5, dtype=torch.long))
    assert loss.item() == 0.0
    loss.backward()
    assert torch.isfinite(x.grad).all()


def test_empty_batch_and_one_word():
    loss = ContrastiveHashLoss()
    empty = torch.zeros(0, 24, requires_grad=True)
    out = loss(empty, empty.detach(), torch.zeros(0, dtype=torch.long))
    assert out.item() == 0.0 and out.requires_grad
    one = loss(torch.randn(1, 24), torch.randn(1, 24), torch.zeros(1, dtype=torch.long))
    assert one.item() == pytest.approx(0.0)


def test_identical_views_do_not_produce_nan():
    x = torch.randn(4, 24).repeat(3, 1).requires_grad_()  # a batch of identical sentences
    ids = torch.arange(4).repeat(3)
    loss = ContrastiveHashLoss().symmetric(x, x, ids)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(x.grad).all()


def test_symmetric_is_sum_of_both_directions_and_sign_blocks_target_gradient():
    torch.manual_seed(2)
    s1, s2 = torch.randn(7, 8, requires_grad=True), torch.randn(7, 8, requires_grad=True)
    ids = torch.arange(7)
    loss = ContrastiveHashLoss()
    assert loss.symmetric(s1, s2, ids).item() == pytest.approx((loss(s1, s2, ids) + loss(s2, s1, ids)).item())
    loss(s1, s2, ids).backward()
    assert s1.grad.abs().sum() > 0 and (s2.grad is None or s2.grad.abs().sum() == 0)


def test_bad_configuration_is_rejected():
    from allennlp.common.checks import ConfigurationError

    with pytest.raises(ConfigurationError):
        ContrastiveHashLoss(similarity="hamming")
    with pytest.raises(ConfigurationError):
        ContrastiveHashLoss(temperature=0)
    for objective in ("maxpos", "max", "Max_pos"):
        with pytest.raises(ConfigurationError):
            ContrastiveHashLoss(objective=objective)

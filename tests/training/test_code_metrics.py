"""Tests of CodeMetrics: hand-computed values, a brute-force pair loop, reset, and a 2-process gloo run."""
import math

import pytest
import torch

from allennlp.common import Params
from allennlp.training.metrics import Metric

from bitcode_allennlp.common.codes import bits_to_ints
from bitcode_allennlp.training.metrics.code_metrics import CodeMetrics
from tests.conftest import pair_loop_hash_metric
from tests.training.distributed import run_distributed

KEYS = {
    "code_distinct",
    "code_bit_entropy",
    "code_bit_balance",
    "code_same_label_same_code",
    "code_diff_label_diff_code",
    "code_codes_per_label",
}


def binary_entropy(p):
    return 0.0 if p in (0.0, 1.0) else -(p * math.log2(p) + (1 - p) * math.log2(1 - p))


def brute_force(bits, labels, mask):
    """O(n^2) reference on flat lists of the words that the mask keeps."""
    bits = bits.reshape(-1, bits.size(-1))
    labels = labels.reshape(-1)
    keep = mask.reshape(-1)
    words = [(tuple(b.tolist()), int(label)) for b, label, k in zip(bits, labels, keep) if k]
    result = dict.fromkeys(KEYS, 0.0)
    if not words:
        return result
    n, num_bits = len(words), bits.size(-1)
    result["code_distinct"] = len({code for code, _ in words}) / n
    ps = [sum(code[i] for code, _ in words) / n for i in range(num_bits)]
    result["code_bit_entropy"] = sum(binary_entropy(p) for p in ps) / num_bits
    result["code_bit_balance"] = sum(min(p, 1 - p) / 0.5 for p in ps) / num_bits
    labelled = [w for w in words if w[1] >= 0]
    same, diff, per_label = pair_loop_hash_metric([code for code, _ in labelled], [label for _, label in labelled])
    for key, value in (("same_label_same_code", same), ("diff_label_diff_code", diff), ("codes_per_label", per_label)):
        if value is not None:
            result["code_" + key] = value
    return result


def assert_metrics_equal(actual, expected):
    assert set(actual) == KEYS
    for key in KEYS:
        assert actual[key] == pytest.approx(expected[key], abs=1e-12), key


def tiny_example():
    bits = torch.tensor(
        [[[1, 0], [1, 0], [0, 1], [1, 0]], [[0, 1], [1, 1], [0, 0], [0, 0]]], dtype=torch.bool
    )  # (2, 4, 2)
    labels = torch.tensor([[0, 0, 1, 1], [0, -1, 0, 0]])  # (2, 4)
    mask = torch.tensor([[True, True, True, True], [True, True, False, False]])  # (2, 4)
    return bits, labels, mask


def test_hand_computed_tiny_example():
    # Words (code, label): (10, 0) (10, 0) (01, 1) (10, 1) (01, 0) (11, unlabelled).
    metric = CodeMetrics()
    metric(*tiny_example())
    values = metric.get_metric()
    assert values["code_distinct"] == pytest.approx(3 / 6)  # codes 10, 01, 11
    # bit 0 is 1 for 4 of 6 words, bit 1 for 3 of 6
    h = -(2 / 3 * math.log2(2 / 3) + 1 / 3 * math.log2(1 / 3))
    assert values["code_bit_entropy"] == pytest.approx((h + 1.0) / 2)
    assert values["code_bit_balance"] == pytest.approx(((1 / 3) / 0.5 + 1.0) / 2)
    # 5 labelled words, 10 pairs. Same label: label 0 {w0, w1, w4} -> 3 pairs, label 1 {w2, w3} -> 1 pair.
    # Same label and same code: only (w0, w1). Different labels: 6 pairs, of which (w0, w2), (w1, w2),
    # (w4, w3) have different codes.
    assert values["code_same_label_same_code"] == pytest.approx(1 / 4)
    assert values["code_diff_label_diff_code"] == pytest.approx(3 / 6)
    # labelled words have codes 10 and 01 (11 is unlabelled) and labels 0 and 1
    assert values["code_codes_per_label"] == 1.0
    assert_metrics_equal(values, brute_force(*tiny_example()))


def test_scores_and_signs_are_accepted():
    bits, labels, mask = tiny_example()
    expected = CodeMetrics()
    expected(bits, labels, mask)
    for as_real in (bits.float() * 2 - 1, bits.float() * 3.0 - 1.5, bits.long()):
        metric = CodeMetrics()
        metric(as_real, labels, mask)
        assert metric.get_metric() == expected.get_metric()


@pytest.mark.parametrize("num_bits", [1, 3, 24, 63])
def test_matches_brute_force_on_random_data(num_bits):
    generator = torch.Generator().manual_seed(num_bits)
    metric = CodeMetrics()
    all_bits, all_labels, all_masks = [], [], []
    for _ in range(4):
        # few distinct bits so that codes collide; for K = 63 only the first 3 bits vary
        bits = torch.zeros(5, 9, num_bits, dtype=torch.bool)  # (batch, words, bits)
        varying = min(num_bits, 3)
        bits[..., :varying] = torch.rand(5, 9, varying, generator=generator) > 0.4
        labels = torch.randint(-1, 3, (5, 9), generator=generator)  # (batch, words)
        mask = torch.rand(5, 9, generator=generator) > 0.2  # (batch, words)
        metric(bits, labels, mask)
        all_bits.append(bits), all_labels.append(labels), all_masks.append(mask)
        # get_metric(reset=False) may be called any number of times without changing the result
        expected = brute_force(torch.cat(all_bits), torch.cat(all_labels), torch.cat(all_masks))
        assert_metrics_equal(metric.get_metric(), expected)
        assert_metrics_equal(metric.get_metric(), expected)


def test_without_labels_and_without_mask():
    bits, _, _ = tiny_example()
    metric = CodeMetrics()
    metric(bits)
    values = metric.get_metric()
    assert values["code_distinct"] == pytest.approx(4 / 8)  # 10 x3, 01 x2, 11, 00 x2
    assert values["code_same_label_same_code"] == 0.0 and values["code_diff_label_diff_code"] == 0.0
    assert values["code_codes_per_label"] == 0.0


def test_reset_and_empty():
    metric = CodeMetrics()
    assert metric.get_metric() == dict.fromkeys(KEYS, 0.0)
    metric(*tiny_example())
    first = metric.get_metric(reset=True)
    assert first["code_distinct"] > 0
    assert metric.get_metric() == dict.fromkeys(KEYS, 0.0)
    # after a reset the metric starts over, and K may change
    bits = torch.ones(1, 3, 5, dtype=torch.bool)  # (batch, words, bits)
    metric(bits, torch.tensor([[0, 0, 1]]), torch.ones(1, 3, dtype=torch.bool))
    values = metric.get_metric()
    assert values["code_distinct"] == pytest.approx(1 / 3)
    assert values["code_bit_entropy"] == 0.0 and values["code_bit_balance"] == 0.0
    assert values["code_same_label_same_code"] == 1.0 and values["code_diff_label_diff_code"] == 0.0
    assert values["code_codes_per_label"] == 0.5  # one code, two labels
    # a fully masked batch adds nothing
    metric(bits, torch.tensor([[0, 0, 1]]), torch.zeros(1, 3, dtype=torch.bool))
    assert metric.get_metric() == values


def test_bit_count_checks_and_registration():
    metric = CodeMetrics()
    metric(torch.ones(1, 2, 4, dtype=torch.bool))
    with pytest.raises(Exception, match="bits"):
        metric(torch.ones(1, 2, 5, dtype=torch.bool))
    with pytest.raises(Exception):
        CodeMetrics()(torch.ones(1, 2, 64, dtype=torch.bool))
    with pytest.raises(Exception):
        CodeMetrics(num_bits=64)
    assert isinstance(Metric.from_params(Params({"type": "code_metrics"})), CodeMetrics)
    assert CodeMetrics.supports_distributed


def test_int64_codes_do_not_collide_with_labels():
    # codes near 2**62 and large label ids are kept apart exactly
    bits = torch.zeros(1, 4, 63, dtype=torch.bool)  # (batch, words, bits)
    bits[0, 0, 0] = bits[0, 1, 0] = True
    assert int(bits_to_ints(bits[0, 0])) == 1 << 62
    metric = CodeMetrics()
    metric(bits, torch.tensor([[10**12, 10**12, 7, 7]]))
    values = metric.get_metric()
    assert values["code_same_label_same_code"] == 1.0 and values["code_diff_label_diff_code"] == 1.0
    assert values["code_codes_per_label"] == 1.0


def as_batch(codes, labels, num_bits):
    """One sentence of words with int `codes` and `labels` as `(bits, labels, mask)`, `(1, n, K)` bits."""
    bits = torch.tensor([[[(code >> (num_bits - 1 - i)) & 1 for i in range(num_bits)] for code in codes]],
                        dtype=torch.bool).reshape(1, len(codes), num_bits)  # (1, n, K)
    labels = torch.tensor([labels], dtype=torch.long).reshape(1, len(codes))  # (1, n)
    return bits, labels, torch.ones(1, len(codes), dtype=torch.bool)


@pytest.mark.parametrize("case", ["single_word", "one_label", "distinct_codes", "one_code", "random"])
def test_hash_metric_triple_against_the_pair_loop(case):
    """The torchglyph HashMetric triple (same label -> same code, different labels -> different codes, codes per
    label), fed in several batches, against the plain pair loop; and its extreme cases by hand."""
    generator = torch.Generator().manual_seed(7)
    num_bits, n = 4, 23
    if case == "single_word":
        codes, labels = [5], [2]
    elif case == "one_label":
        codes, labels = torch.randint(0, 3, (n,), generator=generator).tolist(), [1] * n
    elif case == "distinct_codes":
        codes = torch.randperm(16, generator=generator).tolist()  # all 16 codes of 4 bits, once each
        labels = torch.randint(0, 3, (16,), generator=generator).tolist()
    elif case == "one_code":
        codes, labels = [9] * n, torch.randint(0, 4, (n,), generator=generator).tolist()
    else:
        codes = torch.randint(0, 6, (n,), generator=generator).tolist()
        labels = torch.randint(-1, 4, (n,), generator=generator).tolist()
    metric = CodeMetrics()
    for start in range(0, len(codes), 5):
        metric(*as_batch(codes[start : start + 5], labels[start : start + 5], num_bits))
    values = metric.get_metric()
    assert_metrics_equal(values, brute_force(*as_batch(codes, labels, num_bits)))
    triple = (values["code_same_label_same_code"], values["code_diff_label_diff_code"], values["code_codes_per_label"])
    if case == "single_word":
        assert triple == (0.0, 0.0, 1.0)  # no pairs; one code, one label
    elif case == "one_label":
        assert triple[1] == 0.0 and triple[2] == len(set(codes))  # no pairs of different labels
    elif case == "distinct_codes":
        assert triple[0] == 0.0 and triple[1] == 1.0 and triple[2] == len(codes) / len(set(labels))
    elif case == "one_code":
        assert triple[0] == 1.0 and triple[1] == 0.0 and triple[2] == 1 / len(set(labels))


# ----------------------------------------------------------------------------------------- distributed
NUM_STEPS = 4


def worker_batches(rank):
    """The batches of one worker; `None` = the worker has no batch at that step."""
    generator = torch.Generator().manual_seed(100 + rank)
    batches = []
    for step in range(NUM_STEPS):
        if rank == 1 and step == 0:
            batches.append(None)  # worker 1 has seen nothing at the first get_metric
            continue
        batch, words = 2 + rank, 5 + 2 * step
        bits = torch.rand(batch, words, 4, generator=generator) > 0.5  # (batch, words, bits)
        labels = torch.randint(-1, 4, (batch, words), generator=generator)  # (batch, words)
        mask = torch.rand(batch, words, generator=generator) > 0.25  # (batch, words)
        if rank == 0 and step == 2:
            mask[:] = False  # nothing to add on worker 0 at this step
        batches.append((bits, labels, mask))
    return batches


def distributed_code_metrics(rank, world_size):
    metric = CodeMetrics()
    results = []
    for batch in worker_batches(rank):
        if batch is not None:
            metric(*batch)
        results.append(metric.get_metric(reset=False))
    results.append(metric.get_metric(reset=True))
    results.append(metric.get_metric(reset=False))  # after reset: empty on every worker
    return results


def test_two_process_gloo_equals_single_process_on_union():
    per_rank = run_distributed(distributed_code_metrics, 2)
    batches = [worker_batches(rank) for rank in range(2)]
    single = CodeMetrics()
    expected = []
    for step in range(NUM_STEPS):
        for rank in range(2):
            if batches[rank][step] is not None:
                single(*batches[rank][step])
        expected.append(single.get_metric())
    expected.append(single.get_metric(reset=True))
    expected.append(single.get_metric())
    for results in per_rank:
        assert len(results) == len(expected)
        for actual, wanted in zip(results, expected):
            assert_metrics_equal(actual, wanted)
    # and the reference itself is the brute force on the union
    union = [b for rank in range(2) for b in batches[rank] if b is not None]
    flat = lambda i: torch.cat([b[i].reshape(-1, *b[i].shape[2:]) for b in union])  # noqa: E731
    assert_metrics_equal(expected[NUM_STEPS - 1], brute_force(flat(0), flat(1), flat(2)))

"""Tests of DistributedSpanF1: equal to SpanBasedF1Measure in one process and across 2 gloo workers."""
import random

import pytest
import torch

from allennlp.common import Params
from allennlp.data import Vocabulary
from allennlp.training.metrics import CategoricalAccuracy, Metric, SpanBasedF1Measure

from bitcode_allennlp.training.metrics.span_f1 import DistributedSpanF1
from tests.training.distributed import run_distributed

TYPES = ["PER", "LOC", "ORG", "MISC"]


def make_vocab():
    vocab = Vocabulary()
    vocab.add_token_to_namespace("O", "labels")
    for span_type in TYPES:
        for prefix in "BILU":
            vocab.add_token_to_namespace(f"{prefix}-{span_type}", "labels")
    return vocab


def spans_to_tags(spans, length):
    tags = ["O"] * length
    for span_type, start, end in spans:
        if start == end:
            tags[start] = f"U-{span_type}"
        else:
            tags[start] = f"B-{span_type}"
            for i in range(start + 1, end):
                tags[i] = f"I-{span_type}"
            tags[end] = f"L-{span_type}"
    return tags


def random_spans(rng, length, types):
    spans, i = [], 0
    while i < length:
        if rng.random() < 0.35:
            end = min(length - 1, i + rng.choice([0, 0, 1, 2, 3]))
            spans.append((rng.choice(types), i, end))
            i = end + 1
        i += 1
    return spans


def random_batch(rng, vocab, batch_size, types=TYPES, as_ids=False):
    """Gold and predicted valid BIOUL sequences (predictions overlap the gold), padded, with a mask."""
    lengths = [rng.randint(0, 12) for _ in range(batch_size)]
    width = max(lengths + [1])
    gold = torch.zeros(batch_size, width, dtype=torch.long)  # (batch, words)
    pred = torch.full((batch_size, width), -1, dtype=torch.long)  # (batch, words), -1 = padding
    mask = torch.zeros(batch_size, width, dtype=torch.bool)  # (batch, words)
    for row, length in enumerate(lengths):
        gold_spans = random_spans(rng, length, types)
        if rng.random() < 0.5:  # keep most gold spans, retype some, then
            pred_spans = [(rng.choice(types) if rng.random() < 0.2 else t, s, e) for t, s, e in gold_spans
                          if rng.random() < 0.8]
        else:
            pred_spans = random_spans(rng, length, types)
        for tensor, spans in ((gold, gold_spans), (pred, pred_spans)):
            tags = spans_to_tags(spans, length)
            ids = [vocab.get_token_index(tag, "labels") for tag in tags]
            tensor[row, :length] = torch.tensor(ids, dtype=torch.long)
        mask[row, :length] = True
    if as_ids:
        return pred, gold, mask
    num_tags = vocab.get_vocab_size("labels")
    scores = torch.rand(batch_size, width, num_tags) * 0.5  # (batch, words, tags)
    scores.scatter_(-1, pred.clamp(min=0).unsqueeze(-1), 1.0)  # argmax = predicted tag
    return scores, gold, mask


def test_equals_span_based_f1_in_one_process():
    vocab = make_vocab()
    rng = random.Random(0)
    ours = DistributedSpanF1(vocab)
    reference = SpanBasedF1Measure(vocab, tag_namespace="labels", label_encoding="BIOUL")
    for step in range(20):
        scores, gold, mask = random_batch(rng, vocab, 6)
        ours(scores, gold, mask)
        reference(scores, gold, mask)
        assert ours.get_metric() == reference.get_metric()
    values = ours.get_metric(reset=True)
    assert {"precision-overall", "recall-overall", "f1-measure-overall", "f1-measure-PER"} <= set(values)
    assert 0.0 < values["f1-measure-overall"] < 1.0
    assert ours.get_metric()["f1-measure-overall"] == 0.0


def test_tag_id_predictions_equal_class_scores():
    vocab = make_vocab()
    from_ids, from_scores = DistributedSpanF1(vocab), DistributedSpanF1(vocab)
    for seed in range(10):
        pred_ids, gold, mask = random_batch(random.Random(seed), vocab, 5, as_ids=True)
        scores, gold2, mask2 = random_batch(random.Random(seed), vocab, 5)
        assert torch.equal(gold, gold2) and torch.equal(mask, mask2)
        assert torch.equal(scores.argmax(-1)[mask], pred_ids[mask])
        from_ids(pred_ids, gold, mask)  # padding ids -1 under the mask are fine
        from_scores(scores, gold, mask)
    assert from_ids.get_metric() == from_scores.get_metric()
    assert from_ids.get_metric()["f1-measure-overall"] > 0


def test_constructor_and_registration():
    vocab = make_vocab()
    metric = Metric.from_params(Params({"type": "span_f1_distributed", "ignore_classes": ["MISC"]}),
                                vocabulary=vocab)
    assert isinstance(metric, DistributedSpanF1) and metric.supports_distributed
    scores, gold, mask = random_batch(random.Random(3), vocab, 8, types=["MISC", "PER"])
    metric(scores, gold, mask)
    assert not any(key.endswith("MISC") for key in metric.get_metric())


# ----------------------------------------------------------------------------------------- distributed
NUM_STEPS = 5


def worker_batches(rank):
    vocab = make_vocab()
    rng = random.Random(1000 + rank)
    # LOC spans exist only on worker 1: the union of span types must still be reported everywhere
    types = ["PER", "ORG"] if rank == 0 else ["PER", "LOC", "MISC"]
    return [random_batch(rng, vocab, 3 + rank, types=types) for _ in range(NUM_STEPS)]


def distributed_span_f1(rank, world_size):
    vocab = make_vocab()
    metric = DistributedSpanF1(vocab)
    results = []
    for batch in worker_batches(rank):
        metric(*batch)
        results.append(metric.get_metric())
    results.append(metric.get_metric(reset=True))
    results.append(metric.get_metric())
    # AllenNLP's own metrics in a process group: SpanBasedF1Measure refuses, CategoricalAccuracy reduces
    plain = SpanBasedF1Measure(vocab, tag_namespace="labels", label_encoding="BIOUL")
    plain(*worker_batches(rank)[0])
    try:
        plain.get_metric()
        plain_error = None
    except RuntimeError as error:
        plain_error = str(error)
    accuracy = CategoricalAccuracy()
    logits = torch.eye(3)[torch.tensor([0, 1, 2, 0])]  # (4, 3) predicts 0, 1, 2, 0
    accuracy(logits, torch.tensor([0, 1, 2, 1]) if rank == 0 else torch.tensor([2, 2, 2, 2]))
    return results, plain_error, accuracy.get_metric()


def test_two_process_gloo_equals_single_process_on_union():
    per_rank = run_distributed(distributed_span_f1, 2)
    batches = [worker_batches(rank) for rank in range(2)]
    single = SpanBasedF1Measure(make_vocab(), tag_namespace="labels", label_encoding="BIOUL")
    expected = []
    for step in range(NUM_STEPS):
        for rank in range(2):
            single(*batches[rank][step])
        expected.append(single.get_metric())
    expected.append(single.get_metric(reset=True))
    expected.append(single.get_metric())
    assert "f1-measure-LOC" in expected[-3] and "f1-measure-ORG" in expected[-3]
    for results, plain_error, accuracy in per_rank:
        assert results == expected
        assert plain_error is not None and "not supported" in plain_error
        # rank 0: 3 of 4 right, rank 1: 1 of 4 right -> 4 / 8 on every worker (reduced in __call__)
        assert accuracy == pytest.approx(0.5)

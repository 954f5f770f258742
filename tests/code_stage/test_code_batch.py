"""The CPU prediction path of codes instances (`common/batch_tensors.py`, `HashingModel.forward_on_instances`)
gives exactly AllenNLP's `Model.forward_on_instances` outputs (every key, every instance), and is taken only where
it applies: not for words through a PLM, gold parse spans, mixed batches, or a model on a GPU."""
import json

import numpy
import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch
from allennlp.models import Model

import bitcode_allennlp.model.hashing_model as hashing_model
from bitcode_allennlp.code_stage.binary_code_indexer import BinaryCodeIndexer
from bitcode_allennlp.common.batch_tensors import batch_tensors
from tests.conftest import FIXTURES, build

CODES = FIXTURES / "data" / "codes"


@pytest.fixture
def fast_calls(monkeypatch):
    """Whether each `forward_on_instances` took the fast path (the tensorizer built the tensors) or not."""
    taken = []

    def spy(instances, vocab):
        tensors = batch_tensors(instances, vocab)
        taken.append(tensors is not None)
        return tensors

    monkeypatch.setattr(hashing_model, "batch_tensors", spy)
    return taken


def assert_same(fast, generic):
    """Equal values of the same types (numpy arrays: dtype and shape too), recursively."""
    assert type(fast) is type(generic), (type(fast), type(generic))
    if isinstance(fast, numpy.ndarray):
        assert fast.dtype == generic.dtype and fast.shape == generic.shape
        assert numpy.array_equal(fast, generic)
    elif isinstance(fast, dict):
        assert list(fast) == list(generic)
        for key in fast:
            assert_same(fast[key], generic[key])
    elif isinstance(fast, (list, tuple)):
        assert len(fast) == len(generic)
        for a, b in zip(fast, generic):
            assert_same(a, b)
    else:
        assert fast == generic


def compare(model, batches, fast_calls, fast: bool):
    for instances in batches:
        outputs = model.forward_on_instances(instances)
        assert fast_calls.pop() is fast
        expected = Model.forward_on_instances(model, instances)  # AllenNLP's path
        assert len(outputs) == len(expected) == len(instances)
        for output, reference in zip(outputs, expected):
            assert_same(output, reference)


def code_lines(name):
    return [json.loads(line) for line in (CODES / name).read_text().splitlines() if line.strip()]


def indexed(reader, instances):
    for instance in instances:
        reader.apply_token_indexers(instance)
    return instances


@pytest.mark.parametrize("config, task", [("ner_code.jsonnet", "ner"), ("pos_code.jsonnet", "pos")])
def test_tagger_fast_path_equals_allennlp(config, task, fast_calls):
    model, reader, train = build(config, seed=0, eval_mode=True)
    labelled = indexed(reader, train[:12])  # gold tags in the vocabulary: a loss too
    assert len({len(instance["tokens"]) for instance in labelled}) > 1  # sentences of different lengths
    dev = code_lines(f"{task}.dev.jsonl")
    unlabelled = indexed(reader, [reader.text_to_instance(line["codes"], words=line["words"]) for line in dev])
    batches = [labelled, labelled[3:4], unlabelled, unlabelled[:1], unlabelled[5:6] + unlabelled[:3]]
    compare(model, batches, fast_calls, fast=True)
    with torch.no_grad():  # the tag strings are the vocabulary's names of the decoded ids
        ids = model(**batch_tensors(unlabelled, model.vocab))["tags"]
    for output, path in zip(model.forward_on_instances(unlabelled), ids):
        assert output["tags"] == [model.vocab.get_token_from_index(t, "labels") for t in path]
    fast_calls.clear()
    mixed = labelled[:2] + unlabelled[:1]  # some with tags, one without: AllenNLP's error
    with pytest.raises(ConfigurationError, match="non-homogeneous"):
        model.forward_on_instances(mixed)
    assert fast_calls.pop() is False


def test_parser_prediction_fast_and_gold_spans_generic(fast_calls):
    model, reader, train = build("parse_code.jsonnet", seed=0, eval_mode=True)
    lines = code_lines("parse.dev.jsonl")[:8]
    plain = indexed(reader, [reader.text_to_instance(line["codes"], words=line["words"],
                                                     pos_tags=["NN"] * len(line["codes"])) for line in lines])
    compare(model, [plain, plain[:1]], fast_calls, fast=True)
    compare(model, [indexed(reader, train[:6])], fast_calls, fast=False)  # gold spans: AllenNLP's path


def test_hashing_model_takes_allennlp_path(fast_calls):
    model, reader, train = build("ner_hash.jsonnet", seed=0, eval_mode=True)
    compare(model, [indexed(reader, train[:5])], fast_calls, fast=False)  # words through the PLM's indexer


def test_gpu_takes_allennlp_path(monkeypatch):
    model, reader, train = build("pos_code.jsonnet", seed=0, eval_mode=True)
    monkeypatch.setattr(type(model), "_get_prediction_device", lambda self: 0)
    monkeypatch.setattr(Model, "forward_on_instances", lambda self, instances: "allennlp")
    assert model.forward_on_instances(indexed(reader, train[:2])) == "allennlp"


@pytest.mark.parametrize("min_padding", [0, 40])
def test_indexer_batch_tensor_dict_equals_padded_and_stacked(min_padding):
    indexer = BinaryCodeIndexer(24, token_min_padding_length=min_padding)
    token_lists = [{"codes": [5, 2 ** 24 - 1, 0], "mask": [True] * 3}, {"codes": [7], "mask": [True]},
                   {"codes": list(range(1, 13)), "mask": [True] * 12}]
    length = max(indexer.get_padding_lengths(tokens)["bits"] for tokens in token_lists)
    per_sentence = [indexer.as_padded_tensor_dict(tokens, {"bits": length}) for tokens in token_lists]
    batched = indexer.batch_tensor_dict(token_lists)
    for key in ("bits", "mask"):
        expected = torch.stack([tensors[key] for tensors in per_sentence])
        assert batched[key].dtype == expected.dtype and torch.equal(batched[key], expected)


def test_batch_tensors_equal_as_tensor_dict():
    model, reader, train = build("ner_code.jsonnet", seed=0)
    instances = indexed(reader, train[:7])
    fast = batch_tensors(instances, model.vocab)
    batch = Batch(instances)
    batch.index_instances(model.vocab)
    expected = batch.as_tensor_dict()
    assert list(fast) == list(expected)
    assert fast["metadata"] == expected["metadata"]
    for got, want in ((fast["tags"], expected["tags"]),
                      (fast["tokens"]["codes"]["bits"], expected["tokens"]["codes"]["bits"]),
                      (fast["tokens"]["codes"]["mask"], expected["tokens"]["codes"]["mask"])):
        assert got.dtype == want.dtype and torch.equal(got, want)

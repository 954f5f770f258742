"""`HashingModel`'s contract with the task models: a view is a `View` read by name, a forward pass runs views →
losses → output → decode (the task's `_decode_view`, only when the model decodes) → metrics, and `two_views` has one
default (true) in Python and in the configs."""
import inspect

import torch
from allennlp.common import Params
from allennlp.data import Batch

import bitcode_allennlp.plugin  # noqa: F401
from bitcode_allennlp.model.hashing_model import Decoding, HashingModel, View
from bitcode_allennlp.parsing.models.hash_span_parser import HashSpanParser, SpanScores
from bitcode_allennlp.tagging.models.hash_crf_tagger import HashCrfTagger
from tests.conftest import CONFIGS, build


def first_view(model, instances):
    batch = Batch(instances[:3])
    batch.index_instances(model.vocab)
    tokens = batch.as_tensor_dict()["tokens"]
    mask = tokens["tokens"]["mask"]
    with torch.no_grad():
        return model._view(tokens, mask), mask


def test_views_are_read_by_name():
    assert View._fields == ("scores", "hash_scores", "head_scores")
    tagger, _, instances = build("pos_hash.jsonnet", eval_mode=True)
    view, mask = first_view(tagger, instances)
    assert isinstance(view, View) and view.scores.shape == mask.shape + (tagger.num_tags,)
    assert view.hash_scores.shape == mask.shape + (tagger.num_bits,)
    assert view.head_scores is None  # eval mode, no head
    parser, _, instances = build("parse_hash.jsonnet", eval_mode=True)
    view, mask = first_view(parser, instances)
    n = mask.shape[1]
    assert isinstance(view, View) and isinstance(view.scores, SpanScores)
    assert view.scores.span.shape == (3, n + 1, n + 1) and view.scores.label.shape[:3] == (3, n + 1, n + 1)
    assert view.hash_scores.shape == (3, n, parser.num_bits)


def test_two_views_has_one_default():
    """Algorithm 1 sums two task losses whatever β: the Python default is the configs' (TWO_VIEWS, true)."""
    for model in (HashingModel, HashCrfTagger, HashSpanParser):
        assert inspect.signature(model.__init__).parameters["two_views"].default is True, model
    for config in ("pos_hash.jsonnet", "ner_hash.jsonnet", "parse_hash.jsonnet", "parse_hash_incremental.jsonnet"):
        assert Params.from_file(str(CONFIGS / config))["model"]["two_views"] is True
    for config in ("pos_code.jsonnet", "ner_code.jsonnet", "parse_code.jsonnet"):  # the validation stage: one view
        assert Params.from_file(str(CONFIGS / config))["model"]["two_views"] is False


def calls_of_a_forward(model, instances, training):
    """The hooks one forward pass calls, in order, and its output."""
    calls = []
    for hook in ("_view", "_task_loss", "_decode_view", "_update_metrics"):
        original = getattr(model, hook)

        def spy(*args, _hook=hook, _original=original, **kwargs):
            calls.append(_hook)
            return _original(*args, **kwargs)

        setattr(model, hook, spy)
    batch = Batch(instances[:3])
    batch.index_instances(model.vocab)
    model.train(training)
    with torch.no_grad():
        output = model(**batch.as_tensor_dict())
    return calls, output


def test_a_forward_runs_views_losses_then_decode():
    parser, _, instances = build("parse_hash.jsonnet")
    calls, output = calls_of_a_forward(parser, instances, training=True)
    assert calls == ["_view", "_view", "_task_loss", "_task_loss"]  # training: two views, no CKY, no trees
    assert "loss" in output and "trees" not in output and "spans" not in output
    assert not any(key.startswith("evalb") for key in parser.get_metrics(reset=True))
    calls, output = calls_of_a_forward(parser, instances, training=False)
    assert calls == ["_view", "_task_loss", "_decode_view", "_update_metrics"]
    assert len(output["trees"]) == len(output["nltk_trees"]) == len(output["spans"]) == 3
    assert "evalb_f1" in parser.get_metrics(reset=True)
    tagger, _, instances = build("pos_hash.jsonnet")
    calls, output = calls_of_a_forward(tagger, instances, training=True)  # training_metrics: decodes in training
    assert calls == ["_view", "_view", "_task_loss", "_task_loss", "_decode_view", "_update_metrics"]
    tagger.training_metrics = False
    calls, output = calls_of_a_forward(tagger, instances, training=True)
    assert "_decode_view" not in calls and "tags" not in output
    assert "accuracy" not in tagger.get_metrics(reset=True)


def test_the_tagger_decodes_viterbi_paths():
    tagger, _, instances = build("pos_hash.jsonnet", eval_mode=True)
    view, mask = first_view(tagger, instances)
    decoding = tagger._decode_view(view, mask, None)
    assert isinstance(decoding, Decoding) and torch.equal(decoding.predicted, tagger.decode(view.scores, mask))
    assert [len(tags) for tags in decoding.output["tags"]] == mask.sum(dim=-1).tolist()

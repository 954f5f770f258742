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
    assert View._fields == ("scores", "hash_scores", "cut_scores")
    tagger, _, instances = build("pos_hash.jsonnet", eval_mode=True)
    view, mask = first_view(tagger, instances)
    assert isinstance(view, View) and view.scores.shape == mask.shape + (tagger.num_tags,)
    assert view.hash_scores.shape == mask.shape + (tagger.num_bits,)
    assert view.cut_scores is None  # eval mode, no head
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


def plm_and_query_gradients(model, loss):
    """(whether any PLM parameter has a non-zero gradient, the query projection's gradient) of `loss`."""
    model.zero_grad()
    loss.backward(retain_graph=True)
    plm = any(p.grad is not None and p.grad.abs().sum() > 0
              for name, p in model.named_parameters() if name.startswith("text_field_embedder."))
    return plm, model.encoder.query.weight.grad


def test_hash_loss_reach_hash_layer_trains_the_hash_layer_only(monkeypatch):
    """`hash_loss_reach="hash_layer"`: the hash loss reads the cut scores (equal in value with the full layer) and
    its gradient reaches the queries and keys, not the PLM; with the Q/K-only layer and a head of the same reach, the
    PLM's gradient is the task loss's alone."""
    monkeypatch.setenv("BETA", "0.1")
    monkeypatch.setenv("HASH_LOSS_REACH", "hash_layer")
    model, _, instances = build("pos_hash.jsonnet", seed=0)
    assert model.hash_loss_reach == "hash_layer"
    batch = Batch(instances[:4])
    batch.index_instances(model.vocab)
    tensors = batch.as_tensor_dict()
    mask = tensors["tokens"]["tokens"]["mask"]
    model.train()
    torch.manual_seed(3)
    view, losses = model.two_view_step(tensors["tokens"], mask, tensors["tags"], tensors["metadata"])
    assert torch.allclose(view.cut_scores, view.hash_scores, atol=1e-6)
    plm, query = plm_and_query_gradients(model, losses["hash_loss"])
    assert not plm and query.abs().sum() > 0
    model.hash_loss_reach = "plm"  # the paper's: the same loss reaches the PLM
    torch.manual_seed(3)
    view, losses = model.two_view_step(tensors["tokens"], mask, tensors["tags"], tensors["metadata"])
    assert view.cut_scores is None and plm_and_query_gradients(model, losses["hash_loss"])[0]

    monkeypatch.setenv("QK_ONLY", "true")
    monkeypatch.setenv("CODE_HEAD", "1")
    monkeypatch.setenv("CODE_HEAD_REACH", "hash_layer")
    model, _, _ = build("pos_hash.jsonnet", seed=0)
    model.train()
    torch.manual_seed(3)
    view, losses = model.two_view_step(tensors["tokens"], mask, tensors["tags"], tensors["metadata"], tensors["tags"])
    head = model.code_head(view.cut_scores, tensors["tags"], mask, model._loss_divisor(mask))
    task = model._task_loss(view, tensors["tags"], mask)
    for loss in (losses["hash_loss"], head):  # the losses on the codes: the hash layer only
        plm, query = plm_and_query_gradients(model, loss)
        assert not plm and query.abs().sum() > 0
    assert plm_and_query_gradients(model, task)[0]  # the task loss fits the PLM
    model.eval()  # the dev loss: no cut scores, the same values
    with torch.no_grad():
        output = model(**tensors)
    assert torch.isfinite(output["loss"]) and model.get_metrics(reset=True)["code_head_accuracy"] > 0


def test_ner_hash_trains_with_the_codes_cut_from_the_plm(tmp_path):
    """A real `allennlp train` (1 epoch, the fixtures) with the Q/K-only layer and both losses on the codes stopped
    at the hash layer: training and the dev loss run, and the head and hash loss are reported."""
    import json

    from tests.conftest import run_cli

    run_cli(["train", CONFIGS / "ner_hash.jsonnet", "-s", tmp_path / "run"], cwd=tmp_path,
            env={"EPOCHS": "1", "QK_ONLY": "true", "CODE_HEAD": "1", "CODE_HEAD_REACH": "hash_layer",
                 "HASH_LOSS_REACH": "hash_layer"})
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["training_hash_loss"] > 0 and "validation_code_head_accuracy" in metrics
    assert "validation_f1-measure-overall" in metrics

"""The span code-reading head (`bitcode_allennlp/parsing/models/span_code_head.py`): shapes, a finite loss whose
gradient reaches the hash scores through the straight-through codes, a few steps on a toy that lower its loss, its
checks, the parser with a head (its loss added on view 1, `code_span_head_loss`), the error without codes, the
config variables, and a training run of `parse_hash.jsonnet` with the head."""
import json

import pytest
import torch
from allennlp.common import Lazy, Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, DatasetReader, Vocabulary
from allennlp.models import Model

import bitcode_allennlp.plugin  # noqa: F401
from bitcode_allennlp.parsing.models.span_code_head import SpanCodeHead
from bitcode_allennlp.structs.tree_crf import gold_chart
from tests.conftest import CONFIGS, build, run_cli


def right_branching(lengths, words):
    """The gold chart (batch, n+1, n+1) of right-branching binary trees over sentences of `lengths` (label 0)."""
    trees = [[(i, length - 1) for i in range(length)] + [(i, i) for i in range(length - 1)] for length in lengths]
    spans = torch.full((len(lengths), max(map(len, trees)), 2), -1, dtype=torch.long)  # (batch, spans, 2)
    for b, tree in enumerate(trees):
        spans[b, :len(tree)] = torch.tensor(tree)
    return gold_chart(spans, torch.zeros(spans.shape[:2], dtype=torch.long), words)  # (batch, n+1, n+1)


def toy(seed=0, lengths=(7, 4, 2), bits=6):
    gen = torch.Generator().manual_seed(seed)
    words = max(lengths)
    scores = torch.randn(len(lengths), words, bits, generator=gen)  # (batch, n, K)
    mask = torch.arange(words)[None, :] < torch.tensor(lengths)[:, None]  # (batch, n)
    return scores, right_branching(lengths, words), mask


@pytest.mark.parametrize("boundary", ["split", "left"])
def test_shapes_finite_loss_and_gradient_through_the_codes(boundary):
    torch.manual_seed(0)
    head = SpanCodeHead(num_bits=6, boundary=boundary, weight=0.5, hidden_dim=8)
    scores, chart, mask = toy()
    scores.requires_grad_(True)
    assert head.span_scores(scores, mask).shape == (3, 8, 8)
    loss = head(scores, chart, mask, divisor=3)
    assert loss.dim() == 0 and torch.isfinite(loss) and loss.item() > 0
    loss.backward()
    assert scores.grad[mask].abs().sum() > 0 and scores.grad[~mask].abs().sum() == 0  # padding is never read
    assert head.get_metric(reset=True) == pytest.approx(loss.item() / 0.5)  # per sentence (3 of them), unweighted
    # only the signs are read: scores of the same signs, the same span scores
    same_signs = scores.detach() * torch.rand(scores.shape).add(0.5)  # (batch, n, K)
    assert torch.allclose(head.span_scores(same_signs, mask), head.span_scores(scores.detach(), mask))


def test_a_few_steps_on_the_head_alone_lower_its_loss():
    torch.manual_seed(1)
    head = SpanCodeHead(num_bits=6, boundary="split", hidden_dim=16)
    scores, chart, mask = toy(seed=1, lengths=(6, 5, 6, 3))
    optimizer = torch.optim.Adam(head.parameters(), lr=1e-2)
    losses = []
    for _ in range(15):
        optimizer.zero_grad()
        loss = head(scores, chart, mask)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0], losses


def test_checks_and_params():
    head = Lazy(SpanCodeHead, Params({"weight": 2, "hidden_dim": 16})).construct(num_bits=12, boundary="left")
    assert head.weight == 2 and head.eos is None and head.words[0].weight.shape == (16, 12)
    for bad in ({"weight": 0}, {"weight": -1}, {"hidden_dim": 0}, {"boundary": "right"}):
        arguments = {"num_bits": 12, "boundary": "split", **bad}
        with pytest.raises(ConfigurationError, match="code_span_head."):
            SpanCodeHead(**arguments)


def test_parser_adds_the_heads_loss_on_the_first_view(monkeypatch):
    monkeypatch.setenv("CODE_SPAN_HEAD", "0.5")
    monkeypatch.setenv("CODE_SPAN_HEAD_DIM", "32")
    model, _, instances = build("parse_hash.jsonnet")
    head = model.code_span_head
    assert isinstance(head, SpanCodeHead) and head.weight == 0.5 and head.boundary == model.boundary == "split"
    assert head.num_bits == model.num_bits and head.words[0].out_features == 32
    batch = Batch(instances[:4])
    batch.index_instances(model.vocab)
    tensors = batch.as_tensor_dict()
    mask = tensors["tokens"]["tokens"]["mask"]
    chart = gold_chart(tensors["spans"], tensors["span_labels"], mask.shape[1])  # (batch, n+1, n+1)
    model.train()
    torch.manual_seed(3)
    output = model(**tensors)
    model.code_span_head = None
    torch.manual_seed(3)
    without = model(**tensors)  # the same dropout, no head
    model.code_span_head = head
    torch.manual_seed(3)
    view = model._view(tensors["tokens"], mask)  # the first view again
    expected = head(view.hash_scores, chart, mask, mask.shape[0])  # task_loss "mean": sentences
    assert output["loss"].item() == pytest.approx((without["loss"] + expected).item(), rel=1e-5)
    model.zero_grad()
    expected.backward()  # the head's loss alone reaches the hash layer
    assert model.encoder.query.weight.grad.abs().sum() > 0
    assert model.get_metrics(reset=True)["code_span_head_loss"] > 0
    model.eval()
    model(**tensors)
    assert {"code_span_head_loss", "evalb_f1"} <= set(model.get_metrics(reset=True))


def test_default_has_no_head_and_the_variables_reach_the_config(monkeypatch):
    assert "code_span_head" not in Params.from_file(str(CONFIGS / "parse_hash.jsonnet"))["model"]
    monkeypatch.setenv("CODE_SPAN_HEAD", "2")
    monkeypatch.setenv("CODE_SPAN_HEAD_DIM", "64")
    model = Params.from_file(str(CONFIGS / "parse_hash_incremental.jsonnet"))["model"]
    assert model["code_span_head"].as_dict() == {"weight": 2, "hidden_dim": 64}


def test_head_without_codes_is_a_clear_error():
    params = Params.from_file(str(CONFIGS / "parse_code.jsonnet"))
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    vocab = Vocabulary.from_instances(reader.read(params.pop("train_data_path")))
    model_params = params.pop("model")
    model_params["code_span_head"] = {}
    with pytest.raises(ConfigurationError, match="code_span_head reads the codes: it needs a 'hash_transformer'"):
        Model.from_params(vocab=vocab, params=model_params)


def test_parse_hash_trains_with_the_head(tmp_path):
    run_cli(["train", CONFIGS / "parse_hash.jsonnet", "-s", tmp_path / "run"], cwd=tmp_path,
            env={"EPOCHS": "1", "CODE_SPAN_HEAD": "1"})
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["training_code_span_head_loss"] > 0 and metrics["validation_code_span_head_loss"] > 0
    assert "validation_evalb_f1" in metrics

"""The code-reading head (`bitcode_allennlp/model/code_head.py`): its loss against a naive per-word loop, bit flips
in training only, the registered "mlp" built from params, the parser with a head (a training step,
`code_head_accuracy`, skipped without tags) and the errors of a head without labels or without codes."""
import pytest
import torch
from allennlp.common import Lazy, Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, DatasetReader, Vocabulary
from allennlp.models import Model

import bitcode_allennlp.plugin  # noqa: F401
from bitcode_allennlp.model.code_head import CodeHead, MlpCodeHead, straight_through_signs
from tests.conftest import CONFIGS, build


def random_batch(seed=0, batch=3, words=7, bits=6, labels=5):
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randn(batch, words, bits, generator=gen)  # (batch, words, K)
    scores[0, 0, 0] = 0.0  # a sign of exactly 0 counts as bit 0, i.e. -1
    gold = torch.randint(0, labels, (batch, words), generator=gen)  # (batch, words)
    mask = torch.ones(batch, words, dtype=torch.bool)
    mask[1, 4:] = False
    mask[2, 2:] = False
    return scores, gold, mask


def naive_loss(head, scores, gold, mask, divisor):
    """The head's loss word by word: the code as ±1, its logits, the cross-entropy, summed, divided, weighted."""
    total, right, words = 0.0, 0, 0
    for b in range(scores.shape[0]):
        for i in range(scores.shape[1]):
            if not mask[b, i]:
                continue
            code = torch.tensor([1.0 if s > 0 else -1.0 for s in scores[b, i].tolist()])  # (K,)
            logits = head.read(code)  # (labels,)
            total += torch.nn.functional.cross_entropy(logits[None], gold[b, i][None]).item()
            right += int(logits.argmax().item() == gold[b, i].item())
            words += 1
    return head.weight * total / divisor, right / words


@pytest.mark.parametrize("divisor", [1, 3, torch.tensor(13)])
def test_loss_is_the_naive_per_word_loss(divisor):
    torch.manual_seed(0)
    head = MlpCodeHead(num_bits=6, num_labels=5, weight=0.7, hidden_dim=8).eval()
    scores, gold, mask = random_batch()
    expected, accuracy = naive_loss(head, scores, gold, mask, float(divisor))
    loss = head(scores, gold, mask, divisor)
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    assert head.get_metric(reset=True) == pytest.approx(accuracy)
    # straight-through: the gradient reaches the scores (hardtanh of the standardised scores)
    scores.requires_grad_(True)
    head(scores, gold, mask, divisor).backward()
    assert scores.grad[mask].abs().sum() > 0 and scores.grad[~mask].abs().sum() == 0


def test_straight_through_signs_are_the_code_forward_and_hardtanh_backward():
    scores, _, mask = random_batch()
    scores.requires_grad_(True)
    codes = straight_through_signs(scores, mask)
    assert torch.equal(codes.detach(), torch.where(scores > 0, 1.0, -1.0))
    codes.sum().backward()
    sigma = scores.detach()[mask].std()
    assert torch.allclose(scores.grad, ((scores.detach() / sigma).abs() < 1).float() / sigma)


def test_registered_mlp_builds_from_params():
    assert "mlp" in CodeHead.list_available() and CodeHead.default_implementation == "mlp"
    params = {"type": "mlp", "weight": 2, "hidden_dim": 16}
    head = Lazy(CodeHead, Params(dict(params))).construct(num_bits=12, num_labels=7)
    assert isinstance(head, MlpCodeHead) and head.weight == 2
    assert [tuple(p.shape) for p in head.parameters()] == [(16, 12), (16,), (7, 16), (7,)]
    default = CodeHead.from_params(Params({}), num_bits=12, num_labels=7)  # no type: "mlp", hidden 256
    assert isinstance(default, MlpCodeHead) and default.layers[0].out_features == 256 and default.weight == 1
    for bad in ({"weight": 0}, {"hidden_dim": 0}):
        with pytest.raises(ConfigurationError, match="code_head."):
            CodeHead.from_params(Params(dict(bad)), num_bits=12, num_labels=7)


def tensors_of(model, instances):
    batch = Batch(instances)
    batch.index_instances(model.vocab)
    return batch.as_tensor_dict()


def test_parser_with_a_head_trains_a_step_and_reports_its_accuracy(monkeypatch):
    monkeypatch.setenv("CODE_HEAD", "0.5")
    model, _, instances = build("parse_hash.jsonnet")
    assert isinstance(model.code_head, MlpCodeHead) and model.code_head.weight == 0.5
    assert model.code_head.num_labels == model.vocab.get_vocab_size("pos_tags") > 0
    tensors = tensors_of(model, instances[:4])
    mask = tensors["tokens"]["tokens"]["mask"]
    model.train()
    torch.manual_seed(3)
    output = model(**tensors)
    without = {name: value for name, value in tensors.items() if name != "tags"}
    torch.manual_seed(3)
    skipped = model(**without)  # the same dropout, no tags: no head loss
    torch.manual_seed(3)
    view = model._view(tensors["tokens"], mask)  # the first view again
    head = model.code_head(view.hash_scores, tensors["tags"], mask, mask.shape[0])  # task_loss "mean": sentences
    assert output["loss"].item() == pytest.approx((skipped["loss"] + head).item(), rel=1e-5)
    assert 0.0 <= model.get_metrics(reset=True)["code_head_accuracy"] <= 1.0
    before = [p.detach().clone() for p in model.code_head.parameters()]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer.zero_grad()
    output["loss"].backward()
    assert model.encoder.query.weight.grad.abs().sum() > 0
    optimizer.step()
    assert all(not torch.equal(b, p) for b, p in zip(before, model.code_head.parameters()))
    model.eval()
    model(**tensors)  # dev: the head's accuracy is reported with the EVALB scores
    assert {"code_head_accuracy", "evalb_f1"} <= set(model.get_metrics(reset=True))


def test_head_without_labels_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("CODE_HEAD", "1")
    params = Params.from_file(str(CONFIGS / "parse_hash.jsonnet"))
    reader_params = params.pop("dataset_reader")
    assert reader_params["tag_field"] is True  # the config reads the POS tags for the head
    reader_params["tag_field"] = False  # a reader without them
    reader = DatasetReader.from_params(reader_params)
    vocab = Vocabulary.from_instances(reader.read(params.pop("train_data_path")))
    with pytest.raises(ConfigurationError, match=r"namespace 'pos_tags' is empty\): .*'ptb_spans' reader's "
                                                 r"tag_field: true"):
        Model.from_params(vocab=vocab, params=params.pop("model"))


def test_head_without_codes_is_a_clear_error(monkeypatch):
    params = Params.from_file(str(CONFIGS / "pos_code.jsonnet"))
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    vocab = Vocabulary.from_instances(reader.read(params.pop("train_data_path")))
    model_params = params.pop("model")
    model_params["code_head"] = {"type": "mlp"}
    with pytest.raises(ConfigurationError, match="code_head reads the codes: it needs a 'hash_transformer' encoder"):
        Model.from_params(vocab=vocab, params=model_params)


def gradients(model, loss):
    """The gradients of `loss` by parameter name (None where it does not reach)."""
    model.zero_grad()
    loss.backward()
    return {name: None if p.grad is None else p.grad.clone() for name, p in model.named_parameters()}


def test_reach_hash_layer_keeps_the_heads_gradient_out_of_the_plm(monkeypatch):
    monkeypatch.setenv("CODE_HEAD", "0.5")
    monkeypatch.setenv("CODE_HEAD_REACH", "hash_layer")
    model, _, instances = build("parse_hash.jsonnet")
    assert model.code_head.reach == "hash_layer"
    tensors = tensors_of(model, instances[:4])
    without = {name: value for name, value in tensors.items() if name != "tags"}  # no tags: no head loss
    model.train()
    torch.manual_seed(3)
    view = model._view(tensors["tokens"], tensors["tokens"]["tokens"]["mask"])
    assert torch.allclose(view.cut_scores, view.hash_scores, atol=1e-6)  # the same scores, cut from the PLM
    torch.manual_seed(3)
    with_head = gradients(model, model(**tensors)["loss"])
    torch.manual_seed(3)
    no_head = gradients(model, model(**without)["loss"])
    plm = [name for name in with_head if name.startswith("text_field_embedder.") and no_head[name] is not None]
    assert len(plm) > 10 and all(with_head[name] is not None for name in plm)
    assert all(torch.allclose(with_head[name], no_head[name], atol=1e-6) for name in plm)  # the head adds nothing
    assert not torch.allclose(with_head["encoder.query.weight"], no_head["encoder.query.weight"])  # it trains q, k
    # the default reach: the same head moves the PLM's gradient too
    model.code_head.reach = "plm"
    torch.manual_seed(3)
    assert model._view(tensors["tokens"], tensors["tokens"]["tokens"]["mask"]).cut_scores is None
    torch.manual_seed(3)
    through = gradients(model, model(**tensors)["loss"])
    assert not all(torch.allclose(through[name], no_head[name], atol=1e-6) for name in plm)
    model.eval()
    assert model._view(tensors["tokens"], tensors["tokens"]["tokens"]["mask"]).cut_scores is None  # training only


def test_reach_is_checked():
    with pytest.raises(ConfigurationError, match="code_head.reach"):
        CodeHead.from_params(Params({"reach": "embedder"}), num_bits=12, num_labels=7)

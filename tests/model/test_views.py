"""The three ways to run a training step's two views (`HashingModel.views`): two sequential passes, one pass over
the batch stacked twice (`batched`), one PLM pass and two hash-layer passes (`hash_layer`)."""
import pytest
import torch
from allennlp.data import Batch

from bitcode_allennlp.model.hashing_model import VIEW_MODES, View, split_batch
from tests.conftest import build

CONFIGS = {"tagger": "pos_hash.jsonnet", "parser": "parse_hash.jsonnet"}


def step(model, tensors, views, seed):
    model.views = views
    model.zero_grad()
    torch.manual_seed(seed)
    output = model(**tensors)
    output["loss"].backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    return output, grads


def batch_of(model, instances, size=4):
    batch = Batch(instances[:size])
    batch.index_instances(model.vocab)
    return batch.as_tensor_dict()


def without_dropout(model):
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        for name in ("dropout_prob", "attention_dropout", "dropout_p"):  # transformers' attention keeps a float
            if isinstance(getattr(module, name, None), float):
                setattr(module, name, 0.0)
    return model


@pytest.mark.parametrize("task", list(CONFIGS))
def test_without_dropout_every_mode_gives_the_same_losses_and_gradients(task, monkeypatch):
    monkeypatch.setenv("DROPOUT", "0")
    monkeypatch.setenv("PLM_DROPOUT", "0")
    monkeypatch.setenv("SIMILARITY", "cos")  # cos_sign's sign() may flip a near-zero score on float noise
    model, _, instances = build(CONFIGS[task], seed=1)
    without_dropout(model).train()
    tensors = batch_of(model, instances)
    reference, reference_grads = step(model, tensors, "sequential", 0)
    for views in ("batched", "hash_layer"):
        output, grads = step(model, tensors, views, 0)
        for key in ("loss", "hash_loss"):
            assert torch.allclose(output[key], reference[key], rtol=1e-3, atol=1e-5), (views, key)
        assert grads.keys() == reference_grads.keys()
        flat, reference_flat = (torch.cat([g[name].flatten() for name in sorted(g)]) for g in (grads, reference_grads))
        assert (flat - reference_flat).norm() < 1e-3 * reference_flat.norm(), views  # float noise only


def test_batched_views_have_their_own_dropout_and_the_losses_of_two_passes_in_distribution(monkeypatch):
    model, _, instances = build(CONFIGS["tagger"], seed=1)
    model.train()
    tensors = batch_of(model, instances, 6)
    mask = tensors["tokens"]["tokens"]["mask"] if "mask" in tensors["tokens"].get("tokens", {}) else None
    model.views = "batched"
    from allennlp.nn import util

    mask = util.get_text_field_mask(tensors["tokens"])
    first, second = model._two_views(tensors["tokens"], mask)
    assert not torch.allclose(first.hash_scores[mask], second.hash_scores[mask])  # independent dropout
    losses = {views: torch.tensor([step(model, tensors, views, seed)[0]["loss"].item() for seed in range(24)])
              for views in ("sequential", "batched")}
    difference = losses["batched"].mean() - losses["sequential"].mean()
    spread = (losses["batched"].var() / 24 + losses["sequential"].var() / 24).sqrt()
    assert abs(difference) < 4 * spread + 1e-6, (difference, spread)


def test_hash_layer_views_run_the_plm_once(monkeypatch):
    model, _, instances = build(CONFIGS["tagger"], seed=1)
    model.train()
    tensors = batch_of(model, instances)
    calls = []
    handle = model.text_field_embedder.register_forward_hook(lambda module, args, out: calls.append(out.shape[0]))
    try:
        for views, expected in (("sequential", [4, 4]), ("batched", [8]), ("hash_layer", [4])):
            calls.clear()
            step(model, tensors, views, 0)
            assert calls == expected, views
    finally:
        handle.remove()
    model.eval()
    calls_before = model.views
    assert model(**tensors)["loss"] is not None and calls_before == "hash_layer"  # eval: one view, any mode


def test_split_batch_cuts_tensors_and_named_tuples_in_halves():
    scores, hashes = torch.arange(12.0).view(4, 3), torch.arange(8.0).view(4, 2)
    first, second = split_batch(View(scores=scores, hash_scores=hashes), 2)
    assert isinstance(first, View) and torch.equal(first.scores, scores[:2])
    assert torch.equal(second.hash_scores, hashes[2:])
    assert split_batch(View(scores=scores, hash_scores=None), 2)[1].hash_scores is None


def test_an_unknown_mode_is_refused():
    from allennlp.common.checks import ConfigurationError

    with pytest.raises((ConfigurationError, ValueError), match="views"):
        model, _, _ = build(CONFIGS["tagger"])
        type(model)(vocab=model.vocab, text_field_embedder=model.text_field_embedder,
                    encoder=__import__("allennlp").common.Lazy(lambda input_dim: model.encoder), views="both")
    assert VIEW_MODES == ("sequential", "batched", "hash_layer")


@pytest.mark.parametrize("views", VIEW_MODES)
def test_the_config_variable_sets_the_mode(views, monkeypatch):
    monkeypatch.setenv("VIEWS", views)
    model, _, _ = build(CONFIGS["parser"])
    assert model.views == views

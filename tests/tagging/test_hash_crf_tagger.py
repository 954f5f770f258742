"""HashCrfTagger: train/save/load/predict consistency on the fixture configs (allennlp-models' ModelTestCase),
the two-view hash loss reaching the PLM, and β = 0 as a plain single-view baseline."""
import pytest
import torch
from allennlp.common.testing import ModelTestCase
from allennlp.data import Batch

import bitcode_allennlp.plugin  # noqa: F401
from bitcode_allennlp.model.hashing_model import word_identity
from tests.conftest import CONFIGS, build, two_view_forward

# The BERT pooler is not used by the plm_words embedder, so it gets no gradient.
POOLER = {
    "text_field_embedder.token_embedder_tokens.transformer_model.pooler.dense.weight",
    "text_field_embedder.token_embedder_tokens.transformer_model.pooler.dense.bias",
    "text_field_embedder.token_embedder_tokens.empty_word",  # the fixtures have no word without pieces
}


class TestHashCrfTagger(ModelTestCase):
    @pytest.mark.parametrize("config", ["ner_hash.jsonnet", "pos_hash.jsonnet"])
    def test_train_save_load_predict(self, config, monkeypatch):
        monkeypatch.setenv("EPOCHS", "1")
        # The comparison reads the same first batch twice: turn off the sampler's shuffling.
        self.ensure_model_can_train_save_and_load(CONFIGS / config, gradients_to_ignore=POOLER,
                                                  overrides='{"data_loader.batch_sampler.shuffle": false}')


@pytest.fixture(scope="module")
def ner():
    return build("ner_hash.jsonnet")


def test_outputs_carry_codes_and_hex(ner):
    model, _, instances = ner
    model.eval()
    outputs = model.forward_on_instances(instances[:3])
    for instance, output in zip(instances[:3], outputs):
        n = len(instance["tokens"])
        assert len(output["tags"]) == n and len(output["code_hex"]) == n
        assert all(len(h) == 6 for h in output["code_hex"])  # K = 24 → 6 hex digits
        assert [int(h, 16) for h in output["code_hex"]] == output["codes"][:n].tolist()


def test_hash_loss_gradient_reaches_plm_and_hash_layer(ner):
    model, _, instances = ner
    model.train()
    batch = Batch(instances[:4])
    batch.index_instances(model.vocab)
    tensors = batch.as_tensor_dict()
    output = model(**tensors)
    model.zero_grad()
    output["hash_loss"].backward()
    plm = model.text_field_embedder.token_embedder_tokens.transformer_model
    assert plm.embeddings.word_embeddings.weight.grad.abs().sum() > 0
    assert model.encoder.query.weight.grad.abs().sum() > 0
    assert model.tag_projection.weight.grad is None or model.tag_projection.weight.grad.abs().sum() == 0


def test_two_views_loss_is_sum_of_parts(ner):
    model, _, instances = ner
    tensors, output = two_view_forward(model, instances)
    mask = output["mask"]
    logits1, s1, _ = model._view(tensors["tokens"], mask)
    logits2, s2, _ = model._view(tensors["tokens"], mask)
    ids = model._word_ids(tensors["metadata"], mask)[mask]
    expected = (model._crf_loss(logits1, tensors["tags"], mask) + model._crf_loss(logits2, tensors["tags"], mask)
                + model.beta * (model.hash_loss(s1[mask], s2[mask], ids) + model.hash_loss(s2[mask], s1[mask], ids)))
    assert output["loss"].item() == pytest.approx(expected.item(), rel=1e-5)


def count_embedder_calls(model, instances):
    calls = []
    handle = model.text_field_embedder.register_forward_hook(lambda *args: calls.append(1))
    batch = Batch(instances)
    batch.index_instances(model.vocab)
    model.train()
    output = model(**batch.as_tensor_dict())
    handle.remove()
    return len(calls), output


def test_beta_zero_baseline_has_two_views_unless_asked(monkeypatch, ner):
    monkeypatch.setenv("BETA", "0")
    model, _, instances = build("ner_hash.jsonnet")  # Algorithm 1's baseline: two task losses, no hash loss
    assert model.beta == 0 and model.two_views
    calls, output = count_embedder_calls(model, instances[:2])
    assert calls == 2 and "hash_loss" not in output and "loss" in output
    monkeypatch.setenv("TWO_VIEWS", "false")
    model, _, instances = build("ner_hash.jsonnet")
    assert model.beta == 0 and not model.two_views
    calls, output = count_embedder_calls(model, instances[:2])
    assert calls == 1 and "hash_loss" not in output and "loss" in output
    calls, output = count_embedder_calls(ner[0], instances[:2])  # beta 0.005: two views
    assert calls == 2 and "hash_loss" in output


def test_word_identity_is_stable_and_exact():
    assert word_identity("Frodo") == word_identity("Frodo")
    assert word_identity("Frodo") != word_identity("frodo")
    assert 0 <= word_identity("ring") < 2 ** 63


def eval_loss(model, instances):
    """The loss of one eval-mode forward (one view, no dropout) on the first instances."""
    batch = Batch(instances)
    batch.index_instances(model.vocab)
    model.eval()
    return model(**batch.as_tensor_dict()), batch.as_tensor_dict()


def test_task_loss_per_word(monkeypatch):
    monkeypatch.setenv("TASK_LOSS", "word")
    model, _, instances = build("pos_hash.jsonnet")
    output, tensors = eval_loss(model, instances[:3])
    mask = output["mask"]
    summed = -model.crf(output["logits"], tensors["tags"], mask)
    assert output["loss"].item() == pytest.approx((summed / mask.sum()).item(), rel=1e-5)
    monkeypatch.setenv("TASK_LOSS", "words")
    with pytest.raises(Exception, match='environment variable TASK_LOSS="words" is not one of'):
        build("pos_hash.jsonnet")  # the config variable's check, before the model's own (task_loss)


def test_code_head_reads_the_signs_and_adds_its_loss(monkeypatch):
    monkeypatch.setenv("CODE_HEAD", "0.5")
    model, _, instances = build("pos_hash.jsonnet")
    output, tensors = eval_loss(model, instances[:3])
    mask, tags = output["mask"], tensors["tags"]
    _, scores, _ = model.encode(tensors["tokens"], mask)  # eval: the same scores as the forward
    signs = (scores > 0).float() * 2 - 1  # (batch, words, K): the code as ±1, computed directly
    logits = model.code_head.read(signs)  # (batch, words, tags)
    head = torch.nn.functional.cross_entropy(logits[mask], tags[mask], reduction="sum") / mask.shape[0]
    base = model._crf_loss(output["logits"], tags, mask)
    assert output["loss"].item() == pytest.approx((base + 0.5 * head).item(), rel=1e-5)
    assert 0.0 <= model.get_metrics()["code_head_accuracy"] <= 1.0
    # the head's gradient reaches the hash layer's query/key (through the straight-through signs)
    model.train()
    model.zero_grad()
    model.code_head(model.encode(tensors["tokens"], mask)[1], tags, mask).backward()
    assert model.encoder.query.weight.grad.abs().sum() > 0
    monkeypatch.setenv("CODE_HEAD", "0")
    model, _, _ = build("pos_hash.jsonnet")
    assert model.code_head is None and "code_head_accuracy" not in model.get_metrics()


def test_decoding_is_allennlps_viterbi_tags_and_metrics_count_it(ner):
    model, _, instances = ner  # BIOUL: constrained transitions, start/end transitions
    saved = model.crf.transitions.detach().clone()
    with torch.no_grad():  # a trained-looking CRF: transitions that change the best path
        model.crf.transitions.normal_(0, 2.0)
    output, tensors = eval_loss(model, instances[:8])
    mask, gold = output["mask"], tensors["tags"]
    expected = [path for path, _ in model.crf.viterbi_tags(output["logits"], mask)]
    assert output["tags"] == expected
    assert [len(path) for path in expected] == mask.sum(-1).tolist()
    model.get_metrics(reset=True)
    model(**tensors)  # accuracy from the batched one-hot = accuracy of the reference paths
    right = sum(p == g for path, row in zip(expected, gold.tolist()) for p, g in zip(path, row))
    assert model.get_metrics(reset=True)["accuracy"] == pytest.approx(right / int(mask.sum()))
    assert expected != [row[:n] for row, n in zip(output["logits"].argmax(-1).tolist(), mask.sum(-1).tolist())]
    with torch.no_grad():
        model.crf.transitions.copy_(saved)


def test_training_metrics_false_skips_decoding_in_training_only(monkeypatch, ner):
    monkeypatch.setenv("TRAINING_METRICS", "false")
    model, _, instances = build("ner_hash.jsonnet")
    assert not model.training_metrics and ner[0].training_metrics  # default: decode in training, as before
    batch = Batch(instances[:4])
    batch.index_instances(model.vocab)
    tensors = batch.as_tensor_dict()
    model.train()
    model.get_metrics(reset=True)
    output = model(**tensors)
    assert "tags" not in output and "loss" in output and "hash_loss" in output
    metrics = model.get_metrics(reset=True)
    assert "accuracy" not in metrics and "f1-measure-overall" not in metrics and "code_distinct" in metrics
    assert "code_codes_per_label" in metrics  # tags label the codes (a parser's codes have none: left out)
    model.eval()  # dev: always decoded, metrics exact
    output = model(**tensors)
    assert [len(path) for path in output["tags"]] == output["mask"].sum(-1).tolist()
    assert {"accuracy", "f1-measure-overall"} <= set(model.get_metrics(reset=True))
    ner[0].train()
    assert "tags" in ner[0](**tensors) and "accuracy" in ner[0].get_metrics(reset=True)

"""HashSpanParser: train/save/load/predict consistency for both parsing configs, the incremental variant's codes
ignore later words, and predicted trees are valid and scored by EVALB F1."""
import pytest
import torch
from allennlp.common.testing import ModelTestCase
from allennlp.data import Batch
from nltk import Tree

import bitcode_allennlp.plugin  # noqa: F401
from bitcode_allennlp.model.hashing_model import View
from bitcode_allennlp.parsing.metrics.evalb import evalb_score
from bitcode_allennlp.parsing.models.hash_span_parser import SpanScores
from tests.conftest import CONFIGS, build, two_view_forward

BERT_POOLER = {
    "text_field_embedder.token_embedder_tokens.transformer_model.pooler.dense.weight",
    "text_field_embedder.token_embedder_tokens.transformer_model.pooler.dense.bias",
    "text_field_embedder.token_embedder_tokens.empty_word",  # the fixtures have no word without pieces
}
NO_SHUFFLE = '{"data_loader.batch_sampler.shuffle": false}'


class TestHashSpanParser(ModelTestCase):
    @pytest.mark.parametrize("config", ["parse_hash.jsonnet", "parse_hash_incremental.jsonnet"])
    def test_train_save_load_predict(self, config, monkeypatch):
        monkeypatch.setenv("EPOCHS", "1")
        self.ensure_model_can_train_save_and_load(CONFIGS / config, gradients_to_ignore=BERT_POOLER,
                                                  overrides=NO_SHUFFLE)


def instances_for(reader, *sentences):
    instances = [reader.text_to_instance(words) for words in sentences]
    for instance in instances:
        reader.apply_token_indexers(instance)
    return instances


def ego_scores(model, reader, *sentences):
    batch = Batch(instances_for(reader, *sentences))
    batch.index_instances(model.vocab)
    tokens = batch.as_tensor_dict()["tokens"]
    mask = tokens["tokens"]["mask"]
    with torch.no_grad():
        return model.encode(tokens, mask)[1]  # (sentences, words, K)


def test_incremental_codes_do_not_see_later_words():
    first = ["The", "ring", "was", "held", "by", "Frodo", "."]
    second = ["The", "ring", "was", "held", "by", "Sauron", "!"]
    model, reader, _ = build("parse_hash_incremental.jsonnet", eval_mode=True)
    assert model.boundary == "left" and model.encoder.causal
    scores = ego_scores(model, reader, first, second)
    assert torch.allclose(scores[0, :5], scores[1, :5], atol=1e-6)
    assert not torch.allclose(scores[0, 5:], scores[1, 5:])
    codes = [o["code_hex"] for o in model.forward_on_instances(instances_for(reader, first, second))]
    assert codes[0][:5] == codes[1][:5]
    bidirectional, reader_b, _ = build("parse_hash.jsonnet", eval_mode=True)
    scores = ego_scores(bidirectional, reader_b, first, second)
    assert not torch.allclose(scores[0, :5], scores[1, :5], atol=1e-6)  # the bidirectional model sees them


def test_predicted_trees_are_full_trees_over_the_words_and_scored():
    model, _, instances = build("parse_hash.jsonnet", eval_mode=True)
    # The untrained label scorer predicts no bracket at all; saying NP for every span gives brackets to score.
    np_id, view = model.vocab.get_token_index("NP", model.label_namespace), model._view

    def np_everywhere(tokens, mask):
        scores = view(tokens, mask)
        label = scores.scores.label.clone()  # (batch, n+1, n+1, labels)
        label[..., np_id] += 100.0
        return scores._replace(scores=scores.scores._replace(label=label))

    model._view = np_everywhere
    model.get_metrics(reset=True)
    outputs = model.forward_on_instances(instances[:5])
    for instance, output in zip(instances[:5], outputs):
        words = instance["metadata"]["words"]
        tree = Tree.fromstring(output["trees"])
        assert tree.label() == "TOP" and tree.leaves() == words
        assert [tag for _, tag in tree.pos()] == instance["metadata"]["pos_tags"]
        assert len(output["spans"]) == 2 * len(words) - 1  # CKY returns a full binary tree
    metrics = model.get_metrics(reset=True)
    # the metric scored exactly the trees the model returned, against the readers' gold trees
    expected = evalb_score([i["metadata"]["gold_tree"] for i in instances[:5]], [o["trees"] for o in outputs])
    assert 0 < expected["matched_brackets"] < expected["test_brackets"]  # some right, some wrong
    for key in ("recall", "precision", "f1", "exact"):
        assert 100 * metrics[f"evalb_{key}"] == pytest.approx(expected[key]), key
    assert "code_distinct" in metrics
    assert "code_same_label_same_code" not in metrics and "code_codes_per_label" not in metrics


def test_gold_spans_score_perfectly_when_forced():
    """Feeding the gold chart as span scores (and gold labels) must give EVALB F1 = 1: decoding + build are exact."""
    model, _, instances = build("parse_hash.jsonnet", eval_mode=True)
    batch = Batch(instances[:4])
    batch.index_instances(model.vocab)
    tensors = batch.as_tensor_dict()
    from bitcode_allennlp.structs.tree_crf import gold_chart

    mask = tensors["tokens"]["tokens"]["mask"]
    chart = gold_chart(tensors["spans"], tensors["span_labels"], mask.shape[1])
    span_scores = (chart >= 0).float() * 10.0  # (batch, n+1, n+1)
    label_scores = torch.nn.functional.one_hot(chart.clamp(min=0), model.vocab.get_vocab_size("span_labels")).float()
    forced = View(scores=SpanScores(span=span_scores, label=label_scores * 10.0), hash_scores=None)
    model._view = lambda tokens, m: forced
    model.get_metrics(reset=True)
    model(**tensors)
    assert model.get_metrics(reset=True)["evalb_f1"] == pytest.approx(1.0)


def test_two_views_loss_is_sum_of_parts():
    """`HashingModel.two_view_step` with the parser's view and task loss: L_task1 + L_task2 + β·(L_hash12 + L_hash21),
    to the bit."""
    from bitcode_allennlp.structs.tree_crf import gold_chart

    model, _, instances = build("parse_hash.jsonnet")
    tensors, output = two_view_forward(model, instances)
    mask, tokens = output["mask"], tensors["tokens"]
    chart = gold_chart(tensors["spans"], tensors["span_labels"], mask.shape[1])
    view1, view2 = model._view(tokens, mask), model._view(tokens, mask)
    ids = model._word_ids(tensors["metadata"], mask)[mask]
    hash_loss = model.hash_loss.symmetric(view1.hash_scores[mask], view2.hash_scores[mask], ids)
    expected = model._task_loss(view1, chart, mask) + model._task_loss(view2, chart, mask) + model.beta * hash_loss
    assert torch.equal(output["hash_loss"], hash_loss) and torch.equal(output["loss"], expected)


def test_span_labels_are_gathered_per_tree():
    from bitcode_allennlp.parsing.models.hash_span_parser import span_labels_of
    from bitcode_allennlp.structs.tree_crf import cky

    gen = torch.Generator().manual_seed(0)
    lengths = torch.tensor([5, 1, 3])
    _, trees = cky(torch.randn(3, 6, 6, generator=gen), lengths)
    label_ids = torch.randint(0, 30, (3, 6, 6), generator=gen)  # (batch, n+1, n+1)
    expected = [[int(label_ids[b, i, j]) for i, j in tree] for b, tree in enumerate(trees)]
    assert span_labels_of(label_ids, trees) == expected and [len(t) for t in expected] == [9, 1, 5]
    assert span_labels_of(label_ids, []) == []

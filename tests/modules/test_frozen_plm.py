"""frozen_plm_words (FREEZE_PLM=true): the same word vectors as plm_words in eval mode, computed once per sentence,
the PLM frozen and in eval mode, per-view dropout in training. (The legacy frozen_transformer_mismatched was removed
in 0.3.0: tests/reliability/test_retired_options.py.)"""
import pytest
import torch
from allennlp.common import Params
from allennlp.data import Batch, Instance, Token, Vocabulary
from allennlp.data.fields import TextField
from allennlp.modules.token_embedders import TokenEmbedder

from bitcode_allennlp.data.token_indexers.plm_words import PlmWordsIndexer
from bitcode_allennlp.modules import frozen_plm
from bitcode_allennlp.modules.frozen_plm import FrozenPlmWordsEmbedder
from bitcode_allennlp.modules.plm_words_embedder import PlmWordsEmbedder
from tests.conftest import CONFIGS, TINY_BERT

# kind -> (indexer, plain embedder, frozen embedder, what runs the PLM, the frozen embedder's own parameters)
KINDS = {
    "plm_words": (PlmWordsIndexer, PlmWordsEmbedder, FrozenPlmWordsEmbedder, lambda f: f.plm.transformer_model,
                  ["empty_word"]),
}

SENTENCES = [["Frodo", "walked", "to", "Mordor", "."], ["The", "ring", "glowed"],
             ["unbelievably", "long", "hyphenated-words", "and", "Ünïcode", "too", "!"]]


@pytest.fixture(params=list(KINDS))
def kind(request):
    return KINDS[request.param]


def tensors(sentences, max_length=None, indexer_class=PlmWordsIndexer):
    indexer = indexer_class(str(TINY_BERT), max_length=max_length)
    batch = Batch([Instance({"tokens": TextField([Token(w) for w in s], {"tokens": indexer})}) for s in sentences])
    batch.index_instances(Vocabulary())
    return batch.as_tensor_dict()["tokens"]["tokens"]


@pytest.fixture(autouse=True)
def empty_cache():
    frozen_plm.clear_cache()
    yield
    frozen_plm.clear_cache()


@pytest.mark.parametrize("max_length", [None, 6])  # 6: sentences read in windows
def test_same_vectors_as_the_plain_embedder_in_eval_mode(max_length, kind):
    indexer, plain_class, frozen_class = kind[:3]
    plain = plain_class(str(TINY_BERT), max_length=max_length).eval()
    frozen = frozen_class(str(TINY_BERT), max_length=max_length).eval()
    batch = tensors(SENTENCES, max_length, indexer)
    mask = batch["mask"]  # (batch, words)
    expected = plain(**batch) * mask[..., None]  # (batch, words, d); the plain one leaves [CLS] vectors on padding
    assert torch.allclose(frozen(**batch), expected, atol=1e-5)
    assert frozen_plm.cached_sentences() == len(SENTENCES)
    # Each sentence alone (other padding) reads the cache: same vectors, no new entries.
    for i, sentence in enumerate(SENTENCES):
        alone = frozen(**tensors([sentence], max_length, indexer))  # (1, words, d)
        assert torch.allclose(alone[0], expected[i, : len(sentence)], atol=1e-5)
    assert frozen_plm.cached_sentences() == len(SENTENCES)


def test_cached_sentences_do_not_run_the_plm(kind):
    indexer, _, frozen_class, runner, _ = kind
    frozen = frozen_class(str(TINY_BERT)).eval()
    first = frozen(**tensors(SENTENCES[:2], indexer_class=indexer))
    calls = []
    hook = runner(frozen).register_forward_hook(lambda module, inputs, output: calls.append(inputs))
    assert torch.equal(frozen(**tensors(SENTENCES[:2], indexer_class=indexer)), first)
    assert calls == []
    frozen(**tensors(SENTENCES[1:], indexer_class=indexer))  # one new sentence: the PLM runs on that one only
    hook.remove()
    assert len(calls) == 1 and frozen_plm.cached_sentences() == 3


def test_frozen_in_eval_mode_with_dropout_per_view_in_training(kind):
    indexer, _, frozen_class, _, _ = kind
    frozen = frozen_class(str(TINY_BERT), dropout=0.5)
    frozen.train()
    assert not frozen.plm.training  # no dropout inside the PLM, ever
    assert not any(p.requires_grad for p in frozen.plm.parameters())
    batch = tensors(SENTENCES, indexer_class=indexer)
    view1, view2 = frozen(**batch), frozen(**batch)  # (batch, words, d) each
    assert not torch.equal(view1, view2)  # independent masks: the two views differ
    clean = frozen.eval()(**batch)
    kept = view1 != 0
    assert torch.allclose(view1[kept], 2 * clean[kept], atol=1e-5)  # inverted dropout of the cached vectors


def test_plm_weights_stay_out_of_the_state_dict_but_are_counted(kind):
    _, _, frozen_class, _, own = kind
    frozen = frozen_class(str(TINY_BERT))
    plain = PlmWordsEmbedder(str(TINY_BERT)).transformer_model
    assert list(frozen.state_dict()) == own
    assert frozen.frozen_parameters() == sum(p.numel() for p in plain.parameters()) > 0
    from bitcode_allennlp.training.callbacks import count_parameters

    model = torch.nn.ModuleDict({"embedder": frozen, "head": torch.nn.Linear(4, 2)})
    mine = 10 + sum(p.numel() for p in frozen.parameters())  # the head, and the empty-word vector of plm_words
    assert count_parameters(model) == {"parameters": frozen.frozen_parameters() + mine, "trainable_parameters": mine}
    assert frozen_class(str(TINY_BERT)).plm is frozen.plm  # loaded once per process


def test_configs_use_it_with_freeze_plm(monkeypatch):
    monkeypatch.setenv("FREEZE_PLM", "true")
    monkeypatch.setenv("PLM_DROPOUT", "0.2")
    for config in ("ner_hash.jsonnet", "pos_hash.jsonnet", "parse_hash.jsonnet"):
        params = Params.from_file(str(CONFIGS / config))
        embedder = params["model"]["text_field_embedder"]["token_embedders"]["tokens"].as_dict()
        assert embedder["type"] == "frozen_plm_words" and embedder["dropout"] == 0.2
        built = TokenEmbedder.from_params(Params(embedder))
        assert isinstance(built, FrozenPlmWordsEmbedder)
    monkeypatch.setenv("PLM_LAYER", "mix")
    with pytest.raises(Exception, match="caches one layer"):
        TokenEmbedder.from_params(Params(Params.from_file(str(CONFIGS / "ner_hash.jsonnet"))["model"][
            "text_field_embedder"]["token_embedders"]["tokens"].as_dict()))
    monkeypatch.delenv("FREEZE_PLM")
    params = Params.from_file(str(CONFIGS / "ner_hash.jsonnet"))
    assert params["model"]["text_field_embedder"]["token_embedders"]["tokens"]["type"] == "plm_words"

"""Long and odd sentences: longer than the PLM window (folded by the mismatched embedder, still one code per
word), one-word sentences in the tagger and the parser, and a batch of identical sentences (no NaN)."""
import torch
from allennlp.common import Params
from allennlp.data import Batch, DatasetReader, Vocabulary
from allennlp.models import Model

import bitcode_allennlp.plugin  # noqa: F401
from tests.conftest import CONFIGS


def build(config, monkeypatch, **env):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    params = Params.from_file(str(CONFIGS / config))
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    instances = list(reader.read(params.pop("train_data_path")))
    model = Model.from_params(vocab=Vocabulary.from_instances(instances), params=params.pop("model"))
    return model, reader


def indexed(reader, model, sentences):
    instances = [reader.text_to_instance(words) for words in sentences]
    for instance in instances:
        reader.apply_token_indexers(instance)
    return instances


def test_sentence_longer_than_the_plm_window_gets_one_code_per_word(monkeypatch):
    # The fixture BERT has 512 positions; 700 words are well over 512 word pieces.
    model, reader = build("ner_hash.jsonnet", monkeypatch, MAX_LENGTH="64")
    words = [f"w{i % 50}" for i in range(700)]
    model.eval()
    output = model.forward_on_instances(indexed(reader, model, [words]))[0]
    assert len(output["tags"]) == 700 and len(output["code_hex"]) == 700
    batch = Batch(indexed(reader, model, [words]))
    batch.index_instances(model.vocab)
    tensors = batch.as_tensor_dict()
    assert tensors["tokens"]["tokens"]["token_ids"].shape[1] > 512  # word pieces beyond the window, folded
    model.train()
    loss = model(**tensors, tags=torch.zeros(1, 700, dtype=torch.long))["loss"]
    loss.backward()
    assert torch.isfinite(loss)


def test_one_word_sentences(monkeypatch):
    tagger, reader = build("ner_hash.jsonnet", monkeypatch)
    tagger.train()
    batch = Batch(indexed(reader, tagger, [["Hi"], ["Hi"]]))
    batch.index_instances(tagger.vocab)
    output = tagger(**batch.as_tensor_dict(), tags=torch.zeros(2, 1, dtype=torch.long))
    assert torch.isfinite(output["loss"]) and output["hash_loss"].item() >= 0  # every pair masked: same word
    tagger.eval()
    assert len(tagger.forward_on_instances(indexed(reader, tagger, [["Hi"]]))[0]["code_hex"]) == 1
    parser, preader = build("parse_hash.jsonnet", monkeypatch)
    parser.eval()
    out = parser.forward_on_instances(indexed(preader, parser, [["Hi"]]))[0]
    assert out["trees"].startswith("(TOP") and len(out["code_hex"]) == 1


def test_batch_of_identical_sentences_has_finite_loss_and_gradients(monkeypatch):
    model, reader = build("ner_hash.jsonnet", monkeypatch)
    model.train()
    words = ["Frodo", "held", "the", "ring", "."]
    batch = Batch(indexed(reader, model, [words] * 8))
    batch.index_instances(model.vocab)
    output = model(**batch.as_tensor_dict(), tags=torch.zeros(8, 5, dtype=torch.long))
    output["loss"].backward()
    assert torch.isfinite(output["loss"]) and torch.isfinite(output["hash_loss"])
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)

"""The validation-stage models (`*_code.jsonnet`): the same tagger/parser classes on `binary_code` embeddings and a
one-layer transformer. They cannot see words: replacing every word by another gives identical outputs."""
import json
import random

import pytest
import torch
from allennlp.modules.seq2seq_encoders import PytorchTransformer
from nltk import Tree

import bitcode_allennlp.plugin  # noqa: F401
from bitcode_allennlp.structs.trees import tree_to_string
from bitcode_allennlp.code_stage.binary_code_embedder import BinaryCodeEmbedder
from tests.conftest import FIXTURES, build

CODES = FIXTURES / "data" / "codes"


def renamed_words(source, target):
    """`source` with every word replaced by another word of the file (a random bijection) or a made-up one."""
    lines = [json.loads(line) for line in source.read_text().splitlines()]
    vocabulary = sorted({w for line in lines for w in line["words"]})
    shuffled = vocabulary[:]
    random.Random(0).shuffle(shuffled)
    mapping = {w: (s if i % 2 else f"zz{i}") for i, (w, s) in enumerate(zip(vocabulary, shuffled))}
    for line in lines:
        line["words"] = [mapping[w] for w in line["words"]]
        if "tree" in line:  # the gold tree's leaves are the words: rename them there too
            tree = Tree.fromstring(line["tree"])
            for position in tree.treepositions("leaves"):
                tree[position] = mapping[tree[position]]
            line["tree"] = tree_to_string(tree)
    target.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return target


@pytest.mark.parametrize("config, codes, keys", [
    ("ner_code.jsonnet", "ner.dev.jsonl", ["logits", "tags"]),
    ("pos_code.jsonnet", "pos.dev.jsonl", ["logits", "tags"]),
    ("parse_code.jsonnet", "parse.dev.jsonl", ["spans", "span_label_ids"]),
])
def test_outputs_do_not_depend_on_the_words(config, codes, keys, tmp_path):
    model, reader, _ = build(config, seed=0, eval_mode=True)
    original = CODES / codes
    renamed = renamed_words(original, tmp_path / codes)
    runs = []
    for path in (original, renamed):
        instances = list(reader.read(path))
        for instance in instances:
            for gold in ("tags", "spans", "span_labels"):  # prediction only: dev labels may be unseen in train
                instance.fields.pop(gold, None)
            reader.apply_token_indexers(instance)
        runs.append(model.forward_on_instances(instances))
    assert runs[0][0]["words"] != runs[1][0]["words"]
    for first, second in zip(*runs):
        for key in keys:
            a, b = first[key], second[key]
            assert (torch.equal(torch.as_tensor(a), torch.as_tensor(b)) if key == "logits" else a == b), key


@pytest.mark.parametrize("config", ["ner_code.jsonnet", "pos_code.jsonnet", "parse_code.jsonnet"])
def test_lightweight_architecture(config):
    model, _, _ = build(config, seed=0, eval_mode=True)
    embedder = model.text_field_embedder._token_embedders["codes"]
    assert isinstance(embedder, BinaryCodeEmbedder) and embedder.num_bits == 24
    assert embedder.get_output_dim() % 24 == 0
    assert isinstance(model.encoder, PytorchTransformer) and len(model.encoder._transformer.layers) == 1
    assert model.beta == 0 and not model.two_views and model.num_bits is None
    assert model.vocab.get_vocab_size("tokens") == 2  # no word (or code) vocabulary
    size = sum(p.numel() for p in model.parameters())
    assert size < 3_000_000


@pytest.mark.parametrize("config, length", [("ner_code.jsonnet", 1000), ("parse_code.jsonnet", 300)])
def test_long_and_one_word_sentences(config, length):
    model, reader, _ = build(config, seed=0, eval_mode=True)
    random.seed(0)
    for size in (length, 1):
        codes = [f"{random.getrandbits(24):06x}" for _ in range(size)]
        instance = reader.text_to_instance(codes)
        reader.apply_token_indexers(instance)
        output = model.forward_on_instances([instance])[0]
        if "tags" in output:
            assert len(output["tags"]) == size
        else:
            assert len(output["spans"]) == 2 * size - 1  # a binary tree over the words


@pytest.mark.parametrize("config", ["ner_code.jsonnet", "parse_code.jsonnet"])
def test_default_predictor_reads_codes(config):
    from allennlp.predictors import Predictor

    model, reader, _ = build(config, seed=0, eval_mode=True)
    predictor = Predictor.by_name(model.default_predictor)(model, reader)
    line = json.loads((CODES / ("ner.dev.jsonl" if "ner" in config else "parse.dev.jsonl")).read_text().splitlines()[0])
    extra = {"pos_tags": ["NN"] * len(line["codes"])} if "parse" in config else {}
    output = predictor.predict_json({"codes": line["codes"], "words": line["words"], **extra})
    assert output["words"] == line["words"] and "codes" not in output  # no hash layer: no codes of its own
    instance = predictor.instance({"codes": line["codes"], "words": line["words"]}, **extra)
    reader.apply_token_indexers(instance)
    expected = model.forward_on_instances([instance])[0]
    if "tags" in expected:
        assert output["tags"] == expected["tags"]
    else:
        assert output["tree"].count("(NN ") == len(line["codes"])
    with pytest.raises(ValueError, match="reads codes"):
        predictor.predict_json({"sentence": "words are not enough"})

"""`hash_tagger` and `hash_parser` predictors on archives trained on the fixtures: outputs are the model's own
(`forward_on_instances`), entity spans follow the BIOUL tags, trees read back, empty inputs, `allennlp predict`."""
import json

import spacy
from nltk import Tree

from bitcode_allennlp.model.predictor import CodesPredictor
from bitcode_allennlp.parsing.predictors.hash_parser import HashParserPredictor
from bitcode_allennlp.tagging.predictors.hash_tagger import HashTaggerPredictor
from tests.conftest import run_cli

SENTENCES = ["Frodo held the ring in London.", "RT @BBCNews: Obama visits Berlin today", "Hi",
             "The ring was held by Frodo , who left (quietly) ."]


def model_outputs(predictor, sentences):
    """What the model itself returns for the sentences, through AllenNLP's batch API (no predictor code)."""
    nlp = spacy.blank("en")
    reader, model = predictor._dataset_reader, predictor._model
    instances = [reader.text_to_instance([t.text for t in nlp(s)]) for s in sentences]
    for instance in instances:
        reader.apply_token_indexers(instance)
    return model.forward_on_instances(instances)


def bits_of(code, num_bits):
    return [int(b) for b in format(int(code, 16), f"0{num_bits}b")]


def test_tagger_outputs_are_the_models(ner_predictor):
    assert isinstance(ner_predictor, HashTaggerPredictor)  # the archive's default predictor
    rows = ner_predictor.predict_batch_json([{"sentence": s} for s in SENTENCES])
    for row, output, sentence in zip(rows, model_outputs(ner_predictor, SENTENCES), SENTENCES):
        assert row["words"] == [t.text for t in spacy.blank("en")(sentence)] == output["words"]
        assert row["tags"] == output["tags"] and row["codes"] == output["code_hex"]
        assert row["bits"] == [bits_of(code, 24) for code in output["code_hex"]]
        assert set(row) == {"words", "tags", "entities", "codes", "bits"}
        json.dumps(row)


def test_entities_cover_exactly_the_bioul_tags(ner_predictor):
    rows = ner_predictor.predict_batch_json([{"sentence": s} for s in SENTENCES])
    assert any(row["entities"] for row in rows)
    for row in rows:
        covered = [None] * len(row["words"])
        for entity in row["entities"]:
            start, end, label = entity["start"], entity["end"], entity["label"]
            expected = [f"U-{label}"] if end - start == 1 else \
                [f"B-{label}"] + [f"I-{label}"] * (end - start - 2) + [f"L-{label}"]
            assert row["tags"][start:end] == expected
            assert entity["text"] == " ".join(row["words"][start:end])
            covered[start:end] = [label] * (end - start)
        assert [tag == "O" for tag in row["tags"]] == [c is None for c in covered]
    starts = [e["start"] for row in rows for e in row["entities"]]
    assert starts  # in order within each sentence
    for row in rows:
        assert [e["start"] for e in row["entities"]] == sorted(e["start"] for e in row["entities"])


def test_tokens_input_and_a_batch_give_the_single_results(ner_predictor):
    words = ["RT", "@BBC", ":", "hello", "London"]
    single = ner_predictor.predict_json({"tokens": words})
    assert single["words"] == words
    batch = ner_predictor.predict_batch_json([{"sentence": "Frodo held the ring ."}, {"tokens": words}])
    assert batch[1] == single


def test_empty_inputs_skip_the_model(ner_predictor, parser_predictor):
    empty = {"words": [], "tags": [], "entities": [], "codes": [], "bits": []}
    assert ner_predictor.predict_json({"sentence": ""}) == empty
    assert ner_predictor.predict_json({"tokens": []}) == empty
    alone = ner_predictor.predict_json({"sentence": "Hi there"})
    assert ner_predictor.predict_batch_json([{"sentence": "  "}, {"sentence": "Hi there"}]) == [empty, alone]
    tree = parser_predictor.predict_json({"tokens": []})
    assert tree == {"words": [], "tree": "(TOP )", "tree_json": {"label": "TOP", "children": []}, "codes": [],
                    "bits": []}
    assert Tree.fromstring(tree["tree"]) == Tree("TOP", [])


def test_parser_outputs_are_the_models(parser_predictor):
    assert isinstance(parser_predictor, HashParserPredictor) and isinstance(parser_predictor, CodesPredictor)
    plain = SENTENCES[:3]  # no brackets in the words: the model's own strings are valid PTB
    rows = parser_predictor.predict_batch_json([{"sentence": s} for s in plain])
    for row, output in zip(rows, model_outputs(parser_predictor, plain)):
        assert row["tree"] == output["trees"] and row["codes"] == output["code_hex"]
        assert row["bits"] == [bits_of(code, 24) for code in output["code_hex"]]
        tree = Tree.fromstring(row["tree"])
        assert tree.label() == "TOP" and tree.leaves() == row["words"] == output["words"]
        assert json_tree(row["tree_json"]) == tree


def json_tree(node):
    if "word" in node:
        return Tree(node["label"], [node["word"]])
    return Tree(node["label"], [json_tree(child) for child in node["children"]])


def test_parser_escapes_brackets_and_places_given_tags(parser_predictor):
    words = ["He", "left", "(", "quietly", ")", "."]
    tags = ["PRP", "VBD", "-LRB-", "RB", "-RRB-", "."]
    row = parser_predictor.predict_json({"tokens": words, "pos_tags": tags})
    tree = Tree.fromstring(row["tree"])
    assert tree.pos() == list(zip(["He", "left", "-LRB-", "quietly", "-RRB-", "."], tags))
    assert row["words"] == words and json_tree(row["tree_json"]).leaves() == words  # JSON keeps the words
    one = parser_predictor.predict_json({"sentence": "Hi"})
    assert Tree.fromstring(one["tree"]).pos() == [("Hi", "XX")] and one["tree_json"]["label"] == "TOP"
    assert len(one["codes"]) == len(one["bits"]) == 1


def test_allennlp_predict_in_batches_equals_the_predictor(ner_archive, ner_predictor, tmp_path):
    lines = [{"sentence": s} for s in SENTENCES] + [{"tokens": ["London", "calling"]}, {"sentence": ""}]
    inputs = tmp_path / "input.jsonl"
    inputs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "predictions.jsonl"
    run_cli(["predict", ner_archive, inputs, "--output-file", out, "--batch-size", "2", "--silent"], cwd=tmp_path)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    expected = [row for start in range(0, len(lines), 2)
                for row in ner_predictor.predict_batch_json(lines[start : start + 2])]
    assert rows == expected and rows[-1]["words"] == []

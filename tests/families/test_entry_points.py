"""Every PLM family × every entry point: for each tiny model of fixtures/transformers/, train the NER and parsing
configs once (and, for the decoders, incremental parsing), then `allennlp predict`, `evaluate`, `hash-corpus` and the
spaCy components on the same archives, on sentences with emoji, combining marks, zero-width characters, special-token
strings, words the tokenizer cannot encode, words with no piece (alone and in a batch) and sentences longer than the
PLM window (48 pieces here). The commands run through AllenNLP's own argument parser in this process (the real
sub-commands, without a process start each)."""
import json
from pathlib import Path

import pytest
import spacy

import bitcode_allennlp.plugin  # noqa: F401
from tests.conftest import CONFIGS, DECODERS, FAMILIES, FIXTURES, allennlp_in_process, family_path

WINDOW = "48"
ODD = [
    {"sentence": "RT @BBCNews : Obama visits Berlin today 😀 👍🏽 !"},
    {"tokens": ["Zoë", "naïve", "e\u0301", "co\u200bop", "ﬁ", "Ꙭ", "貓", "[SEP]", "<s>", "<|endoftext|>",
                "</s>"]},
    {"tokens": ["\u200b"]},  # no piece in most tokenizers, alone in its batch
    {"tokens": ["\u200b", "\ufe0f", "\u0301"]},
    {"tokens": ["word"] + ["Berlin", "visits", "😀", "e\u0301"] * 40},  # over the window
]
NER_DEV = FIXTURES / "data" / "conll2012" / "development"
PARSE_DEV = FIXTURES / "data" / "ptb" / "craft_dev.tree"
SETTINGS = {"EPOCHS": "1", "MAX_INSTANCES": "24", "DEV_MAX_INSTANCES": "8", "MAX_LENGTH": WINDOW}


allennlp = allennlp_in_process


@pytest.fixture(scope="module")
def archives(tmp_path_factory):
    """family -> {"ner": archive, "parse": archive[, "incremental": archive]}, trained on first use."""
    trained = {}

    def get(family: str, kind: str) -> Path:
        if (family, kind) not in trained:
            config = {"ner": "ner_hash.jsonnet", "parse": "parse_hash.jsonnet",
                      "incremental": "parse_hash_incremental.jsonnet"}[kind]
            run = tmp_path_factory.mktemp(f"{family}_{kind}") / "run"
            allennlp("train", CONFIGS / config, "-s", run, PLM=str(family_path(family)), **SETTINGS)
            trained[family, kind] = run / "model.tar.gz"
        return trained[family, kind]

    return get


def predictions(archive: Path, tmp_path: Path, lines, *options):
    source, target = tmp_path / "input.jsonl", tmp_path / "output.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    allennlp("predict", archive, source, "--output-file", target, "--silent", *options)
    return [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]


def check_codes(outputs, lines):
    assert len(outputs) == len(lines)
    for output, line in zip(outputs, lines):
        assert "tokens" not in line or output["words"] == line["tokens"]
        assert len(output["codes"]) == len(output["words"]) and all(len(code) == 6 for code in output["codes"])


@pytest.mark.parametrize("family", FAMILIES)
def test_ner_predict_evaluate_hash_corpus_spacy(family, archives, tmp_path):
    archive = archives(family, "ner")
    check_codes(predictions(archive, tmp_path, ODD), ODD)  # one sentence per batch
    check_codes(predictions(archive, tmp_path, ODD, "--batch-size", "5"), ODD)  # all in one batch
    allennlp("evaluate", archive, NER_DEV, "--output-file", tmp_path / "metrics.json")
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert 0 <= metrics["f1-measure-overall"] <= 1 and metrics["loss"] > 0
    allennlp("hash-corpus", archive, NER_DEV, "-o", tmp_path / "codes.jsonl")
    coded = [json.loads(line) for line in (tmp_path / "codes.jsonl").read_text().splitlines()]
    assert len(coded) == 20 and all(len(line["codes"]) == len(line["words"]) == len(line["tags"]) for line in coded)
    nlp = spacy.blank("en")
    nlp.add_pipe("bitcode_ner", config={"archive": str(archive)})
    text = "Obama visits Berlin 😀 today.\u200b Zoë saw e\u0301 " + "again and again " * 60
    doc = nlp(text)
    assert all(token._.bitcode is not None for token in doc if not token.is_space)


@pytest.mark.parametrize("family", FAMILIES)
def test_parse_predict_evaluate_hash_corpus_spacy(family, archives, tmp_path):
    archive = archives(family, "parse")
    outputs = predictions(archive, tmp_path, ODD, "--batch-size", "2")
    check_codes(outputs, ODD)
    assert all(output["tree"].startswith("(") for output in outputs)
    allennlp("evaluate", archive, PARSE_DEV, "--output-file", tmp_path / "metrics.json")
    assert 0 <= json.loads((tmp_path / "metrics.json").read_text())["evalb_f1"] <= 100
    allennlp("hash-corpus", archive, PARSE_DEV, "-o", tmp_path / "codes.jsonl")
    coded = [json.loads(line) for line in (tmp_path / "codes.jsonl").read_text().splitlines()]
    assert len(coded) == 25 and all(len(line["codes"]) == len(line["words"]) for line in coded)
    nlp = spacy.blank("en")
    nlp.add_pipe("bitcode_parser", config={"archive": str(archive)})
    doc = nlp("The ring 😀 was held by Frodo\u200b in Bree.")
    assert all(token._.bitcode is not None for token in doc if not token.is_space)


@pytest.mark.parametrize("family", DECODERS)
def test_incremental_codes_of_a_prefix_are_the_first_codes_of_the_sentence(family, archives, tmp_path):
    archive = archives(family, "incremental")
    words = ODD[-1]["tokens"]
    lines = [{"tokens": words}] + [{"tokens": words[:cut]} for cut in (1, 7, 60, len(words) - 1)]
    outputs = predictions(archive, tmp_path, lines, "--batch-size", "3")
    check_codes(outputs, lines)
    full = outputs[0]["codes"]
    for output in outputs[1:]:
        assert output["codes"] == full[: len(output["codes"])]


@pytest.mark.parametrize("family", ["tiny-modernbert", "tiny-llama3"])
def test_frozen_plm_a_middle_layer_and_no_max_length(family, tmp_path):
    """FREEZE_PLM=true (frozen_plm_words), PLM_LAYER=1 and MAX_LENGTH=none (the PLM's own window), through train and
    predict."""
    run = tmp_path / "run"
    allennlp("train", CONFIGS / "ner_hash.jsonnet", "-s", run, PLM=str(family_path(family)), EPOCHS="1",
             MAX_INSTANCES="16", DEV_MAX_INSTANCES="4", FREEZE_PLM="true", PLM_LAYER="1", MAX_LENGTH="none")
    config = json.loads((run / "config.json").read_text())
    embedder = config["model"]["text_field_embedder"]["token_embedders"]["tokens"]
    assert embedder["type"] == "frozen_plm_words" and embedder["layer"] == "1" and embedder["max_length"] is None
    check_codes(predictions(run / "model.tar.gz", tmp_path, ODD, "--batch-size", "5"), ODD)

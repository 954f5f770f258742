"""`READER=conll_columns` (with `INPUT_SCHEME`) for `ner_hash.jsonnet`: the config, training on CoNLL-2003-style
column files, and the validation stage on the codes of such a model (hash-corpus → ner_code.jsonnet)."""
import json

import pytest
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader

import bitcode_allennlp.plugin  # noqa: F401
from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.code_stage.experiment import CONFIG_VARIABLES, main
from bitcode_allennlp.host.archival import read_archive_config
from tests.conftest import CONFIGS, FIXTURES

DATA = FIXTURES / "data"
BTC_TRAIN, BTC_DEV = DATA / "conll2003" / "btc_train.conll", DATA / "conll2003" / "btc_dev.conll"
HAND_IOB1 = DATA / "conll2003" / "hand_iob1.conll"


def ner_config(monkeypatch, **variables) -> dict:
    for name in ("READER", "INPUT_SCHEME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    return Params.from_file(str(CONFIGS / "ner_hash.jsonnet")).as_dict(quiet=True)


def reader_output(params: dict, path) -> list:
    """(words, tags) of every sentence, read with the config's dataset reader (no PLM indexer needed)."""
    params = {key: value for key, value in params.items() if key != "token_indexers"}
    reader = DatasetReader.from_params(Params(params))
    return [([t.text for t in i["tokens"].tokens], list(i["tags"].labels)) for i in reader.read(str(path))]


def test_default_reader_is_unchanged(monkeypatch):
    config = ner_config(monkeypatch)
    for key in ("dataset_reader", "validation_dataset_reader"):
        assert {k: v for k, v in config[key].items() if k != "token_indexers"} == {
            "type": "ontonotes_hash", "coding_scheme": "BIOUL", "token_policy": "strict", "skip_invalid": False}
    assert config["train_data_path"].endswith("/fixtures/data/conll2012/train")
    assert config["validation_data_path"].endswith("/fixtures/data/conll2012/development")
    assert ner_config(monkeypatch, READER="ontonotes_hash") == config


def test_conll_columns_reader_and_its_fixture_defaults(monkeypatch):
    default = ner_config(monkeypatch)
    config = ner_config(monkeypatch, READER="conll_columns")
    for key in ("dataset_reader", "validation_dataset_reader"):
        assert {k: v for k, v in config[key].items() if k != "token_indexers"} == {
            "type": "conll_columns", "input_scheme": "IOB2", "coding_scheme": "BIOUL", "token_policy": "strict",
            "skip_invalid": False}
        assert config[key]["token_indexers"] == default[key]["token_indexers"]
    assert (config["train_data_path"], config["validation_data_path"]) == (str(BTC_TRAIN), str(BTC_DEV))
    # everything but the reader and the data is the default NER config (same model, label encoding, trainer)
    drop = ("dataset_reader", "validation_dataset_reader", "train_data_path", "validation_data_path")
    assert {k: v for k, v in config.items() if k not in drop} == {k: v for k, v in default.items() if k not in drop}
    assert config["model"]["label_encoding"] == "BIOUL"
    # TRAIN_DATA / DEV_DATA and the common reader variables still apply
    config = ner_config(monkeypatch, READER="conll_columns", TRAIN_DATA=str(HAND_IOB1), TOKEN_POLICY="repair")
    assert config["train_data_path"] == str(HAND_IOB1) and config["dataset_reader"]["token_policy"] == "repair"


@pytest.mark.parametrize("scheme", ["IOB1", "IOB2", "BIO", "BIOUL", "BIOES"])
def test_input_scheme_reaches_both_readers(monkeypatch, scheme):
    config = ner_config(monkeypatch, READER="conll_columns", INPUT_SCHEME=scheme)
    assert config["dataset_reader"]["input_scheme"] == config["validation_dataset_reader"]["input_scheme"] == scheme
    assert config["dataset_reader"]["coding_scheme"] == "BIOUL"


@pytest.mark.parametrize("variables, message", [
    ({"READER": "conll2003"},
     'environment variable READER="conll2003" is not an NER reader (ontonotes_hash, conll_columns)'),
    ({"INPUT_SCHEME": "IOB1"},
     "environment variable INPUT_SCHEME is for READER=conll_columns only (ontonotes_hash reads bracketed entities)"),
    ({"READER": "conll_columns", "INPUT_SCHEME": "iob1"},
     'environment variable INPUT_SCHEME="iob1" is not one of IOB2, BIO, IOB1, BIOUL, BIOES'),
])
def test_bad_reader_variables_name_the_variable(monkeypatch, variables, message):
    with pytest.raises(ConfigurationError) as info:
        ner_config(monkeypatch, **variables)
    assert str(info.value) == f"{CONFIGS / 'ner_hash.jsonnet'}: {message}"


def test_variables_are_declared_for_the_experiment_and_in_the_header():
    header = "".join(line for line in (CONFIGS / "ner_hash.jsonnet").read_text().splitlines(True)
                     if line.startswith("//"))
    for name in ("READER", "INPUT_SCHEME"):
        assert name in CONFIG_VARIABLES and name in header.split("Variables:")[1]


def test_iob1_file_with_the_default_input_scheme_suggests_iob1(monkeypatch):
    config = ner_config(monkeypatch, READER="conll_columns", TRAIN_DATA=str(HAND_IOB1))
    with pytest.raises(DataFormatError) as info:
        reader_output(config["dataset_reader"], config["train_data_path"])
    assert str(info.value) == (
        f"{HAND_IOB1}, line 3: 'I-PER' does not continue a 'PER' span (at the start of the sentence); the sentence "
        "is valid IOB1, as in the original CoNLL-2003 release: read the file with input_scheme='IOB1' (config "
        "variable INPUT_SCHEME=IOB1)")
    config = ner_config(monkeypatch, READER="conll_columns", INPUT_SCHEME="IOB1")
    assert reader_output(config["dataset_reader"], HAND_IOB1)[1] == (
        ["Sam", "Merry", "Pippin", "went", "home", "."], ["U-PER", "U-PER", "U-PER", "O", "O", "O"])


def codes_lines(path) -> list:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("train, dev, variables", [
    (BTC_TRAIN, BTC_DEV, ["READER=conll_columns", "MAX_INSTANCES=30"]),
    (HAND_IOB1, HAND_IOB1, ["READER=conll_columns", "INPUT_SCHEME=IOB1"]),
], ids=["btc_iob2", "hand_iob1"])
def test_experiment_with_column_files(tmp_path, monkeypatch, train, dev, variables):
    """Hashing stage on column files (tiny-bert, 1 epoch) → the entire corpus re-annotated with the archive's
    reader → ner_code.jsonnet on the codes → both evaluated: the codes carry the reader's BIOUL tags."""
    for name in ("READER", "INPUT_SCHEME"):
        monkeypatch.delenv(name, raising=False)
    out = tmp_path / "exp"
    row = main(["ner", "--out", str(out), "--train", str(train), "--dev", str(dev), "--set", "EPOCHS=1", *variables,
                "--code-set", "EPOCHS=1", "--no-probe", "--in-process"])
    config = read_archive_config(out / "hashing" / "model.tar.gz")
    scheme = "IOB1" if "INPUT_SCHEME=IOB1" in variables else "IOB2"
    for key in ("dataset_reader", "validation_dataset_reader"):
        assert (config[key]["type"], config[key]["input_scheme"], config[key]["coding_scheme"]) == (
            "conll_columns", scheme, "BIOUL")
    assert config["train_data_path"] == train.name  # the archive keeps the file's name, not the machine's path
    reader = {"type": "conll_columns", "input_scheme": scheme}
    for split, path in (("train", train), ("dev", dev)):
        codes = codes_lines(out / "codes" / f"{split}.jsonl")
        expected = reader_output(reader, path)
        assert [(line["words"], line["tags"]) for line in codes] == expected  # all sentences, tags in BIOUL
        assert all(len(line["codes"]) == len(line["words"]) and line["num_bits"] == 24 for line in codes)
    assert read_archive_config(out / "validation" / "model.tar.gz")["dataset_reader"]["type"] == "binary_codes"
    for stage in ("hashing", "validation"):
        metrics = json.loads((out / f"{stage}_dev_metrics.json").read_text())
        assert metrics["f1-measure-overall"] == row[stage]["scores"]["dev"]
        assert 0.0 <= row[stage]["scores"]["dev"] <= 1.0
    # the validation stage's label vocabulary is the column file's entity tags, in BIOUL
    labels = set((out / "validation" / "vocabulary" / "labels.txt").read_text().split())
    assert labels == {tag for _, tags in reader_output(reader, train) for tag in tags}

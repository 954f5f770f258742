"""Options retired in 0.3.0, measured no help (`config_declaration.RETIRED`, `bitcode_allennlp.host.retired`,
CHANGELOG.md): each named in the environment or in a training config fails before anything is built, in one line
that names the option, the version that removed it and what to use instead; archives made with them load (the
training-only keys are left out) or are refused with that line (the legacy mismatched embedder)."""
import json
import shutil

import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader

import bitcode_allennlp.plugin  # noqa: F401
from bitcode_allennlp.host import retired
from bitcode_allennlp.host.config_declaration import RETIRED
from bitcode_allennlp.version import VERSION
from tests.conftest import CONFIGS, TINY_BERT
from tests.test_archival import archive_untrained

RETIRED_BY_OPTION = {r.option: r for r in RETIRED}
ENVIRONMENT = [  # (variable, value, a config that used to read it)
    ("CODE_HEAD_FLIP", "0.1", "pos_hash.jsonnet"),
    ("CODE_DROPOUT", "0.15", "ner_code.jsonnet"),
    ("CODE_ENCODER", "lstm", "ner_code.jsonnet"),
]


def test_the_table_names_the_four_options_and_this_version():
    assert list(RETIRED_BY_OPTION) == ["CODE_HEAD_FLIP", "CODE_DROPOUT", "CODE_ENCODER=lstm",
                                       "frozen_transformer_mismatched"]
    assert VERSION == "0.3.0" and {r.version for r in RETIRED} == {"0.3.0"}


@pytest.mark.parametrize("name, value, config", ENVIRONMENT, ids=[e[0] for e in ENVIRONMENT])
def test_a_retired_option_in_the_environment_fails_in_one_line(name, value, config, monkeypatch):
    option = name if name != "CODE_ENCODER" else f"{name}={value}"
    monkeypatch.setenv(name, value)
    for path in {config, "ner_hash.jsonnet", "parse_code.jsonnet"}:  # any config that reads config variables
        with pytest.raises(ConfigurationError) as error:
            Params.from_file(str(CONFIGS / path))
        message = str(error.value.message)
        assert message == f"{CONFIGS / path}: {RETIRED_BY_OPTION[option].message()}"
        assert message.count("\n") == 0 and f"{option} was removed in 0.3.0 (measured no help" in message
    monkeypatch.setenv(name, "")  # empty counts as unset
    Params.from_file(str(CONFIGS / config))


def test_the_lstm_message_says_what_to_use_instead(monkeypatch):
    monkeypatch.setenv("CODE_ENCODER", "lstm")
    with pytest.raises(ConfigurationError, match=r"ner_code.jsonnet: CODE_ENCODER=lstm was removed in 0\.3\.0 "
                       r"\(measured no help: REPRODUCTION.md, BTC NER .*\); unset CODE_ENCODER to use the "
                       r"transformer code encoder \(or CODE_ENCODER=window\)$"):
        Params.from_file(str(CONFIGS / "ner_code.jsonnet"))
    monkeypatch.setenv("CODE_ENCODER", "window")  # the other values stay
    assert Params.from_file(str(CONFIGS / "ner_code.jsonnet"))["model"]["encoder"]["type"] == "window_feedforward"


def test_a_config_that_reads_a_retired_variable_fails(tmp_path):
    shutil.copy(CONFIGS / "env.libsonnet", tmp_path / "env.libsonnet")
    config = tmp_path / "mine.jsonnet"
    config.write_text("local env = import 'env.libsonnet';\n{ dropout: env.num(\"CODE_DROPOUT\") }\n")
    with pytest.raises(ConfigurationError, match=f"mine.jsonnet: {RETIRED_BY_OPTION['CODE_DROPOUT'].message()}"
                       .replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        Params.from_file(str(config))


KEYS = [  # (option, a training config's model section that names it, where)
    ("CODE_HEAD_FLIP", {"type": "hash_crf_tagger", "code_head": {"type": "mlp", "weight": 1, "bit_flip": 0.1}},
     "model.code_head.bit_flip"),
    ("CODE_DROPOUT", {"text_field_embedder": {"token_embedders": {"codes": {
        "type": "binary_code", "num_bits": 24, "embedding_dim": 48, "bit_flip": 0.2, "code_dropout": 0}}}},
     "model.text_field_embedder.token_embedders.codes.code_dropout"),
    ("frozen_transformer_mismatched", {"text_field_embedder": {"token_embedders": {"tokens": {
        "type": "frozen_transformer_mismatched", "model_name": str(TINY_BERT)}}}},
     "model.text_field_embedder.token_embedders.tokens.type"),
]


@pytest.mark.parametrize("option, model, where", KEYS, ids=[k[0] for k in KEYS])
def test_a_retired_option_in_a_training_config_fails_in_one_line(option, model, where, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"dataset_reader": {"type": "binary_codes"}, "model": model}))
    with pytest.raises(ConfigurationError) as error:
        Params.from_file(str(path))
    assert str(error.value.message) == f"{path}: {where} ({option}) was removed in 0.3.0 " \
        f"({RETIRED_BY_OPTION[option].measured}); {RETIRED_BY_OPTION[option].instead}"
    assert retired.config_problem({"model": {"code_head": {"type": "mlp"}}, "dataset_reader": {}}) is None


def _edit_config(run, edit):
    config = json.loads((run / "config.json").read_text())
    edit(config["model"])
    (run / "config.json").write_text(json.dumps(config))


def _validation_archive(tmp_path, name="run"):
    config = Params.from_file(str(CONFIGS / "ner_code.jsonnet"))
    reader = DatasetReader.from_params(config.duplicate().pop("dataset_reader"))
    model, _ = archive_untrained(config, tmp_path / name, list(reader.read(config["train_data_path"])))
    return model, tmp_path / name


def test_a_validation_archive_with_code_dropout_loads_as_before(tmp_path):
    """Every 0.2 validation-stage archive names `code_dropout` (training only, mostly 0): left out at load time."""
    from allennlp.models.archival import load_archive

    model, run = _validation_archive(tmp_path)
    _edit_config(run, lambda m: m["text_field_embedder"]["token_embedders"]["codes"].update(code_dropout=0.15))
    loaded = load_archive(str(run)).model
    assert not hasattr(loaded.text_field_embedder.token_embedder_codes, "code_dropout")
    state = loaded.state_dict()
    assert state.keys() == model.state_dict().keys()
    assert all(torch.equal(value, state[key]) for key, value in model.state_dict().items())


def test_a_validation_archive_of_the_lstm_encoder_loads(tmp_path):
    """CODE_ENCODER=lstm built AllenNLP's own `lstm` encoder: its archives name no component of ours that is gone."""
    from allennlp.models.archival import load_archive

    _, run = _validation_archive(tmp_path)
    lstm = {"type": "lstm", "input_size": 144, "hidden_size": 72, "num_layers": 1, "bidirectional": True}
    _edit_config(run, lambda m: m.update(encoder=lstm))
    config = Params(json.loads((run / "config.json").read_text()))
    model, run = archive_untrained(config, tmp_path / "lstm_run", list(DatasetReader.from_params(
        config.duplicate().pop("dataset_reader")).read(config["train_data_path"])))
    loaded = load_archive(str(run)).model
    assert isinstance(loaded.encoder._module, torch.nn.LSTM)


def test_a_hashing_archive_with_code_head_bit_flip_loads_as_before(tmp_path, monkeypatch):
    """Every 0.2 archive with a code-reading head names its `bit_flip` (training only, mostly 0): left out."""
    from allennlp.models.archival import load_archive

    monkeypatch.setenv("CODE_HEAD", "1")
    config = Params.from_file(str(CONFIGS / "pos_hash.jsonnet"))
    monkeypatch.delenv("CODE_HEAD")
    reader = DatasetReader.from_params(config.duplicate().pop("dataset_reader"))
    model, _ = archive_untrained(config, tmp_path / "run", list(reader.read(config["train_data_path"])))
    _edit_config(tmp_path / "run", lambda m: m["code_head"].update(bit_flip=0.1))
    loaded = load_archive(str(tmp_path / "run")).model
    assert loaded.code_head is not None and not hasattr(loaded.code_head, "bit_flip")
    assert all(torch.equal(value, loaded.state_dict()[key]) for key, value in model.state_dict().items())


def test_an_archive_of_the_legacy_mismatched_embedder_is_refused(tmp_path):
    from allennlp.models.archival import load_archive

    from bitcode_allennlp.host.archival import read_archive_config
    from bitcode_allennlp.host.errors import ArchiveError

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"dataset_reader": {"type": "ontonotes_hash"}, "model": {
        "type": "hash_crf_tagger", "text_field_embedder": {"token_embedders": {"tokens": {
            "type": "frozen_transformer_mismatched", "model_name": str(TINY_BERT)}}}}}))
    (run / "best.th").write_bytes(b"")
    legacy = RETIRED_BY_OPTION["frozen_transformer_mismatched"]
    expected = f"refused: {legacy.message('model.text_field_embedder.token_embedders.tokens.type')}"
    for load in (load_archive, read_archive_config):
        with pytest.raises(ArchiveError) as error:
            load(str(run))
        assert str(error.value) == f"{run}: {expected}"
        assert "0.3.0" in expected and "bitcode_allennlp 0.2.x" in expected


def test_the_experiment_command_refuses_a_retired_variable(tmp_path, capsys):
    from bitcode_allennlp.code_stage.experiment import main

    with pytest.raises(SystemExit):
        main(["ner", "--out", str(tmp_path / "out"), "--code-set", "CODE_ENCODER=lstm"])
    assert RETIRED_BY_OPTION["CODE_ENCODER=lstm"].message() in capsys.readouterr().err
    assert not (tmp_path / "out").exists()

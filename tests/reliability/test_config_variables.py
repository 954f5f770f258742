"""Config variables: one declaration (`bitcode_allennlp/host/config_declaration.py`) with each variable's kind,
range and default, checked and read before jsonnet runs (issue 29, class 8; issue 49: one declaration per setting).

- the declaration names exactly the variables the configs read, and docs/configs.md's table is the one it renders;
- a table of bad values, each refused with one line naming the variable, its value and what it must be, through
  `Params.from_file` of every shipped config that reads it and through the real `allennlp train` in this process
  (nothing written to the serialization directory);
- warnings, not errors, for a misspelt variable (`EPOCH`) and for `DEV_DATA` = `TRAIN_DATA`;
- good values (range ends, spaces, `none`) still build every shipped config; unset, empty and unread variables are
  not checked; numbers are read once, in Python, and the configs get the typed values;
- no config writes a default (`env.num("K")`, never `env.num("K", 24)`); the validation stage's K is its codes
  file's, and a K set to another number is an error naming the file.
"""
import json
import logging
import os
import sys

import _jsonnet
import pytest
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError

from bitcode_allennlp.code_stage.experiment import CONFIG_VARIABLES, config_variables
from bitcode_allennlp.host import config_kinds
from bitcode_allennlp.host import config_variables as cv
from tests.conftest import CONFIGS, FIXTURES, ROOT, TINY_BERT, allennlp_in_process

SHIPPED = sorted(p.name for p in CONFIGS.glob("*.jsonnet"))
READS = {config: cv.config_reads(str(CONFIGS / config)) for config in SHIPPED}
NER_TRAIN = FIXTURES / "data" / "conll2012" / "train"
NER_DEV = FIXTURES / "data" / "conll2012" / "development"


@pytest.fixture(autouse=True)
def no_config_variables(monkeypatch):
    """Each test starts with no config variable (nor a look-alike) set."""
    for name in list(os.environ):
        if name in cv.VARIABLES or cv.suggestion(name):
            monkeypatch.delenv(name)


def _gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _cuda_case():
    """CUDA_DEVICE one past the GPUs torch sees: 0 on a machine without one."""
    gpus = _gpus()
    if gpus == 0:
        return "CUDA_DEVICE", "0", "must be -1 (the CPU) here: torch sees no GPU"
    return "CUDA_DEVICE", str(gpus), f"must be an integer in -1..{gpus - 1} here: torch sees {gpus} GPU"


NO_CONFIG = "{no_config}"  # a folder without config.json, made per test

BAD = [
    ("BETA", "1e999", "must be a finite number >= 0"),  # jsonnet alone aborts the process (exit 134)
    ("EPOCHS", "-1", "must be an integer >= 1"),
    ("EPOCHS", "0", "must be an integer >= 1"),
    ("MAX_INSTANCES", "0", "must be an integer >= 1"),
    ("DEV_MAX_INSTANCES", "2.5", "must be an integer >= 1"),
    ("LR", "-1", "must be a number > 0"),
    ("LR", "0", "must be a number > 0"),
    ("HEAD_LR", "1e999", "must be a finite number > 0"),
    ("DROPOUT", "1.5", "must be a number in [0, 1)"),
    ("DROPOUT", "1", "must be a number in [0, 1)"),
    ("WARMUP", "-0.1", "must be a number in [0, 1)"),
    ("K", "24.5", "must be an integer in 1..63"),
    ("K", "64", "must be an integer in 1..63"),
    ("K", "0", "must be an integer in 1..63"),
    ("K", "abc", "is not a number"),  # env.libsonnet's own words
    ("K", "inf", "is not a number"),
    ("MAX_LENGTH", "2", "must be an integer >= 8, or none"),
    ("MAX_LENGTH", "auto", "is not a number"),
    ("MAX_TOKENS", "0", "must be an integer >= 1"),
    ("MAX_SUBTOKENS", "-5", "must be an integer >= 1"),
    ("WORKERS", "0", "must be an integer >= 1"),
    ("SEED", "-1", "must be an integer in 0..4294967295"),
    ("SEED", "1.5", "must be an integer in 0..4294967295"),
    ("TAU", "0", "must be a number > 0"),
    ("GRAD_NORM", "0", "must be a number > 0"),
    ("WEIGHT_DECAY", "-0.01", "must be a number >= 0"),
    ("PLM_DROPOUT", "1", "must be a number in [0, 1)"),
    ("CODE_BIT_FLIP", "2", "must be a number in [0, 1)"),
    ("MLP_DROPOUT", "-0.5", "must be a number in [0, 1)"),
    ("CODE_WINDOW", "-1", "must be an integer >= 0"),
    ("CHECKPOINT_EVERY", "0", "must be an integer >= 1"),
    _cuda_case(),
    ("CUDA_DEVICE", "-2", "must be an integer >= -1"),
    ("PLM", "/nonexistent", "must be a transformers model folder with a config.json; /nonexistent does not exist"),
    ("PLM", NO_CONFIG, "must be a transformers model folder with a config.json; {no_config} has none"),
    ("PLM", "no-such-org/no-such-model", "the hub name is not in the local cache (HF_HUB_OFFLINE is set)"),
    ("PLM_LAYER", "top", "must be last, mix or a layer number"),
    ("PLM_LAYER", "LAST", "must be last, mix or a layer number"),
    ("TRAIN_DATA", "/nonexistent/train", "must be an existing file or folder; /nonexistent/train does not exist"),
    ("DEV_DATA", "/nonexistent/dev", "must be an existing file or folder; /nonexistent/dev does not exist"),
    ("SIMILARITY", "cosine", "is not one of cos_sign, cos"),
    ("OBJECTIVE", "Hash", "is not one of hash, self, sup"),
    ("TOKEN_POLICY", "fix", "is not one of strict, repair"),
    ("TASK_LOSS", "avg", "is not one of mean, sum, word"),
    ("CODE_ENCODER", "gru", "is not one of transformer, window"),
    ("BOUNDARY", "right", "is not one of split, left"),
    ("TWO_VIEWS", "maybe", "is not a boolean (1/0, true/false, yes/no, on/off)"),
]


def _fill(text: str, tmp_path) -> str:
    return text.replace(NO_CONFIG, str(tmp_path / "no_config"))


def _expected(config: str, name: str, value: str, fragment: str) -> str:
    return f"{CONFIGS / config}: environment variable {name}={json.dumps(value)} {fragment}"


@pytest.fixture
def no_config(tmp_path):
    folder = tmp_path / "no_config"
    folder.mkdir()
    (folder / "vocab.txt").write_text("[PAD]\n")
    return folder


@pytest.mark.parametrize("name, value, fragment", BAD, ids=[f"{n}={v}" for n, v, _ in BAD])
def test_bad_value_is_refused_by_every_config_that_reads_it(name, value, fragment, monkeypatch, tmp_path,
                                                            no_config):
    value, fragment = _fill(value, tmp_path), _fill(fragment, tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv(name, value)
    configs = [config for config in SHIPPED if name in READS[config]]
    assert configs, name
    for config in configs:
        with pytest.raises(ConfigurationError) as info:
            Params.from_file(str(CONFIGS / config))
        message, start = str(info.value), _expected(config, name, value, "")
        assert "\n" not in message and message.startswith(start) and fragment in message[len(start):], message


TRAIN_CASES = [case for case in BAD if case[0] in READS["ner_hash.jsonnet"]]


@pytest.mark.parametrize("name, value, fragment", TRAIN_CASES, ids=[f"{n}={v}" for n, v, _ in TRAIN_CASES])
def test_allennlp_train_refuses_a_bad_value_before_writing_anything(name, value, fragment, tmp_path, no_config):
    value, fragment = _fill(value, tmp_path), _fill(fragment, tmp_path)
    run = tmp_path / "run"
    with pytest.raises(ConfigurationError) as info:
        allennlp_in_process("train", CONFIGS / "ner_hash.jsonnet", "-s", run, HF_HUB_OFFLINE="1", **{name: value})
    message, start = str(info.value), _expected("ner_hash.jsonnet", name, value, "")
    assert message.startswith(start) and fragment in message[len(start):], message
    assert not run.exists()


def test_the_allennlp_command_prints_one_line_and_exits_1(tmp_path, monkeypatch, capsys):
    import allennlp.commands

    monkeypatch.setenv("EPOCHS", "-1")
    monkeypatch.setattr(sys, "argv", ["allennlp", "train", str(CONFIGS / "ner_hash.jsonnet"), "-s",
                                      str(tmp_path / "run")])
    root, handlers = logging.getLogger(), list(logging.getLogger().handlers)
    try:
        with pytest.raises(SystemExit) as info:
            allennlp.commands.main(prog="allennlp")
    finally:
        root.handlers[:] = handlers
    err = capsys.readouterr().err
    assert info.value.code == 1 and "Traceback" not in err
    assert (f'allennlp train: error: {CONFIGS / "ner_hash.jsonnet"}: environment variable EPOCHS="-1" must be an '
            "integer >= 1") in err.splitlines()
    assert not (tmp_path / "run").exists()


def test_reader_choices_depend_on_the_config(monkeypatch):
    monkeypatch.setenv("READER", "conll2003")
    with pytest.raises(ConfigurationError, match=r'READER="conll2003" is not an NER reader \(ontonotes_hash, '):
        Params.from_file(str(CONFIGS / "ner_hash.jsonnet"))
    with pytest.raises(ConfigurationError, match=r'READER="conll2003" is not a POS reader \(ptb_hash, conllu_pos\)'):
        Params.from_file(str(CONFIGS / "pos_hash.jsonnet"))
    monkeypatch.setenv("READER", "ptb_hash")  # a reader, but not an NER one
    with pytest.raises(ConfigurationError, match="is not an NER reader"):
        Params.from_file(str(CONFIGS / "ner_hash.jsonnet"))


def test_workers_need_as_many_gpus_as_workers(monkeypatch):
    gpus = _gpus()
    monkeypatch.setenv("WORKERS", str(gpus + 2))
    monkeypatch.setenv("CUDA_DEVICE", "0")
    with pytest.raises(ConfigurationError, match="CUDA_DEVICE|WORKERS"):
        Params.from_file(str(CONFIGS / "ner_code.jsonnet"))
    monkeypatch.setenv("CUDA_DEVICE", "-1")  # DDP on the CPU: any number of workers
    assert Params.from_file(str(CONFIGS / "ner_code.jsonnet"))["distributed"]["cuda_devices"] == [-1] * (gpus + 2)


def test_gpu_numbers_are_checked_against_the_gpus_torch_sees(monkeypatch):
    """The GPU branch without a GPU: torch seeing two."""
    monkeypatch.setattr(config_kinds, "_gpus", lambda: 2)
    monkeypatch.setenv("CUDA_DEVICE", "1")
    monkeypatch.setenv("WORKERS", "2")
    assert Params.from_file(str(CONFIGS / "ner_code.jsonnet"))["distributed"]["cuda_devices"] == [0, 1]
    monkeypatch.setenv("WORKERS", "3")
    with pytest.raises(ConfigurationError, match='WORKERS="3" must be at most 2 with CUDA_DEVICE="1": one GPU per '
                                                 "worker, and torch sees 2"):
        Params.from_file(str(CONFIGS / "ner_code.jsonnet"))
    monkeypatch.setenv("CUDA_DEVICE", "2")
    with pytest.raises(ConfigurationError, match=r'CUDA_DEVICE="2" must be an integer in -1\.\.1 here: torch sees 2 '
                                                 "GPUs"):
        Params.from_file(str(CONFIGS / "ner_code.jsonnet"))


# ---------------------------------------------------------------------------------------------- good values

GOOD = [
    {"K": "1", "DROPOUT": "0", "SEED": "0", "EPOCHS": " 2 ", "BETA": "0", "LR": "1e-3", "MAX_LENGTH": "8"},
    {"K": "63", "DROPOUT": "0.99", "SEED": "4294967295", "MAX_LENGTH": "none", "PLM_LAYER": "-1", "CUDA_DEVICE": "-1"},
    {"K": "2.4e1", "MAX_LENGTH": " OFF ", "PLM_LAYER": "mix", "WORKERS": "1", "TWO_VIEWS": "Yes", "CODE_WINDOW": "0",
     "CODE_ENCODER": "window", "TAU": ".5", "PLM": str(TINY_BERT), "TRAIN_DATA": str(NER_TRAIN),
     "DEV_DATA": str(NER_DEV)},
]


@pytest.mark.parametrize("variables", GOOD, ids=["low ends", "high ends", "other forms"])
def test_good_values_build_every_shipped_config(variables, monkeypatch, caplog):
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    with caplog.at_level(logging.WARNING, logger=cv.__name__):
        for config in SHIPPED:
            if config.endswith("_code.jsonnet") and variables.get("K") not in (None, "2.4e1"):
                monkeypatch.delenv("K")  # the validation stage's K is its codes file's (24 bits)
            Params.from_file(str(CONFIGS / config))
            monkeypatch.setenv("K", variables.get("K", ""))
    assert not caplog.records, [r.getMessage() for r in caplog.records]


def test_unset_empty_and_unread_variables_are_not_checked(monkeypatch, tmp_path):
    monkeypatch.setenv("EPOCHS", "")  # empty counts as unset, as in env.libsonnet
    monkeypatch.setenv("CODE_ENCODER", "gru")  # not read by the hashing-stage configs
    monkeypatch.setenv("BOUNDARY", "right")
    assert Params.from_file(str(CONFIGS / "ner_hash.jsonnet"))["trainer"]["num_epochs"] == 3
    # a config that does not read env.libsonnet (an archive's config.json) is not checked at all
    monkeypatch.setenv("EPOCHS", "-1")
    plain = tmp_path / "config.json"
    plain.write_text(json.dumps({"trainer": {"num_epochs": 2}}))
    assert Params.from_file(str(plain))["trainer"]["num_epochs"] == 2


def test_explicit_ext_vars_are_checked_as_jsonnet_sees_them(monkeypatch):
    """`BITCODE_ENV` is what env.libsonnet reads: a caller passing its own is checked on that."""
    with pytest.raises(ConfigurationError, match='K="99" must be an integer in 1..63'):
        Params.from_file(str(CONFIGS / "ner_hash.jsonnet"), ext_vars={"BITCODE_ENV": json.dumps({"K": "99"})})


# ---------------------------------------------------------------------------------------------- warnings


@pytest.mark.parametrize("name, meant", [("EPOCH", "EPOCHS"), ("MAX_LENGHT", "MAX_LENGTH"), ("BETTA", "BETA"),
                                         ("WORKER", "WORKERS"), ("MAX_INSTANCE", "MAX_INSTANCES")])
def test_misspelt_variable_is_a_warning(name, meant, monkeypatch, caplog):
    monkeypatch.setenv(name, "1")
    with caplog.at_level(logging.WARNING, logger=cv.__name__):
        params = Params.from_file(str(CONFIGS / "ner_hash.jsonnet"))
    assert params["trainer"]["num_epochs"] == 3  # the misspelt one changed nothing
    assert [r.getMessage() for r in caplog.records] == [
        f"environment variable {name} is not read by the configs; did you mean {meant}?"]


def test_other_programs_variables_are_no_typos():
    names = ["TZ", "PWD", "OLDPWD", "HOME", "USER", "SHELL", "PATH", "LANG", "TERM", "LINES", "COLUMNS", "RANK",
             "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "EDITOR", "PAGER", "DISPLAY",
             "TMPDIR", "HOSTNAME", "SHLVL", "CI", "_", "VIRTUAL_ENV", "CUDA_HOME", "CUDA_VISIBLE_DEVICES",
             "OMP_NUM_THREADS", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "BITCODE_DEBUG", "BITCODE_ENV",
             "ALLENNLP_DEBUG", "TOKENIZERS_PARALLELISM", "PYTHONPATH", "MAIL", "LOGNAME", "DATA", "MODEL", "TASK"]
    assert {name: cv.suggestion(name) for name in names if cv.suggestion(name)} == {}
    assert {name: cv.suggestion(name) for name in os.environ if cv.suggestion(name)} == {}


def test_dev_data_equal_to_train_data_is_a_warning(monkeypatch, caplog, tmp_path):
    link = tmp_path / "dev"
    link.symlink_to(NER_DEV, target_is_directory=True)
    monkeypatch.setenv("TRAIN_DATA", str(NER_DEV))
    monkeypatch.setenv("DEV_DATA", str(link))  # the same folder after resolving
    with caplog.at_level(logging.WARNING, logger=cv.__name__):
        params = Params.from_file(str(CONFIGS / "ner_hash.jsonnet"))
    assert params["validation_data_path"] == str(link)
    assert [r.getMessage() for r in caplog.records] == [
        f"environment variable DEV_DATA is the TRAIN_DATA file ({link}): the dev scores will be on training "
        "sentences"]
    caplog.clear()
    monkeypatch.setenv("DEV_DATA", str(NER_TRAIN))
    with caplog.at_level(logging.WARNING, logger=cv.__name__):
        Params.from_file(str(CONFIGS / "ner_hash.jsonnet"))
    assert not caplog.records


# ---------------------------------------------------------------------------------------------- the declaration


def test_every_variable_read_is_declared_and_every_declared_one_is_read():
    every = set().union(*READS.values())
    scanned = config_variables()  # every config file, imports and unshipped ones too
    assert every == scanned  # the shipped configs with their imports read what all config files read
    assert set(cv.VARIABLES) == scanned, (sorted(scanned - set(cv.VARIABLES)), sorted(set(cv.VARIABLES) - scanned))
    assert CONFIG_VARIABLES == set(cv.VARIABLES)  # the experiment's names are the declaration's
    assert len(cv.VARIABLES) == sum(len(group.variables) for group in cv.GROUPS)  # each declared once


def test_docs_table_is_the_rendered_declaration():
    text = (ROOT / "docs" / "configs.md").read_text(encoding="utf-8")
    start, end = cv.table_in(text)
    assert text[start:end] == cv.render_table(), \
        "docs/configs.md's table differs: python -m bitcode_allennlp.host.config_variables --update docs/configs.md"


def test_render_table_follows_the_declaration():
    group = cv.Group((cv._int("A_B", "3"), cv._probability("C", "0.1"), cv._int("D", "1", 0)), "meaning `x`")
    assert cv.render_table([group]).splitlines()[2] == (
        "| `A_B`, `C`, `D` | 3, 0.1, 1 | `A_B`: an integer >= 1; `C`: a number in [0, 1); `D`: an integer >= 0 | "
        "meaning `x` |")


def test_retired_options_are_rendered_under_their_heading():
    """Options retired in 0.3.0 (CODE_HEAD_FLIP, CODE_DROPOUT, CODE_ENCODER=lstm, the legacy mismatched embedder) are
    no variable or value of the main table; their own table under "Retired options" says when and what instead
    (tests/reliability/test_retired_options.py: the errors)."""
    text = (ROOT / "docs" / "configs.md").read_text(encoding="utf-8")
    start, end = cv.table_in(text)
    main, _, retired = text[start:end].partition(cv.RETIRED_HEADING)
    assert retired, "docs/configs.md has no retired options heading"
    rows = [line for line in retired.splitlines() if line.startswith("| `")]
    assert [row.split(" | ")[0] for row in rows] == ["| `CODE_HEAD_FLIP`", "| `CODE_DROPOUT`", "| `CODE_ENCODER=lstm`",
                                                     "| `frozen_transformer_mismatched`"]
    assert all(" | 0.3.0 | " in row and row.count(" | ") == 3 for row in rows)
    assert "`CODE_HEAD_FLIP`" not in main and "`CODE_DROPOUT`" not in main and "| `CODE_ENCODER`" in main
    assert "CODE_DROPOUT" not in cv.VARIABLES and "CODE_HEAD_FLIP" not in cv.VARIABLES
    assert cv.VARIABLES["CODE_ENCODER"].problem("lstm") == "is not one of transformer, window"
    old = cv.Retired("OLD=y", "9.0", "measured y", "use x")
    rendered = cv.render_table([cv.Group((cv._int("A", "1"),), "a")], [old]).splitlines()
    assert rendered[2:] == ["| `A` | 1 | an integer >= 1 | a |", "", cv.RETIRED_HEADING, "",
                            cv.RETIRED_INTRO.strip(), "", *cv.RETIRED_HEADER.splitlines(),
                            "| `OLD=y` | 9.0 | measured y | use x |"]
    assert cv.render_table([cv.Group((cv._int("A", "1"),), "a")], []).splitlines()[3:] == []


def test_choices_and_ranges_follow_the_components():
    from bitcode_allennlp.common.code_format import MAX_BITS
    from bitcode_allennlp.data.dataset_readers.tag_coding import INPUT_SCHEMES
    from bitcode_allennlp.data.dataset_readers.tagging_reader import TOKEN_POLICIES
    from bitcode_allennlp.model.code_head import REACHES
    from bitcode_allennlp.modules.hash_loss import OBJECTIVES, SIMILARITIES

    declared = cv.VARIABLES
    assert declared["SIMILARITY"].choices == SIMILARITIES and declared["OBJECTIVE"].choices == OBJECTIVES
    assert declared["TOKEN_POLICY"].choices == TOKEN_POLICIES and declared["INPUT_SCHEME"].choices == INPUT_SCHEMES
    assert (declared["K"].low, declared["K"].high) == (1, MAX_BITS)
    assert declared["CODE_HEAD_REACH"].choices == REACHES == declared["HASH_LOSS_REACH"].choices


NUMBERS = ["24", " 7e-5 ", ".5", "5.", "-1", "+2", "1E3", "1e+2", "00012", "-0", "1.5e-3", "abc", "1,5", "24 bits",
           "inf", "nan", "0x10", "1_000", ".", "e5", "1e", "+-1", "--1", "1.2.3", "1e2e3", "\t3\n", "١٢"]
NOT_NUMBERS = {"abc", "1,5", "24 bits", "inf", "nan", "0x10", "1_000", ".", "e5", "1e", "+-1", "--1", "1.2.3", "1e2e3",
               "١٢"}


def test_numbers_are_read_once_in_python():
    """A number is read by Python alone (decimal, spaces stripped; no inf, nan, hex, `_`, other digits), and the
    value a config gets is the typed one: an int for an integer variable."""
    for text in NUMBERS:
        python = cv._number(text)
        assert (python is None) == (text in NOT_NUMBERS), text
        if python is not None:
            assert python == float(text.strip()) and cv.VARIABLES["BETA"].value(text) == python, text
    assert cv.VARIABLES["K"].value(" 2.4e1 ") == 24 and isinstance(cv.VARIABLES["K"].value("2.4e1"), int)
    assert cv.VARIABLES["MAX_LENGTH"].value(" OFF ") is None and cv.VARIABLES["TWO_VIEWS"].value("Yes") is True
    assert cv.VARIABLES["SEED"].value("7") == {"random_seed": 7, "numpy_seed": 7, "pytorch_seed": 7}


# ---------------------------------------------------------------------------------------------- one declaration


def test_no_config_writes_a_default():
    """Every default is the declaration's: a config reads `env.num("K")`, never `env.num("K", 24)`, and keeps no
    parsing of its own."""
    for path in sorted(CONFIGS.iterdir()):
        code = cv._code(path.read_text())
        assert not cv.DEFAULT_WRITTEN.search(code), (path.name, cv.DEFAULT_WRITTEN.search(code).group(0))
        assert "std.parseJson(" not in code or path.name == "env.libsonnet", path.name


def test_defaults_are_the_declarations():
    """Each config gets the declared default, its own where the declaration gives one (LR, DROPOUT, EPOCHS, BETA,
    PLM, CAUSAL, the data), AllenNLP's seeds without SEED, and no optional setting that is not set."""
    got = {config: Params.from_file(str(CONFIGS / config)).as_dict() for config in SHIPPED}
    lr = {config: params["trainer"]["optimizer"]["lr"] for config, params in got.items()}
    assert lr == {"ner_code.jsonnet": 3e-3, "ner_hash.jsonnet": 7e-5, "parse_code.jsonnet": 1e-3,
                  "parse_hash.jsonnet": 5e-5, "parse_hash_incremental.jsonnet": 5e-5, "pos_code.jsonnet": 5e-4,
                  "pos_hash.jsonnet": 5e-5}
    assert {config: params["trainer"]["num_epochs"] for config, params in got.items()} == {
        config: 20 if config.endswith("_code.jsonnet") else 3 for config in SHIPPED}
    assert [got[c]["model"]["beta"] for c in ("ner_hash.jsonnet", "pos_hash.jsonnet", "parse_hash.jsonnet")] == [
        0.005, 0.05, 0.001]
    incremental = got["parse_hash_incremental.jsonnet"]["model"]
    assert incremental["encoder"]["causal"] and incremental["boundary"] == "left"
    assert incremental["text_field_embedder"]["token_embedders"]["tokens"]["model_name"].endswith("tiny-gpt2")
    for config, params in got.items():
        assert (params["random_seed"], params["numpy_seed"], params["pytorch_seed"]) == (13370, 1337, 133)
        assert "max_instances" not in params["dataset_reader"] and "checkpointer" not in params["trainer"]
        assert os.path.exists(params["train_data_path"]) and os.path.exists(params["validation_data_path"])


def test_ner_data_defaults_follow_the_reader(monkeypatch):
    monkeypatch.setenv("READER", "conll_columns")
    params = Params.from_file(str(CONFIGS / "ner_hash.jsonnet"))
    assert params["train_data_path"].endswith("conll2003/btc_train.conll")
    assert params["dataset_reader"]["input_scheme"] == "IOB2"


def test_validation_stage_reads_k_from_its_codes_file(monkeypatch, tmp_path):
    codes = tmp_path / "train.jsonl"
    codes.write_text(json.dumps({"words": ["a"], "codes": ["ff"], "num_bits": 8, "tags": ["O"]}) + "\n")
    monkeypatch.setenv("TRAIN_DATA", str(codes))
    for config in ("ner_code.jsonnet", "pos_code.jsonnet", "parse_code.jsonnet"):
        params = Params.from_file(str(CONFIGS / config))
        assert params["dataset_reader"]["num_bits"] == 8 == params["model"]["text_field_embedder"][
            "token_embedders"]["codes"]["num_bits"]
    monkeypatch.setenv("K", "8")  # the same K, set: accepted
    Params.from_file(str(CONFIGS / "ner_code.jsonnet"))
    monkeypatch.setenv("K", "16")
    with pytest.raises(ConfigurationError) as info:
        Params.from_file(str(CONFIGS / "ner_code.jsonnet"))
    assert str(info.value) == (f'{CONFIGS / "ner_code.jsonnet"}: environment variable K="16" is not the K of the '
                               f"TRAIN_DATA codes file ({codes}: codes of 8 bits); leave K unset to read it from there")
    assert cv.codes_num_bits(str(FIXTURES / "data" / "codes" / "pos.train.jsonl")) == 24
    assert cv.codes_num_bits(str(tmp_path / "missing.jsonl")) is None


def test_plain_jsonnet_needs_the_settings(monkeypatch, capsys):
    """Without bitcode_allennlp the configs stop with jsonnet's undefined external variable; `--settings` prints
    what to pass."""
    with pytest.raises(RuntimeError, match="BITCODE_SETTINGS"):
        _jsonnet.evaluate_file(str(CONFIGS / "pos_code.jsonnet"))
    monkeypatch.setenv("EPOCHS", "5")
    assert cv.main(["--settings", str(CONFIGS / "pos_code.jsonnet")]) == 0
    settings = capsys.readouterr().out
    config = json.loads(_jsonnet.evaluate_file(str(CONFIGS / "pos_code.jsonnet"),
                                               ext_vars={"BITCODE_SETTINGS": settings}))
    assert config == Params.from_file(str(CONFIGS / "pos_code.jsonnet")).as_dict() and \
        config["trainer"]["num_epochs"] == 5

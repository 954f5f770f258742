"""Bad input, class by class (issue 14): every row is a bad input, the entry point it goes through, and the one
error line (or documented behaviour) it must give. Commands run in this process through `allennlp.commands.main`
with `sys.argv` set, as `allennlp` runs them (one row also as a real subprocess); the exit status of an error is 1
and no traceback is printed unless BITCODE_DEBUG=1. One NER hashing model is trained for the module (~15 s).
Reader-level bad data (brackets, columns, encodings) is covered by tests/reliability/test_bad_input.py."""
import io
import json
import logging
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Callable, Dict, List, NamedTuple, Optional, Union

import pytest
from allennlp.common.checks import ConfigurationError
from allennlp.data import Token, Vocabulary

import bitcode_allennlp.plugin  # noqa: F401
from bitcode_allennlp.bits.corpus import read_codes_corpus
from bitcode_allennlp.common.code_format import hex_to_uint64
from bitcode_allennlp.bits.index import HammingIndex, index_corpus
from bitcode_allennlp.common.code_format import MAX_BITS, check_num_bits, parse_hex_code
from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.model.predictor import CodesPredictor
from bitcode_allennlp.data.dataset_readers import ConllColumnsDatasetReader
from bitcode_allennlp.modules.hash_transformer import HashTransformerEncoder
from bitcode_allennlp.code_stage.binary_code_indexer import BinaryCodeIndexer
from bitcode_allennlp.code_stage.binary_codes_reader import BinaryCodesDatasetReader
from tests.conftest import CONFIGS, FIXTURES, ROOT

NER_DEV = FIXTURES / "data" / "conll2012" / "development"
HINT = "(set BITCODE_DEBUG=1 for the full traceback)"


@pytest.fixture
def archive(ner_hash_archive) -> Path:
    return Path(ner_hash_archive)


def allennlp(monkeypatch, capsys, *args, env: Optional[Dict[str, str]] = None):
    """Runs `allennlp ARGS` in this process; returns (exit status, the error line or None, stderr)."""
    import allennlp.commands

    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys, "argv", ["allennlp", *map(str, args)])
    capsys.readouterr()
    root, handlers, hook = logging.getLogger(), list(logging.getLogger().handlers), sys.excepthook
    try:
        allennlp.commands.main(prog="allennlp")
        status = 0
    except SystemExit as exit:
        status = exit.code
    finally:  # `allennlp train` replaces the root logger's handlers with ones on this test's captured streams
        for handler in root.handlers:
            if handler not in handlers:
                handler.close()
        root.handlers[:] = handlers
        sys.excepthook = hook
    err = capsys.readouterr().err
    lines = err.splitlines()
    errors = [i for i, line in enumerate(lines) if line.startswith("allennlp ") and ": error: " in line]
    if errors:  # the error line, then the hint, and nothing after them; never a traceback
        assert lines[errors[-1] + 1:] == [HINT] and "Traceback" not in err, err
    return status, (lines[errors[-1]] if errors else None), err


def tar_gz(files: Dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def codes_file(*codes: str, num_bits: int = 24) -> str:
    words = [f"w{i}" for i in range(len(codes))]
    return json.dumps({"words": words, "codes": list(codes), "num_bits": num_bits, "tags": ["O"] * len(codes)}) + "\n"


class Case(NamedTuple):
    """One `allennlp` command line: `{tmp}` and `{archive}` in `argv` are filled in; `files` are written to tmp
    first (bytes, text, or a function of the archive's bytes); the error line must contain `expected`."""

    argv: List[str]
    expected: str
    files: Dict[str, Union[str, bytes, Callable[[bytes], bytes]]] = {}
    env: Dict[str, str] = {}
    setup: Optional[Callable[[Path], None]] = None


PREDICT = ["predict", "{archive}", "{tmp}/in.jsonl", "--output-file", "{tmp}/out.jsonl", "--silent"]
GOOD = '{"sentence": "Obama visits Berlin"}\n'
TRAIN = ["train", CONFIGS / "ner_hash.jsonnet", "-s", "{tmp}/run"]
CLI_CASES = {
    # predict input: file and line named, the field and the value quoted
    "predict: not JSON": Case(PREDICT, "in.jsonl, line 2: not JSON (Expecting value at column 1)",
                              {"in.jsonl": GOOD + "not json\n"}),
    "predict: token not a string": Case(PREDICT, 'in.jsonl, line 1: "tokens"[1] is a number 5, expected a string',
                                        {"in.jsonl": '{"tokens": ["a", 5]}\n'}),
    "predict: tokens a string": Case(PREDICT, '"tokens" must be a list of strings, got a string "Berlin"',
                                     {"in.jsonl": '{"tokens": "Berlin"}\n'}),
    "predict: empty token": Case(PREDICT, "in.jsonl, line 3: \"tokens\"[1] '' is empty",
                                 {"in.jsonl": GOOD + "\n" + '{"tokens": ["a", ""]}\n'}),
    "predict: blank token": Case(PREDICT, "\"tokens\"[0] ' \\t' is only whitespace",
                                 {"in.jsonl": '{"tokens": [" \\t"]}\n'}),
    "predict: not an object": Case(PREDICT, "in.jsonl, line 1: expected a JSON object, got an array",
                                   {"in.jsonl": "[1, 2]\n"}),
    "predict: sentence not a string": Case(PREDICT, '"sentence" must be a string, got an array',
                                           {"in.jsonl": '{"sentence": ["a"]}\n'}),
    "predict: invalid UTF-8": Case(PREDICT, "in.jsonl, line 1: invalid UTF-8", {"in.jsonl": b'{"sentence": "\xff"}\n'}),
    "predict: no such input": Case(PREDICT, "in.jsonl not found"),
    # archives: the file named, no traceback
    "archive: empty": Case(["predict", "{tmp}/model.tar.gz", "{tmp}/in.jsonl"], "model.tar.gz: the archive is empty",
                           {"model.tar.gz": b"", "in.jsonl": GOOD}),
    "archive: truncated": Case(["predict", "{tmp}/model.tar.gz", "{tmp}/in.jsonl"],
                               "model.tar.gz: the archive is truncated",
                               {"model.tar.gz": lambda real: real[: len(real) // 3], "in.jsonl": GOOD}),
    "archive: not a tar.gz": Case(["predict", "{tmp}/model.tar.gz", "{tmp}/in.jsonl"],
                                  "model.tar.gz: not a model archive (not a gzipped tar file)",
                                  {"model.tar.gz": "hello\n", "in.jsonl": GOOD}),
    "archive: no config.json": Case(["evaluate", "{tmp}/model.tar.gz", NER_DEV],
                                    "model.tar.gz: not a model archive (no config.json inside)",
                                    {"model.tar.gz": tar_gz({"weights.th": b"x"})}),
    # config variables: named, value quoted
    "config: K not a number": Case(TRAIN, 'ner_hash.jsonnet: environment variable K="abc" is not a number',
                                   env={"K": "abc"}),
    "config: boolean misspelt": Case(TRAIN, 'environment variable SKIP_INVALID="ture" is not a boolean '
                                     "(1/0, true/false, yes/no, on/off)", env={"SKIP_INVALID": "ture"}),
    "config: K = 64": Case(TRAIN, 'environment variable K="64" must be an integer in 1..63',
                           env={"K": "64", "EPOCHS": "1"}),
    "config: bad --overrides": Case(TRAIN + ["--overrides", "{"], "--overrides: "),
    # codes: one strict parser in every `bits` subcommand
    "bits stats: signed code": Case(["bits", "stats", "{tmp}/codes.jsonl"],
                                    "codes.jsonl, line 1: code 2: not a hex code: '-7724c'",
                                    {"codes.jsonl": codes_file("a3f00c", "-7724c")}),
    "bits index: underscore": Case(["bits", "index", "{tmp}/codes.jsonl", "--out", "{tmp}/index"],
                                   "codes.jsonl, line 1: code 1: not a hex code: '7_724c'",
                                   {"codes.jsonl": codes_file("7_724c", "a3f00c")}),
    "bits search: 0x": Case(["bits", "search", "{tmp}/index", "--code", "0x7724"], "--code: not a hex code: '0x7724'",
                            {"codes.jsonl": codes_file("a3f00c", "0b12ff")},
                            setup=lambda tmp: index_corpus(str(tmp / "codes.jsonl"), str(tmp / "index")) and None),
    "bits search: space": Case(["bits", "search", "{tmp}/index", "--code", "7724c "],
                               "not a hex code: '7724c '",
                               {"codes.jsonl": codes_file("a3f00c", "0b12ff")},
                               setup=lambda tmp: index_corpus(str(tmp / "codes.jsonl"), str(tmp / "index")) and None),
    # hash-corpus: another model's output is not continued; input checked before the model loads
    "hash-corpus: another archive": Case(
        ["hash-corpus", "{archive}", NER_DEV, "-o", "{tmp}/codes.jsonl"],
        "cannot continue {tmp}/codes.jsonl: it was written by '/elsewhere/model.tar.gz' (K = 24, sha256 "
        "000000000000...)",
        {"codes.jsonl": codes_file("a3f00c", "0b12ff"),
         "codes.jsonl.meta.json": json.dumps({"archive": "/elsewhere/model.tar.gz", "archive_sha256": "0" * 64,
                                              "num_bits": 24})}),
    "hash-corpus: another K": Case(["hash-corpus", "{archive}", NER_DEV, "-o", "{tmp}/codes.jsonl"],
                                   "cannot continue {tmp}/codes.jsonl: its codes have 8 bits, this model's K is 24",
                                   {"codes.jsonl": codes_file("a3", "0b", num_bits=8)}),
    "hash-corpus: no input": Case(["hash-corpus", "{archive}", "{tmp}/nothing.conll", "-o", "{tmp}/codes.jsonl"],
                                  "nothing.conll: file does not exist"),
    "hash-corpus: output a folder": Case(["hash-corpus", "{archive}", NER_DEV, "-o", "{tmp}"],
                                         ": is a folder; --output is the codes file to write"),
    "hash-corpus: shard index out of range": Case(
        ["hash-corpus", "{archive}", NER_DEV, "-o", "{tmp}/codes.jsonl", "--num-shards", "4", "--shard-index", "4"],
        "--shard-index must be in 0..3 for --num-shards 4, got 4"),
    "hash-corpus: another shard": Case(
        ["hash-corpus", "{archive}", NER_DEV, "-o", "{tmp}/codes.jsonl", "--num-shards", "4", "--shard-index", "2"],
        "cannot continue {tmp}/codes.jsonl: it is shard 1 of 4 (chunks of 512 sentences), not shard 2 of 4",
        {"codes.jsonl": codes_file("a3f00c", "0b12ff"),
         "codes.jsonl.meta.json": json.dumps({"num_bits": 24, "num_shards": 4, "shard_index": 1})}),
    # hash-corpus-merge: shards that do not cover the input exactly once
    "hash-corpus-merge: missing shard": Case(
        ["hash-corpus-merge", "{tmp}/codes.0.jsonl", "-o", "{tmp}/codes.jsonl"],
        "{tmp}/codes.0.jsonl: 1 of its 2 shards not given (shard index 1); give every shard of the run",
        {"codes.0.jsonl": codes_file("a3f00c"),
         "codes.0.jsonl.meta.json": json.dumps({"num_bits": 24, "num_shards": 2, "shard_index": 0, "complete": True,
                                                "sentences": 1, "input_sentences": 2})}),
    # training data: the readers' messages, with a tag's invisible space shown
    "train: data error": Case(TRAIN, "bad.conll, line 2: 'I-PER ' does not continue a 'PER ' span (after 'O')",
                              {"bad.conll": "a\tO\nb\tI-PER \n"},
                              env={"TRAIN_DATA": "{tmp}/bad.conll", "EPOCHS": "1"}),
}


@pytest.mark.parametrize("name", list(CLI_CASES))
def test_cli_error_is_one_line(name, archive, tmp_path, monkeypatch, capsys):
    case = CLI_CASES[name]
    if name == "train: data error":  # the NER config reads CoNLL-2012; read this file as CoNLL columns
        case = case._replace(argv=case.argv + ["--overrides", json.dumps(
            {"dataset_reader": {"type": "conll_columns", "input_scheme": "IOB2"}})])
    fill = lambda text: str(text).replace("{tmp}", str(tmp_path)).replace("{archive}", str(archive))  # noqa: E731
    for file_name, content in case.files.items():
        data = content(archive.read_bytes()) if callable(content) else content
        (tmp_path / file_name).write_bytes(data.encode() if isinstance(data, str) else data)
    if case.setup is not None:
        case.setup(tmp_path)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))  # archives must leave no temporary folder
    (tmp_path / "tmp").mkdir()
    status, line, err = allennlp(monkeypatch, capsys, *map(fill, case.argv),
                                 env={key: fill(value) for key, value in case.env.items()})
    assert status == 1 and line is not None, err[-3000:]
    command = " ".join(map(str, case.argv[: 2 if case.argv[0] == "bits" else 1]))
    assert line.startswith(f"allennlp {command}: error: ") and fill(case.expected) in line
    assert list((tmp_path / "tmp").iterdir()) == []
    assert not (tmp_path / "out.jsonl").exists()  # a failed predict writes nothing


def test_debug_switch_shows_the_traceback(monkeypatch, capsys, tmp_path):
    with pytest.raises(ConfigurationError, match='K="abc" is not a number'):
        allennlp(monkeypatch, capsys, "train", CONFIGS / "ner_hash.jsonnet", "-s", tmp_path / "run",
                 env={"K": "abc", "BITCODE_DEBUG": "1"})


def test_the_real_command_prints_two_lines_and_exits_1(tmp_path):
    result = subprocess.run([sys.executable, "-m", "allennlp", "train", CONFIGS / "ner_hash.jsonnet", "-s",
                             tmp_path / "run"], env={**os.environ, "K": "abc", "HF_HUB_OFFLINE": "1"},
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-2:] == [
        f"allennlp train: error: {CONFIGS / 'ner_hash.jsonnet'}: environment variable K=\"abc\" is not a number",
        HINT]


def test_predict_skip_bad_lines(archive, tmp_path, monkeypatch, capsys, caplog):
    (tmp_path / "in.jsonl").write_text(GOOD + "not json\n" + '{"tokens": ["a", ""]}\n' + '{"tokens": ["Hi"]}\n')
    out = tmp_path / "out.jsonl"
    status, line, err = allennlp(monkeypatch, capsys, "predict", archive, tmp_path / "in.jsonl", "--output-file",
                                 out, "--silent", "--skip-bad-lines")
    assert status == 0 and line is None, err
    assert [json.loads(row)["words"] for row in out.read_text().splitlines()] == [["Obama", "visits", "Berlin"],
                                                                                  ["Hi"]]
    warnings = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert f"{tmp_path / 'in.jsonl'}, line 2: not JSON (Expecting value at column 1) (skipped)" in warnings
    assert any("skipped 2 bad line(s) (lines 2, 3)" in warning for warning in warnings)


def test_hash_corpus_readme_command_creates_the_folder_and_records_the_model(archive, tmp_path, monkeypatch, capsys):
    out = tmp_path / "runs" / "ner_codes" / "dev.jsonl"  # the folder does not exist yet
    status, line, err = allennlp(monkeypatch, capsys, "hash-corpus", archive, NER_DEV, "-o", out, "--silent")
    assert status == 0 and line is None, err
    meta = json.loads(Path(f"{out}.meta.json").read_text())
    assert meta["num_bits"] == 24 and meta["archive"] == str(archive) and len(meta["archive_sha256"]) == 64
    assert read_codes_corpus(str(out)).num_bits == 24  # the codes file itself is unchanged JSON lines
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:3]) + "\n")  # a killed run: the same archive continues it
    status, line, err = allennlp(monkeypatch, capsys, "hash-corpus", archive, NER_DEV, "-o", out, "--silent")
    assert status == 0 and out.read_text().splitlines() == lines


def test_rerunning_a_failed_train_is_not_refused(tmp_path, monkeypatch, capsys):
    (tmp_path / "bad.conll").write_text("a\tO\nb\tI-PER\n")
    argv = ["train", CONFIGS / "ner_hash.jsonnet", "-s", tmp_path / "run", "--overrides",
            json.dumps({"dataset_reader": {"type": "conll_columns"}})]
    env = {"TRAIN_DATA": str(tmp_path / "bad.conll")}
    first = allennlp(monkeypatch, capsys, *argv, env=env)
    assert first[0] == 1 and "bad.conll, line 2: 'I-PER' does not continue" in first[1]
    assert (tmp_path / "run" / "config.json").exists()  # what the failed run left behind
    second = allennlp(monkeypatch, capsys, *argv, env=env)  # the same error again, not "use --recover"
    assert second[:2] == first[:2]
    (tmp_path / "run" / "model_state_e0_b3.th").write_bytes(b"")  # a run with a checkpoint is kept
    third = allennlp(monkeypatch, capsys, *argv, env=env)
    assert third[0] == 1 and "--recover continues that run, --force deletes the folder" in third[1]
    assert (tmp_path / "run" / "model_state_e0_b3.th").exists()


# ---------------------------------------------------------------------------------------------- codes, every parser

BAD_CODES = ["-7724c", "+7724c", "7_724c", "0x7724", " 7724c", "7724c ", "7724c\n", "77 24c", "7724cg", "７7724c",
             "7724", "07724cc"]  # all but the last two have the right length (6 digits for K = 24)


def _reader(code: str, tmp_path: Path):
    path = tmp_path / "codes.jsonl"
    path.write_text(codes_file(code, "a3f00c"))
    return list(BinaryCodesDatasetReader(num_bits=24).read(str(path)))


def _predictor(code: str, tmp_path: Path):
    predictor = object.__new__(CodesPredictor)  # a validation-stage predictor: reader "binary_codes", K = 24
    predictor._dataset_reader, predictor._model = BinaryCodesDatasetReader(num_bits=24), None
    return predictor.check_input({"codes": [code, "a3f00c"]})


PARSERS = {
    "codes.parse_hex_code": lambda code, tmp: parse_hex_code(code, 24),
    "binary_codes reader": _reader,
    "binary_code indexer": lambda code, tmp: BinaryCodeIndexer(24).tokens_to_indices([Token(code)], Vocabulary()),
    "predictor": _predictor,
    "bits corpus": lambda code, tmp: hex_to_uint64([code], 24),
    "bits search": lambda code, tmp: HammingIndex.from_file(
        (tmp / "c.jsonl").write_text(codes_file("a3f00c")) and str(tmp / "c.jsonl")).parse_code(code),
}


@pytest.mark.parametrize("entry", list(PARSERS))
def test_every_code_parser_is_strict(entry, tmp_path):
    for code in BAD_CODES:
        with pytest.raises((ValueError, DataFormatError), match=r"hex digits|not a hex code") as info:
            PARSERS[entry](code, tmp_path)
        assert repr(code) in str(info.value)  # the code quoted, so a stray space or newline shows
    PARSERS[entry]("A3F00C", tmp_path)  # upper case is read


def test_k_limit_is_63_everywhere():
    assert MAX_BITS == 63
    assert parse_hex_code("7fffffffffffffff", 63) == 2 ** 63 - 1
    with pytest.raises(ValueError, match="does not fit in 63 bits"):
        parse_hex_code("8000000000000000", 63)
    HashTransformerEncoder(input_dim=8, num_bits=63, head_dim=2)
    for make in (lambda: HashTransformerEncoder(input_dim=8, num_bits=64, head_dim=2), lambda: BinaryCodeIndexer(64),
                 lambda: check_num_bits(64), lambda: hex_to_uint64(["ffffffffffffffff"], 64)):
        with pytest.raises((ValueError, ConfigurationError), match="63"):
            make()
    readme = (ROOT / "README.md").read_text()
    assert "K ≤ 64" not in readme and "K ≤ 63" in readme


# ---------------------------------------------------------------------------------------------- config variables

VALUES = {
    "num": [("24", 24), (" 7e-5 ", 7e-5), (".5", 0.5), ("-1", -1), ("+2", 2), ("", None),
            ("abc", 'K="abc" is not a number'), ("1,5", 'K="1,5" is not a number'), ("24 bits", "is not a number"),
            ("inf", "is not a number")],
    "bool": [("1", True), ("on", True), ("TRUE", True), ("Yes", True), ("0", False), ("off", False),
             ("False", False), ("NO", False), ("", None), ("maybe", 'K="maybe" is not a boolean'),
             ("t", "is not a boolean (1/0, true/false, yes/no, on/off)"), ("2", "is not a boolean")],
}


@pytest.mark.parametrize("kind", list(VALUES))
def test_config_variable_types(kind):
    """Each value as the configs get it (`BITCODE_SETTINGS`, read in Python: `config_variables.config_settings`),
    or the one-line error naming the variable."""
    from bitcode_allennlp.host.config_variables import quoted
    from bitcode_allennlp.host.config_kinds import Variable

    variable = Variable("K", "number" if kind == "num" else "boolean", None)
    for text, expected in VALUES[kind]:
        problem = variable.problem(text) if text else None
        if isinstance(expected, str):
            assert problem is not None and expected in f"{quoted('K', text)} {problem}", text
        else:
            value = variable.value(text or None)
            assert problem is None and (value == expected if not isinstance(expected, float)
                                        else value == pytest.approx(expected)), text


# ---------------------------------------------------------------------------------------------- user values quoted


def test_tag_with_invisible_space_is_quoted(tmp_path):
    path = tmp_path / "bad.conll"
    path.write_text("a\tB-PER\nb\tI-PER \n")
    with pytest.raises(DataFormatError) as info:
        list(ConllColumnsDatasetReader().read(str(path)))
    assert str(info.value) == f"{path}, line 2: 'I-PER ' does not continue a 'PER ' span (after 'B-PER')"


def test_predict_arguments_wrapper_is_idempotent():
    """Wrapping `Predict.add_subparser` twice (the fix applied again) must not add `--skip-bad-lines` twice."""
    import argparse

    from bitcode_allennlp.host.bad_input import add_predict_arguments

    def original(self, parser):
        return parser.add_parser("predict")

    once = add_predict_arguments(original)
    assert add_predict_arguments(once) is once
    subparsers = argparse.ArgumentParser().add_subparsers()
    subparser = add_predict_arguments(once)(None, subparsers)  # no argparse conflict
    assert subparser.parse_args(["--skip-bad-lines"]).skip_bad_lines is True

"""The `allennlp` command is quiet by default (issue 16): results on stdout, no INFO lines and none of the known noise
warnings on stderr; `--verbose` gives AllenNLP's logs back; `allennlp evaluate` prints its metrics; `allennlp bits`
runs without importing AllenNLP, torch or transformers. Commands run in fresh processes as a user runs them
(`tests.conftest.run_cli`); the console filter, the warning filters and the command-line detection also in-process."""
import json
import logging
import os
import re
import subprocess
import sys
import warnings

import pytest

from bitcode_allennlp.host import console
from bitcode_allennlp.bits import light as light_cli
from tests.conftest import CONFIGS, FIXTURES, run_cli

NER_DEV = FIXTURES / "data" / "conll2012" / "development"
CODES = FIXTURES / "data" / "codes" / "ner.train.jsonl"
NOISE = [message for message, *_ in console.NOISE_WARNINGS]
INFO_LINE = re.compile(r" - INFO - ")


def assert_quiet(stderr: str) -> None:
    assert not INFO_LINE.search(stderr), stderr[-3000:]
    for message in NOISE:
        assert message not in stderr


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """`allennlp train` of the NER fixture model, quiet: (workdir, archive, CompletedProcess)."""
    workdir = tmp_path_factory.mktemp("quiet")
    result = run_cli(["train", CONFIGS / "ner_hash.jsonnet", "-s", workdir / "run"], cwd=workdir,
                     env={"EPOCHS": "1"})
    return workdir, workdir / "run" / "model.tar.gz", result


def test_train_prints_epoch_metrics_and_no_other_info(trained):
    workdir, archive, result = trained
    out = result.stdout
    assert archive.exists()
    assert "Epoch 0/0" in out
    # one line per epoch: the loss, the tracked dev metric first, words/s, the time (the metrics table: out.log)
    assert re.search(r"epoch 1/1 · training loss [\d.]+ · dev f1-measure-overall [\d.]+, accuracy [\d.]+, "
                     r"precision-overall [\d.]+, recall-overall [\d.]+ · [\d,]+ words/s · \d+ s so far\n", out), out
    assert not re.search(r"Training \|\s+Validation", out) and "code_bit_balance" not in out.split("Metrics:")[0]
    assert '"best_validation_f1-measure-overall"' in out  # final metrics
    for noise in ("allennlp.common.params", "allennlp.nn.initializers", "Batch inputs", "Plugin allennlp_models"):
        assert noise not in out + result.stderr
    assert_quiet(result.stderr)
    log = (workdir / "run" / "out.log").read_text()  # the run's log file keeps every INFO line
    assert "INFO - allennlp.common.params" in log and "Batch inputs" in log
    assert re.search(r"Training \|\s+Validation", log) and "Epoch duration" in log


def test_predict_prints_only_json_lines(trained):
    workdir, archive, _ = trained
    inputs = workdir / "two.jsonl"
    inputs.write_text('{"sentence": "Obama visits Berlin today."}\n{"tokens": ["Frodo", "left"]}\n')
    result = run_cli(["predict", archive, inputs, "--include-package", "bitcode_allennlp"], cwd=workdir)
    rows = [json.loads(line) for line in result.stdout.splitlines()]  # every stdout line is a JSON prediction
    assert [row["words"] for row in rows] == [["Obama", "visits", "Berlin", "today", "."], ["Frodo", "left"]]
    assert all(len(row["codes"]) == len(row["words"]) for row in rows)
    assert_quiet(result.stderr)
    assert result.stderr.strip() == ""


def test_verbose_gives_the_logs_back(trained):
    workdir, archive, _ = trained
    inputs = workdir / "one.jsonl"
    inputs.write_text('{"sentence": "Frodo left."}\n')
    result = run_cli(["predict", archive, inputs, "--verbose"], cwd=workdir)
    assert "INFO - allennlp.common.plugins - Plugin bitcode_allennlp available" in result.stderr
    assert NOISE[0] in result.stderr  # pkg_resources (allennlp-models imports py-rouge at every start)
    assert result.stdout.startswith("input 0:") and "prediction:" in result.stdout  # AllenNLP's own format
    by_variable = run_cli(["predict", archive, inputs, "--output-file", workdir / "one.out.jsonl", "--silent"],
                          cwd=workdir, env={"BITCODE_VERBOSE": "1"})
    assert INFO_LINE.search(by_variable.stderr) and by_variable.stdout == ""


def test_evaluate_prints_its_metrics(trained):
    workdir, archive, _ = trained
    written = workdir / "metrics.json"
    result = run_cli(["evaluate", archive, NER_DEV, "--output-file", written], cwd=workdir)
    printed = json.loads(result.stdout)
    assert printed == json.loads(written.read_text())
    for key in ("accuracy", "f1-measure-overall", "code_distinct", "loss"):
        assert key in printed
    assert_quiet(result.stderr)


def test_bits_search_runs_without_allennlp_torch_or_transformers(tmp_path):
    index = tmp_path / "index"
    run_cli(["bits", "index", CODES, "--out", index])
    command = [sys.executable, "-X", "importtime", "-m", "allennlp", "bits", "search", str(index), "--word",
               "Frodo", "--k", "3", "--include-package", "bitcode_allennlp"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "| 1 | 0 |" in result.stdout and "Frodo" in result.stdout
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert "bitcode_allennlp.bits.command" in imported and "numpy" in imported
    for heavy in ("torch", "transformers", "spacy", "allennlp.common", "allennlp.commands", "allennlp_models"):
        assert heavy not in imported
    message = [line for line in result.stderr.splitlines() if not line.startswith("import time:")]
    assert message == []


def test_bits_user_error_in_the_light_process(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"words": ["a"], "codes": ["zz"], "num_bits": 8}\n')
    result = subprocess.run([sys.executable, "-m", "allennlp", "bits", "stats", str(tmp_path / "bad.jsonl")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"allennlp bits stats: error: {tmp_path / 'bad.jsonl'}, line 1: ")
    assert lines[1:] == ["(set BITCODE_DEBUG=1 for the full traceback)"]


def test_bits_output_into_a_closed_pipe_stops_quietly():
    """`allennlp bits stats ... | head -1`: the reader has gone; no BrokenPipeError traceback, no usage error."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # closed before the command writes anything: every write fails, deterministically
    try:
        result = subprocess.run([sys.executable, "-m", "allennlp", "bits", "stats",
                                 str(FIXTURES / "data" / "codes" / "ner.train.jsonl")],
                                stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write_end)
    assert result.returncode == 1
    assert result.stderr == ""


# ------------------------------------------------------------------------------------------------ in-process


def record(name: str, level: int, msg: str, func: str = "f") -> logging.LogRecord:
    return logging.LogRecord(name, level, "x.py", 1, msg, (), None, func=func)


def test_console_keeps_warnings_and_the_epoch_lines_only():
    keep = console.keep_record
    assert keep(record("allennlp.common.params", logging.WARNING, "x"))
    assert not keep(record("allennlp.common.params", logging.INFO, "x"))
    assert keep(record("allennlp.training.gradient_descent_trainer", logging.INFO, "Epoch %d/%d"))
    assert not keep(record("allennlp.training.gradient_descent_trainer", logging.INFO, "Training"))
    assert not keep(record("allennlp.training.callbacks.console_logger", logging.INFO, "%s |", func="on_epoch"))
    assert not keep(record("allennlp.training.callbacks.console_logger", logging.INFO, "Batch inputs",
                           func="on_batch"))
    assert keep(record("allennlp.common.util", logging.INFO, "Metrics: %s", func="dump_metrics"), training=True)
    assert not keep(record("allennlp.common.util", logging.INFO, "Metrics: %s", func="dump_metrics"))  # evaluate
    assert not keep(record("bitcode_allennlp.code_stage.hash_corpus", logging.DEBUG, "x"))
    assert keep(record("bitcode_allennlp.code_stage.hash_corpus", logging.INFO, "x"))


def test_noise_warnings_are_ignored_by_message_category_and_module():
    def shown(message, category, module):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            console.ignore_noise_warnings()
            warnings.warn_explicit(message, category, "x.py", 1, module=module, registry={})
        return len(caught) == 1

    for message, category, module, _ in console.NOISE_WARNINGS:
        name = module.replace("\\", "")
        assert not shown(message + " and more", category, name)
        assert shown(message, category, "my_module")  # the same message from elsewhere is shown
        assert shown(message, DeprecationWarning if category is not DeprecationWarning else UserWarning, name)
    assert shown("something else", UserWarning, "rouge.rouge")


@pytest.mark.parametrize("argv, orig_argv, expected", [
    (["/venv/bin/allennlp", "predict", "a"], None, ["predict", "a"]),
    (["-m", "bits", "search"], ["python", "-X", "importtime", "-m", "allennlp", "bits", "search"], ["bits", "search"]),
    (["-m", "bits"], ["python", "-mallennlp", "bits"], ["bits"]),
    (["-m", "x"], ["python", "-m", "pytest", "x"], None),
    (["script.py", "bits"], ["python", "script.py", "bits"], None),
    (["-c"], ["python", "-c", "pass"], None),
])
def test_cli_arguments(monkeypatch, argv, orig_argv, expected):
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.setattr(sys, "orig_argv", orig_argv or ["python"] + argv[1:])
    assert console.cli_arguments() == expected


@pytest.mark.parametrize("args, light", [
    (["bits", "search", "DIR", "--code", "abcdef"], True),
    (["bits", "--include-package", "bitcode_allennlp", "stats", "C.jsonl"], True),
    (["bits", "diff", "--codes", "C.jsonl", "--lines", "1", "2"], True),
    (["bits"], True),
    (["bits", "diff", "model.tar.gz", "a b", "c d"], False),  # loads a model: through AllenNLP
    (["bits", "search", "DIR", "--include-package", "my_plugin"], False),
    (["predict", "model.tar.gz", "in.jsonl"], False),
])
def test_light_bits_commands(args, light):
    assert light_cli.is_light(args) is light


def test_verbose_requested(monkeypatch):
    for name in ("BITCODE_VERBOSE", "ALLENNLP_LOG_LEVEL", "ALLENNLP_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    assert not console.verbose_requested(["predict", "a", "b"])
    assert console.verbose_requested(["predict", "a", "b", "--verbose"])
    assert not console.verbose_requested(["predict", "--", "--verbose"])
    monkeypatch.setenv("BITCODE_VERBOSE", "0")
    assert not console.verbose_requested(["train"])
    monkeypatch.setenv("BITCODE_VERBOSE", "1")
    assert console.verbose_requested(["train"])
    monkeypatch.delenv("BITCODE_VERBOSE")
    monkeypatch.setenv("ALLENNLP_LOG_LEVEL", "INFO")
    assert console.verbose_requested(["train"])
    assert os.environ.get("BITCODE_VERBOSE") is None


class Stream:
    def __init__(self, tty: bool):
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize("stderr_tty, stdout_tty, print_to_console, shown", [
    (True, True, True, False),  # predictions on the terminal: no bar drawn between them
    (True, True, False, True),  # --silent / --output-file
    (True, False, True, True),  # stdout redirected to a file
    (False, False, False, False),  # stderr captured (as in these tests): no bar
])
def test_predict_progress_bar_only_on_a_terminal(monkeypatch, stderr_tty, stdout_tty, print_to_console, shown):
    monkeypatch.setattr(sys, "stderr", Stream(stderr_tty))
    monkeypatch.setattr(sys, "stdout", Stream(stdout_tty))
    assert console.show_progress(print_to_console) is shown

"""The whole experiment on the fixtures, as one command: hashing stage → hash-corpus → validation stage → both
evaluated on the same dev sentences, with parameter counts (a row of paper Table 1)."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from allennlp.data import DatasetReader

import bitcode_allennlp.plugin  # noqa: F401  (registers the readers this test names)
from bitcode_allennlp.bits.corpus import read_codes_corpus
from bitcode_allennlp.bits.probe import probe_codes
from bitcode_allennlp.code_stage.experiment import main, table
from tests.conftest import FIXTURES


def test_ner_experiment_end_to_end(tmp_path, capsys):
    out = tmp_path / "exp"
    row = main(["ner", "--out", str(out), "--set", "EPOCHS=1", "MAX_INSTANCES=30", "--code-set", "EPOCHS=2"])
    assert json.loads((out / "experiment.json").read_text()) == row
    train_codes = (out / "codes" / "train.jsonl").read_text().splitlines()
    dev_codes = (out / "codes" / "dev.jsonl").read_text().splitlines()
    train = DatasetReader.by_name("ontonotes_hash")().read(FIXTURES / "data" / "conll2012" / "train")
    assert len(train_codes) == len(list(train)) > 30  # the entire corpus (Algorithm 1), not the hashing stage's 30
    dev = DatasetReader.by_name("ontonotes_hash")().read(FIXTURES / "data" / "conll2012" / "development")
    assert len(dev_codes) == len(list(dev))  # the whole dev file
    for stage in ("hashing", "validation"):
        metrics = json.loads((out / f"{stage}_dev_metrics.json").read_text())
        assert metrics["f1-measure-overall"] == row[stage]["scores"]["dev"]
        # the archive scored on the whole dev file as its training validated its best epoch (same batches)
        trained = json.loads((out / stage / "metrics.json").read_text())
        assert row[stage]["scores"]["dev"] == pytest.approx(trained["best_validation_f1-measure-overall"], abs=1e-12)
    assert row["num_bits"] == 24 and row["beta"] == 0.005
    validation = [command for command in row["commands"] if "ner_code.jsonnet" in command]
    assert validation and not any("K=" in command for command in validation)  # K: the codes file's num_bits
    trained = json.loads((out / "hashing" / "metrics.json").read_text())
    assert row["hashing"]["best_epoch"] == trained["best_epoch"] == 0 and row["hashing"]["epochs_trained"] == 1
    assert 0 < row["validation"]["parameters"] < row["hashing"]["parameters"]
    printed = capsys.readouterr().out
    assert "| ner | 24 | 0.005 | validation |" in printed
    assert table([row]).count("\n") == 3
    # the probe of the codes it wrote: `allennlp bits probe` on codes/train.jsonl and codes/dev.jsonl
    diagnostics = row["diagnostics"]
    assert diagnostics == json.loads((out / "diagnostics.json").read_text())
    assert diagnostics["counts"]["train_words"] == sum(len(json.loads(line)["words"]) for line in train_codes)
    assert diagnostics["counts"]["dev_words"] == sum(len(json.loads(line)["words"]) for line in dev_codes)
    assert set(diagnostics["accuracy"]["knn"]) == {"1", "10", "100"}
    # what `allennlp bits probe` wrote is the probe of these very files (seeded, one thread: deterministic)
    probe = probe_codes(read_codes_corpus(str(out / "codes" / "train.jsonl")),
                        read_codes_corpus(str(out / "codes" / "dev.jsonl")))
    assert diagnostics["accuracy"] == json.loads(json.dumps(probe["accuracy"]))
    assert any(command.startswith("allennlp bits probe --train") for command in row["commands"])
    assert f"code majority {100 * diagnostics['accuracy']['code_majority']:.2f}" in printed
    # run again with --no-probe: every finished step kept, no diagnostics, no summary line
    again = main(["ner", "--out", str(out), "--set", "EPOCHS=1", "MAX_INSTANCES=30", "--code-set", "EPOCHS=2",
                  "--no-probe", "--in-process"])
    assert again["diagnostics"] is None and again["validation"]["scores"] == row["validation"]["scores"]
    assert "code majority" not in capsys.readouterr().out


def test_parameter_count_of_an_archive_without_it_in_metrics(ner_hash_archive, tmp_path):
    # Archives trained before the `parameter_count` callback: counted from the archive, in a fresh process.
    run = Path(ner_hash_archive).parent
    metrics = json.loads((run / "metrics.json").read_text())
    old = tmp_path / "old_run"
    old.mkdir()
    shutil.copy(ner_hash_archive, old / "model.tar.gz")
    (old / "metrics.json").write_text(json.dumps({k: v for k, v in metrics.items() if "parameters" not in k}))
    # a `--hashing-archive` of another name, in a folder without metrics.json (`training_curve.py --weights last`)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(ner_hash_archive, elsewhere / "last_epoch.tar.gz")
    code = ("import pathlib; from bitcode_allennlp.code_stage.experiment import parameter_count; "
            f"print(parameter_count(pathlib.Path({str(old)!r}))); "
            f"print(parameter_count(pathlib.Path({str(elsewhere)!r}), pathlib.Path({str(elsewhere)!r}) / "
            "'last_epoch.tar.gz'))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert [int(line) for line in result.stdout.strip().splitlines()[-2:]] == [metrics["parameters"]] * 2


def test_in_process_step_reports_failure_and_restores_the_process(tmp_path):
    import logging
    import os

    from bitcode_allennlp.code_stage.experiment import run_in_process

    root = logging.getLogger()
    handlers, environ, argv = root.handlers[:], dict(os.environ), sys.argv[:]
    log_path = tmp_path / "step.log"
    with open(log_path, "w") as log:
        code = run_in_process(["evaluate", str(tmp_path / "missing.tar.gz"), str(tmp_path / "dev")],
                              {**environ, "K": "8"}, log)
    assert code != 0
    assert "missing.tar.gz" in log_path.read_text()  # the error is in the step's log
    assert root.handlers == handlers and dict(os.environ) == environ and sys.argv == argv


def test_an_interrupted_training_is_resumed_with_recover(tmp_path):
    from types import SimpleNamespace

    from bitcode_allennlp.code_stage.experiment import Experiment

    run_dir = tmp_path / "hashing"
    owner = SimpleNamespace(force=False)
    assert Experiment.fresh_or_resume(owner, run_dir) == "-f"  # nothing there: a fresh run
    run_dir.mkdir()
    (run_dir / "config.json").write_text("{}")
    assert Experiment.fresh_or_resume(owner, run_dir) == "-f"  # a config but no checkpoint
    (run_dir / "training_state_e1_b0.th").write_bytes(b"")
    assert Experiment.fresh_or_resume(owner, run_dir) == "--recover"  # interrupted after a checkpoint
    assert Experiment.fresh_or_resume(SimpleNamespace(force=True), run_dir) == "-f"  # --force starts again
    # AllenNLP archives the best epoch so far when a signal stops the training: still unfinished, still resumed
    (run_dir / "model.tar.gz").write_bytes(b"")
    assert Experiment.fresh_or_resume(owner, run_dir) == "--recover"
    (run_dir / "metrics.json").write_text("{}")  # written only when the training ends
    assert Experiment.fresh_or_resume(owner, run_dir) == "-f"


def test_a_training_that_an_interruption_archived_is_not_kept_as_finished(tmp_path, monkeypatch):
    from bitcode_allennlp.code_stage import experiment as module
    from bitcode_allennlp.code_stage.experiment import Experiment, ExperimentSettings

    calls = []
    monkeypatch.setattr(module, "run_in_process", lambda args, env, log: calls.append(args) or 0)
    monkeypatch.setattr(module, "train_in_process", lambda args, env, log: calls.append(args) or 0)
    settings = ExperimentSettings(task="pos", out=tmp_path, train=tmp_path / "t", dev=tmp_path / "d", in_process=True)
    run_dir = tmp_path / "hashing"
    run_dir.mkdir()
    (run_dir / "config.json").write_text("{}")
    (run_dir / "training_state_e3_b0.th").write_bytes(b"")
    (run_dir / "model.tar.gz").write_bytes(b"")  # what a SIGTERM after epoch 3 of 9 leaves
    Experiment(settings).hashing_stage()
    assert calls and calls[-1][0] == "train" and calls[-1][-1] == "--recover"
    (run_dir / "metrics.json").write_text("{}")
    calls.clear()
    Experiment(settings).hashing_stage()
    assert calls == []  # finished: kept


FAKE_ALLENNLP = """import pathlib, sys, time
record = pathlib.Path({record!r})
record.write_text(" ".join(sys.argv[1:]))
try:
    time.sleep(120)
except KeyboardInterrupt:  # the deadline's Ctrl-C: a training would checkpoint here
    record.write_text(record.read_text() + "\\nSIGINT")
    sys.exit(130)
"""


def fake_python(tmp_path, monkeypatch):
    """`sys.executable` replaced by a script that records its arguments and sleeps until SIGINT (a long step)."""
    record = tmp_path / "step.txt"
    script = tmp_path / "python"
    script.write_text(f"#!{sys.executable}\n" + FAKE_ALLENNLP.format(record=str(record)))
    script.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(script))
    return record


def test_the_deadline_stops_the_running_step_with_ctrl_c_and_exits_75(tmp_path, monkeypatch, capsys):
    import time

    from bitcode_allennlp.code_stage import experiment
    from bitcode_allennlp.code_stage.experiment import DEADLINE_STATUS

    monkeypatch.setattr(experiment, "TICK_S", 0.5)  # a progress line every 0.5 s while the step runs
    record = fake_python(tmp_path, monkeypatch)
    out = tmp_path / "exp"
    start = time.time()
    with pytest.raises(SystemExit) as stopped:
        main(["ner", "--out", str(out), "--set", "EPOCHS=27", "--deadline", "2"])
    assert stopped.value.code == DEADLINE_STATUS == 75
    assert time.time() - start < 60  # not the step's 120 s: stopped at the deadline
    arguments, signal_line = record.read_text().splitlines()
    assert arguments.startswith("-m allennlp train ") and signal_line == "SIGINT"
    printed = capsys.readouterr()
    assert "  [hashing_train] epoch 1/27: starting (" in printed.out  # the step's log has no epoch line yet
    assert printed.err.strip() == (f"[hashing_train] stopped at the deadline (--deadline): {out} keeps the "
                                               "finished steps and what the stopped step saved (a training's "
                                               "checkpoints); run the same command again to go on")


def test_a_step_is_not_started_after_the_deadline(tmp_path, monkeypatch):
    from bitcode_allennlp.code_stage.experiment import DeadlineReached, Experiment, ExperimentSettings

    record = fake_python(tmp_path, monkeypatch)
    settings = ExperimentSettings(task="ner", out=tmp_path, train=tmp_path / "t", dev=tmp_path / "d", deadline=60)
    experiment = Experiment(settings)
    experiment.stop_at -= 61  # the deadline has passed
    with pytest.raises(DeadlineReached, match=r"^\[hashing_train\] not started at the deadline"):
        experiment.hashing_stage()
    assert not record.exists()
    with pytest.raises(ValueError, match="in_process"):
        Experiment(ExperimentSettings(task="ner", out=tmp_path, train=tmp_path, dev=tmp_path, deadline=60,
                                      in_process=True))
    for bad in (["--deadline", "0"], ["--deadline", "60", "--in-process"]):
        with pytest.raises(SystemExit) as refused:
            main(["ner", "--out", str(tmp_path / "x"), *bad])
        assert refused.value.code == 2

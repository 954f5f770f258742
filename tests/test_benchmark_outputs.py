"""Benchmarks write under `runs/benchmarks/` and change the committed `benchmarks/results/` only when asked
(`--update-results`, `benchmarks/common.py:parse_args`)."""
import argparse
import json
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import common  # noqa: E402


def parser():
    made = argparse.ArgumentParser()
    made.add_argument("--out", type=Path, default=common.RESULTS / "thing.json")
    made.add_argument("--table", default=str(common.RESULTS / "sub" / "thing.md"))
    return made


def test_results_go_under_runs_by_default(monkeypatch):
    monkeypatch.setattr(common, "RESULTS", common.RESULTS)
    args = common.parse_args(parser(), [])
    assert args.out == ROOT / "runs" / "benchmarks" / "thing.json"
    assert args.table == str(ROOT / "runs" / "benchmarks" / "sub" / "thing.md")
    assert common.RESULTS == ROOT / "runs" / "benchmarks"


def test_update_results_writes_the_committed_folder(monkeypatch):
    monkeypatch.setattr(common, "RESULTS", common.RESULTS)
    args = common.parse_args(parser(), ["--update-results"])
    assert args.out == ROOT / "benchmarks" / "results" / "thing.json"
    assert args.table == str(ROOT / "benchmarks" / "results" / "sub" / "thing.md")
    assert common.RESULTS == common.COMMITTED == ROOT / "benchmarks" / "results"


def test_an_explicit_out_is_kept(monkeypatch, tmp_path):
    monkeypatch.setattr(common, "RESULTS", common.RESULTS)
    args = common.parse_args(parser(), ["--update-results", "--out", str(tmp_path / "mine.json")])
    assert args.out == tmp_path / "mine.json"


def test_every_script_parses_through_common():
    scripts = [path for path in sorted((ROOT / "benchmarks").glob("*.py")) if path.name != "common.py"]
    plain = [path.name for path in scripts if "parser.parse_args(" in path.read_text()]
    assert scripts and not plain, plain


def test_dev_data_reads_the_serialization_folders_config_not_the_archives_file_name(tmp_path):
    dev = tmp_path / "data" / "development"
    dev.parent.mkdir()
    dev.write_text("")
    run = tmp_path / "run"
    run.mkdir()
    archive = str(run / "model.tar.gz")  # its own config.json would say only "development"
    assert common.dev_data(archive, "given.conll") == "given.conll"
    with pytest.raises(SystemExit, match="--data"):
        common.dev_data(archive, None)  # no config.json beside it
    (run / "config.json").write_text(json.dumps({"validation_data_path": str(dev)}))
    assert common.dev_data(archive, None) == str(dev)
    dev.unlink()
    with pytest.raises(SystemExit, match="model.tar.gz: give the corpus with --data"):
        common.dev_data(archive, None)  # named, but not on this machine


def test_training_curve_keeps_the_rows_it_did_not_rerun():
    import training_curve

    def cell(task, epochs, gap, beta0=False):
        return {"task": task, "epochs": epochs, "beta0": beta0, "gap": gap}

    previous = {"set": [], "rows": [cell("ner", 3, -9.7), cell("pos", 3, -3.9), cell("pos", 9, -3.5)]}
    rows = training_curve.merged(previous, [cell("ner", 27, -12.0), cell("pos", 9, -3.4)], [])
    assert [(r["task"], r["epochs"], r["gap"]) for r in rows] == [
        ("ner", 3, -9.7), ("ner", 27, -12.0), ("pos", 3, -3.9), ("pos", 9, -3.4)]
    # another --set is another file's rows: none kept
    assert training_curve.merged({"set": ["QK_ONLY=true"], "rows": previous["rows"]}, [cell("ner", 27, 0.0)], []) \
        == [cell("ner", 27, 0.0)]


def test_training_curve_does_not_retrain_a_measured_cell_of_a_fresh_checkout(tmp_path):
    import training_curve

    row = {"task": "ner", "epochs": 27, "beta0": False, "gap": -15.0}
    previous = {"set": [], "rows": [row]}
    args = argparse.Namespace(work=str(tmp_path), set=[], weights="best", rerun=False)
    assert training_curve.measured(args, previous, "ner", 9, False) == row
    assert training_curve.measured(args, previous, "ner", 9, True) is None  # its beta = 0 cell: not measured
    assert training_curve.measured(args, {"set": ["SEED=1"], "rows": [row]}, "ner", 9, False) is None
    assert training_curve.measured(argparse.Namespace(**{**vars(args), "rerun": True}), previous, "ner", 9,
                                   False) is None
    finished = tmp_path / "ner_x9"  # its run is here: read from the run, not the file
    finished.mkdir()
    (finished / "experiment.json").write_text("{}")
    assert training_curve.measured(args, previous, "ner", 9, False) is None


def test_training_curve_reads_the_selected_epoch_of_a_cell_from_before_it_was_recorded(tmp_path):
    import training_curve

    cell = tmp_path / "ner_x9"
    (cell / "hashing").mkdir(parents=True)
    scores = {"scores": {"dev": 0.78}, "parameters": 10}
    (cell / "experiment.json").write_text(json.dumps({"hashing": scores, "validation": {"scores": {"dev": 0.7}}}))
    (cell / "hashing" / "metrics.json").write_text(json.dumps({"best_epoch": 2, "epoch": 26}))
    experiment = training_curve.finished(cell)
    assert experiment["hashing"]["best_epoch"] == 2 and experiment["hashing"]["epochs_trained"] == 27
    row = training_curve.row("ner", 9, False, experiment)
    assert row["best_epoch"] == 2 and row["gap"] == -8.0 and row["epochs"] == 27
    # recorded by experiment.py: kept as it is
    (cell / "experiment.json").write_text(json.dumps({"hashing": {**scores, "best_epoch": 5, "epochs_trained": 27},
                                                      "validation": {"scores": {"dev": 0.7}}}))
    assert training_curve.finished(cell)["hashing"]["best_epoch"] == 5


def test_training_curve_archives_the_last_epoch_of_a_finished_hashing_stage(tmp_path):
    import tarfile

    import pytest
    import training_curve

    hashing = tmp_path / "ner_x9" / "hashing"
    (hashing / "vocabulary").mkdir(parents=True)
    (hashing / "vocabulary" / "labels.txt").write_text("O\nB-PER\n")
    (hashing / "config.json").write_text(json.dumps({"model": {"type": "ner_hash"}}))
    with pytest.raises(SystemExit, match="has not finished"):
        training_curve.last_epoch_archive(hashing, tmp_path / "ner_x9_last")
    (hashing / "metrics.json").write_text(json.dumps({"best_epoch": 2, "epoch": 10}))
    for epoch in (9, 11, 10):  # newest by number, not by name: e11 after e9
        (hashing / f"model_state_e{epoch}_b0.th").write_bytes(f"weights after {epoch} epochs".encode())
    out = tmp_path / "ner_x9_last"
    archive = training_curve.last_epoch_archive(hashing, out)
    with tarfile.open(archive) as tar:
        assert tar.extractfile("weights.th").read() == b"weights after 11 epochs"
        assert json.load(tar.extractfile("config.json")) == {"model": {"type": "ner_hash"}}
        assert "vocabulary/labels.txt" in tar.getnames()
    assert json.loads((out / "last_epoch.json").read_text())["epoch"] == 10  # 0-based, as best_epoch
    made = archive.stat().st_mtime_ns
    assert training_curve.last_epoch_archive(hashing, out) == archive and archive.stat().st_mtime_ns == made  # kept
    (out / "experiment.json").write_text(json.dumps({"hashing": {"scores": {"dev": 0.7}, "best_epoch": None},
                                                     "validation": {"scores": {"dev": 0.6}}}))
    assert training_curve.finished(out)["hashing"]["best_epoch"] == 10
    assert training_curve.cell_name("ner", 9, False, ["SEED=1"], last=True) == "ner_x9_SEED-1_last"


def test_training_curve_runs_only_the_baselines_and_passes_device_and_deadline_on(tmp_path, monkeypatch):
    import subprocess

    import pytest
    import training_curve

    ran = []
    monkeypatch.setattr(training_curve, "run_cell", lambda args, task, multiple, beta0: ran.append(
        (task, multiple, beta0)))
    monkeypatch.setattr(sys, "argv", ["training_curve.py", "--tasks", "ner,pos", "--multiples", "3,9", "--beta0", "9",
                                      "--beta0-only", "--work", str(tmp_path), "--out", str(tmp_path / "c.json")])
    training_curve.main()
    assert ran == [("ner", 9, True), ("pos", 9, True)]
    # a cell's experiment: the GPU for both stages and every step, not in the cell's name; the deadline passed on
    monkeypatch.undo()
    commands = []
    from bitcode_allennlp.code_stage.experiment import DEADLINE_STATUS

    # the cell runs through `common.run_cell`, shared with bit_budget.py
    monkeypatch.setattr(training_curve.common.subprocess, "run", lambda command, cwd: commands.append(command) or
                        subprocess.CompletedProcess(command, DEADLINE_STATUS))
    args = argparse.Namespace(work=str(tmp_path), set=["VIEWS=batched"], weights="best", rerun_1x=False,
                              plot_only=False, cuda_device=0, deadline=500.0)
    with pytest.raises(SystemExit, match="ner_x9_beta0_VIEWS-batched: stopped at --deadline; run the same command"):
        training_curve.run_cell(args, "ner", 9, True)
    command = " ".join(commands[0])
    assert "--out " + str(tmp_path / "ner_x9_beta0_VIEWS-batched") + " " in command
    hashing, code = command.split("--set ")[1].split(" --code-set ")
    assert hashing.split() == ["HEAD_LR=1e-3", "SEED=0", "EPOCHS=27", "BETA=0", "VIEWS=batched", "CUDA_DEVICE=0"]
    assert code.split()[:4] == ["EPOCHS=20", "CODE_DIM=256", "CODE_BIT_FLIP=0.2", "CUDA_DEVICE=0"]
    assert command.endswith("--cuda-device 0 --deadline 500.0")


def test_training_curve_plot_names_the_settings_it_ran_with(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    import training_curve

    titles = []
    monkeypatch.setattr(Figure, "savefig", lambda figure, *_, **__: titles.extend(a.get_title() for a in figure.axes))
    rows = [{"task": "pos", "epochs": epochs, "beta0": False, "hashing": 96.0, "validation": 95.0, "bit_mlp": 94.0}
            for epochs in (3, 9)]
    training_curve.plot(rows, str(tmp_path / "plain.png"))
    training_curve.plot(rows, str(tmp_path / "qk.png"), settings=["QK_ONLY=true"])
    assert titles == ["UD EWT POS (XPOS), the paper's method alone", "UD EWT POS (XPOS), with QK_ONLY=true"]


def test_bit_budget_rows_and_the_smallest_enough_k():
    """A cell's row (dev scores ×100, the gap from unrounded scores, distinct train codes) and the smallest K whose
    codes-only score is within 1 point of K = 24's; none without a K = 24 row."""
    import bit_budget

    def cell(hashing, validation, codes):
        return {"hashing": {"scores": {"dev": hashing}}, "validation": {"scores": {"dev": validation}},
                "diagnostics": {"counts": {"train_codes": codes}, "accuracy": {"mlp_word": 0.9}}}

    rows = [bit_budget.row("ner", 8, cell(0.8086444, 0.8200911, 129)), bit_budget.row("ner", 12, cell(0.77, 0.75, 700)),
            bit_budget.row("ner", 24, cell(0.77, 0.76, 3000)), bit_budget.row("pos", 8, cell(0.9, 0.8, 10))]
    assert rows[0]["gap"] == 1.14 and rows[0]["train_codes"] == 129 and rows[0]["bit_mlp"] == 90.0
    assert bit_budget.smallest_enough(rows, "ner") == 8
    rows[0]["validation"] = 74.99  # 1.01 under K = 24's 76.00
    assert bit_budget.smallest_enough(rows, "ner") == 12
    assert bit_budget.smallest_enough(rows, "pos") is None


def test_bit_budget_replaces_its_table_in_a_document_and_nothing_else():
    import bit_budget

    text = "# Bits\n\n| task | K |\n|---|---:|\n| NER | 8 |\n\nAfter.\n| other | table |\n"
    new = "| task | K |\n|---|---:|\n| NER | 8 |\n| NER | 12 |\n"
    assert bit_budget.replace_table(text, new, "R.md") == (
        "# Bits\n\n| task | K |\n|---|---:|\n| NER | 8 |\n| NER | 12 |\n\nAfter.\n| other | table |\n")
    with pytest.raises(SystemExit, match="R.md: 0 tables start with the header '| task | bits |'"):
        bit_budget.replace_table(text, "| task | bits |\n|---|---|\n", "R.md")
    with pytest.raises(SystemExit, match="R.md: 2 tables"):
        bit_budget.replace_table(text + text, new, "R.md")


def test_finish_cell_keeps_the_gpu_steps_from_their_files_and_refuses_a_hostile_tar(tmp_path):
    """benchmarks/gpu/finish_cell.py: a GPU step's missing output is an error naming it (the step is not run here);
    a tar member that would land outside the cell's folder is refused."""
    import importlib.util
    import io
    import tarfile

    spec = importlib.util.spec_from_file_location("finish_cell", ROOT / "benchmarks" / "gpu" / "finish_cell.py")
    finish_cell = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(finish_cell)
    hostile = tmp_path / "hostile.tar.xz"
    with tarfile.open(hostile, "w:xz") as tar:
        member = tarfile.TarInfo("../escaped.txt")
        member.size = 3
        tar.addfile(member, io.BytesIO(b"bad"))
    with pytest.raises(tarfile.FilterError):
        finish_cell.unpack(hostile, tmp_path / "cell")
    assert not (tmp_path / "escaped.txt").exists()
    settings = finish_cell.ExperimentSettings("parse", tmp_path / "cell", tmp_path / "t", tmp_path / "d")
    experiment = finish_cell.FinishedElsewhere(settings)
    with pytest.raises(SystemExit, match="codes/train.jsonl: missing; step hash_corpus_train ran on the GPU"):
        experiment.allennlp("hash_corpus_train", ["hash-corpus"], {})
    (tmp_path / "cell" / "codes").mkdir()
    (tmp_path / "cell" / "codes" / "train.jsonl").write_text("{}\n")
    experiment.allennlp("hash_corpus_train", ["hash-corpus", "A", "B"], {})  # kept: not run
    assert experiment.commands[-1] == "allennlp hash-corpus A B" and "hash_corpus_train" not in experiment.durations

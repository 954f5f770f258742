"""An interrupted run resumed with `allennlp train --recover` ends exactly where the uninterrupted run ends.

A training process (ner_hash on the fixtures, 2 epochs of 7 batches, `CHECKPOINT_EVERY=2` batches) is killed with
SIGKILL in the middle of epoch 0, after the optimizer step of batch 5: its last checkpoint is batch 4, and the
in-memory progress past it is lost. `--recover` must then give the same weights, optimizer state, checkpoints and
metrics as a run that was never interrupted (`exact_recover`, in `bitcode_allennlp/host/recover.py`, saves and
restores the random generator states; without it dropout drifts after the resume). Equality is exact: both runs are
single-threaded CPU runs of the same code, whose results the seeds fix bit for bit (see test_determinism.py).
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch
from allennlp.common import Params
from allennlp.training.callbacks.callback import TrainerCallback

from tests.conftest import CONFIGS, ROOT

ENV = {"EPOCHS": "2", "MAX_INSTANCES": "24", "MAX_TOKENS": "64", "CHECKPOINT_EVERY": "2", "OMP_NUM_THREADS": "1",
       "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
# Timings, and the throughput callback's totals (the training steps of the process that wrote the file).
VOLATILE = ("duration", "memory", "epoch_start", "time", "training_seconds", "words_per_second", "peak_rss",
            "training_words", "training_sentences")


@TrainerCallback.register("test_trained_batches")
class TrainedBatches(TrainerCallback):
    """
    Test only. Appends "<pid> <epoch> <batch>" to `trained_batches.txt` in the serialization directory after
    every trained batch; with the environment variable `STALL_AT="<epoch>:<batch>"` it then writes `stalled`
    there and waits to be killed.
    """

    def on_batch(self, trainer, batch_inputs, batch_outputs, batch_metrics, epoch, batch_number, is_training,
                 is_primary=True, batch_grad_norm=None, **kwargs) -> None:
        if not is_training:
            return
        with open(Path(self.serialization_dir) / "trained_batches.txt", "a") as f:
            f.write(f"{os.getpid()} {epoch} {batch_number}\n")
        if os.environ.get("STALL_AT") == f"{epoch}:{batch_number}":
            (Path(self.serialization_dir) / "stalled").touch()
            time.sleep(600)


def train_command(serialization_dir, monkeypatch):
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    callbacks = Params.from_file(str(CONFIGS / "ner_hash.jsonnet")).as_dict()["trainer"]["callbacks"]
    overrides = {"trainer.checkpointer.keep_most_recent_by_count": None,  # keep all, to compare them
                 "trainer.callbacks": callbacks + [{"type": "test_trained_batches"}]}
    return ["train", CONFIGS / "ner_hash.jsonnet", "-s", serialization_dir, "-o", json.dumps(overrides),
            "--include-package", "tests.reliability.test_recover"]


def default_sigint() -> None:
    """In the child before exec: Ctrl-C's default action. A process started in the background by a shell without job
    control (CI scripts) inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(args, log, **env):
    """Starts `allennlp <args>` (output to the file `log`), SIGINT at its default, and returns the process."""
    with open(log, "w") as out:
        return subprocess.Popen([sys.executable, "-m", "allennlp"] + [str(a) for a in args], cwd=log.parent,
                                env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **env},
                                stdout=out, stderr=subprocess.STDOUT, preexec_fn=default_sigint)


def trained_batches(run):
    """(epoch, batch) trained by each process, in order of the processes."""
    by_process = {}
    for line in (run / "trained_batches.txt").read_text().splitlines():
        pid, epoch, batch = map(int, line.split())
        by_process.setdefault(pid, []).append((epoch, batch))
    return list(by_process.values())


def checkpoints(run):
    return sorted(p.name for p in run.glob("*_state_e*_b*.th"))


def same(a, b) -> bool:
    """Exact equality of nested dicts, lists and tuples of tensors and numbers (state dicts)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    return a == b


def stable(metrics):
    return {k: v for k, v in metrics.items() if not any(word in k for word in VOLATILE)}


def test_recover_after_a_kill_mid_epoch_reaches_the_uninterrupted_result(tmp_path, monkeypatch):
    command = train_command(tmp_path / "killed", monkeypatch)
    reference_command = command[:3] + [tmp_path / "reference"] + command[4:]
    reference = start(reference_command, tmp_path / "reference.log")  # beside the killed run: 2 cores
    killed = start(command, tmp_path / "killed.log", STALL_AT="0:5")
    deadline = time.time() + 400
    while not (tmp_path / "killed" / "stalled").exists():
        assert killed.poll() is None, (tmp_path / "killed.log").read_text()[-4000:]
        assert time.time() < deadline, "training did not reach batch 5"
        time.sleep(0.2)
    killed.kill()  # SIGKILL: no clean-up, no final checkpoint, no archive
    assert killed.wait() == -9
    run = tmp_path / "killed"
    assert checkpoints(run) == ["model_state_e0_b2.th", "model_state_e0_b4.th",
                                "training_state_e0_b2.th", "training_state_e0_b4.th"]
    assert not (run / "model.tar.gz").exists() and not (run / "metrics.json").exists()

    resumed = start(command + ["--recover"], tmp_path / "resumed.log")
    assert resumed.wait(timeout=400) == 0, (tmp_path / "resumed.log").read_text()[-4000:]
    assert reference.wait(timeout=400) == 0, (tmp_path / "reference.log").read_text()[-4000:]

    reference_run = tmp_path / "reference"
    [uninterrupted] = trained_batches(reference_run)
    before_kill, after_resume = trained_batches(run)
    assert before_kill == uninterrupted[:5] and after_resume == uninterrupted[4:]  # resumed after batch 4
    assert (0, 6) in uninterrupted and (1, 1) in uninterrupted  # the kill was mid-epoch, a full epoch followed
    assert checkpoints(run) == checkpoints(reference_run)  # same cadence after the resume
    for name in ("metrics.json", "metrics_epoch_1.json"):
        assert stable(json.loads((run / name).read_text())) == stable(json.loads((reference_run / name).read_text()))
    # The interrupted epoch: validation exact; its training_* metrics count only batches 5-7 (AllenNLP).
    epoch_0, reference_epoch_0 = (json.loads((r / "metrics_epoch_0.json").read_text()) for r in (run, reference_run))
    validation = [k for k in reference_epoch_0 if "validation_" in k]
    assert len(validation) > 10
    assert {k: epoch_0[k] for k in validation} == {k: reference_epoch_0[k] for k in validation}
    for name in ("best.th", "model_state_e2_b0.th"):
        assert same(torch.load(run / name), torch.load(reference_run / name)), name

    # A finished run recovered trains nothing and keeps its metrics (AllenNLP's wrote only the best_* keys).
    finished = json.loads((reference_run / "metrics.json").read_text())
    again = start(reference_command + ["--recover"], tmp_path / "again.log")
    assert again.wait(timeout=400) == 0, (tmp_path / "again.log").read_text()[-4000:]
    assert trained_batches(reference_run) == [uninterrupted]  # no batch trained by the second process
    recovered = json.loads((reference_run / "metrics.json").read_text())
    assert recovered.keys() == finished.keys() and stable(recovered) == stable(finished)
    assert any(key.startswith("training_") for key in recovered) and "validation_loss" in recovered
    final_states = [torch.load(r / "training_state_e2_b0.th") for r in (run, reference_run)]
    for key in ("optimizer", "learning_rate_scheduler", "metric_tracker", "rng_state"):
        assert same(final_states[0][key], final_states[1][key]), key

"""Ctrl-C: one line on stderr naming what the output holds, exit status 130, no traceback (`host.console`)."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bitcode_allennlp.host.console import INTERRUPTED_STATUS, report_interrupt
from tests.conftest import ROOT
from tests.reliability.test_recover import default_sigint, start, train_command


@pytest.mark.parametrize("argv, line", [
    (["train", "c.jsonnet", "-s", "runs/x"],
     "allennlp train: interrupted (Ctrl-C); runs/x holds the checkpoints so far: resume with --recover"),
    (["hash-corpus", "m.tar.gz", "data", "--output=codes.jsonl"],
     "allennlp hash-corpus: interrupted (Ctrl-C); codes.jsonl holds the sentences coded so far: run the same "
     "command to resume"),
    (["predict", "m.tar.gz", "in.jsonl", "--output-file", "out.jsonl"],
     "allennlp predict: interrupted (Ctrl-C); no partial output: outputs are written whole or not at all (files "
     "named by an option are unchanged)"),
    (["bits", "index", "codes.jsonl", "-o", "idx"],
     "allennlp bits index: interrupted (Ctrl-C); no partial output: outputs are written whole or not at all (files "
     "named by an option are unchanged)"),
])
def test_the_interrupt_line_names_what_the_output_holds(argv, line, capsys):
    report_interrupt(None, argv)
    assert capsys.readouterr().err == line + "\n"


def test_ctrl_c_during_training_prints_one_line_and_exits_130(tmp_path, monkeypatch):
    command = train_command(tmp_path / "run", monkeypatch)
    process = start(command, tmp_path / "train.log", STALL_AT="0:2")
    deadline = time.time() + 400
    while not (tmp_path / "run" / "stalled").exists():
        assert process.poll() is None, (tmp_path / "train.log").read_text()[-4000:]
        assert time.time() < deadline, "training did not reach batch 2"
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=120) == INTERRUPTED_STATUS
    log = (tmp_path / "train.log").read_text()
    assert "Traceback" not in log and "KeyboardInterrupt" not in log, log[-4000:]
    assert log.splitlines()[-1] == (f"allennlp train: interrupted (Ctrl-C); {tmp_path / 'run'} holds the checkpoints "
                                    "so far: resume with --recover")


def reading_a_pipe(pid: int) -> bool:
    """Whether the process is blocked in read() on a pipe (Linux: /proc/PID/syscall is "0 <fd in hex> ...")."""
    fields = Path(f"/proc/{pid}/syscall").read_text().split()
    try:
        return fields[0] == "0" and os.readlink(f"/proc/{pid}/fd/{int(fields[1], 16)}").startswith("pipe:")
    except (IndexError, ValueError, OSError):
        return False


def test_ctrl_c_in_a_light_bits_command_prints_one_line(tmp_path):
    """`allennlp bits` without AllenNLP: the same line and status (here: Ctrl-C while it reads from a pipe)."""
    reader, writer = os.pipe()
    process = subprocess.Popen([sys.executable, "-m", "allennlp", "bits", "stats", "/dev/stdin"], stdin=reader,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"}, preexec_fn=default_sigint)
    os.close(reader)
    deadline = time.time() + 120
    while not reading_a_pipe(process.pid):  # started, waiting for its input
        assert process.poll() is None and time.time() < deadline
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    os.close(writer)
    assert process.returncode == INTERRUPTED_STATUS, err
    assert err.splitlines() == ["allennlp bits stats: interrupted (Ctrl-C); no partial output: outputs are written "
                                "whole or not at all (files named by an option are unchanged)"]

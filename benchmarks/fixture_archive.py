"""The benchmarks' default archive when none is given: `training_configs/ner_hash.jsonnet` trained one epoch on the
fixtures (tiny random transformer), for smoke runs only. Imported by the scripts beside it."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def train_fixture_archive(directory: str) -> str:
    """Train the fixture NER model under `directory`/run; return its model.tar.gz."""
    command = [sys.executable, "-m", "allennlp", "train", str(ROOT / "training_configs" / "ner_hash.jsonnet"),
               "-s", os.path.join(directory, "run")]
    subprocess.run(command, check=True, cwd=directory, env={**os.environ, "EPOCHS": "1"}, capture_output=True)
    return os.path.join(directory, "run", "model.tar.gz")

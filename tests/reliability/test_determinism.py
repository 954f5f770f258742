"""Training is deterministic under the config's fixed seeds on CPU: two runs give identical metrics and codes."""
import json

from tests.conftest import CONFIGS, run_cli

# Timings and memory differ between runs.
VOLATILE = ("duration", "memory", "epoch_start", "time", "training_seconds", "words_per_second", "peak_rss")


def train_and_predict(directory):
    run_cli(["train", CONFIGS / "ner_hash.jsonnet", "-s", directory / "run"], cwd=directory, env={"EPOCHS": "2"})
    metrics = json.loads((directory / "run" / "metrics.json").read_text())
    inputs = directory / "input.jsonl"
    inputs.write_text('{"sentence": "Frodo held the ring in London."}\n{"sentence": "RT @BBC : hello world"}\n')
    out = directory / "predictions.jsonl"
    run_cli(["predict", directory / "run" / "model.tar.gz", inputs, "--output-file", out, "--silent"],
            cwd=directory)
    stable = {k: v for k, v in metrics.items() if not any(word in k for word in VOLATILE)}
    return stable, [json.loads(line) for line in out.read_text().splitlines()]


def test_two_runs_with_the_same_seed_are_identical(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    metrics_a, predictions_a = train_and_predict(tmp_path / "a")
    metrics_b, predictions_b = train_and_predict(tmp_path / "b")
    assert metrics_a == metrics_b
    assert "validation_code_distinct" in metrics_a
    assert predictions_a == predictions_b
    assert all(len(p["codes"]) == len(p["words"]) for p in predictions_a)

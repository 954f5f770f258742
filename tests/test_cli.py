"""The `allennlp` command as a user runs it: train shipped configs (tagger, parser) on the fixtures, then evaluate
and predict on the archive. No --include-package and no .allennlp_plugins in the working directory: the start-up hook
(bitcode_allennlp.host.compat) must make our components known. Also 2-worker CPU distributed training."""
import json

import pytest

from tests.conftest import CONFIGS, FIXTURES, run_cli


@pytest.fixture(scope="module")
def ner_archive(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("cwd")  # not the repository: no .allennlp_plugins here
    run_cli(["train", CONFIGS / "ner_hash.jsonnet", "-s", workdir / "run"], cwd=workdir, env={"EPOCHS": "1"})
    archive = workdir / "run" / "model.tar.gz"
    assert archive.exists()
    return workdir, archive


def test_evaluate(ner_archive):
    workdir, archive = ner_archive
    out = workdir / "metrics.json"
    run_cli(["evaluate", archive, FIXTURES / "data/conll2012/development", "--output-file", out], cwd=workdir)
    metrics = json.loads(out.read_text())
    # the training's last validation was on this file with the same weights (one epoch) and batches
    trained = json.loads((workdir / "run" / "metrics.json").read_text())
    for key in ("accuracy", "f1-measure-overall", "code_distinct", "code_bit_entropy", "loss"):
        assert metrics[key] == pytest.approx(trained[f"validation_{key}"], abs=1e-12), key


def test_predict_with_default_predictor_in_batches(ner_archive):
    workdir, archive = ner_archive
    inputs = workdir / "input.jsonl"
    inputs.write_text('{"sentence": "Frodo held the ring in London."}\n'
                      '{"tokens": ["RT", "@BBC", ":", "hello"]}\n{"sentence": "Hi"}\n')
    out = workdir / "predictions.jsonl"
    run_cli(["predict", archive, inputs, "--output-file", out, "--batch-size", "2", "--silent"], cwd=workdir)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["words"] for r in rows] == [["Frodo", "held", "the", "ring", "in", "London", "."],
                                          ["RT", "@BBC", ":", "hello"], ["Hi"]]
    for row in rows:
        assert len(row["tags"]) == len(row["codes"]) == len(row["bits"]) == len(row["words"])
        for code, bits in zip(row["codes"], row["bits"]):
            assert len(code) == 6 and int(code, 16) == int("".join(map(str, bits)), 2)


def test_distributed_training_on_two_cpu_workers(tmp_path):
    run_cli(["train", CONFIGS / "ner_hash.jsonnet", "-s", tmp_path / "run"], cwd=tmp_path,
            env={"EPOCHS": "1", "WORKERS": "2"})
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert "validation_f1-measure-overall" in metrics and "validation_code_distinct" in metrics


def test_parser_train_evaluate_predict(tmp_path):
    run_cli(["train", CONFIGS / "parse_hash.jsonnet", "-s", tmp_path / "run"], cwd=tmp_path, env={"EPOCHS": "1"})
    archive = tmp_path / "run" / "model.tar.gz"
    out = tmp_path / "metrics.json"
    run_cli(["evaluate", archive, FIXTURES / "data/ptb/craft_dev.tree", "--output-file", out], cwd=tmp_path)
    trained = json.loads((tmp_path / "run" / "metrics.json").read_text())  # validated on craft_dev.tree
    metrics = json.loads(out.read_text())
    for key in ("evalb_f1", "evalb_recall", "loss"):  # one epoch: the F1 may be 0, the loss is not
        assert metrics[key] == pytest.approx(trained[f"validation_{key}"], abs=1e-12), key
    inputs = tmp_path / "input.jsonl"
    inputs.write_text('{"sentence": "The ring was held by Frodo."}\n'
                      '{"tokens": ["Bone", "growth"], "pos_tags": ["NN", "NN"]}\n')
    predictions = tmp_path / "predictions.jsonl"
    run_cli(["predict", archive, inputs, "--output-file", predictions, "--silent"], cwd=tmp_path)
    rows = [json.loads(line) for line in predictions.read_text().splitlines()]
    from nltk import Tree

    assert Tree.fromstring(rows[0]["tree"]).leaves() == ["The", "ring", "was", "held", "by", "Frodo", "."]
    assert Tree.fromstring(rows[1]["tree"]).pos() == [("Bone", "NN"), ("growth", "NN")]
    assert rows[1]["tree_json"]["label"] == "TOP" and len(rows[1]["codes"]) == 2

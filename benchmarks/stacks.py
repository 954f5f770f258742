"""The same quick start on two stacks (e.g. transformers 4 and 5): metrics, tags and codes compared.

    python benchmarks/stacks.py --python .venv/bin/python --python /tmp/venv-newest/bin/python

Each `--python` is the interpreter of an environment where `make install` was run (`STACK=pinned`, `STACK=newest`).
In each, in a fresh process and with the config's default seed: `allennlp train training_configs/ner_hash.jsonnet`
(the fixtures and the tiny random BERT: the README's quick start), then `allennlp predict` of the archive on
`SENTENCES`, then `allennlp evaluate` on the fixture dev corpus; and the archive trained in the first environment
predicted by the others. The table says, per pair, whether `metrics.json` (without its times and memory), the
predictions (words, tags, entities, codes) and the evaluation metrics are identical. Results:
`runs/benchmarks/stacks.json`. Exit status 1 when any differ (CI runs it after the test suites: `.ci/run`).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List

import common

SENTENCES = ["Obama visits Berlin today", "Rain again in Leeds tonight", "Taylor Swift and Ed Sheeran play Wembley"]
VOLATILE = ("time", "duration", "seconds", "memory", "_mb", "peak_rss", "words_per_second", "epoch")
"""`metrics.json` keys holding any of these vary from run to run (memory, and which batch had the peak; `epoch`: the
last one, with early stopping)."""


def stable_metrics(metrics: Dict[str, Any]) -> Dict[str, Any]:
    return {key: value for key, value in metrics.items() if not any(part in key for part in VOLATILE)}


def allennlp(python: str, *args: Any, cwd: str) -> str:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    result = subprocess.run([python, "-m", "allennlp", *map(str, args)], cwd=cwd, env=env, capture_output=True,
                            text=True)
    if result.returncode != 0:
        raise SystemExit(f"{python} -m allennlp {' '.join(map(str, args))} failed:\n{result.stderr[-3000:]}")
    return result.stdout


def stack_of(python: str) -> Dict[str, str]:
    code = ("import json, importlib.metadata as m, sys; print(json.dumps({'python': sys.version.split()[0], "
            "**{n: m.version(n) for n in ('torch', 'transformers', 'huggingface-hub', 'tokenizers')}}))")
    return json.loads(subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout)


def predictions(python: str, archive: str, inputs: Path, cwd: str) -> List[Dict[str, Any]]:
    lines = allennlp(python, "predict", archive, inputs, cwd=cwd).splitlines()  # one JSON line each
    return [{key: value for key, value in json.loads(line).items() if key != "bits"} for line in lines if line]


def label(run: Dict[str, Any]) -> str:
    return f"transformers {run['stack']['transformers']}, hub {run['stack']['huggingface-hub']}"


def run_stack(python: str, folder: Path, inputs: Path) -> Dict[str, Any]:
    run = folder / "run"
    folder.mkdir(parents=True)
    allennlp(python, "train", common.ROOT / "training_configs" / "ner_hash.jsonnet", "-s", run, cwd=str(folder))
    archive = str(run / "model.tar.gz")
    evaluation = allennlp(python, "evaluate", archive, common.ROOT / "fixtures/data/conll2012/development",
                          cwd=str(folder))
    return {"stack": stack_of(python), "archive": archive,
            "metrics": stable_metrics(json.loads((run / "metrics.json").read_text())),
            "predictions": predictions(python, archive, inputs, str(folder)),
            "evaluation": stable_metrics(json.loads(evaluation[evaluation.index("{"):]))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", action="append", required=True, help="an environment's interpreter (twice)")
    parser.add_argument("--out", default=str(common.RESULTS / "stacks.json"))
    args = common.parse_args(parser)
    if len(args.python) < 2:
        parser.error("give --python twice: the environments to compare")
    args.python = [os.path.abspath(python) for python in args.python]  # not resolved: a venv's python is a link
    with tempfile.TemporaryDirectory() as scratch:
        inputs = Path(scratch) / "input.jsonl"
        inputs.write_text("".join(json.dumps({"sentence": s}) + "\n" for s in SENTENCES))
        runs = [run_stack(python, Path(scratch) / f"stack{i}", inputs) for i, python in enumerate(args.python)]
        first = runs[0]
        rows, same = [], True
        for run, python in zip(runs[1:], args.python[1:]):
            crossed = predictions(python, first["archive"], inputs, scratch)  # stack 0's archive on this stack
            checks = {"metrics.json": run["metrics"] == first["metrics"],
                      "predictions": run["predictions"] == first["predictions"],
                      "evaluate": run["evaluation"] == first["evaluation"],
                      "archive of the first": crossed == first["predictions"]}
            same = same and all(checks.values())
            rows.append([label(first), label(run), *("same" if ok else "DIFFERENT" for ok in checks.values())])
        print(common.markdown_table(["first", "other", *checks], rows))
        for run in runs:
            run.pop("archive")
        common.write_json(args.out, {"command": common.command_line(), "machine": common.machine(),
                                     "identical": same, "runs": runs})
    print(f"results: {args.out}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

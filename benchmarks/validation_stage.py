"""Hashing stage vs validation stage on real open data with MiniLM, with Table 6's β and with β = 0 (issue:
validation stage; the README's Table-1-style comparison).

For each (task, β) it runs `bitcode_allennlp.code_stage.experiment` (hashing stage → hash-corpus → validation
stage → both scored on the whole dev file) and tabulates dev scores and parameter counts:
  NER  Broad Twitter Corpus, CoNLL-2012 layout, BIOES     β ∈ {0.005, 0}
  POS  UD English EWT, XPOS (PTB tags) from CoNLL-U       β ∈ {0.05, 0}

    python benchmarks/validation_stage.py --epochs 2 --max-instances 2000
    python benchmarks/validation_stage.py --hashing-archive ner:0.005=runs/real_data/ner_beta0.005/model.tar.gz ...
Budget knobs: --epochs / --max-instances / --head-lr (hashing stage; the validation stage re-annotates the entire
train file), --ner-code-epochs / --pos-code-epochs (validation stage).
A hashing archive given with --hashing-archive is reused (its own settings are what its config.json says).
"""
import argparse
import sys
from pathlib import Path

import common

ROOT = common.ROOT
SHARED = common.SHARED_DATA
sys.path.insert(0, str(ROOT))

from bitcode_allennlp.code_stage.experiment import main as experiment, table  # noqa: E402

TASKS = {
    "ner": dict(beta=0.005, train=SHARED / "ner/btc/conll2012/train", dev=SHARED / "ner/btc/conll2012/development",
                data="BTC (CoNLL-2012 files)", variables=[]),
    "pos": dict(beta=0.05, train=SHARED / "pos/ud_english_ewt/en_ewt-ud-train.conllu",
                dev=SHARED / "pos/ud_english_ewt/en_ewt-ud-dev.conllu", data="UD EWT (XPOS)",
                variables=["READER=conllu_pos"]),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["ner", "pos"], choices=sorted(TASKS))
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--max-instances", type=int, default=2000, help="training sentences of the hashing stage")
    parser.add_argument("--head-lr", type=float, default=1e-3)
    parser.add_argument("--ner-code-epochs", type=int, default=8, help="validation-stage epochs for NER")
    parser.add_argument("--pos-code-epochs", type=int, default=4, help="validation-stage epochs for POS")
    parser.add_argument("--hashing-archive", nargs="*", default=[], metavar="TASK:BETA=ARCHIVE")
    parser.add_argument("--runs", type=Path, default=ROOT / "runs" / "validation")
    parser.add_argument("--out", type=Path, default=common.RESULTS / "validation_stage.json")
    args = common.parse_args(parser)
    reuse = {}
    for item in args.hashing_archive:
        key, path = item.split("=", 1)
        task, beta = key.split(":")
        reuse[(task, float(beta))] = path
    rows = []
    for task in args.tasks:
        spec = TASKS[task]
        for beta in (spec["beta"], 0.0):
            code_epochs = getattr(args, f"{task}_code_epochs")
            argv = [task, "--out", str(args.runs / f"{task}_beta{beta}"), "--train", str(spec["train"]),
                    "--dev", str(spec["dev"]), "--plm", "minilm", "--code-set", f"EPOCHS={code_epochs}"]
            if (task, beta) in reuse:
                argv += ["--hashing-archive", reuse[(task, beta)]]
            else:
                argv += ["--set", f"BETA={beta}", f"EPOCHS={args.epochs}", f"MAX_INSTANCES={args.max_instances}",
                         f"HEAD_LR={args.head_lr}", "TOKEN_POLICY=repair", *spec["variables"]]
            row = experiment(argv)
            row["data"] = spec["data"]
            rows.append(row)
    print("\n" + table(rows))
    common.write_json(args.out, {"machine": common.machine(), "argv": sys.argv[1:], "rows": rows})


if __name__ == "__main__":
    main()

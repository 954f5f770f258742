"""The paper's method alone (no code head) as training grows: hashing, validation, their gap and the probes' bit MLP on
EWT POS and BTC NER at 1x, 3x and 9x the epochs of REPRODUCTION.md's rows, and the beta = 0 baseline at the longest.

    python benchmarks/training_curve.py                              # every cell, one at a time (hours on 2 CPU cores)
    python benchmarks/training_curve.py --tasks pos --multiples 3    # one cell
    python benchmarks/training_curve.py --plot-only                  # the table and the PNG from what has finished
    python benchmarks/training_curve.py --tasks ner --multiples 9 --beta0 "" --weights last   # the last epoch's codes

A cell is one `python -m bitcode_allennlp.code_stage.experiment` (hashing stage, re-annotation, validation stage, both
scored on dev, `allennlp bits probe`) in runs/training_curve/TASK_xM[_beta0]/, with REPRODUCTION.md's settings and
`EPOCHS` = M x 3 (the warm-up is a fraction of the steps, so it grows alike); the validation stage is the same at every
length. An interrupted cell resumes where it stopped when the script runs again (finished steps are kept, an
interrupted training goes on with `--recover`; `--deadline` stops a cell's experiment that many seconds after it
starts). The 1x cells are the committed runs `ewt_pos_beta005.json` and `btc_ner_beta005_e3.json` of
benchmarks/results/full_data/ (the same commands), unless `--rerun-1x`.

Writes runs/benchmarks/training_curve.json (`--update-results`: benchmarks/results/) after every cell, keeping the
rows of cells that this invocation did not run (same `--set`); a cell whose row is in that file and whose run is not
in runs/training_curve/ (a fresh checkout) keeps its row and is not trained again (`--rerun` to measure it anew).
With matplotlib it draws a PNG of the curves (`--png`, default docs/training_curve.png; runs/benchmarks/ with `--set`
or `--weights last`; with the `--weights last` rows of the same settings as single points). A row's `best_epoch` is the
hashing-stage epoch whose weights made the codes (AllenNLP keeps the best on dev; 0-based, the table counts from 1).
`--weights last` takes the weights of the last epoch instead (the newest `model_state_e*` checkpoint of a finished
cell's hashing stage, archived with its config and vocabulary): cell TASK_xM_last, its hashing score is that
epoch's, and its codes are re-annotated and validated as in the cell (`experiment --hashing-archive`).
"""
import argparse
import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import common
from bitcode_allennlp.code_stage.experiment import selected_epoch

TASKS: Dict[str, Dict[str, Any]] = {
    "pos": {"name": "UD EWT POS (XPOS)", "metric": "accuracy", "committed": "ewt_pos_beta005.json", "beta": "0.05",
            "set": ["READER=conllu_pos", "TOKEN_POLICY=repair", "HEAD_LR=1e-3"],
            "code_set": ["EPOCHS=20", "CODE_DIM=256"]},
    "ner": {"name": "BTC NER (span F1)", "metric": "f1-measure-overall", "committed": "btc_ner_beta005_e3.json",
            "beta": "0.005", "set": ["HEAD_LR=1e-3", "SEED=0"],
            "code_set": ["EPOCHS=20", "CODE_DIM=256", "CODE_BIT_FLIP=0.2"]},
}
"""The paper's method alone (REPRODUCTION.md's rows); the corpora are `common.TASK_DATA`'s."""
BASE_EPOCHS = 3
OUT = common.RESULTS / "training_curve.json"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="pos,ner")
    parser.add_argument("--multiples", default="1,3,9", help="epochs as multiples of 3")
    parser.add_argument("--beta0", default="9", help="multiples at which the beta = 0 baseline runs too ('' none)")
    parser.add_argument("--beta0-only", action="store_true", help="only the beta = 0 cells (at --beta0's multiples)")
    parser.add_argument("--set", nargs="*", default=[], metavar="VAR=VALUE",
                        help="more hashing-stage variables for every cell (e.g. VIEWS=batched), named in the cell")
    parser.add_argument("--rerun-1x", action="store_true", help="run the 1x cells instead of the committed runs")
    parser.add_argument("--rerun", action="store_true",
                        help="run a cell again although its row is in the results file (and its run is gone)")
    parser.add_argument("--plot-only", action="store_true", help="no training: the table and PNG from finished cells")
    parser.add_argument("--weights", choices=["best", "last"], default="best",
                        help="the hashing stage's epoch that makes the codes: best on dev (AllenNLP's archive) or last")
    common.add_cell_options(parser)
    parser.add_argument("--work", default=str(common.ROOT / "runs" / "training_curve"))
    parser.add_argument("--png", default=None, help="default: docs/training_curve.png, or runs/benchmarks/ with "
                        "--set or --weights last")
    parser.add_argument("--out", default=None, help="default: runs/benchmarks/training_curve.json, with --set's "
                        "variables in the name")
    return common.parse_args(parser)


def cell_name(task: str, multiple: int, beta0: bool, extra: Sequence[str] = (), last: bool = False) -> str:
    """TASK_xM, `_beta0` for the baseline, `--set`'s variables (`_VIEWS-hash_layer`), `_last` for the last epoch."""
    return (f"{task}_x{multiple}" + ("_beta0" if beta0 else "")
            + "".join(f"_{item.replace('=', '-')}" for item in extra) + ("_last" if last else ""))


def cell_dir(args: argparse.Namespace, task: str, multiple: int, beta0: bool) -> Path:
    """The cell's experiment folder under --work (named by its task, length, baseline, `--set` and `--weights`)."""
    return Path(args.work) / cell_name(task, multiple, beta0, args.set, args.weights == "last")


def finished(out: Path) -> Dict[str, Any]:
    """A finished cell's experiment.json, with the hashing stage's selected epoch from its metrics.json where
    experiment.json predates recording it."""
    experiment = json.loads((out / "experiment.json").read_text())
    if (out / "last_epoch.json").exists():  # a `--weights last` cell: the epoch of its checkpoint
        experiment["hashing"]["best_epoch"] = json.loads((out / "last_epoch.json").read_text())["epoch"]
    elif "best_epoch" not in experiment["hashing"]:
        experiment["hashing"].update(selected_epoch(out / "hashing"))
    return experiment


def last_epoch_archive(hashing: Path, out: Path) -> Path:
    """OUT/last_epoch.tar.gz: the newest `model_state_e{N}_b0.th` of the finished hashing stage in HASHING (the
    weights after N epochs) archived with its config and vocabulary; OUT/last_epoch.json names it."""
    from allennlp.models.archival import archive_model

    if not (hashing / "metrics.json").exists():
        raise SystemExit(f"{hashing}: the hashing stage has not finished (no metrics.json); run the cell first")
    def epochs(state: Path) -> int:  # model_state_e{N}_b0.th: the weights after N epochs
        return int(state.name[len("model_state_e"):].split("_")[0])

    states = sorted(hashing.glob("model_state_e*_b0.th"), key=epochs)
    if not states:
        raise SystemExit(f"{hashing}: no model_state_e*_b0.th checkpoint to take the last epoch from")
    out.mkdir(parents=True, exist_ok=True)
    archive, record = out / "last_epoch.tar.gz", out / "last_epoch.json"
    if archive.exists() and record.exists() and json.loads(record.read_text())["weights"] == str(states[-1]):
        return archive  # kept: a rebuilt archive is another file, which hash-corpus would not continue from
    archive = Path(archive_model(hashing, weights=states[-1].name, archive_path=archive))
    record.write_text(json.dumps({"weights": str(states[-1]), "epoch": epochs(states[-1]) - 1}))
    return archive


def run_cell(args: argparse.Namespace, task: str, multiple: int, beta0: bool) -> Optional[Dict[str, Any]]:
    """The cell's experiment.json, running the experiment unless it has finished (or it is a committed 1x)."""
    spec = TASKS[task]
    if multiple == 1 and not beta0 and not args.rerun_1x and not args.set:
        return json.loads((common.COMMITTED / "full_data" / spec["committed"]).read_text())
    last = args.weights == "last"
    out = cell_dir(args, task, multiple, beta0)
    if (out / "experiment.json").exists():
        return finished(out)
    if args.plot_only:
        return None
    hashing = [*spec["set"], f"EPOCHS={BASE_EPOCHS * multiple}", f"BETA={0 if beta0 else spec['beta']}", *args.set]
    reuse = []
    if last:
        base = Path(args.work) / cell_name(task, multiple, beta0, args.set)
        reuse = ["--hashing-archive", str(last_epoch_archive(base / "hashing", out))]
    common.run_cell(args, task, out, hashing, spec["code_set"], reuse)
    return finished(out)


def row(task: str, multiple: int, beta0: bool, experiment: Dict[str, Any]) -> Dict[str, Any]:
    hashing = 100 * experiment["hashing"]["scores"]["dev"]  # the task's metric (TASKS[task]["metric"])
    validation = 100 * experiment["validation"]["scores"]["dev"]
    probes = (experiment.get("diagnostics") or {}).get("accuracy", {})
    return {"task": task, "multiple": multiple, "epochs": BASE_EPOCHS * multiple, "beta0": beta0,
            "hashing": round(hashing, 2), "validation": round(validation, 2), "gap": round(validation - hashing, 2),
            "bit_mlp": round(100 * probes["mlp_word"], 2) if "mlp_word" in probes else None,
            "best_epoch": experiment["hashing"].get("best_epoch"),  # 0-based; None: not recorded
            "durations_s": experiment.get("durations_s"), "commands": experiment.get("commands")}


def plot(rows: List[Dict[str, Any]], png: str, last: Sequence[Dict[str, Any]] = (),
         settings: Sequence[str] = ()) -> None:
    """The curves of ROWS per task; LAST (rows of a `--weights last` file) as single validation points; SETTINGS
    (`--set`) in the titles."""
    try:
        import matplotlib
    except ImportError:  # a machine without it (the GPU image): the JSON and the table only
        print(f"no matplotlib: {png} not drawn")
        return

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = sorted({r["task"] for r in rows})
    figure, axes = plt.subplots(1, len(tasks), figsize=(5.5 * len(tasks), 4.8), squeeze=False)
    for axis, task in zip(axes[0], tasks):
        cells = sorted((r for r in rows if r["task"] == task and not r["beta0"]), key=lambda r: r["epochs"])
        for key, style in (("hashing", "o-"), ("validation", "s-"), ("bit_mlp", "^--")):
            points = [(r["epochs"], r[key]) for r in cells if r[key] is not None]
            if points:
                axis.plot(*zip(*points), style, label={"bit_mlp": "bit MLP probe"}.get(key, key))
        for r in rows:
            if r["task"] == task and r["beta0"]:
                axis.plot([r["epochs"]], [r["validation"]], "kx", label="validation, beta = 0")
        for r in last:
            if r["task"] == task and not r["beta0"]:
                axis.plot([r["epochs"]], [r["validation"]], "D", color="tab:orange", fillstyle="none",
                          label="validation, last epoch's codes")
        axis.set_xscale("log")
        axis.set_xticks([r["epochs"] for r in cells], [str(r["epochs"]) for r in cells])
        axis.set_xticks([], minor=True)  # no log-scale minor labels between the cells
        axis.set_xlabel("hashing-stage epochs")
        variant = "with " + " ".join(settings) if settings else "the paper's method alone"
        axis.set_title(f"{TASKS[task]['name']}, {variant}")
        axis.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)  # below the axes
    figure.tight_layout()
    Path(png).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(png, dpi=100)


def row_key(r: Dict[str, Any]) -> tuple:
    return r["task"], r["epochs"], r["beta0"]


def measured(args: argparse.Namespace, previous: Dict[str, Any], task: str, multiple: int,
             beta0: bool) -> Optional[Dict[str, Any]]:
    """The cell's row in the results file it writes over (same `--set`), when its run is not under --work (a fresh
    checkout) and not `--rerun`: a measured cell is not trained again (9x is hours on 2 CPU cores)."""
    out = cell_dir(args, task, multiple, beta0)
    if args.rerun or (out / "experiment.json").exists() or previous.get("set", []) != list(args.set):
        return None
    key = (task, BASE_EPOCHS * multiple, beta0)
    return next((r for r in previous.get("rows", []) if row_key(r) == key), None)


def merged(previous: Dict[str, Any], rows: List[Dict[str, Any]], settings: Sequence[str]) -> List[Dict[str, Any]]:
    """This invocation's rows, and the rows of the results file it writes over (same `--set`) that it did not run
    (another task or length), by task, epochs and baseline: `--tasks ner --multiples 9` adds to the file."""
    if previous.get("set", []) != list(settings):
        return rows
    ran = {row_key(r) for r in rows}
    return sorted([r for r in previous.get("rows", []) if row_key(r) not in ran] + rows, key=row_key)


def main() -> None:
    args = parse_args()
    name = cell_name("training_curve", 0, False, args.set, args.weights == "last").replace("_x0", "")
    if args.out is None:
        args.out = str(Path(common.RESULTS) / (name + ".json"))
    if args.png is None:
        plain = name == "training_curve"
        args.png = str(common.ROOT / "docs" / "training_curve.png" if plain else common.ROOT / "runs" / "benchmarks" /
                       (name + ".png"))
    previous = json.loads(Path(args.out).read_text()) if Path(args.out).exists() else {}
    earlier = previous.get("earlier_commands", []) + ([previous["command"]] if "command" in previous else [])
    multiples = [int(m) for m in args.multiples.split(",")]
    beta0 = [int(m) for m in args.beta0.split(",") if m]
    rows: List[Dict[str, Any]] = []
    machine = common.machine(**({"torch_info": True, "cuda_device": args.cuda_device} if args.cuda_device >= 0 else {}))
    for task in args.tasks.split(","):
        for multiple in multiples:
            for baseline in [b for b in ([False, True] if multiple in beta0 else [False]) if b or not args.beta0_only]:
                kept = measured(args, previous, task, multiple, baseline)
                if kept is not None:
                    print(f"kept: {task} {multiple}x{' beta = 0' if baseline else ''} is in {args.out} (--rerun)")
                    rows.append(kept)
                    continue
                experiment = run_cell(args, task, multiple, baseline)
                if experiment is not None:
                    rows.append(row(task, multiple, baseline, experiment))
                    common.write_json(args.out, {"command": common.command_line(), "earlier_commands": earlier,
                                                 "machine": machine, "set": args.set,
                                                 "rows": merged(previous, rows, args.set)})
    rows = merged(previous, rows, args.set)
    print(common.markdown_table(
        ["task", "epochs", "beta", "hashing", "validation", "gap", "bit MLP", "best epoch"],
        [[TASKS[r["task"]]["name"], r["epochs"], "0" if r["beta0"] else TASKS[r["task"]]["beta"], f"{r['hashing']:.2f}",
          f"{r['validation']:.2f}", f"{r['gap']:+.2f}", "" if r["bit_mlp"] is None else f"{r['bit_mlp']:.2f}",
          "" if r.get("best_epoch") is None else r["best_epoch"] + 1]
         for r in rows], "lllrrrrr"))
    last_file = Path(args.out).with_name(Path(args.out).stem + "_last.json")  # `--weights last` beside this file
    last = json.loads(last_file.read_text())["rows"] if args.weights == "best" and last_file.exists() else []
    if rows:
        plot(rows, args.png, last, args.set)
        print(f"wrote {args.out}" + (f" and {args.png}" if Path(args.png).exists() else ""))


if __name__ == "__main__":
    main()

"""How many bits each task needs: K = 8, 12, 16, 24, 32 with each task's best measured setting (README, "A model you
would use"), on the full open corpora with MiniLM fine-tuned, hashing and validation stage side by side on dev.

    python benchmarks/bit_budget.py                          # every cell, one at a time (about 9 hours on 2 CPU cores)
    python benchmarks/bit_budget.py --tasks ner --bits 8,16  # some cells
    python benchmarks/bit_budget.py --table-only             # the table (and PNG) from the finished cells
    python benchmarks/bit_budget.py --table-only --docs --png docs/bit_budget.png   # and into the docs (DOCS)

A cell is one `python -m bitcode_allennlp.code_stage.experiment` (hashing stage, re-annotation, validation stage, both
scored on dev, `allennlp bits probe`) in runs/bit_budget/TASK_K{K}/ with `SETTINGS[task]` (the task's recipe,
`bitcode_allennlp.recipes.RECIPES`: its hashing and validation variables) and `K`; the K = 24 cells
are the committed runs of benchmarks/results/full_data/ (`COMMITTED`, the same commands) unless `--rerun-24`; a
cell finished in an earlier session and committed as benchmarks/results/bit_budget/TASK_K{K}.json is read, not run. An
interrupted cell goes on where it stopped when the script runs again (the experiment keeps finished steps and
resumes an interrupted training); `--deadline SECONDS` stops a cell's experiment that long after it starts.

Writes runs/benchmarks/bit_budget.json after every cell (rows of every finished cell, each with its commands and
durations) and, with matplotlib, runs/benchmarks/bit_budget.png (`--png`; docs/bit_budget.png is drawn with
`--table-only --png docs/bit_budget.png`); the table's last column is the smallest K whose
validation score is within 1 point of K = 24's.
"""
import argparse
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

import common
from bitcode_allennlp.recipes import RECIPES, Recipe, recipe_for

SETTINGS: Dict[str, Recipe] = {"ner": RECIPES["ner"], "pos": RECIPES["pos"], "parse": recipe_for("parse", "short")}
"""Each task's best measured setting (REPRODUCTION.md's rows, the README's "A model you would use"): its recipe,
written once in `bitcode_allennlp.recipes` (`hashing_set`, `code_set`, `committed`: the K = 24 run of it, `title`).
Parsing's curve was measured with 3 hashing epochs, before the recipe moved to 6: its `short` setting."""
OUT = common.RESULTS / "bit_budget.json"
DOCS = ("REPRODUCTION.md", "docs/results.md")
"""The documents that hold the table (`--docs` rewrites it there)."""


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="ner,pos,parse")
    parser.add_argument("--bits", default="8,12,16,24,32", help="the values of K")
    parser.add_argument("--rerun-24", action="store_true", help="run the K = 24 cells instead of the committed runs")
    parser.add_argument("--table-only", action="store_true", help="no training: the table from finished cells")
    parser.add_argument("--docs", action="store_true", help="write the table into DOCS, in place of the one there")
    parser.add_argument("--png", default=str(common.RESULTS / "bit_budget.png"),
                        help="where the plot goes (the committed one: --png docs/bit_budget.png)")
    common.add_cell_options(parser)
    parser.add_argument("--work", default=str(common.ROOT / "runs" / "bit_budget"))
    return common.parse_args(parser)


def run_cell(args: argparse.Namespace, task: str, bits: int) -> Optional[Dict[str, Any]]:
    """The cell's experiment.json, running the experiment unless it has finished, here or in a committed run (the
    K = 24 runs of benchmarks/results/full_data/, the finished cells of benchmarks/results/bit_budget/)."""
    recipe = SETTINGS[task]
    if bits == 24 and not args.rerun_24:
        return json.loads((common.COMMITTED / "full_data" / recipe.committed).read_text())
    committed = common.COMMITTED / "bit_budget" / f"{task}_K{bits}.json"
    if committed.exists():
        return json.loads(committed.read_text())
    out = Path(args.work) / f"{task}_K{bits}"
    if (out / "experiment.json").exists():
        return json.loads((out / "experiment.json").read_text())
    if args.table_only:
        return None
    return common.run_cell(args, task, out, [*recipe.hashing_set, f"K={bits}"], recipe.code_set)


def row(task: str, bits: int, experiment: Dict[str, Any]) -> Dict[str, Any]:
    hashing = 100 * experiment["hashing"]["scores"]["dev"]
    validation = 100 * experiment["validation"]["scores"]["dev"]
    diagnostics = experiment.get("diagnostics") or {}
    probes = diagnostics.get("accuracy", {})
    return {"task": task, "K": bits, "hashing": round(hashing, 2), "validation": round(validation, 2),
            "gap": round(validation - hashing, 2),
            "bit_mlp": round(100 * probes["mlp_word"], 2) if "mlp_word" in probes else None,
            "train_codes": diagnostics.get("counts", {}).get("train_codes"),
            "durations_s": experiment.get("durations_s"), "commands": experiment.get("commands")}


def smallest_enough(rows: List[Dict[str, Any]], task: str) -> Optional[int]:
    """The smallest K whose validation score is within 1 point of K = 24's (None without a K = 24 row)."""
    cells = {r["K"]: r for r in rows if r["task"] == task}
    if 24 not in cells:
        return None
    return min(k for k, r in cells.items() if r["validation"] >= cells[24]["validation"] - 1.0)


def replace_table(text: str, table: str, name: str) -> str:
    """TEXT with its markdown table that starts with TABLE's header row replaced by TABLE (an error naming NAME if
    TEXT has no such table, or more than one)."""
    lines, new = text.split("\n"), table.strip().split("\n")
    starts = [i for i, line in enumerate(lines) if line == new[0]]
    if len(starts) != 1:
        raise SystemExit(f"{name}: {len(starts)} tables start with the header {new[0]!r}; expected one")
    end = starts[0]
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join(lines[:starts[0]] + new + lines[end:])


def plot(rows: List[Dict[str, Any]], png: Path) -> None:
    try:
        import matplotlib
    except ImportError:
        print(f"no matplotlib: {png} not drawn")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [t for t in SETTINGS if any(r["task"] == t for r in rows)]
    figure, axes = plt.subplots(1, len(tasks), figsize=(5 * len(tasks), 4), squeeze=False)
    for axis, task in zip(axes[0], tasks):
        cells = sorted((r for r in rows if r["task"] == task), key=lambda r: r["K"])
        for key, style in (("hashing", "o-"), ("validation", "s-")):
            axis.plot([r["K"] for r in cells], [r[key] for r in cells], style, label=key)
        axis.set_xticks([r["K"] for r in cells])
        axis.set_xlabel("K (bits per word)")
        axis.set_title(SETTINGS[task].title)
        axis.legend(fontsize="small")
    figure.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(png, dpi=100)
    print(f"wrote {png}")


def main() -> None:
    args = parse_args()
    rows: List[Dict[str, Any]] = []
    for task in args.tasks.split(","):
        for bits in (int(k) for k in args.bits.split(",")):
            experiment = run_cell(args, task, bits)
            if experiment is not None:
                rows.append(row(task, bits, experiment))
                common.write_json(OUT, {"command": common.command_line(), "machine": common.machine(), "rows": rows})
    table = common.markdown_table(
        ["task", "K", "hashing", "validation", "gap", "bit MLP", "distinct train codes",
         "smallest K within 1 of K = 24"],
        [[SETTINGS[r["task"]].title, r["K"], f"{r['hashing']:.2f}", f"{r['validation']:.2f}",
          f"{r['gap']:+.2f}".replace("-", "−"),
          "—" if r["bit_mlp"] is None else f"{r['bit_mlp']:.2f}",
          "—" if r["train_codes"] is None else f"{r['train_codes']:,}", smallest_enough(rows, r["task"]) or "—"]
         for r in rows], align="lrrrrrrr")
    print(table)
    for name in DOCS if args.docs else ():
        path = common.ROOT / name
        path.write_text(replace_table(path.read_text(), table, name))
        print(f"wrote the table into {name}")
    if rows:
        plot(rows, Path(args.png))


if __name__ == "__main__":
    main()

"""Start-up time of the `allennlp` command (issue 16): wall seconds from a fresh process to its exit, median of N.

    python benchmarks/startup.py                      # N = 5; trains the fixture NER archive first (~15 s)
    python benchmarks/startup.py --runs 1 --archive /tmp/run/model.tar.gz   # smoke run

Commands (each a fresh `python -m allennlp ...` process, as `tests.conftest.run_cli` runs them):

| name | command |
|---|---|
| `python` | `python -c pass`: the interpreter with the `bitcode_allennlp.pth` start-up hook |
| `python_no_hook` | the same with `BITCODE_ALLENNLP_NO_HOOK=1`: what the hook costs is the difference |
| `import_allennlp_commands` | `python -c "import allennlp.commands"`: the baseline of every `allennlp` command |
| `help` | `allennlp --help` (lists every sub-command, so it imports all plugins) |
| `bits_search` | `allennlp bits search INDEX --word Frodo --k 10`; INDEX of `fixtures/data/codes/ner.train.jsonl` |
| `predict` | `allennlp predict ARCHIVE two.jsonl` (2 sentences), the fixture NER archive (tiny) or `--archive` |

Before timing, each command runs once untimed (it writes the `.pyc` files and warms the page cache), then the
commands run round-robin, `--runs` rounds, so that a change in machine load hits all of them alike. The children
run without `PYTHONDONTWRITEBYTECODE` (a user's Python writes `.pyc` files; without them every import of this
package compiles its source), offline (`HF_HUB_OFFLINE=1`), with the output discarded. "Cold start" in the issue's
target (`allennlp bits search` under 2 s) means a fresh process, not a cold page cache.

Where the time goes: unless `--no-importtime`, each command runs once more under `python -X importtime`, and the
JSON keeps the top-level packages by the import time spent in their own modules (`self` time summed per package)
and the total. In the light `bits` process everything, the command itself included, is counted under the `allennlp`
import that starts it (`bitcode_allennlp.bits.light`).

Prints a markdown table (median, min, max, ratio to `import_allennlp_commands`); writes
`runs/benchmarks/startup.json` (one entry per `--name`, default `default`). Timings are only meaningful on an
otherwise idle machine.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Dict, List

import common

OUT = common.RESULTS / "startup.json"
CODES = common.ROOT / "fixtures" / "data" / "codes" / "ner.train.jsonl"
SENTENCES = '{"sentence": "Obama visits Berlin today."}\n{"sentence": "Frodo held the ring in London."}\n'
BASELINE = "import_allennlp_commands"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each command (default 5)")
    parser.add_argument("--archive", help="the archive for `predict` (default: train the fixture NER model)")
    parser.add_argument("--commands", default=None,
                        help="comma-separated names to time (default: all; see the table in the docstring)")
    parser.add_argument("--no-importtime", action="store_true", help="skip the -X importtime breakdown")
    parser.add_argument("--name", default="default", help="key of this run in the JSON")
    parser.add_argument("--out", default=str(OUT))
    return common.parse_args(parser)


def child_env(**extra: str) -> Dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **extra)
    return env


def commands(workdir: Path, archive: str, index: Path) -> Dict[str, Dict]:
    python = sys.executable
    inputs = workdir / "two.jsonl"
    inputs.write_text(SENTENCES)
    allennlp = [python, "-m", "allennlp"]
    return {
        "python": {"argv": [python, "-c", "pass"], "env": child_env()},
        "python_no_hook": {"argv": [python, "-c", "pass"], "env": child_env(BITCODE_ALLENNLP_NO_HOOK="1")},
        BASELINE: {"argv": [python, "-c", "import allennlp.commands"], "env": child_env()},
        "help": {"argv": allennlp + ["--help"], "env": child_env()},
        "bits_search": {"argv": allennlp + ["bits", "search", str(index), "--word", "Frodo", "--k", "10"],
                        "env": child_env()},
        "predict": {"argv": allennlp + ["predict", archive, str(inputs)], "env": child_env()},
    }


def run_once(command: Dict, cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(command["argv"], env=command["env"], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def import_breakdown(command: Dict, cwd: Path, top: int = 12) -> Dict:
    """Seconds of import time per top-level package (self times summed) under `python -X importtime`."""
    argv = [command["argv"][0], "-X", "importtime"] + command["argv"][1:]
    result = subprocess.run(argv, env=command["env"], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    by_package: Counter = Counter()
    total = 0
    for line in result.stderr.splitlines():
        match = IMPORT_LINE.match(line)
        if match:
            by_package[match.group(4).split(".")[0]] += int(match.group(1))
            if len(match.group(3)) == 1:  # a top-level import ("| name"; nested ones are indented)
                total += int(match.group(2))
    return {"total_import_s": round(total / 1e6, 3),
            "self_s_by_package": {name: round(us / 1e6, 3) for name, us in by_package.most_common(top)}}


def main() -> None:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="startup-") as tmp:
        workdir = Path(tmp)
        archive = args.archive or common.train_fixture_archive(tmp)
        index = workdir / "index"
        subprocess.run([sys.executable, "-m", "allennlp", "bits", "index", str(CODES), "--out", str(index)],
                       env=child_env(), check=True, capture_output=True)
        table = commands(workdir, archive, index)
        if args.commands:
            names = [name.strip() for name in args.commands.split(",") if name.strip()]
            unknown = sorted(set(names) - set(table))
            if unknown:
                raise SystemExit(f"--commands: unknown {', '.join(unknown)} (known: {', '.join(table)})")
            table = {name: table[name] for name in names}
        load_before = os.getloadavg()
        for command in table.values():  # untimed: .pyc files, page cache
            run_once(command, workdir)
        times: Dict[str, List[float]] = {name: [] for name in table}
        for _ in range(args.runs):
            for name, command in table.items():
                times[name].append(run_once(command, workdir))
        breakdown = {} if args.no_importtime else {name: import_breakdown(command, workdir)
                                                   for name, command in table.items()}
        load_after = os.getloadavg()
    medians = {name: statistics.median(values) for name, values in times.items()}
    rows = []
    for name, values in times.items():
        ratio = f"{medians[name] / medians[BASELINE]:.3f}" if BASELINE in medians else ""
        rows.append([name, " ".join(table[name]["argv"][1:]).replace(str(common.ROOT) + "/", "")[:70],
                     f"{medians[name]:.2f}", f"{min(values):.2f}", f"{max(values):.2f}", ratio])
    print(common.markdown_table(["name", "command", "median s", "min s", "max s", f"× {BASELINE}"], rows,
                                align="llrrrr"))
    result = {
        "machine": common.machine(load_average_after=load_after, load_average_before=load_before),
        "command_line": common.command_line(), "runs": args.runs, "archive": archive if args.archive else "fixture",
        "commands": {name: {"argv": table[name]["argv"][1:], "median_s": round(medians[name], 3),
                            "times_s": [round(t, 3) for t in times[name]],
                            **({"imports": breakdown[name]} if name in breakdown else {})} for name in table},
    }
    common.write_named_result(args.out, args.name, result)
    print(f"\n{args.out} [{args.name}]")


if __name__ == "__main__":
    main()

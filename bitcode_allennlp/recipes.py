"""`make model TASK=ner|pos|parse`: the recommended setting of a task trained on its full open training corpus with
MiniLM fine-tuned, scored on dev and packaged as a pip-installable model (a wheel with its model card).

    python -m bitcode_allennlp.recipes ner                        # = make model TASK=ner: writes runs/model_ner/
    python -m bitcode_allennlp.recipes ner --setting tags         # = make model TASK=ner SETTING=tags (OTHER_SETTINGS)
    python -m bitcode_allennlp.recipes pos --data /path/to/data   # the corpora's folder (default ../shared/data)
    python -m bitcode_allennlp.recipes ner --plm tiny-bert --train T --dev D --set EPOCHS=1   # a smoke run

Three steps, each the `allennlp` command a user would type (printed first; its whole output in OUT/logs/):

1. `allennlp train training_configs/TASK_hash.jsonnet -s OUT/model` with the task's `RECIPES` variables: one line
   every 10 s or so with the epoch, the batch and an estimate of the time left, one line per finished epoch with
   its dev score;
2. `allennlp evaluate OUT/model/model.tar.gz DEV` → OUT/dev_metrics.json;
3. `allennlp bits package` → OUT/dist/NAME-VERSION-py3-none-any.whl (`pip install` it anywhere; MiniLM's weights
   are in it, fine-tuned), whose card names the data, its licence, the command and the dev scores.

A `RECIPES` row is the best setting measured for its task (REPRODUCTION.md): its `reference` is that row's dev
scores, which the summary prints beside this run's. Standard library only at import.
"""
import argparse
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, List, Optional, Sequence, TextIO

from bitcode_allennlp import resources
from bitcode_allennlp.common.progress import TrainingProgress, duration
from bitcode_allennlp.host.archive_files import drop_checkpoints
from bitcode_allennlp.host.console import shown_path
from bitcode_allennlp.plm import PATHS
from bitcode_allennlp.tasks import named


@dataclass(frozen=True)
class Recipe:
    """A task's recommended setting (`variables` for its hashing config) and where its data lies in the corpora's
    folder; `reference`: the REPRODUCTION.md row it comes from (hashing-stage and codes-only dev scores). Its
    hashing config and metric are the registered task's (`bitcode_allennlp.tasks`). The one table of these settings:
    `benchmarks/bit_budget.py` reads it too, with `code_variables` (the validation stage's variables of that row,
    whose score is the codes-only one), `committed` (that row's K = 24 result in
    `benchmarks/results/full_data/`) and `title` (the task and its metric, in tables)."""

    task: str
    train: str
    dev: str
    licence: str
    variables: Dict[str, str]
    reference: str
    minutes: int = field(default=30)
    code_variables: Dict[str, str] = field(default_factory=dict)
    committed: str = ""
    title: str = ""

    @property
    def config_path(self) -> Path:
        """The task's hashing config (`Task.config`)."""
        return named(self.task).config("hash")

    @property
    def config(self) -> str:
        """The hashing config's file name, e.g. `ner_hash.jsonnet`."""
        return self.config_path.name

    @property
    def metric(self) -> str:
        """The task's metric (`Task.metric`)."""
        return named(self.task).metric

    @property
    def hashing_set(self) -> List[str]:
        """`variables` as the experiment's `--set` items, `NAME=VALUE` in their order."""
        return [f"{name}={value}" for name, value in self.variables.items()]

    @property
    def code_set(self) -> List[str]:
        """`code_variables` as the experiment's `--code-set` items, `NAME=VALUE` in their order."""
        return [f"{name}={value}" for name, value in self.code_variables.items()]


RECIPES = {
    "ner": Recipe("ner", "ner/btc/conll2012/train", "ner/btc/conll2012/development", "CC BY 4.0",
                  {"EPOCHS": "3", "HEAD_LR": "1e-3", "BETA": "0.005", "CODE_HEAD": "2", "SEED": "0"},
                  "BTC NER, code-reading head of weight 2, 3 epochs: dev span F1 76.97 (seeds 1, 2: 76.49, 77.46), "
                  "codes alone 76.76", 16,
                  code_variables={"EPOCHS": "20", "CODE_DIM": "256", "CODE_BIT_FLIP": "0.2"},
                  committed="btc_ner_codehead2_e3.json", title="BTC NER (span F1)"),
    "pos": Recipe("pos", "pos/ud_english_ewt/en_ewt-ud-train.conllu",
                  "pos/ud_english_ewt/en_ewt-ud-dev.conllu", "CC BY-SA 4.0",
                  {"READER": "conllu_pos", "TOKEN_POLICY": "repair", "EPOCHS": "3", "HEAD_LR": "1e-3", "BETA": "0.05",
                   "CODE_HEAD": "1"},
                  "UD EWT POS, code-reading head: dev accuracy 96.20, codes alone 95.78", 28,
                  code_variables={"EPOCHS": "20", "CODE_DIM": "256"}, committed="ewt_pos_codehead.json",
                  title="UD EWT POS (accuracy)"),
    "parse": Recipe("parse", "const/craft/craft-train.tree", "const/craft/craft-dev.tree",
                    "CC BY 3.0 (6 articles' text CC BY-NC: see the corpus' PROVENANCE.txt)",
                    {"TOKEN_POLICY": "repair", "MAX_INSTANCES": "6000", "EPOCHS": "6", "HEAD_LR": "1e-3",
                     "CODE_SPAN_HEAD": "1"},
                    "CRAFT parsing, span code-reading head, first 6,000 trees, 6 epochs: dev EVALB F1 82.77 (second "
                    "seed 82.83), codes alone 82.51 (82.76)", 45,
                    code_variables={"TOKEN_POLICY": "repair", "EPOCHS": "10", "CODE_DIM": "256"},
                    committed="craft_parse_spanhead_e6.json", title="CRAFT parsing (EVALB F1)"),
}
OTHER_SETTINGS = {
    ("ner", "tags"): replace(
        RECIPES["ner"], variables={"EPOCHS": "3", "HEAD_LR": "1e-3", "BETA": "0.005", "SEED": "0"},
        reference="BTC NER, tags first: the paper's β = 0.005 without the code-reading head, 3 epochs: dev span F1 "
                  "79.21, codes alone 69.52", committed="btc_ner_beta005_e3.json"),
    ("parse", "short"): replace(
        RECIPES["parse"], variables={**RECIPES["parse"].variables, "EPOCHS": "3"}, minutes=22,
        reference="CRAFT parsing, span code-reading head, first 6,000 trees, 3 epochs: dev EVALB F1 80.86 (second "
                  "seed 80.71), codes alone 82.01 (81.69)", committed="craft_parse_spanhead.json"),
}
"""Measured settings other than the recommended one, by (task, name) (`make model TASK=ner SETTING=tags`): NER's
best tags come without the code-reading head, whose codes keep less of the task; parsing's `short` trains 3 epochs
in place of 6 (half the time, about 2 points under in the hashing stage, 0.5–1.1 in the codes)."""


def recipe_for(task: str, setting: Optional[str] = None) -> Recipe:
    """The recommended `RECIPES[task]`, or the `OTHER_SETTINGS` entry `setting` of `task`."""
    if not setting:
        return RECIPES[task]
    if (task, setting) not in OTHER_SETTINGS:
        names = [name for other, name in OTHER_SETTINGS if other == task]
        raise ValueError(f"--setting {setting}: {task} has " + (f"the settings {', '.join(names)}" if names else
                                                                 "no other setting") + " besides the recommended one")
    return OTHER_SETTINGS[(task, setting)]


TICK = 10.0
"""Seconds between progress lines while a step runs."""


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bitcode_allennlp.recipes", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", choices=sorted(RECIPES))
    parser.add_argument("--setting", default=None, help="another measured setting than the recommended one: "
                        + ", ".join(f"{name} ({task})" for task, name in OTHER_SETTINGS))
    parser.add_argument("--out", default=None, help="the run's folder (default runs/model_TASK, with a setting "
                        "runs/model_TASK_SETTING)")
    parser.add_argument("--data", default="../shared/data", help="the folder of the open corpora")
    parser.add_argument("--train", default=None, help="training file or folder (default: the recipe's, in --data)")
    parser.add_argument("--dev", default=None, help="dev file or folder (default: the recipe's, in --data)")
    parser.add_argument("--plm", default="minilm", help=f"{', '.join(PATHS)} or a PLM folder (default minilm)")
    parser.add_argument("--set", nargs="*", default=[], metavar="VAR=VALUE", help="more config variables")
    parser.add_argument("--name", default=None, help="the model package's name (default TASK_minilm, with a setting "
                        "TASK_SETTING_minilm)")
    parser.add_argument("--version", default="0.1.0")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    return parser.parse_args(argv)


class Progress(TrainingProgress):
    """`TrainingProgress` that also says each finished epoch's dev score (AllenNLP's metrics_epoch_N.json)."""

    def __init__(self, epochs: int, model: Path, metric: str) -> None:
        super().__init__(epochs)
        self.model, self.metric, self.reported = model, metric, 0

    def line(self) -> str:
        scores = epoch_scores(self.model, self.metric)
        finished = [f"  epoch {n + 1}/{self.epochs} done: dev {self.metric} {100 * score:.2f}"
                    for n, score in enumerate(scores) if n >= self.reported]
        self.reported = len(scores)
        return "\n".join(finished + ["  " + super().line()])


def run_step(name: str, command: List[str], env: Dict[str, str], log: Path, console: TextIO,
             progress: Optional[Progress] = None) -> None:
    """Runs `command` (its output to `log`), printing `progress` lines (or that it is still running) every `TICK`
    seconds; exits with the command's status and the log's last lines when it fails."""
    started = time.monotonic()
    with open(log, "w", encoding="utf-8") as out:
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

        def pump(stream) -> None:
            for chunk in iter(lambda: stream.read1(4096), b""):
                text = chunk.decode("utf-8", "replace")
                out.write(text)
                if progress is not None:
                    progress.read(text)

        readers = [threading.Thread(target=pump, args=(s,), daemon=True) for s in (process.stdout, process.stderr)]
        for reader in readers:
            reader.start()
        while process.poll() is None:
            try:
                process.wait(timeout=TICK)
            except subprocess.TimeoutExpired:
                print(progress.line() if progress else f"  {name}: running ({duration(time.monotonic() - started)})",
                      file=console, flush=True)
        for reader in readers:
            reader.join()
    if process.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-8:]
        print(f"{name} failed (status {process.returncode}); the end of {shown_path(log)}:", *tail, sep="\n",
              file=sys.stderr)
        sys.exit(process.returncode)
    print(f"  {name}: done in {duration(time.monotonic() - started)}", file=console, flush=True)


def epoch_scores(model: Path, metric: str) -> List[float]:
    """The dev score of each finished epoch (AllenNLP's metrics_epoch_N.json)."""
    scores = []
    for number in range(1000):
        path = model / f"metrics_epoch_{number}.json"
        if not path.is_file():
            break
        scores.append(float(json.loads(path.read_text()).get(f"validation_{metric}", float("nan"))))
    return scores


def plm_argument(plm: str) -> str:
    """The PLM folder for `--plm`: a name of `bitcode_allennlp.plm.PATHS`, else the folder as given."""
    return PATHS[plm]() if plm in PATHS else plm


def main(argv: Optional[Sequence[str]] = None, console: TextIO = sys.stdout) -> Dict[str, object]:
    args = parse_args(argv)
    try:
        recipe = recipe_for(args.task, args.setting)
    except ValueError as error:
        sys.exit(str(error))
    label = f"{args.task}_{args.setting}" if args.setting else args.task
    out = Path(args.out or f"runs/model_{label}")
    train = args.train or os.path.join(args.data, recipe.train)
    dev = args.dev or os.path.join(args.data, recipe.dev)
    for what, path in (("--train", train), ("--dev", dev)):
        if not os.path.exists(path):
            sys.exit(f"{what} {path}: no such file or folder (the open corpora are in --data, default ../shared/data)")
    variables = {**recipe.variables, **dict(item.split("=", 1) for item in args.set)}
    name = args.name or f"{label}_minilm"
    (out / "logs").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **variables, "PLM": plm_argument(args.plm), "TRAIN_DATA": train, "DEV_DATA": dev}
    if args.threads:
        env.update(OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    config = str(resources.existing(recipe.config_path))
    shown = " ".join(f"{k}={v}" for k, v in variables.items())
    plm = f"$(python -m bitcode_allennlp.plm {args.plm})" if args.plm in PATHS else args.plm
    typed = (f"PLM={plm} TRAIN_DATA={train} DEV_DATA={dev} {shown} allennlp train "
             f"training_configs/{recipe.config} -s {shown_path(out / 'model')}")
    model, archive = out / "model", out / "model" / "model.tar.gz"
    started = time.monotonic()
    setting = f" SETTING={args.setting}" if args.setting else ""
    print(f"make model TASK={args.task}{setting}: {recipe.reference} (REPRODUCTION.md); about {recipe.minutes} "
          f"min of training on 2 CPU cores", file=console, flush=True)
    print(f"1/3 {typed}", file=console, flush=True)
    run_step("train", ["allennlp", "train", config, "-s", str(model), "-f"], env, out / "logs" / "train.log", console,
             Progress(int(variables.get("EPOCHS", "1")), model, recipe.metric))
    freed = drop_checkpoints(str(model))  # the archive and best.th hold the model
    print(f"  per-epoch checkpoints removed ({freed / 2**20:.0f} MB)", file=console, flush=True)
    metrics_file = out / "dev_metrics.json"
    print(f"2/3 allennlp evaluate {shown_path(archive)} {dev} --output-file {shown_path(metrics_file)}",
          file=console, flush=True)
    run_step("evaluate", ["allennlp", "evaluate", str(archive), dev, "--output-file", str(metrics_file)], env,
             out / "logs" / "evaluate.log", console)
    dist = out / "dist"
    package = ["allennlp", "bits", "package", str(archive), "--name", name, "--version", args.version,
               "--data-licence", recipe.licence, "--training-command", typed, "-o", str(dist)]
    print(f"3/3 allennlp bits package {shown_path(archive)} --name {name} --version {args.version} "
          f"--data-licence '{recipe.licence}' -o {shown_path(dist)}", file=console, flush=True)
    run_step("package", package, env, out / "logs" / "package.log", console)
    score = json.loads(metrics_file.read_text())[recipe.metric]
    wheel = dist / f"{name}-{args.version}-py3-none-any.whl"
    summary = {"task": args.task, "setting": args.setting or "recommended", "dev": {recipe.metric: score},
               "wheel": shown_path(wheel), "reference": recipe.reference,
               "minutes": round((time.monotonic() - started) / 60, 1), "variables": variables}
    (out / "model_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"dev {recipe.metric} {100 * score:.2f} (the recipe's row: {recipe.reference}); "
          f"{summary['minutes']} min in all\nthe model: pip install {shown_path(wheel)}, then in Python: "
          f"bitcode_allennlp.load({name!r})", file=console, flush=True)
    return summary


if __name__ == "__main__":
    main()

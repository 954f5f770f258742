"""One command for a whole experiment (paper Algorithm 1, a row of Table 1): hashing stage → re-annotation →
validation stage → both evaluated, side by side with their parameter counts.

    python -m bitcode_allennlp.code_stage.experiment ner --out runs/exp_ner           # fixtures, seconds
    python -m bitcode_allennlp.code_stage.experiment ner --out runs/exp_btc --plm minilm \\
        --train ../shared/data/ner/btc/conll2012/train --dev ../shared/data/ner/btc/conll2012/development \\
        --set EPOCHS=2 MAX_INSTANCES=2000 HEAD_LR=1e-3 --code-set EPOCHS=30

Each step is the `allennlp` command a user would type (run in a subprocess, logged to OUT/logs/); finished
steps are kept when the command is run again (`--force` redoes them). `--set` passes config variables to the
hashing stage (e.g. BETA, K, EPOCHS, MAX_INSTANCES), `--code-set` to the validation stage (EPOCHS, LR, CODE_DIM);
the validation config reads K from its codes file (`num_bits`, written by `hash-corpus`). As in Algorithm 1 the
entire training corpus is re-annotated for the validation stage, also when the hashing stage trained on fewer
sentences (`MAX_INSTANCES`; `--same-train-sentences` keeps only those). Scores are on the whole dev (and test) file,
or on its first DEV_MAX_INSTANCES sentences when `--set` gives that cap (re-annotation and both evaluations then
read the same sentences). After both stages, `allennlp bits probe` reads the train and dev codes (do they carry the
task? code majority, Hamming k-NN, bit and window probes beside the word-majority baseline; `bits/probe.py`) into
OUT/diagnostics.json, stored in experiment.json under "diagnostics" (`--no-probe` skips it). `--in-process` runs the
steps in this process (the trainings through the Python API, `bitcode_allennlp.train`; the same commands recorded,
the same logs). `--deadline SECONDS` stops the command that many seconds after it started (a job's wall-time
limit): the step running then gets Ctrl-C (SIGINT; a training keeps its checkpoints, re-annotation the sentences
coded so far), the command exits with status 75, and the same command run again goes on from there (an interrupted
training resumes with `--recover`). Writes OUT/experiment.json.
"""
import argparse
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, FrozenSet, Iterator, List, Mapping, Optional, Sequence, Set, TextIO, Tuple

from bitcode_allennlp import resources
from bitcode_allennlp import tasks as registered_tasks
from bitcode_allennlp.host.archival import read_archive_config
from bitcode_allennlp.host.config_declaration import VARIABLES as DECLARED
from bitcode_allennlp.host.config_variables import variables_read
from bitcode_allennlp.host.retired import environment_problem

CONFIGS = resources.path("training_configs", check=False)
"""The repository's configs, or their copy in an installed package (`bitcode_allennlp.resources`)."""
FIXTURES = resources.path("fixtures", "data", check=False)



class _FixtureTasks(Mapping):
    """The registered tasks (`bitcode_allennlp.tasks`), read when asked (a task registered later is in it): name ->
    `{"metric", "train", "dev"}`, its metric and fixture corpora."""

    def __getitem__(self, name: str) -> Dict[str, Any]:
        task = registered_tasks.TASKS[name]
        return {"metric": task.metric, "train": task.fixtures[0], "dev": task.fixtures[1]}

    def __iter__(self) -> Iterator[str]:
        return iter(list(registered_tasks.TASKS))

    def __len__(self) -> int:
        return len(registered_tasks.TASKS)


TASKS: Mapping = _FixtureTasks()
"""Task name -> `{"metric", "train", "dev"}` (the registry's, `bitcode_allennlp.tasks`)."""


def config_variables(configs: Path = CONFIGS) -> Set[str]:
    """
    Every variable that the configs in `configs` (`*.jsonnet`, `*.libsonnet`) read, scanned from the files
    (`tests/reliability/test_config_variables.py` checks that it is the declaration, `CONFIG_VARIABLES`).
    """
    files = sorted(configs.glob("*.jsonnet")) + sorted(configs.glob("*.libsonnet"))
    if not files:
        resources.existing(configs)
        raise FileNotFoundError(f"no training configs (*.jsonnet, *.libsonnet) in {configs}")
    return set().union(*(variables_read(path.read_text()) for path in files))


CONFIG_VARIABLES: FrozenSet[str] = frozenset(DECLARED)
"""Every config variable, as declared once (`bitcode_allennlp.host.config_declaration`): cleared from the inherited
environment so that each stage gets exactly the values given here, and the names `--set` / `--code-set` accept."""


DEADLINE_STATUS = 75
"""Exit status of a command stopped by `--deadline` (EX_TEMPFAIL: run it again to go on)."""
DEADLINE_GRACE_S = 300.0
TICK_S = 10.0 if sys.stdout.isatty() else 60.0
"""While a step runs: seconds between its progress lines (on a terminal; 60 in a log file)."""
"""How long a step stopped at the deadline may take to save its state before it is killed."""


class DeadlineReached(Exception):
    """`--deadline` passed while STEP ran (stopped with SIGINT) or before it started."""

    def __init__(self, step: str, out: Path, started: bool) -> None:
        kept = "the finished steps" + (" and what the stopped step saved (a training's checkpoints)" if started else "")
        super().__init__(f"[{step}] {'stopped' if started else 'not started'} at the deadline (--deadline): {out} "
                         f"keeps {kept}; run the same command again to go on")


def default_sigint() -> None:
    """In a step's process before exec: Ctrl-C's default action, so that the deadline's SIGINT reaches Python's
    KeyboardInterrupt (a command started in the background by a shell without job control has SIGINT ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_metrics(run_dir: Path) -> Dict[str, Any]:
    """A finished training's RUN_DIR/metrics.json, or {} without one (e.g. beside a `--hashing-archive`)."""
    return json.loads((run_dir / "metrics.json").read_text()) if (run_dir / "metrics.json").exists() else {}


def parameter_count(run_dir: Path, archive: Optional[Path] = None) -> Optional[int]:
    """|θ| from the run's metrics (the `parameter_count` callback), else counted from the archive (default
    RUN_DIR/model.tar.gz; a `--hashing-archive` may have another name)."""
    metrics = run_metrics(run_dir)
    if "parameters" in metrics:
        return int(metrics["parameters"])
    from allennlp.models.archival import load_archive

    import bitcode_allennlp.plugin  # noqa: F401  (registers our components for load_archive)
    from bitcode_allennlp.training.callbacks import count_parameters

    return count_parameters(load_archive(str(archive or run_dir / "model.tar.gz")).model)["parameters"]


def selected_epoch(run_dir: Path) -> Dict[str, Optional[int]]:
    """The epoch whose weights the archive holds (AllenNLP keeps the best on dev; 0-based) and the epochs trained,
    from the run's metrics.json (None without it, e.g. a `--hashing-archive` from elsewhere)."""
    metrics = run_metrics(run_dir)
    trained = metrics.get("epoch")
    return {"best_epoch": metrics.get("best_epoch"), "epochs_trained": None if trained is None else int(trained) + 1}


def run_in_process(args: Sequence[str], env: Dict[str, str], log: TextIO) -> int:
    """
    `allennlp ARGS` in this process, with `env` as the environment and stdout/stderr/logging into `log`; returns
    its exit code. Saves the interpreter start and imports of a subprocess per step (seconds each), and lets
    steps share in-process state such as the frozen PLM's sentence cache (`modules/frozen_plm.py`). Everything
    it changes (environment, argv, root logging handlers, tqdm logger, excepthook) is put back afterwards.
    """
    import allennlp.commands

    def command() -> None:
        sys.argv = ["allennlp", *args]
        allennlp.commands.main(prog="allennlp")

    return in_process(command, env, log)


def train_in_process(args: Sequence[str], env: Dict[str, str], log: TextIO) -> int:
    """
    A training step, `allennlp train CONFIG -s RUN_DIR -f|--recover` (`args` without `allennlp`), through the Python
    API in this process (`bitcode_allennlp.api.train`: force for ``-f``, recover for ``--recover``) as
    `run_in_process` runs a command: `env` as the environment (its config variables are the training's), output
    and logs into `log`, its exit code returned, the process put back afterwards.
    """
    from bitcode_allennlp import api

    command, config, option, run_dir, mode = map(str, args)
    if command != "train" or option != "-s" or mode not in ("-f", "--recover"):
        raise ValueError(f"not a training step: allennlp {' '.join(map(str, args))}")
    variables = {name: value for name, value in env.items() if name in CONFIG_VARIABLES}
    return in_process(lambda: api.train(config, run_dir, variables, force=mode == "-f", recover=mode == "--recover"),
                      env, log)


def in_process(call: Callable[[], Any], env: Dict[str, str], log: TextIO) -> int:
    """`call()` with `env` as the environment and stdout/stderr/logging into `log`: 0, its `SystemExit` code, or 1
    for an exception (its traceback in `log`, like a failed subprocess's). Everything it changes (environment, argv,
    root logging handlers, tqdm logger, excepthook) is put back afterwards."""
    from allennlp.common.tqdm import logger as tqdm_logger

    root = logging.getLogger()
    saved = (dict(os.environ), sys.argv, root.handlers[:], root.level, tqdm_logger.handlers[:], sys.excepthook)
    os.environ.clear()
    os.environ.update(env)
    code = 0
    try:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            try:
                call()
            except SystemExit as exit:
                code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
            except Exception:  # noqa: BLE001  (reported in the step's log, like a failed subprocess)
                traceback.print_exc(file=log)
                code = 1
    finally:
        for handler in root.handlers + tqdm_logger.handlers:
            if handler not in saved[2] and handler not in saved[4]:
                handler.close()
        os.environ.clear()
        os.environ.update(saved[0])
        sys.argv, root.handlers[:], tqdm_logger.handlers[:], sys.excepthook = saved[1], saved[2], saved[4], saved[5]
        root.setLevel(saved[3])
    return code


def exist(paths: Sequence[Path]) -> bool:
    """Whether PATHS is not empty and every path in it exists: a step's outputs, so the step is done."""
    return bool(paths) and all(path.exists() for path in paths)


@dataclass
class ExperimentSettings:
    """
    What one experiment runs, and how (the options of `main`).

    # Parameters

    task : `str`
        One of `TASKS`.
    out : `Path`
        The experiment's folder.
    train : `Path`
    dev : `Path`
    test : `Optional[Path]`, optional (default = `None`)
        The corpora; the test corpus is scored only when given.
    plm : `Optional[str]`, optional (default = `None`)
        PLM directory (None: the configs' default).
    hashing_set : `Sequence[str]`, optional (default = `()`)
        `VAR=VALUE` config variables of the hashing stage (`--set`).
    code_set : `Sequence[str]`, optional (default = `()`)
        `VAR=VALUE` config variables of the validation stage (`--code-set`).
    hashing_archive : `Optional[Path]`, optional (default = `None`)
        A trained hashing model instead of step 1.
    cuda_device : `int`, optional (default = `-1`)
    force : `bool`, optional (default = `False`)
        Redo finished steps.
    same_train_sentences : `bool`, optional (default = `False`)
        Re-annotate only the hashing stage's training sentences (its `max_instances`), not the entire corpus.
    in_process : `bool`, optional (default = `False`)
        Run the steps in this process, not one subprocess each: the trainings through the Python API
        (`train_in_process`), the other `allennlp` commands through AllenNLP's main (`run_in_process`).
    probe : `bool`, optional (default = `True`)
        Run `allennlp bits probe` on the codes.
    deadline : `Optional[float]`, optional (default = `None`)
        Seconds after the experiment starts at which the running step is stopped (`DeadlineReached`); not with
        `in_process`.
    """

    task: str
    out: Path
    train: Path
    dev: Path
    test: Optional[Path] = None
    plm: Optional[str] = None
    hashing_set: Sequence[str] = ()
    code_set: Sequence[str] = ()
    hashing_archive: Optional[Path] = None
    cuda_device: int = -1
    force: bool = False
    same_train_sentences: bool = False
    in_process: bool = False
    probe: bool = True
    deadline: Optional[float] = None


class Experiment:
    """The steps of one experiment in OUT, each an `allennlp` command; see the module docstring."""

    def __init__(self, settings: ExperimentSettings) -> None:
        out = settings.out
        self.task, self.out, self.force, self.cuda_device = settings.task, out, settings.force, settings.cuda_device
        self.in_process = settings.in_process
        if settings.deadline is not None and settings.in_process:
            raise ValueError("a deadline stops a step's process: it needs subprocess steps, not in_process")
        self.stop_at = None if settings.deadline is None else time.time() + settings.deadline
        self.probe = settings.probe
        self.same_train_sentences = settings.same_train_sentences
        self.splits = {"train": settings.train, "dev": settings.dev,
                       **({"test": settings.test} if settings.test is not None else {})}
        self.plm = settings.plm
        self.hashing_vars = dict(item.split("=", 1) for item in settings.hashing_set)
        self.code_vars = dict(item.split("=", 1) for item in settings.code_set)
        self.hashing_archive = settings.hashing_archive
        self.commands: List[str] = []
        self.durations: Dict[str, float] = {}
        (out / "logs").mkdir(parents=True, exist_ok=True)

    def allennlp(self, step: str, args: Sequence[Any], variables: Dict[str, str], done: Sequence[Path] = ()) -> None:
        """Runs `allennlp ARGS` with exactly `variables` as config variables, unless every file of `done` exists."""
        shown = " ".join(f"{k}={v}" for k, v in variables.items()) + " allennlp " + " ".join(map(str, args))
        self.commands.append(shown.strip())
        if exist(done) and not self.force:
            print(f"[{step}] kept {done[-1]}", flush=True)
            return
        env = {k: v for k, v in os.environ.items() if k not in CONFIG_VARIABLES}
        env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **variables})
        if self.stop_at is not None and time.time() >= self.stop_at:
            raise DeadlineReached(step, self.out, started=False)
        print(f"[{step}] {shown.strip()}", flush=True)
        start = time.time()
        log_path = self.out / "logs" / f"{step}.log"
        with open(log_path, "w") as log:
            if self.in_process:  # a training through the Python API, the other steps through AllenNLP's main
                step_in_process = train_in_process if args[0] == "train" else run_in_process
                returncode = step_in_process([str(a) for a in args], env, log)
            else:
                # cwd: a checkout's root, so that `-m allennlp` finds the package and `.allennlp_plugins` there
                process = subprocess.Popen([sys.executable, "-m", "allennlp", *map(str, args)], env=env,
                                           cwd=resources.checkout(), stdout=log, stderr=subprocess.STDOUT,
                                           preexec_fn=default_sigint)
                returncode = self.wait(process, step, log_path, variables.get("EPOCHS"))
        self.durations[step] = round(time.time() - start, 1)
        if returncode != 0:
            raise SystemExit(f"[{step}] failed ({returncode}); see {log_path}")

    def wait(self, process: "subprocess.Popen[bytes]", step: str, log_path: Optional[Path] = None,
             epochs: Optional[str] = None) -> int:
        """The step's exit status, with a progress line every `TICK_S` seconds (a training's epoch, batch and time
        left, read from its log: `common.progress`); at the deadline, SIGINT to the step, time to save its state
        (else SIGKILL), and `DeadlineReached`."""
        from bitcode_allennlp.common.progress import TrainingProgress, duration

        progress = TrainingProgress(int(epochs or 1)) if step.endswith("_train") else None
        started, offset = time.time(), 0
        while True:
            wait = TICK_S if self.stop_at is None else max(0.0, min(TICK_S, self.stop_at - time.time()))
            try:
                return process.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                if self.stop_at is not None and time.time() >= self.stop_at:
                    break
            if progress is not None and log_path is not None:
                with open(log_path, "rb") as log:
                    log.seek(offset)
                    text = log.read()
                offset += len(text)
                progress.read(text.decode("utf-8", "replace"))
            said = progress.line() if progress is not None else f"running, {duration(time.time() - started)} so far"
            print(f"  [{step}] {said}", flush=True)
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=DEADLINE_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        raise DeadlineReached(step, self.out, started=True)

    @staticmethod
    def trained(run_dir: Path) -> Tuple[Path, Path]:
        """The files of a finished `allennlp train` in RUN_DIR: its final metrics and its archive. An interrupted
        training has no metrics.json, though AllenNLP archives its best epoch so far when stopped by a signal."""
        return run_dir / "metrics.json", run_dir / "model.tar.gz"

    def fresh_or_resume(self, run_dir: Path) -> str:
        """`--recover` for a training that an interruption left with a checkpoint (and unfinished), unless `--force`;
        else `-f` (a fresh run)."""
        interrupted = (run_dir / "config.json").exists() and any(run_dir.glob("training_state*.th"))
        if interrupted and not self.force and not exist(Experiment.trained(run_dir)):
            print(f"resuming the interrupted training in {run_dir} (--recover)", flush=True)
            return "--recover"
        return "-f"

    def run(self) -> Dict[str, Any]:
        """Both stages, the re-annotation between them, both scored, the probes; the row of experiment.json."""
        archive = self.hashing_stage()
        config = self.hashing_config(archive)
        num_bits = int(config["model"]["encoder"].get("num_bits", 24))
        codes = self.reannotate(archive, config)
        code_dir = self.validation_stage(codes)
        metric = registered_tasks.named(self.task).metric
        scores = self.evaluate(archive, config, codes, code_dir)
        diagnostics = self.diagnose(codes) if self.probe else None
        hashing_run = archive.parent
        row = {
            "task": self.task, "metric": metric, "num_bits": num_bits,
            "beta": config["model"].get("beta", 0.0),
            "hashing": {"scores": scores["hashing"], "parameters": parameter_count(hashing_run, archive),
                        **selected_epoch(hashing_run)},
            "validation": {"scores": scores["validation"], "parameters": parameter_count(code_dir)},
            "hashing_archive": str(archive), "validation_archive": str(code_dir / "model.tar.gz"),
            "diagnostics": diagnostics, "commands": self.commands, "durations_s": self.durations,
        }
        (self.out / "experiment.json").write_text(json.dumps(row, indent=2))
        return row

    def hashing_config(self, archive: Path) -> Dict[str, Any]:
        """The hashing stage's config: the one its archive holds."""
        return read_archive_config(archive)

    def hashing_stage(self) -> Path:
        """1. The hashing stage, trained in OUT/hashing unless `hashing_archive` is given: its archive."""
        if self.hashing_archive is not None:
            return self.hashing_archive
        hashing_dir = self.out / "hashing"
        variables = {"TRAIN_DATA": str(self.splits["train"]), "DEV_DATA": str(self.splits["dev"]),
                     **({"PLM": self.plm} if self.plm else {}), **self.hashing_vars}
        hashing_config = resources.existing(registered_tasks.named(self.task).config("hash"))
        self.allennlp("hashing_train", ["train", hashing_config, "-s", hashing_dir, self.fresh_or_resume(hashing_dir)],
                      variables, done=self.trained(hashing_dir))
        return hashing_dir / "model.tar.gz"

    def reannotate(self, archive: Path, config: Dict[str, Any]) -> Path:
        """2. Re-annotation of the entire corpus (Algorithm 1), or only the hashing stage's training sentences, into
        OUT/codes/SPLIT.jsonl: that folder."""
        codes = self.out / "codes"
        codes.mkdir(exist_ok=True)
        train_cap = config["dataset_reader"].get("max_instances") if self.same_train_sentences else None
        dev_cap = config.get("validation_dataset_reader", {}).get("max_instances")  # DEV_MAX_INSTANCES
        for split, path in self.splits.items():
            cap = ["--max-instances", train_cap] if split == "train" and train_cap else \
                ["--max-instances", dev_cap] if split != "train" and dev_cap else []
            self.allennlp(f"hash_corpus_{split}", ["hash-corpus", archive, path, "-o", codes / f"{split}.jsonl",
                                                  "--silent", "--cuda-device", self.cuda_device, *cap]
                          + (["--force"] if self.force else []), {})
        return codes

    def validation_stage(self, codes: Path) -> Path:
        """3. The validation stage on the codes, trained in OUT/validation: that folder. Its config reads K from the
        train codes (`bitcode_allennlp.host.config_variables.codes_num_bits`)."""
        code_dir = self.out / "validation"
        variables = {"TRAIN_DATA": str(codes / "train.jsonl"), "DEV_DATA": str(codes / "dev.jsonl"),
                     **self.code_vars}
        code_config = resources.existing(registered_tasks.named(self.task).config("code"))
        self.allennlp("validation_train", ["train", code_config, "-s", code_dir, self.fresh_or_resume(code_dir)],
                      variables, done=self.trained(code_dir))
        return code_dir

    def evaluate(self, archive: Path, config: Dict[str, Any], codes: Path, code_dir: Path
                 ) -> Dict[str, Dict[str, float]]:
        """4. Both stages scored on the same sentences of each split but train: stage -> split -> the task's metric."""
        scores: Dict[str, Dict[str, float]] = {"hashing": {}, "validation": {}}
        metric = registered_tasks.named(self.task).metric
        # An archive from before the configs had an uncapped validation reader scores with its capped reader: give
        # it one (its training reader without the cap), so both stages score the very same sentences.
        uncapped = []
        if "validation_dataset_reader" not in config and "max_instances" in config["dataset_reader"]:
            reader = {k: v for k, v in config["dataset_reader"].items() if k != "max_instances"}
            uncapped = ["--overrides", json.dumps({"validation_dataset_reader": reader})]
        for split, path in self.splits.items():
            if split == "train":
                continue
            for stage, stage_archive, data in (("hashing", archive, path),
                                               ("validation", code_dir / "model.tar.gz", codes / f"{split}.jsonl")):
                result = self.out / f"{stage}_{split}_metrics.json"
                self.allennlp(f"{stage}_evaluate_{split}",
                              ["evaluate", stage_archive, data, "--output-file", result, "--cuda-device",
                               self.cuda_device, *(uncapped if stage == "hashing" else [])], {}, done=[result])
                scores[stage][split] = json.loads(result.read_text())[metric]
        return scores

    def diagnose(self, codes: Path) -> Dict[str, Any]:
        """5. Do the codes carry the task? Probes of the train codes scored on dev (labels: tags; trees: POS tags)."""
        result = self.out / "diagnostics.json"
        self.allennlp("probe", ["bits", "probe", "--train", codes / "train.jsonl", "--dev", codes / "dev.jsonl",
                                "--json", result], {}, done=[result])
        return json.loads(result.read_text())


def table(rows: Sequence[Dict[str, Any]]) -> str:
    """Markdown rows in the layout of paper Table 1: each stage's dev score (×100) and |θ|."""
    lines = ["| task | K | β | stage | dev | test | parameters |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        for stage in ("hashing", "validation"):
            s = row[stage]["scores"]
            test = f"{100 * s['test']:.2f}" if "test" in s else "–"
            lines.append(f"| {row['task']} | {row['num_bits']} | {row['beta']} | {stage} | {100 * s['dev']:.2f} | "
                         f"{test} | {row[stage]['parameters']:,} |")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", choices=sorted(TASKS))
    parser.add_argument("--out", type=Path, required=True, help="the experiment's folder")
    parser.add_argument("--train", type=Path, help="training corpus (default: the fixture sample)")
    parser.add_argument("--dev", type=Path, help="development corpus (default: the fixture sample)")
    parser.add_argument("--test", type=Path, help="test corpus, optional")
    parser.add_argument("--plm", help="PLM directory, or 'minilm' (default: the configs' tiny-bert fixture)")
    parser.add_argument("--set", nargs="*", default=[], metavar="VAR=VALUE", help="hashing-stage config variables")
    parser.add_argument("--code-set", nargs="*", default=[], metavar="VAR=VALUE",
                        help="validation-stage config variables")
    parser.add_argument("--hashing-archive", type=Path, help="reuse a trained hashing model instead of step 1")
    parser.add_argument("--cuda-device", type=int, default=-1)
    parser.add_argument("--force", action="store_true", help="redo finished steps")
    parser.add_argument("--same-train-sentences", action="store_true",
                        help="re-annotate only the hashing stage's training sentences (its MAX_INSTANCES cap) for "
                             "the validation stage, instead of the entire training corpus (Algorithm 1)")
    parser.add_argument("--in-process", action="store_true",
                        help="run the allennlp steps in this process (the trainings through the Python API; no "
                             "interpreter start per step; steps share the FREEZE_PLM sentence cache) instead of one "
                             "subprocess each")
    parser.add_argument("--no-probe", action="store_true",
                        help="skip 'allennlp bits probe' on the train and dev codes (the \"diagnostics\")")
    parser.add_argument("--deadline", type=float, default=None, metavar="SECONDS",
                        help="stop SECONDS after the start (Ctrl-C to the running step, exit status 75); the same "
                             "command run again goes on (a wall-time limit)")
    args = parser.parse_args(argv)
    if args.deadline is not None and (args.deadline <= 0 or args.in_process):
        parser.error("--deadline takes seconds above 0, and subprocess steps (not --in-process)")
    for item in [*args.set, *args.code_set]:
        retired = environment_problem(dict([item.split("=", 1)])) if "=" in item else None  # e.g. CODE_DROPOUT
        if "=" not in item or retired or item.split("=", 1)[0] not in CONFIG_VARIABLES:
            parser.error(retired or f"{item!r} is not VAR=VALUE with VAR one of {', '.join(sorted(CONFIG_VARIABLES))}")
    plm = args.plm
    if plm == "minilm":
        from bitcode_allennlp.plm import minilm_path

        plm = minilm_path()
    spec = TASKS[args.task]
    try:  # the default corpora: the fixture samples (bitcode_allennlp.resources)
        train, dev = args.train or resources.existing(spec["train"]), args.dev or resources.existing(spec["dev"])
    except FileNotFoundError as error:
        parser.error(str(error))
    settings = ExperimentSettings(
        args.task, args.out.resolve(), train.resolve(), dev.resolve(), test=args.test.resolve() if args.test else None,
        plm=plm, hashing_set=args.set, code_set=args.code_set,
        hashing_archive=args.hashing_archive.resolve() if args.hashing_archive else None, cuda_device=args.cuda_device,
        force=args.force, same_train_sentences=args.same_train_sentences, in_process=args.in_process,
        probe=not args.no_probe, deadline=args.deadline)
    experiment = Experiment(settings)
    try:
        row = experiment.run()
    except DeadlineReached as stopped:
        print(stopped, file=sys.stderr, flush=True)
        raise SystemExit(DEADLINE_STATUS) from None
    print(table([row]))
    if row["diagnostics"] is not None:
        from bitcode_allennlp.bits.probe import summary_line

        print(summary_line(row["diagnostics"]))
    return row


if __name__ == "__main__":
    main()

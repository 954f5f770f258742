"""Self-contained archives: the PLM's configuration and tokenizer files travel inside `model.tar.gz`.

An AllenNLP archive holds the training config, the vocabulary and the weights (the PLM's fine-tuned weights
included). The config's `plm_words`, `pretrained_transformer` and `pretrained_transformer_mismatched` indexers,
tokenizers and embedders name the PLM by `model_name`, a directory or a hub name, and loading rebuilds the
tokenizer and the transformer from there: the archive breaks when that directory is moved or deleted, and needs
the network for a hub name. Two steps repair that:

* archiving, `add_transformer_files(serialization_dir)`: every PLM named in `config.json` gets a copy of its files
  except the weights (`config.json`, tokenizer files, README) in `<serialization_dir>/transformers/<name>/`
  (a hub name is saved with `save_pretrained` instead), listed in `transformers/index.json` under a portable
  key (`host/archive_files.py`: `package:<module>/<folder>`, `archive:<folder>`, a hub name) -> folder; the archive
  includes the `transformers` folder, and its `config.json` names each PLM by that key (`write_archive`);
* loading, `use_archived_transformers(config, serialization_dir)`: each such `model_name` in the dataset
  readers and the model points at the archive's copy, and the model's embedders get `load_weights: false`
  (AllenNLP builds the transformer from its config; the weights come from the archive's state dict).

`install_self_contained_archives` (an extension, patch ``self_contained_archives``, installed when
`allennlp.models.archival` is imported; `bitcode_allennlp.host.extensions`) calls both around AllenNLP's `archive_model`
and `load_archive`, so `allennlp train`, `predict`, `evaluate` and `load_archive` need no option. Archives without a
PLM, and archives without `transformers/index.json`, are made and loaded as AllenNLP makes and loads them.
The serialization folder's `config.json` keeps the original `model_name` (`transformers/sources.json` maps it to
its key), so `allennlp train --recover` and the record of what was trained are unchanged.

The same patch checks what `load_archive` is given before AllenNLP builds anything (`check_archive`): a folder or
`model.tar.gz` whose `config.json` is not a JSON object with `model` and `dataset_reader` objects, that names a
retired option archives cannot load with (`bitcode_allennlp.host.retired`; the keys of retired training-only options
are left out when the model is built), or that holds no weights (`weights.th` or `best.th`, unless `weights_file` is
given), raises `ArchiveError` ``<archive>: <what is wrong>`` (a `ConfigurationError`: one line through the
`allennlp` command) instead of AllenNLP's `AttributeError`. A `model.tar.gz` is read as a stream up to its config
and weights entries (the first two of AllenNLP's archives), not extracted; one that cannot be read at all (empty,
truncated, not a gzipped tar) is left to `bad_input.extracted_archive`, which names what is wrong. Standard library
only at import time (imported while AllenNLP loads).
"""
import contextvars
import json
import logging
import os
import pickle
import re
import shutil
import tarfile
import zlib
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

from bitcode_allennlp.host.archive_files import (CONFIG_NAME, SOURCES_NAME, TRANSFORMERS_DIR, drop_local_source,
                                                  frozen_names, model_name_params, portable_key, read_sources,
                                                  write_archive)
from bitcode_allennlp.host.patching import patch
from bitcode_allennlp.host.retired import archive_problem, drop_retired_keys

logger = logging.getLogger(__name__)

INDEX_NAME = "index.json"
# Component types (indexers, tokenizer, embedders) that build a Hugging Face model or tokenizer from `model_name`.
TRANSFORMER_TYPES = ("pretrained_transformer", "pretrained_transformer_mismatched", "plm_words")
# Files that hold weights: not copied (the archive's state dict has them).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".h5", ".msgpack", ".ckpt", ".pt", ".pth", ".onnx", ".ot", ".gguf",
                   ".tflite")
WEIGHTS_NAMES = ("weights.th", "best.th")
"""The weights `load_archive` reads from an archive (`weights.th`) or a serialization folder (`best.th`)."""
REQUIRED_SECTIONS = ("model", "dataset_reader")
"""Sections of `config.json` that `load_archive` builds from (`validation_dataset_reader` is optional)."""


def transformer_params(config: Any) -> Iterator[Dict[str, Any]]:
    """Every dict in a (JSON) config that builds a pretrained transformer or its tokenizer from `model_name`."""
    return (params for params in model_name_params(config) if params.get("type") in TRANSFORMER_TYPES)


def read_index(serialization_dir: Union[str, os.PathLike]) -> Dict[str, str]:
    """Key (`archive_files.portable_key`, or the `model_name` in archives made before) -> folder under
    `transformers/` of an archive or serialization directory ({} if none)."""
    path = os.path.join(serialization_dir, TRANSFORMERS_DIR, INDEX_NAME)
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def add_transformer_files(serialization_dir: Union[str, os.PathLike]) -> List[str]:
    """
    Copies the non-weight files of every PLM named in `<serialization_dir>/config.json` into
    `<serialization_dir>/transformers/` and returns the paths to add to `include_in_archive`
    (`["transformers"]`, or `[]` when the config names no PLM).

    A `model_name` that is a directory is copied (its top-level files, without weights and hidden files);
    otherwise it is a hub name, saved by `AutoConfig` / `AutoTokenizer.save_pretrained`. When the PLM cannot be
    found any more (archiving again after it was deleted), the copy made before is kept.
    """
    with open(os.path.join(serialization_dir, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    names = sorted({params["model_name"] for params in transformer_params(config)})
    if not names:
        return []
    root = os.path.join(serialization_dir, TRANSFORMERS_DIR)
    previous, frozen = read_index(serialization_dir), frozen_names(config)
    before = {name: previous.get(key) for name, key in read_sources(serialization_dir).items()}
    index: Dict[str, str] = {}
    sources: Dict[str, str] = {}
    for name in names:
        folder = (before.get(name) or previous.get(name)
                  or _free_folder_name(name, set(previous.values()) | set(index.values())))
        target = os.path.join(root, folder)
        if os.path.isdir(name):
            _copy_without_weights(name, target)
        elif folder in previous.values() and os.path.isdir(target):
            logger.info("PLM %s not found; keeping the copy archived before (%s)", name, target)
        else:
            _save_pretrained(name, target)
        key = portable_key(name, folder, name in frozen)
        index[key] = folder
        if key != name:
            sources[name] = key
        logger.info("PLM %s: configuration and tokenizer in %s, for the archive", name, target)
    for entry in os.listdir(root):  # copies of PLMs the config no longer names
        if entry not in index.values() and os.path.isdir(os.path.join(root, entry)):
            shutil.rmtree(os.path.join(root, entry))
    for name, written in ((INDEX_NAME, index), (SOURCES_NAME, sources)):
        with open(os.path.join(root, name), "w", encoding="utf-8") as f:
            json.dump(written, f, indent=2)
    return [TRANSFORMERS_DIR]


def use_archived_transformers(config, serialization_dir: Union[str, os.PathLike]) -> None:
    """
    Rewrites `config` (an AllenNLP `Params` of an extracted archive, in place): each `model_name` listed in the
    archive's `transformers/index.json` becomes the path of the archived copy, and the model's transformer
    embedders get `load_weights: false`. Does nothing for an archive without that index.
    """
    index = read_index(serialization_dir)
    if not index:
        return
    sources = read_sources(serialization_dir)  # a serialization folder: its config has the originals
    for section, value in config.params.items():
        for params in transformer_params(value):
            folder = index.get(sources.get(params["model_name"], params["model_name"]))
            if folder is None:
                continue
            if not isinstance(folder, str) or folder in ("", ".", "..") or "/" in folder or "\\" in folder:
                from bitcode_allennlp.host.errors import ArchiveError

                raise ArchiveError(_LOADING.get() or serialization_dir, f"refused: its {TRANSFORMERS_DIR}/"
                                   f"{INDEX_NAME} names the folder {folder!r}, not a folder inside {TRANSFORMERS_DIR}/")
            params["model_name"] = os.path.join(serialization_dir, TRANSFORMERS_DIR, folder)
            if section == "model":
                params["load_weights"] = False


# ------------------------------------------------------------------------------------------------ checking archives


def config_problem(text: Union[str, bytes], overrides: Any = "") -> Optional[str]:
    """
    What is wrong with the text of an archive's `config.json` for `load_archive`, or `None`: it must be a plain
    JSON object (never jsonnet: `allennlp train` writes JSON, and jsonnet could read files and the environment) with
    `model` and `dataset_reader` objects (or a type name, AllenNLP's short form); with `overrides` only the object
    is required (they may add sections).
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            return (f"not a model archive, or a damaged one: its {CONFIG_NAME} is not UTF-8 text (byte "
                    f"{error.start + 1})")
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        return (f"not a model archive, or a damaged one: its {CONFIG_NAME} is not JSON ({error.msg} at line "
                f"{error.lineno}, column {error.colno}); an archive's config is read as plain JSON, never evaluated "
                "as jsonnet")
    if not isinstance(config, dict):
        return (f"not a model archive: its {CONFIG_NAME} is a JSON {_json_type(config)}, not an object with "
                "\"model\" and \"dataset_reader\"")
    refused = _refused_setting(config) or archive_problem(config)
    if refused is not None:
        return refused
    if overrides:
        return None
    for section in REQUIRED_SECTIONS + ("validation_dataset_reader",):
        value = config.get(section)
        if value is None and section != "validation_dataset_reader":
            return f"not a model archive: its {CONFIG_NAME} has no \"{section}\" object"
        if value is not None and not (isinstance(value, dict) or (isinstance(value, str) and value)):
            return (f"not a model archive: in its {CONFIG_NAME}, \"{section}\" is a JSON {_json_type(value)}, "
                    "not an object")
    return None


def _refused_setting(value: Any, where: str = "") -> Optional[str]:
    """A setting no archive may carry: `trust_remote_code` (transformers would run the Python files of the PLM's
    folder), or a `package:` PLM name that is not an import name and a plain folder inside it."""
    if isinstance(value, dict):
        for key, item in value.items():
            at = f"{where}.{key}" if where else str(key)
            if key == "trust_remote_code" and item:
                return (f"refused: its {CONFIG_NAME} sets trust_remote_code ({at}): loading would run Python code "
                        "from the PLM's folder")
            found = _refused_setting(item, at)
            if found is not None:
                return found
    elif isinstance(value, list):
        return next((f for f in (_refused_setting(item, f"{where}[{n}]") for n, item in enumerate(value)) if f), None)
    elif isinstance(value, str) and value.startswith("package:"):
        from bitcode_allennlp.plm import package_parts

        try:
            package_parts(value)
        except ValueError as error:
            return f"refused: in its {CONFIG_NAME}, {where}: {error}"
    return None


def _json_type(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def _archive_members(path: str) -> Tuple[Optional[bytes], bool, bool]:
    """`(config.json's bytes or None, weights found, the whole archive read)` of a `model.tar.gz`, read as a stream
    and stopped once both entries are found. `tarfile` / gzip errors propagate."""
    config: Optional[bytes] = None
    weights = False
    with tarfile.open(path, "r|gz") as archive:
        for member in archive:
            name = os.path.normpath(member.name)
            if name == CONFIG_NAME and member.isfile():
                handle = archive.extractfile(member)
                config = handle.read() if handle is not None else b""
            elif name in WEIGHTS_NAMES and member.isfile():
                weights = True
            if config is not None and weights:
                return config, weights, False
    return config, weights, True


def check_archive(archive_file: Union[str, os.PathLike], weights_file: Optional[str] = None,
                  overrides: Any = "") -> None:
    """
    Raises `ArchiveError` naming `archive_file` (a serialization folder or a `model.tar.gz`) when `load_archive`
    would fail on its contents: a `config.json` that is not a JSON object with `model` and `dataset_reader` objects
    (`config_problem`), or no weights (`weights.th` or `best.th`) when `weights_file` is not given. A path that does
    not exist locally, and a file that is not a readable gzipped tar, are left to `load_archive` (AllenNLP's
    `cached_path` and `bad_input.extracted_archive` report those).
    """
    from bitcode_allennlp.host.errors import ArchiveError

    path = os.fspath(archive_file)
    if os.path.isdir(path):
        config_path = os.path.join(path, CONFIG_NAME)
        if not os.path.isfile(config_path):
            raise ArchiveError(path, f"not a model archive: the folder has no {CONFIG_NAME}")
        with open(config_path, "rb") as handle:
            problem = config_problem(handle.read(), overrides)
        if problem is None and not weights_file and not any(
                os.path.isfile(os.path.join(path, name)) for name in WEIGHTS_NAMES):
            problem = (f"no weights in the folder ({' or '.join(WEIGHTS_NAMES)}): not a model archive, or a "
                       "training run that stopped before its first checkpoint")
    elif os.path.isfile(path):
        try:
            config, weights, complete = _archive_members(path)
        except (tarfile.TarError, EOFError, zlib.error, OSError):
            return  # not a readable model.tar.gz: extracted_archive says what is wrong
        if config is None:
            return  # no config.json: extracted_archive says so
        problem = config_problem(config, overrides)
        if problem is None and complete and not weights and not weights_file:
            problem = (f"no weights inside ({' or '.join(WEIGHTS_NAMES)}): not a model archive made by "
                       "'allennlp train'")
    else:
        return
    if problem is not None:
        raise ArchiveError(path, problem)


def read_archive_config(archive_file: Union[str, os.PathLike]) -> Dict[str, Any]:
    """
    The training config of an archive (a `model.tar.gz`, read as a stream up to its `config.json`, or a
    serialization folder), as a dict, after `check_archive`; `ArchiveError` naming the archive when it cannot be
    read. Standard library only: the Python API and `allennlp bits package` read configs without AllenNLP.
    """
    from bitcode_allennlp.host.errors import ArchiveError

    check_archive(archive_file)
    path = os.fspath(archive_file)
    try:
        if os.path.isdir(path):
            with open(os.path.join(path, CONFIG_NAME), "rb") as handle:
                text: Optional[bytes] = handle.read()
        else:
            text = _archive_members(path)[0]
    except (tarfile.TarError, EOFError, zlib.error, OSError) as error:
        raise ArchiveError(path, f"not a readable model archive ({error})") from None
    if text is None:
        raise ArchiveError(path, f"not a model archive: no {CONFIG_NAME} inside")
    return json.loads(text)  # check_archive found a JSON object


# ------------------------------------------------------------------------------------------------ untrusted archives


def unsafe_member(member: tarfile.TarInfo) -> Optional[str]:
    """Why an archive's member must not be extracted (``"is a symbolic link (to '/etc')"``), or `None`: only regular
    files and folders whose names stay inside the archive's folder, without set-user/group-ID bits. Shared by loading
    (`checked_members`) and `allennlp bits package`."""
    name = member.name
    if not name or "\x00" in name:
        return "has an empty name"
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        return "has an absolute name"
    if ".." in re.split(r"[/\\]", name):
        return "has a '..' in its name (it would extract outside the model's folder)"
    if member.issym():
        return f"is a symbolic link (to {member.linkname!r})"
    if member.islnk():
        return f"is a hard link (to {member.linkname!r})"
    if member.ischr() or member.isblk():
        return "is a device"
    if member.isfifo():
        return "is a named pipe"
    if not (member.isfile() or member.isdir()):
        return f"is not a file or a folder (tar type {member.type!r})"
    if member.mode & 0o6000:
        return "has the set-user-ID or set-group-ID bit"
    return None


def member_checker() -> Callable[[tarfile.TarInfo], Optional[str]]:
    """A check of an archive's members in their order: `unsafe_member`, and a name that comes twice (a tar may hold
    two `config.json`: one would be checked or described, the other extracted). Shared by loading and packaging."""
    seen: set = set()

    def check(member: tarfile.TarInfo) -> Optional[str]:
        problem = unsafe_member(member)
        if problem is None:
            name = os.path.normpath(member.name)
            if name in seen and not member.isdir():
                return "appears twice (one copy would be checked, the other extracted)"
            seen.add(name)
        return problem

    return check


def checked_members(path: str, members: List[tarfile.TarInfo]) -> List[tarfile.TarInfo]:
    """`members` of the archive `path` when every one passes `member_checker`; else `ArchiveError` naming the
    member."""
    from bitcode_allennlp.host.errors import ArchiveError

    check = member_checker()
    for member in members:
        problem = check(member)
        if problem is not None:
            raise ArchiveError(path, f"refused: its member {member.name!r} {problem}; a model archive holds only "
                               "files and folders inside its own folder (was it made by 'allennlp train'?)")
    return members


_LOADING: "contextvars.ContextVar[Optional[str]]" = contextvars.ContextVar("bitcode_loading_archive", default=None)
"""The archive `load_archive` is building from in this context (its config is untrusted), or `None`."""


@contextmanager
def untrusted_config(archive: Union[str, os.PathLike]) -> Iterator[None]:
    """For the block, AllenNLP reads configs as an archive's (`install_untrusted_archives`): plain JSON, and only
    registered names as a `type`."""
    token = _LOADING.set(os.fspath(archive))
    try:
        yield
    finally:
        _LOADING.reset(token)


def loading_archive() -> bool:
    """Whether `load_archive` is building from an archive in this context (`untrusted_config`)."""
    return _LOADING.get() is not None


def plain_json_file(filename: str, archive: str) -> str:
    """The text of an archive's config file when it is plain JSON; `ArchiveError` naming `archive` otherwise."""
    from bitcode_allennlp.host.errors import ArchiveError

    with open(filename, "rb") as handle:
        text = handle.read()
    problem = config_problem(text, overrides="any")
    if problem is not None:
        raise ArchiveError(archive, problem)
    return text.decode("utf-8")


def install_untrusted_archives(module) -> None:
    """`allennlp.models.archival`: while `load_archive` builds from an archive (`untrusted_config`), its config is
    read as plain JSON (`evaluate_file` does not run jsonnet: no file imports, no environment) and a `type` must be
    a registered name (`Registrable.resolve_class_name` does not import a dotted path)."""
    from allennlp.common import params
    from allennlp.common.registrable import Registrable

    from bitcode_allennlp.host.errors import ArchiveError

    reason = ("a model archive's config is untrusted: read as plain JSON, and only registered names as a type (no "
              "dotted path imported)")

    def json_in_archives(original):
        def evaluate_file(filename, *args, **kwargs):
            archive = _LOADING.get()
            if archive is None:
                return original(filename, *args, **kwargs)
            return plain_json_file(filename, archive)

        return evaluate_file

    def registered_only(original):
        resolve = original.__func__

        def resolve_class_name(cls, name):
            archive = _LOADING.get()
            if archive is not None and isinstance(name, str) and name not in Registrable._registry[cls]:
                raise ArchiveError(archive, f"refused: its config.json names the {cls.__name__} type {name!r}, which "
                                   "is not a registered name; an archive's config may name registered components "
                                   "only, never a Python path to import")
            return resolve(cls, name)

        return classmethod(resolve_class_name)

    patch(params, "evaluate_file", json_in_archives, everywhere=True, mark="untrusted_archives", reason=reason)
    patch(Registrable, "resolve_class_name", registered_only, mark="untrusted_archives", reason=reason)


def _free_folder_name(name: str, taken: set) -> str:
    base = os.path.basename(os.path.normpath(name)) or "plm"
    folder, number = base, 1
    while folder in taken or folder == INDEX_NAME:
        number += 1
        folder = f"{base}-{number}"
    return folder


def _copy_without_weights(source: str, target: str) -> None:
    if os.path.isdir(target):
        shutil.rmtree(target)
    os.makedirs(target)
    for entry in sorted(os.listdir(source)):
        path = os.path.join(source, entry)
        if os.path.isfile(path) and not entry.startswith(".") and not entry.endswith(WEIGHT_SUFFIXES):
            shutil.copyfile(path, os.path.join(target, entry))
            if entry in ("config.json", "tokenizer_config.json"):
                drop_local_source(os.path.join(target, entry))


def _save_pretrained(name: str, target: str) -> None:
    from transformers import AutoConfig, AutoTokenizer

    if os.path.isdir(target):
        shutil.rmtree(target)
    AutoConfig.from_pretrained(name).save_pretrained(target)
    AutoTokenizer.from_pretrained(name).save_pretrained(target)


def install_self_contained_archives(module) -> None:
    """`allennlp.models.archival`: `archive_model` adds the PLM's files (`add_transformer_files`), loading points
    the config at them (`use_archived_transformers`), and `load_archive` checks the archive first (`check_archive`)."""
    reason = ("archives carry the PLM's config and tokenizer and load from them; an archive whose config.json is not "
              "a model config, or without weights, raises ArchiveError")

    def with_transformer_files(original_archive):
        def archive_model(serialization_dir, weights=module._DEFAULT_WEIGHTS, archive_path=None,
                          include_in_archive=None):
            include = list(include_in_archive or [])
            try:
                include += [path for path in add_transformer_files(serialization_dir) if path not in include]
            except Exception:  # the archive must still be written after a long training; it just needs the PLM
                logger.exception("Could not add the PLM's files to the archive; it will need the PLM to load")
            return write_archive(module, serialization_dir, weights, archive_path, include)

        return archive_model

    def readers_from_archive(original):
        def _load_dataset_readers(config, serialization_dir):
            use_archived_transformers(config, serialization_dir)
            return original(config, serialization_dir)

        return _load_dataset_readers

    def model_from_archive(original):
        def _load_model(config, weights_path, serialization_dir, cuda_device):
            use_archived_transformers(config, serialization_dir)
            drop_retired_keys(config.params)  # training-only options of 0.2 archives (host/retired.py)
            return original(config, weights_path, serialization_dir, cuda_device)

        return _load_model

    def checked_load_archive(original_load):
        def load_archive(archive_file, cuda_device=-1, overrides="", weights_file=None):
            check_archive(archive_file, weights_file, overrides)
            with untrusted_config(archive_file):
                try:
                    return original_load(archive_file, cuda_device, overrides, weights_file)
                except pickle.UnpicklingError as error:  # torch.load(weights_only=True) met more than tensors
                    from bitcode_allennlp.host.errors import ArchiveError

                    lines = [line.strip() for line in str(error).splitlines()]
                    found = next((line for line in lines if "unsupported global" in line.lower()), "")
                    raise ArchiveError(archive_file, "refused: its weights are not plain tensors" + (
                        f" ({found.rstrip('.')})" if found else "") + "; torch loads weights without running pickled "
                        "code (weights_only)") from None

        return load_archive

    # `everywhere`: also `allennlp.commands.train`'s imported name
    patch(module, "archive_model", with_transformer_files, everywhere=True, mark="self_contained_archives",
          reason=reason)
    # `everywhere`: also the names imported by `allennlp.models`, `predict`, `evaluate`, ... (check_archive)
    patch(module, "load_archive", checked_load_archive, everywhere=True, mark="self_contained_archives",
          reason=reason)
    patch(module, "_load_dataset_readers", readers_from_archive, mark="self_contained_archives", reason=reason)
    patch(module, "_load_model", model_from_archive, mark="self_contained_archives", reason=reason)

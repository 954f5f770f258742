"""What an archive carries instead of the trainer's paths, and the writing of `model.tar.gz`.

`host/archival.py` copies each PLM's configuration and tokenizer into `<serialization_dir>/transformers/` and lists
them in `transformers/index.json` under a portable key (`portable_key`: `package:<module>/<folder>` for a folder of
an installed Python package, `archive:<folder>` for another local folder, a hub name as it is);
`transformers/sources.json` (serialization folder only) maps the training config's `model_name` to that key.
`write_archive` writes AllenNLP's archive with `portable_config` as its `config.json`, so that a `model.tar.gz`, and
a wheel made from it, holds no absolute path of the machine it was trained on. Standard library only at import.
"""
import io
import json
import logging
import os
import re
import tarfile
from typing import Any, Dict, Iterator, List, Optional, Tuple

logger = logging.getLogger(__name__)

FROZEN_TYPES = ("frozen_plm_words",)
"""Embedders of a frozen PLM: its weights are not in the archive, they are read from `model_name` at load time."""
ARCHIVE_PREFIX = "archive:"
"""The portable name of a local PLM folder whose copy is in the archive: `archive:<folder under transformers/>`."""
DATA_PATH_KEYS = ("train_data_path", "validation_data_path", "test_data_path")
CONFIG_NAME = "config.json"
TRANSFORMERS_DIR = "transformers"
SOURCES_NAME = "sources.json"
"""In a serialization folder only (never archived): the training config's `model_name` -> its key in the index."""


def frozen_names(config: Any) -> set:
    """The `model_name`s of the frozen embedders of a (JSON) config (their weights are read from there)."""
    embedders = config.get("model", {}).get("text_field_embedder", {}).get("token_embedders", {}) \
        if isinstance(config, dict) else {}
    return {e["model_name"] for e in embedders.values() if isinstance(e, dict) and e.get("type") in FROZEN_TYPES
            and isinstance(e.get("model_name"), str)} if isinstance(embedders, dict) else set()


def portable_key(name: str, folder: str, frozen: bool) -> str:
    """What an archive calls the PLM `name` (copied to `transformers/<folder>`): `package:<module>/<folder inside>`
    for a folder inside an installed Python package, `archive:<folder>` for another local folder, a hub name as it
    is; a frozen PLM's local folder stays its path (its weights are read from there: not portable)."""
    from bitcode_allennlp.plm import package_name

    try:
        found = package_name(name)
    except ValueError:
        found = None
    if found is not None:
        return found
    local = os.path.isabs(name) or name.startswith((".", "~")) or os.path.isdir(name)
    return name if frozen or not local else f"{ARCHIVE_PREFIX}{folder}"

def portable_config(config: Dict[str, Any], sources: Dict[str, str]) -> Dict[str, Any]:
    """The config an archive carries (a copy): each `model_name` as the archive's index names it (`sources`), and
    absolute data paths as their file names, so that it holds no path of the trainer's machine. The serialization
    folder's `config.json` keeps the originals (`--recover` compares them)."""
    config = json.loads(json.dumps(config))
    for params in model_name_params(config):
        params["model_name"] = sources.get(params["model_name"], params["model_name"])
    for key in DATA_PATH_KEYS:
        if isinstance(config.get(key), str) and os.path.isabs(config[key]):
            config[key] = os.path.basename(os.path.normpath(config[key]))
    return config


def config_dicts(value: Any, where: str = "", key: str = "") -> Iterator[Tuple[str, str, dict]]:
    """(path, its key, dict) for each dict in a JSON config, depth first (``model.code_head``, ``code_head``,
    {...}); the one walker over configs (model names here, retired keys in `host/retired.py`)."""
    if isinstance(value, dict):
        yield where, key, value
        for name, item in value.items():
            yield from config_dicts(item, f"{where}.{name}" if where else str(name), str(name))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from config_dicts(item, f"{where}[{n}]", key)


def model_name_params(config: Any) -> Iterator[Dict[str, Any]]:
    """Every dict in a (JSON) config with a string `model_name` (transformers, tokenizers, frozen embedders)."""
    return (params for _, _, params in config_dicts(config) if isinstance(params.get("model_name"), str))


def drop_local_source(path: str) -> None:
    """`save_pretrained` records where a model was read from (`_name_or_path`, `name_or_path`): an absolute path of
    the trainer's machine becomes the folder's name in the copy (informational only)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return
    if not isinstance(data, dict):
        return
    keys = [key for key in ("_name_or_path", "name_or_path")
            if isinstance(data.get(key), str) and os.path.isabs(data[key])]
    for key in keys:
        data[key] = os.path.basename(os.path.normpath(data[key]))
    if keys:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)

def write_archive(module, serialization_dir: str, weights: str, archive_path: Optional[str],
                  include: List[str]) -> str:
    """AllenNLP's `archive_model` (the same members, names and errors), with `portable_config` as `config.json` and
    without the serialization folder's `transformers/sources.json`: an archive holds no path of the trainer's."""
    import glob

    weights_file = weights if os.path.isabs(weights) else os.path.join(serialization_dir, weights)
    config_file = os.path.join(serialization_dir, CONFIG_NAME)
    for what, path in (("weights", weights_file), ("config", config_file)):
        if not os.path.exists(path):
            raise RuntimeError(f"{what} file '{path}' does not exist, unable to archive model")
    archive_file = os.path.join(serialization_dir, "model.tar.gz") if archive_path is None else archive_path
    if os.path.isdir(archive_file):
        archive_file = os.path.join(archive_file, "model.tar.gz")
    with open(config_file, encoding="utf-8") as f:
        config = portable_config(json.load(f), read_sources(serialization_dir))
    data = json.dumps(config, indent=4).encode("utf-8")
    skipped = os.path.join(serialization_dir, TRANSFORMERS_DIR, SOURCES_NAME)
    logger.info("archiving weights and vocabulary to %s", archive_file)
    with tarfile.open(archive_file, "w:gz") as archive:
        member = tarfile.TarInfo(CONFIG_NAME)
        member.size, member.mtime, member.mode = len(data), int(os.path.getmtime(config_file)), 0o644
        archive.addfile(member, io.BytesIO(data))
        archive.add(weights_file, arcname=module._WEIGHTS_NAME)
        archive.add(os.path.join(serialization_dir, "vocabulary"), arcname="vocabulary")
        meta_file = os.path.join(serialization_dir, module.META_NAME)
        if os.path.exists(meta_file):
            archive.add(meta_file, arcname=module.META_NAME)
        for target in include:
            for path in glob.glob(os.path.join(serialization_dir, target)):
                archive.add(path, arcname=path[len(os.path.join(serialization_dir, "")):],
                            filter=lambda info: None if os.path.join(serialization_dir, info.name) == skipped
                            else info)
    return str(archive_file)


def read_sources(serialization_dir: str) -> Dict[str, str]:
    """A serialization folder's `transformers/sources.json` ({} if none)."""
    path = os.path.join(serialization_dir, TRANSFORMERS_DIR, SOURCES_NAME)
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def machine_paths(value: Any, where: str = "") -> Iterator[Tuple[str, str]]:
    """(dotted key, value) of each absolute path in a (JSON) config: a path of the machine that trained it."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from machine_paths(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for number, item in enumerate(value):
            yield from machine_paths(item, f"{where}[{number}]")
    elif isinstance(value, str) and (value.startswith(("/", "~")) or re.match(r"[A-Za-z]:[\\/]", value)):
        yield where, value


CHECKPOINT_PATTERNS = ("model_state_e*.th", "training_state_e*.th")
"""AllenNLP's per-epoch checkpoints in a serialization folder (for `--recover`); `best.th` and the archive hold the
trained model."""


def drop_checkpoints(serialization_dir: str) -> int:
    """Removes a finished training's per-epoch checkpoints (`CHECKPOINT_PATTERNS`); returns the bytes freed."""
    import glob

    freed = 0
    for pattern in CHECKPOINT_PATTERNS:
        for path in glob.glob(os.path.join(glob.escape(str(serialization_dir)), pattern)):
            freed += os.path.getsize(path)
            os.remove(path)
    return freed

"""Self-contained archives: the PLM's configuration and tokenizer files travel inside `model.tar.gz`.

An AllenNLP archive holds the training config, the vocabulary and the weights (the PLM's fine-tuned weights
included). The config's `plm_words`, `pretrained_transformer` and `pretrained_transformer_mismatched` indexers, tokenizers and
embedders name the PLM by `model_name`, a directory or a hub name, and loading rebuilds the tokenizer and the
transformer from there: the archive breaks when that directory is moved or deleted, and needs the network for a
hub name. Two steps repair that:

* archiving, `add_transformer_files(serialization_dir)`: every PLM named in `config.json` gets a copy of its files
  except the weights (`config.json`, tokenizer files, README) in `<serialization_dir>/transformers/<name>/`
  (a hub name is saved with `save_pretrained` instead), listed in `transformers/index.json`
  (`model_name` -> folder); the archive includes the `transformers` folder;
* loading, `use_archived_transformers(config, serialization_dir)`: each such `model_name` in the dataset
  readers and the model points at the archive's copy, and the model's embedders get `load_weights: false`
  (AllenNLP builds the transformer from its config; the weights come from the archive's state dict).

`install_self_contained_archives` (an extension, patch ``self_contained_archives``, installed when
`allennlp.models.archival` is imported; `bitcode_allennlp.extensions`) calls both around AllenNLP's `archive_model`
and `load_archive`, so `allennlp train`, `predict`, `evaluate` and `load_archive` need no option. Archives without a
PLM, and archives made before this existed (no `transformers/index.json`), are made and loaded as before.
`config.json` keeps the original `model_name`, so `allennlp train --recover` and the record of what was trained
are unchanged. Standard library only at import time (imported while AllenNLP loads).
"""
import json
import logging
import os
import shutil
from typing import Any, Dict, Iterator, List, Union

from bitcode_allennlp.patching import patch

logger = logging.getLogger(__name__)

TRANSFORMERS_DIR = "transformers"
INDEX_NAME = "index.json"
# Component types (indexers, tokenizer, embedders) that build a Hugging Face model or tokenizer from `model_name`.
TRANSFORMER_TYPES = ("pretrained_transformer", "pretrained_transformer_mismatched", "plm_words")
# Files that hold weights: not copied (the archive's state dict has them).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".h5", ".msgpack", ".ckpt", ".pt", ".pth", ".onnx", ".ot", ".gguf",
                   ".tflite")


def transformer_params(config: Any) -> Iterator[Dict[str, Any]]:
    """Every dict in a (JSON) config that builds a pretrained transformer or its tokenizer from `model_name`."""
    if isinstance(config, dict):
        if config.get("type") in TRANSFORMER_TYPES and isinstance(config.get("model_name"), str):
            yield config
        for value in config.values():
            yield from transformer_params(value)
    elif isinstance(config, list):
        for value in config:
            yield from transformer_params(value)


def read_index(serialization_dir: Union[str, os.PathLike]) -> Dict[str, str]:
    """`model_name` -> folder under `transformers/` of an archive or serialization directory ({} if none)."""
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
    previous = read_index(serialization_dir)
    index: Dict[str, str] = {}
    for name in names:
        folder = previous.get(name) or _free_folder_name(name, set(previous.values()) | set(index.values()))
        target = os.path.join(root, folder)
        if os.path.isdir(name):
            _copy_without_weights(name, target)
        elif name in previous and os.path.isdir(target):
            logger.info("PLM %s not found; keeping the copy archived before (%s)", name, target)
        else:
            _save_pretrained(name, target)
        index[name] = folder
        logger.info("PLM %s: configuration and tokenizer in %s, for the archive", name, target)
    for entry in os.listdir(root):  # copies of PLMs the config no longer names
        if entry not in index.values() and os.path.isdir(os.path.join(root, entry)):
            shutil.rmtree(os.path.join(root, entry))
    with open(os.path.join(root, INDEX_NAME), "w", encoding="utf-8") as f:
        json.dump(index, f, indent=2)
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
    for section, value in config.params.items():
        for params in transformer_params(value):
            folder = index.get(params["model_name"])
            if folder is None:
                continue
            params["model_name"] = os.path.join(serialization_dir, TRANSFORMERS_DIR, folder)
            if section == "model":
                params["load_weights"] = False


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


def _save_pretrained(name: str, target: str) -> None:
    from transformers import AutoConfig, AutoTokenizer

    if os.path.isdir(target):
        shutil.rmtree(target)
    AutoConfig.from_pretrained(name).save_pretrained(target)
    AutoTokenizer.from_pretrained(name).save_pretrained(target)


def install_self_contained_archives(module) -> None:
    """`allennlp.models.archival`: `archive_model` adds the PLM's files (`add_transformer_files`) and loading points
    the config at them (`use_archived_transformers`)."""
    reason = "archives carry the PLM's config and tokenizer and load from them"

    def with_transformer_files(original_archive):
        def archive_model(serialization_dir, weights=module._DEFAULT_WEIGHTS, archive_path=None,
                          include_in_archive=None):
            include = list(include_in_archive or [])
            try:
                include += [path for path in add_transformer_files(serialization_dir) if path not in include]
            except Exception:  # the archive must still be written after a long training; it just needs the PLM
                logger.exception("Could not add the PLM's files to the archive; it will need the PLM to load")
            return original_archive(serialization_dir, weights, archive_path, include or None)

        return archive_model

    def readers_from_archive(original):
        def _load_dataset_readers(config, serialization_dir):
            use_archived_transformers(config, serialization_dir)
            return original(config, serialization_dir)

        return _load_dataset_readers

    def model_from_archive(original):
        def _load_model(config, weights_path, serialization_dir, cuda_device):
            use_archived_transformers(config, serialization_dir)
            return original(config, weights_path, serialization_dir, cuda_device)

        return _load_model

    # `everywhere`: also `allennlp.commands.train`'s imported name
    patch(module, "archive_model", with_transformer_files, everywhere=True, mark="self_contained_archives",
          reason=reason)
    patch(module, "_load_dataset_readers", readers_from_archive, mark="self_contained_archives", reason=reason)
    patch(module, "_load_model", model_from_archive, mark="self_contained_archives", reason=reason)

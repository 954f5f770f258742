"""The kinds of config variable (`Variable`, `Group`): what each accepts, how a value is read into the typed value
the configs get, and what is wrong with a bad one; `bitcode_allennlp.host.config_declaration` declares the variables
with them, `bitcode_allennlp.host.config_variables` checks and renders them.

A value is text (an environment variable): `Variable.value` reads it into the value jsonnet gets (a number, a
boolean, a string, `null` for ``MAX_LENGTH=none``), and each default is written the same way, as text a user could
set, so that a default and a set value are read alike. Standard library only (imported while AllenNLP loads); torch
only for ``CUDA_DEVICE`` >= 0.
"""
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

# ------------------------------------------------------------------------------------------------ reading a value

SPACES = " \t\n\r"
"""What is stripped around a number or a boolean."""
NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
"""A decimal number as a config variable (`24`, `-1`, `7e-5`, `.5`, `+2`); no `inf`, `nan`, `0x10`, `1_0`."""
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
NONE = ("none", "off", "null")
"""`MAX_LENGTH` values that switch the window off (common.libsonnet; any case, spaces and tabs stripped)."""
BOOLEAN = "a boolean (1/0, true/false, yes/no, on/off)"
SEEDS = ("random_seed", "numpy_seed", "pytorch_seed")
"""AllenNLP's three seeds, which ``SEED`` sets together."""
FROM_CODES = "from the TRAIN_DATA codes file"
"""A default read from the ``num_bits`` of the ``TRAIN_DATA`` codes file (`Variable.by_config`)."""


def _number(text: str) -> Optional[float]:
    """`text` read as a number (`None` when it is not one); `inf` for `1e999`."""
    text = text.strip(SPACES)
    return float(text) if NUMBER.fullmatch(text) else None


def _show(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else repr(number)


def _offline() -> bool:
    return any(os.environ.get(name, "").strip().upper() in ("1", "ON", "YES", "TRUE")
               for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


HUB_NAME = re.compile(r"(?:[\w.-]+/)?[\w.-]+")


def _hub_caches() -> List[str]:
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "huggingface")
    candidates = [os.environ.get("HF_HUB_CACHE"), os.environ.get("HUGGINGFACE_HUB_CACHE"),
                  os.environ.get("TRANSFORMERS_CACHE"), os.path.join(home, "hub")]
    return [path for path in candidates if path]


def _is_hub_name(text: str) -> bool:
    """A name the hub could resolve (``bert-base-cased``, ``org/model``) that does not look like a path."""
    return (bool(HUB_NAME.fullmatch(text)) and not text.startswith((".", "-")) and ".." not in text
            and "--" not in text and len(text) <= 96)


# ------------------------------------------------------------------------------------------------ the kinds

@dataclass(frozen=True)
class Variable:
    """
    One config variable: `kind` and range, its default, what it accepts (`problem`) and its typed value (`value`).

    kind : `str`
        ``number``, ``integer`` (a number with no fraction), ``boolean``, ``choice`` (one of `choices`, exactly),
        ``path`` (an existing file or folder), ``plm`` (a folder with a config.json, or a hub name),
        ``max_length`` (an integer, or one of `NONE`), ``plm_layer`` (``last``, ``mix`` or an integer), ``cuda``
        (an integer >= -1; >= 0 names a GPU that torch sees), ``seed`` (an integer: AllenNLP's three seeds).
    default : `Optional[str]`
        The default, written as a user would set it (``"7e-5"``, ``"true"``; a ``path`` or ``plm`` relative to
        the repository root); `None`: unset (the config leaves the setting out, or derives it: `shown` says how).
    by_config :
        (pattern, default) pairs that override `default` for some configs: the first whose pattern (`fnmatch`
        on the config's name without ``.jsonnet``, then optionally `` NAME=value`` on another variable's value)
        matches. `FROM_CODES`: read from the ``TRAIN_DATA`` codes file (``K`` of the validation stage).
    shown :
        The default as docs/configs.md shows it, where the rendered `default` and `by_config` would not say it.
    low, high, low_open, high_open :
        The range of a number or integer (`None`: open-ended; `*_open`: the bound itself excluded).
    choices_by_config :
        For a ``choice``: config file name -> (its choices, what they are), e.g. READER's NER readers.
    requires :
        (other variable, its value, why): this variable may be set only when the other has that value; `why`
        (``{}``: the other's value) ends the error, e.g. INPUT_SCHEME with READER=conll_columns.
    """

    name: str
    kind: str
    default: Optional[str]
    low: Optional[float] = None
    high: Optional[float] = None
    low_open: bool = False
    high_open: bool = False
    choices: Tuple[str, ...] = ()
    choices_by_config: Mapping[str, Tuple[Tuple[str, ...], str]] = field(default_factory=dict)
    by_config: Tuple[Tuple[str, Optional[str]], ...] = ()
    shown: Optional[str] = None
    requires: Tuple[str, ...] = ()

    def value(self, text: Optional[str]) -> Any:
        """The typed value of `text` (accepted by `problem`, or a declared default), as the configs get it:
        ``None`` -> null; a number (an int for an integer), a boolean, ``None`` for ``MAX_LENGTH=none``, AllenNLP's
        three seeds for a ``seed`` (a default may give them apart, ``13370, 1337, 133``), else the text itself."""
        if text is None:
            return None
        if self.kind == "boolean":
            return text.strip(SPACES).lower() in TRUE
        if self.kind == "max_length" and text.strip(" \t").lower() in NONE:
            return None
        if self.kind == "seed":
            seeds = [int(_number(part) or 0) for part in text.split(",")]
            return dict(zip(SEEDS, seeds * 3 if len(seeds) == 1 else seeds))
        if self.kind in ("number", "integer", "max_length", "cuda"):
            number = _number(text)
            return int(number) if self.kind != "number" else number  # type: ignore[arg-type]
        return text

    def shown_default(self) -> str:
        """The default as docs/configs.md shows it: `shown`, else `default` and each config's own."""
        if self.shown is not None:
            return self.shown
        own = "; ".join(f"`{pattern}`: {self._shown(text)}" for pattern, text in self.by_config)
        return self._shown(self.default) + (f" ({own})" if own else "")

    def _shown(self, text: Optional[str]) -> str:
        if text is None:
            return "unset"
        if text is FROM_CODES:
            return "the codes file's"
        return f"`{text}`" if self.kind in ("choice", "plm_layer", "path", "plm") else text

    def accepts(self) -> str:
        """What the variable accepts, as the error and the docs say it (``an integer in 1..63``)."""
        if self.kind == "boolean":
            return BOOLEAN
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "path":
            return "an existing file or folder"
        if self.kind == "plm":
            return "a model folder with a config.json (or a hub name, online)"
        if self.kind == "plm_layer":
            return "last, mix or a layer number"
        if self.kind == "max_length":
            return f"an integer >= {_show(self.low)}, or none"
        if self.kind == "cuda":
            return "an integer >= -1 (-1: the CPU; else a GPU torch sees)"
        what = "a number" if self.kind == "number" else "an integer"
        if self.low is not None and self.high is not None:
            if self.kind != "number":
                return f"{what} in {_show(self.low)}..{_show(self.high)}"
            return (f"{what} in {'(' if self.low_open else '['}{_show(self.low)}, {_show(self.high)}"
                    f"{')' if self.high_open else ']'}")
        if self.low is not None:
            return f"{what} {'>' if self.low_open else '>='} {_show(self.low)}"
        if self.high is not None:
            return f"{what} {'<' if self.high_open else '<='} {_show(self.high)}"
        return what

    def _in_range(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return not (self.high is not None and (value >= self.high if self.high_open else value > self.high))

    def _numeric(self, text: str) -> Optional[str]:
        value = _number(text)
        if value is None:
            return "is not a number"
        if not math.isfinite(value) and self.kind == "number":
            return "must be a finite " + self.accepts()[len("a "):]  # jsonnet would abort the process on it
        if not math.isfinite(value) or (self.kind != "number" and not value.is_integer()) \
                or not self._in_range(value):
            return f"must be {self.accepts()}"
        return None

    def problem(self, text: str, config: str = "") -> Optional[str]:
        """What is wrong with the value `text` (`None`: nothing), as the end of ``environment variable K="x" ...``;
        `config`: the config file's name (a choice may depend on it)."""
        if self.kind == "boolean":
            ok = text.strip(SPACES).lower() in TRUE + FALSE
            return None if ok else "is not " + BOOLEAN
        if self.kind == "choice":
            choices, what = self.choices_by_config.get(config, (self.choices, ""))
            if text in choices:
                return None
            return f"is not {what} ({', '.join(choices)})" if what else f"is not one of {', '.join(choices)}"
        if self.kind == "path":
            if os.path.exists(text):
                return None
            return f"must be {self.accepts()}; {os.path.abspath(text)} does not exist"
        if self.kind == "plm":
            return _plm_problem(text)
        if self.kind == "plm_layer":
            if text in ("last", "mix") or re.fullmatch(r"[ \t]*[+-]?[0-9]+[ \t]*", text):
                return None
            return f"must be {self.accepts()} (0 = the embeddings, negative from the top)"
        if self.kind == "max_length" and text.strip(" \t").lower() in NONE:
            return None
        if self.kind == "cuda":
            return self._numeric(text) or _cuda_problem(int(_number(text) or 0))
        return self._numeric(text)


def _plm_problem(text: str) -> Optional[str]:
    if os.path.isdir(text):
        if os.path.isfile(os.path.join(text, "config.json")):
            return None
        return f"must be a transformers model folder with a config.json; {os.path.abspath(text)} has none"
    if os.path.exists(text):
        return f"must be a transformers model folder with a config.json; {os.path.abspath(text)} is a file"
    if not _is_hub_name(text):
        return f"must be a transformers model folder with a config.json; {os.path.abspath(text)} does not exist"
    if not _offline():
        return None
    cached = "models--" + text.replace("/", "--")
    if any(os.path.isdir(os.path.join(cache, cached)) for cache in _hub_caches()):
        return None
    return (f"must be a transformers model folder with a config.json; {os.path.abspath(text)} does not exist, and "
            f"the hub name is not in the local cache (HF_HUB_OFFLINE is set)")


def _gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _cuda_problem(device: int) -> Optional[str]:
    if device < 0:
        return None
    gpus = _gpus()
    if gpus == 0:
        return "must be -1 (the CPU) here: torch sees no GPU"
    if device >= gpus:
        return f"must be an integer in -1..{gpus - 1} here: torch sees {gpus} GPU{'s' if gpus > 1 else ''}"
    return None


@dataclass(frozen=True)
class Group:
    """One row of docs/configs.md's table: variables set together, their defaults (`default` overrides the
    variables' own, joined with ", ") and their meaning (markdown)."""

    variables: Tuple[Variable, ...]
    meaning: str
    default: Optional[str] = None

    def defaults(self) -> str:
        return self.default if self.default is not None else ", ".join(v.shown_default() for v in self.variables)

    def accepts(self) -> str:
        """The variables' accepted values, those with the same grouped: ``A, B: a number > 0; C: ...``."""
        same: Dict[str, List[str]] = {}
        for variable in self.variables:
            same.setdefault(variable.accepts(), []).append(f"`{variable.name}`")
        if len(same) == 1:
            return next(iter(same))
        return "; ".join(f"{', '.join(names)}: {what}" for what, names in same.items())


def _int(name: str, default: Optional[str], low: float = 1, high: Optional[float] = None, **more: Any) -> Variable:
    return Variable(name, "integer", default, low=low, high=high, **more)


def _num(name: str, default: Optional[str], low: Optional[float] = 0.0, low_open: bool = False,
         high: Optional[float] = None, high_open: bool = False, **more: Any) -> Variable:
    return Variable(name, "number", default, low=low, low_open=low_open, high=high, high_open=high_open, **more)


def _probability(name: str, default: str, **more: Any) -> Variable:
    return _num(name, default, 0, high=1, high_open=True, **more)


def _bool(name: str, default: str, **more: Any) -> Variable:
    return Variable(name, "boolean", default, **more)


def _choice(name: str, default: Optional[str], *choices: str,
            choices_by_config: Optional[Dict[str, Tuple[Tuple[str, ...], str]]] = None, **more: Any) -> Variable:
    return Variable(name, "choice", default, choices=choices, choices_by_config=choices_by_config or {}, **more)


@dataclass(frozen=True)
class Retired:
    """
    An option retired behind a version bump (measured no help; CHANGELOG.md): naming it, in the environment or in a
    training config, is an error of one line (`message`) before anything is built; docs/configs.md lists it.

    option : `str`
        The config variable (``CODE_DROPOUT``: any value), or ``NAME=value`` for one value of a choice
        (``CODE_ENCODER=lstm``), or a registered name no variable selects (``frozen_transformer_mismatched``).
    version : `str`
        The version that removed it.
    measured : `str`
        Why, as the message says it (``measured no help: REPRODUCTION.md, BTC NER``).
    instead : `str`
        What to do instead: the end of the message.
    keys :
        Where a config (a training config, or an archive's ``config.json``) names it: ``KEY.FIELD`` (a dict under
        ``KEY`` that has ``FIELD``), ``type=NAME.FIELD`` (a dict of that type that has ``FIELD``) or ``type=NAME``
        (a dict of that type).
    archived : `str`
        An archive whose config names it: ``dropped`` (a training-only setting, no part of the trained weights or
        of prediction: the key is left out when the archive loads) or ``refused`` (it cannot load with this
        version: `ArchiveError` with the message).
    """

    option: str
    version: str
    measured: str
    instead: str
    keys: Tuple[str, ...] = ()
    archived: str = "dropped"

    @property
    def variable(self) -> Optional[str]:
        """The config variable that selected it (`None`: a registered name only)."""
        name = self.option.partition("=")[0]
        return name if re.fullmatch(r"[A-Z][A-Z0-9_]*", name) else None

    def named_by(self, environment: Mapping[str, Any]) -> bool:
        """Whether `environment` sets it (an empty value counts as unset; ``NAME=value``: that value)."""
        text = environment.get(self.variable) if self.variable else None
        if not isinstance(text, str) or text == "":
            return False
        value = self.option.partition("=")[2]
        return not value or text.strip(SPACES) == value

    def message(self, where: str = "") -> str:
        """``CODE_ENCODER=lstm was removed in 0.3.0 (measured no help: ...); leave it out ...``; `where`: the
        config key that names it (``model.code_head.bit_flip``)."""
        what = f"{where} ({self.option})" if where else self.option
        return f"{what} was removed in {self.version} ({self.measured}); {self.instead}"

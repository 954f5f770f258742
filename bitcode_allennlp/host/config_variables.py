"""Every config variable declared once: its kind, its range, its default and its meaning; checked before jsonnet runs.

The training configs (`training_configs/*.jsonnet`) read their settings from environment variables through
`training_configs/env.libsonnet` (``env.num``, ``env.bool``, ``env.str``, ``env.has``, with defaults: jsonnet stays
the place for defaults and for building the config). `GROUPS` declares each variable those configs read: its kind
(a number, an integer, a boolean, a choice of strings, an existing path, a PLM folder, ``MAX_LENGTH``,
``PLM_LAYER``, ``CUDA_DEVICE``), its range, its default and its meaning, as docs/configs.md's table shows them
(`render_table` writes that table; `tests/reliability/test_config_variables.py` checks that the committed one is
the rendered one, and that every variable a config reads is declared and every declared one is read). Options
measured no help stay, marked `experimental` (`Group.experimental`, `Variable.experimental_values`): a second table.

`check_config_environment` runs when AllenNLP evaluates a config file that reads ``env.libsonnet`` (the
``config_env`` extension, `bitcode_allennlp.host.config_env`), with the environment jsonnet would see
(``BITCODE_ENV``): each variable the config reads and that is set must parse and be in range, or a
`ConfigurationError` names it in one line, e.g. ``<config>: environment variable EPOCHS="-1" must be an integer >=
1``; nothing has been built or written yet. A variable that is not set is not checked (its default is the config's).
Warnings (logging), not errors: a set variable that no config reads but whose name is one or two letters off a
declared one (``environment variable EPOCH is not read by the configs; did you mean EPOCHS?``), and ``DEV_DATA``
naming the same file as ``TRAIN_DATA``. ``env.libsonnet`` keeps its own parse errors (same wording) for jsonnet
run some other way.

Standard library only at import (imported while AllenNLP loads); `ConfigurationError` and torch (``CUDA_DEVICE``
>= 0 only) are imported when needed. ``python -m bitcode_allennlp.host.config_variables`` prints the table
(``--update docs/configs.md`` rewrites it there).
"""
import json
import logging
import math
import os
import re
from dataclasses import dataclass, field
from itertools import takewhile
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

logger = logging.getLogger(__name__)

# ------------------------------------------------------------------------------------------------ reading a value

SPACES = " \t\n\r"
"""What `env.libsonnet` strips around a number or a boolean."""
NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
"""A decimal number as `env.libsonnet` reads it (`24`, `-1`, `7e-5`, `.5`, `+2`); no `inf`, `nan`, `0x10`, `1_0`."""
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
NONE = ("none", "off", "null")
"""`MAX_LENGTH` values that switch the window off (common.libsonnet; any case, spaces and tabs stripped)."""
BOOLEAN = "a boolean (1/0, true/false, yes/no, on/off)"


def _number(text: str) -> Optional[float]:
    """`text` as `env.libsonnet` reads a number (`None` when it is not one); `inf` for `1e999`."""
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


# ------------------------------------------------------------------------------------------------ the declaration


@dataclass(frozen=True)
class Variable:
    """
    One config variable: `kind` and range, its default (as docs/configs.md shows it) and `check`.

    kind : `str`
        ``number``, ``integer`` (a number with no fraction), ``boolean``, ``choice`` (one of `choices`, exactly),
        ``path`` (an existing file or folder), ``plm`` (a folder with a config.json, or a hub name),
        ``max_length`` (an integer, or one of `NONE`), ``plm_layer`` (``last``, ``mix`` or an integer), ``cuda``
        (an integer >= -1; >= 0 names a GPU that torch sees).
    low, high, low_open, high_open :
        The range of a number or integer (`None`: open-ended; `*_open`: the bound itself excluded).
    choices_by_config :
        For a ``choice``: config file name -> (its choices, what they are), e.g. READER's NER readers.
    experimental_values :
        For a ``choice``: value -> (what it does, the measurement that found it no help), markdown; each is a row
        of the experimental table (``CODE_ENCODER=lstm``). The value is still accepted.
    """

    name: str
    kind: str
    default: str
    low: Optional[float] = None
    high: Optional[float] = None
    low_open: bool = False
    high_open: bool = False
    choices: Tuple[str, ...] = ()
    choices_by_config: Mapping[str, Tuple[Tuple[str, ...], str]] = field(default_factory=dict)
    experimental_values: Mapping[str, Tuple[str, str]] = field(default_factory=dict)

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
        what = "an integer" if self.kind == "integer" else "a number"
        if self.low is not None and self.high is not None:
            if self.kind == "integer":
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
            return "is not a number"  # env.libsonnet's words
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
    variables' own, joined with ", ") and their meaning (markdown). `experimental`: the measurement (markdown) that
    found these variables no help, which puts the row in the experimental table; empty: a row of the main table."""

    variables: Tuple[Variable, ...]
    meaning: str
    default: Optional[str] = None
    experimental: str = ""

    def defaults(self) -> str:
        return self.default if self.default is not None else ", ".join(v.default for v in self.variables)

    def accepts(self) -> str:
        """The variables' accepted values, those with the same grouped: ``A, B: a number > 0; C: ...``."""
        same: Dict[str, List[str]] = {}
        for variable in self.variables:
            same.setdefault(variable.accepts(), []).append(f"`{variable.name}`")
        if len(same) == 1:
            return next(iter(same))
        return "; ".join(f"{', '.join(names)}: {what}" for what, names in same.items())


def _int(name, default, low=1, high=None):
    return Variable(name, "integer", default, low=low, high=high)


def _num(name, default, low=0.0, low_open=False, high=None, high_open=False):
    return Variable(name, "number", default, low=low, low_open=low_open, high=high, high_open=high_open)


def _probability(name, default):
    return _num(name, default, 0, high=1, high_open=True)


def _bool(name, default):
    return Variable(name, "boolean", default)


def _choice(name, default, *choices, by_config=None, experimental=None):
    return Variable(name, "choice", default, choices=choices, choices_by_config=by_config or {},
                    experimental_values=experimental or {})


REPRODUCTION = ("[REPRODUCTION.md](../REPRODUCTION.md"
                "#headline-full-data-results-fine-tuned-minilm-entire-train-files-2-cpu-cores)")
RESULTS = "`benchmarks/results/full_data/"
"""Where the measurements of the experimental options are (links and result files, from docs/configs.md)."""


GROUPS: Tuple[Group, ...] = (
    Group((Variable("PLM", "plm", "`fixtures/transformers/tiny-bert` (incremental parsing: `tiny-gpt2`; tiny "
                                  "**random** models: smoke runs only, scores mean nothing)"),),
          "a transformers model directory (or hub name, if you have a network); any family: [plms.md](plms.md)"),
    Group((Variable("PLM_LAYER", "plm_layer", "`last`"),),
          "which hidden states feed the hash layer: `last`, a layer number (`0` the embeddings, negative from the "
          "top) or `mix` (AllenNLP's scalar mix of all layers; not with `FREEZE_PLM`)"),
    Group((Variable("TRAIN_DATA", "path", "a fixture file"), Variable("DEV_DATA", "path", "a fixture file")),
          "corpus paths", default="fixture files"),
    Group((_int("K", "24", 1, 63),), "bits per word (heads of the hash layer), 1 ≤ K ≤ 63"),
    Group((_int("HEAD_DIM", "64"),), "d_h, size of each head"),
    Group((_num("BETA", "0.005 / 0.05 / 0.001 (NER / POS / parsing)"),), "β of Eq. 10; `0` is the baseline"),
    Group((_bool("TWO_VIEWS", "true"), _choice("VIEWS", "`sequential`", "sequential", "batched", "hash_layer")),
          "second dropout view, whatever β (the models' `two_views` defaults to true too); with `BETA=0` the "
          "paper's baseline (Algorithm 1 sums two task losses whatever β), `false` a one-view baseline (β must be "
          "0; the validation-stage configs set `two_views: false` themselves); `VIEWS`: two passes, one pass over "
          "the batch stacked twice (`batched`: 1.10-1.35x two passes on an H200, no faster on 2 CPU cores), or one "
          "PLM pass and two hash-layer passes (`hash_layer`, beyond the paper)"),
    Group((_num("TAU", "0.1", 0, low_open=True), _choice("SIMILARITY", "`cos_sign`", "cos_sign", "cos"),
           _choice("OBJECTIVE", "`hash`", "hash", "self", "sup", "max_pos")),
          "loss variants of Table 2 (`cos`; `self`, `sup`); `max_pos`: the authors' later paper, not the 24-bit one"),
    Group((_num("LR", "7e-5 / 5e-5", 0, low_open=True), _num("HEAD_LR", "= `LR`", 0, low_open=True),
           _probability("DROPOUT", "0.1 (0.5 parsing)"), _probability("WARMUP", "0.06"),
           _num("WEIGHT_DECAY", "0.01"), _num("GRAD_NORM", "1.0", 0, low_open=True)),
          "optimisation (AdamW, Table 6); `HEAD_LR` gives the new layers (all but the PLM) their own rate"),
    Group((_int("MAX_INSTANCES", "all"),),
          "train on at most this many sentences (budget runs); never caps dev"),
    Group((_int("DEV_MAX_INSTANCES", "all"),),
          "validate, evaluate and re-annotate only the first N dev sentences (budget runs; say so next to the "
          "score)"),
    Group((_bool("FREEZE_PLM", "false"), _probability("PLM_DROPOUT", "0.1")),
          "budget runs: the PLM frozen in eval mode, its word vectors cached per sentence for the process "
          "(`frozen_plm_words`), dropout on them for the two views; only the hash layer and head train. The paper "
          "fine-tunes the PLM"),
    Group((_probability("MASK_PROB", "0"),), "training, not with `FREEZE_PLM`: each word piece → the mask token "
          "with this probability; from the authors' later paper (Wang & Utiyama 2024), beyond the 24-bit paper"),
    Group((_int("CHECKPOINT_EVERY", "unset (epoch ends only)"),),
          "also checkpoint every N batches, for `--recover` mid-epoch"),
    Group((_int("EPOCHS", "3 (validation stage 20)"), _int("MAX_TOKENS", "1024"), _int("MAX_SUBTOKENS", "1024"),
           Variable("MAX_LENGTH", "max_length", "512", low=8)),
          "epochs; words per batch (the hash loss's unit, §4.1); padded sub-tokens per batch (batch size × longest "
          "sentence in word pieces: the PLM's memory; whichever budget binds first closes a batch, and a sentence "
          "over either trains alone); PLM window in word pieces, special tokens included (`none`: the tokenizer's "
          "own `model_max_length`); a longer sentence is read in overlapping windows, a causal PLM's with left "
          "context only ([plms.md](plms.md#long-sentences))"),
    Group((_choice("READER", "`ontonotes_hash` / `ptb_hash`", "ontonotes_hash", "conll_columns", "ptb_hash",
                   "conllu_pos", by_config={
                       "ner_hash.jsonnet": (("ontonotes_hash", "conll_columns"), "an NER reader"),
                       "pos_hash.jsonnet": (("ptb_hash", "conllu_pos"), "a POS reader")}),
           _choice("TOKEN_POLICY", "`strict`", "strict", "repair"), _bool("SKIP_INVALID", "false")),
          "reader (NER: `ontonotes_hash` or `conll_columns`, each with its own fixture defaults; POS: `ptb_hash` or "
          "`conllu_pos`); `repair` for corpora with empty / whitespace tokens; skip malformed sentences"),
    Group((_choice("INPUT_SCHEME", "`IOB2`", "IOB2", "BIO", "IOB1", "BIOUL", "BIOES"),),
          "NER with `READER=conll_columns`: the file's tags, `IOB2` (= `BIO`), `IOB1` (the original CoNLL-2003 "
          "release), `BIOUL` or `BIOES`; converted to the model's BIOUL"),
    Group((_bool("RESIDUAL", "true"), _bool("QK_ONLY", "false")),
          "`false`: no residual around the hash layer's attention, the literal Eq. 8 (study option); `QK_ONLY=true`: "
          "a hash layer of queries and keys alone, the task head reads the PLM (the authors' later paper)"),
    Group((_choice("TASK_LOSS", "`mean`", "mean", "sum", "word"),),
          "CRF loss over a batch: `mean` per sentence, `sum`, or `word` (per word, like the hash loss)"),
    Group((_bool("TRAINING_METRICS", "true"),),
          "taggers (both stages): `false` skips Viterbi decoding in training forwards (no training `accuracy` / "
          "span F1 logged); dev metrics are exact either way"),
    Group((_num("CODE_HEAD", "0"), _int("CODE_HEAD_DIM", "256")),
          "beyond the paper (hashing-stage taggers and parsers): weight of a code-reading head (`0`: none), an MLP "
          "of `CODE_HEAD_DIM` hidden units on sign(s) with a straight-through gradient, trained on the gold "
          "per-word labels (for parsing the trees' POS tags, then read too); it pushes the task into the bits; "
          "`code_head_accuracy` is logged"),
    Group((_probability("CODE_HEAD_FLIP", "0"),),
          "beyond the paper, with `CODE_HEAD` > 0, training only: the code-reading head reads the codes with each "
          "bit flipped with this probability (labels kept apart in Hamming space)",
          experimental="BTC NER, one seed: `CODE_HEAD_FLIP=0.1` on the 3-epoch `CODE_HEAD=2` command lowers both "
          "stages, hashing / validation 75.73 / 75.50 against 76.97 / 76.76 (" + REPRODUCTION + ", row \"the 3-epoch "
          "`CODE_HEAD=2` command, `SEED=0`, with the head reading flipped bits\"; " + RESULTS
          + "btc_ner_codehead2_e3_hflip01.json`)"),
    Group((_int("SPAN_MLP_DIM", "500"), _int("LABEL_MLP_DIM", "100"), _probability("MLP_DROPOUT", "0.33")),
          "parsers (both stages): hidden sizes of the span and label MLPs, their dropout"),
    Group((_choice("BOUNDARY", "`split`", "split", "left"),),
          "validation-stage parser: its fenceposts, `split` as the hashing-stage parser's, `left` for codes of an "
          "incremental model (the hashing-stage parser takes `left` from `CAUSAL`)"),
    Group((_int("CODE_DIM", "128"), _int("CODE_HEADS", "4"), _int("CODE_FF", "2·d", 2)),
          "validation stage: d, rounded up to a multiple of K and of the heads (144 for K = 24, 0.18M parameters "
          "for POS; `CODE_DIM=256` gives the paper's size, 0.58M); attention heads; feed-forward size"),
    Group((_choice("CODE_ENCODER", "`transformer`", "transformer", "window", "lstm", experimental={"lstm": (
               "validation stage, beyond the paper: a `CODE_LAYERS`-layer bidirectional LSTM in place of the "
               "transformer, `CODE_FF` / 2 units each way (`CODE_FF` defaults to d here)",
               "BTC NER, validation stage on the `CODE_HEAD=2` codes: 75.54, and 75.89 with `CODE_BIT_FLIP=0.2`, "
               "against the transformer's 75.49 and 76.41 (means over seeds; " + REPRODUCTION + ", \"Why the gap\" "
               "paragraph; " + RESULTS + "btc_ner_validation_noise.json`)")}),
           _int("CODE_WINDOW", "1", 0), _int("CODE_LAYERS", "1")),
          "validation stage: the paper's one-layer transformer, or `window` (beyond the paper: `CODE_LAYERS` "
          "convolutions over `CODE_WINDOW` words on each side, output size `CODE_FF`, `window_feedforward`; much "
          "cheaper at inference), or `lstm` ([experimental](#experimental-measured-no-help))"),
    Group((_probability("CODE_BIT_FLIP", "0"),),
          "validation stage, beyond the paper, training only: probability of flipping each bit of a train code (the "
          "train codes come from a hashing model fit to those sentences, so they are cleaner than dev codes)"),
    Group((_probability("CODE_DROPOUT", "0"),),
          "validation stage, beyond the paper, training only: probability of zeroing a word's whole code embedding",
          experimental="BTC NER, validation stage on the `CODE_HEAD=2` codes: `CODE_DROPOUT=0.15` 75.68, inside the "
          "75.22–75.74 range of four validation seeds without it (" + REPRODUCTION + ", \"Why the gap\" paragraph; "
          + RESULTS + "btc_ner_validation_noise.json`)"),
    Group((Variable("CUDA_DEVICE", "cuda", "-1", low=-1), _int("WORKERS", "1"), _int("SEED", "fixed", 0, 2 ** 32 - 1),
           _bool("CAUSAL", "false")),
          "device; `WORKERS=2` trains with torch DDP (gloo on CPU); seeds; causal hash layer"),
)

VARIABLES: Dict[str, Variable] = {v.name: v for group in GROUPS for v in group.variables}
"""Every config variable by name, in the table's order."""

# ------------------------------------------------------------------------------------------------ the docs table

TABLE_HEADER = ("| variable | default (NER / POS) | accepted values | meaning |\n"
                "|---|---|---|---|\n")
EXPERIMENTAL_HEADING = "## Experimental (measured no help)"
EXPERIMENTAL_INTRO = ("Beyond the paper, and no help where the project measured them; kept, since rows of "
                      "REPRODUCTION.md use them. Each row names the measurement that judged it.\n")
EXPERIMENTAL_HEADER = "| option | default | accepted values | meaning | measured |\n|---|---|---|---|---|\n"


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |\n"


def render_table(groups: Sequence[Group] = GROUPS) -> str:
    """docs/configs.md's table of config variables (markdown, one row per group, ending with a newline), followed,
    when some options are experimental, by `EXPERIMENTAL_HEADING` and their table (each with its measurement): the
    experimental groups, then each experimental value of a choice (``CODE_ENCODER=lstm``)."""
    main, experimental = [], []
    for group in groups:
        cells = (", ".join(f"`{v.name}`" for v in group.variables), group.defaults(), group.accepts(), group.meaning)
        if group.experimental:
            experimental.append(_row(*cells, group.experimental))
        else:
            main.append(_row(*cells))
    for variable in (v for group in groups for v in group.variables):
        for value, (meaning, measured) in variable.experimental_values.items():
            experimental.append(_row(f"`{variable.name}={value}`", variable.default, variable.accepts(), meaning,
                                     measured))
    table = TABLE_HEADER + "".join(main)
    if experimental:
        table += f"\n{EXPERIMENTAL_HEADING}\n\n{EXPERIMENTAL_INTRO}\n{EXPERIMENTAL_HEADER}" + "".join(experimental)
    return table


def _table_end(text: str, start: int) -> int:
    """The end of the markdown table whose first line starts at `start`."""
    return start + sum(map(len, takewhile(lambda line: line.startswith("|"), text[start:].splitlines(True))))


def table_in(text: str) -> Tuple[int, int]:
    """Where the rendered tables are in docs/configs.md's `text`: (start, end) offsets of their lines, with the
    experimental heading and table when they follow the main table."""
    start = text.index(TABLE_HEADER.splitlines()[0].split(" | ")[0] + " | ")
    end = _table_end(text, start)
    if text[end:].startswith(f"\n{EXPERIMENTAL_HEADING}\n") and EXPERIMENTAL_HEADER in text[end:]:
        end = _table_end(text, text.index(EXPERIMENTAL_HEADER, end))
    return start, end


def update_docs(path: str) -> bool:
    """Rewrites the table in docs/configs.md at `path`; returns whether it changed."""
    with open(path, encoding="utf-8") as file:
        text = file.read()
    start, end = table_in(text)
    new = text[:start] + render_table() + text[end:]
    if new != text:
        with open(path, "w", encoding="utf-8") as file:
            file.write(new)
    return new != text


# ------------------------------------------------------------------------------------------------ the configs

ENV_READ = re.compile(r'\benv\.(?:str|num|bool|has)\(\s*"([A-Z][A-Z_0-9]*)"')
"""How a config reads a variable: `env.str|num|bool("NAME", default)` or `env.has("NAME")` (env.libsonnet)."""
IMPORT = re.compile(r"""\bimport\s+(?:'([^']+)'|"([^"]+)")""")
ENV_LIBRARY = 'std.extVar("BITCODE_ENV")'
"""What marks `env.libsonnet` (or a copy of it): the configs that import it read config variables."""


def _code(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(("//", "#")))


def variables_read(text: str) -> Set[str]:
    """The config variables that the jsonnet source `text` reads itself (`ENV_READ`; comment lines left out, so an
    example in a comment does not count; not those of the files it imports)."""
    return set(ENV_READ.findall(_code(text)))


def config_reads(path: str) -> Optional[Set[str]]:
    """The variables the config file at `path` reads, itself and through the files it imports (relative to their
    own folder); `None` when it does not import `env.libsonnet` (a plain JSON config, an archive's)."""
    read: Set[str] = set()
    uses_env = False
    todo, seen = [os.path.abspath(path)], set()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            with open(current, encoding="utf-8") as file:
                text = file.read()
        except (OSError, UnicodeDecodeError):
            continue  # jsonnet itself says what is wrong with it
        if ENV_LIBRARY in text:
            uses_env = True
        code = _code(text)
        read |= set(ENV_READ.findall(code))
        folder = os.path.dirname(current)
        todo.extend(os.path.join(folder, a or b) for a, b in IMPORT.findall(code))
    return read if uses_env else None


# ------------------------------------------------------------------------------------------------ the check


def _distance(a: str, b: str) -> int:
    """Edit distance with transpositions (optimal string alignment): `MAX_LENGHT` is 1 from `MAX_LENGTH`."""
    previous2: List[int] = []
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y))
            if i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[-1]


OTHER_PREFIXES = ("BITCODE_", "HF_", "HUGGINGFACE_", "TRANSFORMERS_", "ALLENNLP_", "TORCH", "CUDA_VISIBLE",
                  "PYTHON", "OMP_", "MKL_", "NCCL_", "XDG_", "LC_", "SSH_")
"""Environment variables of other programs (and our own switches), never taken for a misspelt config variable."""


def suggestion(name: str, declared: Iterable[str] = VARIABLES) -> Optional[str]:
    """The declared variable that `name` (not declared) looks like a misspelling of, or `None`: a declared name with
    an extra or missing S (`EPOCH`), or one within 1 edit (names of 3-4 letters) or 2 edits (5 letters or more)
    of it; names of 1-2 letters (`K`, `LR`) only by the S rule, so that `TZ` is nobody's typo."""
    if name in declared or not re.fullmatch(r"[A-Z][A-Z0-9_]*", name) or name.startswith(OTHER_PREFIXES):
        return None
    best: Optional[Tuple[int, str]] = None
    for candidate in declared:
        if name + "S" == candidate or candidate + "S" == name or name.replace("S", "") == candidate.replace("S", ""):
            distance = 1
        else:
            limit = 0 if len(candidate) <= 2 else 1 if len(candidate) <= 4 else 2
            distance = _distance(name, candidate) if abs(len(name) - len(candidate)) <= limit else limit + 1
            if distance > limit:
                continue
        if best is None or distance < best[0]:
            best = (distance, candidate)
    return None if best is None else best[1]


def quoted(name: str, value: str) -> str:
    """``environment variable NAME="value"`` (JSON-quoted, as env.libsonnet's errors, so stray spaces show)."""
    return f"environment variable {name}={json.dumps(value, ensure_ascii=False)}"


def _same_path(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def problems(environment: Mapping[str, str], read: Optional[Iterable[str]] = None, config: str = "") -> List[str]:
    """What is wrong with the config variables set in `environment` (an empty value counts as unset) among those
    in `read` (default: all declared), one line each (``environment variable K="x" ...``), in the table's order;
    `config`: the config file's name. Logs the warnings (misspelt names, DEV_DATA = TRAIN_DATA)."""
    names = set(VARIABLES if read is None else read)
    set_ = {name: value for name, value in environment.items() if isinstance(value, str) and value != ""}
    for name in sorted(set_):
        guess = suggestion(name)
        if guess is not None:
            logger.warning(f"environment variable {name} is not read by the configs; did you mean {guess}?")
    if {"TRAIN_DATA", "DEV_DATA"} <= names and "TRAIN_DATA" in set_ and "DEV_DATA" in set_ \
            and os.path.exists(set_["DEV_DATA"]) and _same_path(set_["TRAIN_DATA"], set_["DEV_DATA"]):
        logger.warning(f"environment variable DEV_DATA is the TRAIN_DATA file ({os.path.abspath(set_['DEV_DATA'])}): "
                       "the dev scores will be on training sentences")
    found = []
    for name, variable in VARIABLES.items():
        if name in set_ and name in names:
            problem = variable.problem(set_[name], config)
            if problem is not None:
                found.append(f"{quoted(name, set_[name])} {problem}")
    if found:
        return found
    if {"WORKERS", "CUDA_DEVICE"} <= names and "WORKERS" in set_ and "CUDA_DEVICE" in set_:
        workers, device = (int(_number(set_[name]) or 0) for name in ("WORKERS", "CUDA_DEVICE"))
        if workers > 1 and device >= 0 and workers > _gpus():
            found.append(f"{quoted('WORKERS', set_['WORKERS'])} must be at most {_gpus()} with CUDA_DEVICE="
                         f"{json.dumps(set_['CUDA_DEVICE'])}: one GPU per worker, and torch sees {_gpus()}")
    return found


def check_config_environment(config_file: str, environment: Mapping[str, str]) -> None:
    """Before jsonnet evaluates `config_file` with `environment` (what `BITCODE_ENV` carries): nothing for a config
    that does not read `env.libsonnet`; else the warnings of `problems`, and a `ConfigurationError`
    ``<config_file>: environment variable NAME="value" <what it must be>`` for the first bad variable it reads."""
    read = config_reads(config_file)
    if read is None:
        return
    found = problems(environment, read, os.path.basename(config_file))
    if found:
        from allennlp.common.checks import ConfigurationError

        raise ConfigurationError(f"{config_file}: {found[0]}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bitcode_allennlp.host.config_variables",
                                     description="Print docs/configs.md's table of config variables.")
    parser.add_argument("--update", metavar="CONFIGS_MD", help="rewrite the table in this file instead")
    args = parser.parse_args(argv)
    if args.update:
        print(f"{args.update}: {'updated' if update_docs(args.update) else 'already up to date'}")
    else:
        print(render_table(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

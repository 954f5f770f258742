"""Every config variable declared once (`bitcode_allennlp.host.config_declaration`: kind, range, default, meaning);
checked, read and handed to the configs before jsonnet runs; docs/configs.md's table rendered from the declaration.

The training configs (`training_configs/*.jsonnet`) read their settings through `training_configs/env.libsonnet`
(``env.num("K")``, ``env.bool``, ``env.str``, ``env.get``, ``env.has``), which only looks values up: no parsing and
no defaults in jsonnet. `config_settings` runs when AllenNLP evaluates a config file that imports ``env.libsonnet``
(the ``config_env`` extension, `bitcode_allennlp.host.config_env`), with the environment jsonnet would see
(``BITCODE_ENV``): each variable the config reads (`config_reads`) that is set must parse and be in range, or a
`ConfigurationError` names it in one line, e.g. ``<config>: environment variable EPOCHS="-1" must be an integer >=
1``, before anything is built or written; then every variable the config reads gets its typed value, the set one or
the config's declared default (`Variable.by_config`; paths relative to the repository root or its copy installed
with the package, `config_root`, wherever the config is), handed to jsonnet as the ext var ``BITCODE_SETTINGS`` (a
JSON object). The validation stage's ``K`` is its ``TRAIN_DATA``
codes file's (`codes_num_bits`); a ``K`` set to another number is an error that names the file. Warnings
(logging), not errors: a set variable that no config reads but whose name is one or two letters off a declared one
(``environment variable EPOCH is not read by the configs; did you mean EPOCHS?``), and ``DEV_DATA`` naming the
same file as ``TRAIN_DATA``. `render_table` writes docs/configs.md's table (`tests/reliability/
test_config_variables.py` checks that the committed one is the rendered one, that every variable a config reads is
declared and every declared one is read, and that no config writes a default). Options retired behind a version
bump (measured no help; `config_declaration.RETIRED`) are errors that say so (`bitcode_allennlp.host.retired`), and
a second table lists them.

Standard library only at import (imported while AllenNLP loads); `ConfigurationError` and torch (``CUDA_DEVICE``
>= 0 only) are imported when needed. ``python -m bitcode_allennlp.host.config_variables`` prints the table
(``--update docs/configs.md`` rewrites it there; ``--settings CONFIG`` prints a config's ``BITCODE_SETTINGS`` with
this environment, for the plain ``jsonnet`` command: ``jsonnet --ext-str BITCODE_SETTINGS="$(...)" CONFIG``).
"""
import fnmatch
import json
import logging
import os
import re
from itertools import takewhile
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from bitcode_allennlp import resources
from bitcode_allennlp.host import config_kinds
from bitcode_allennlp.host.config_declaration import GROUPS, RETIRED, VARIABLES
from bitcode_allennlp.host.config_kinds import (  # noqa: F401  (the declaration's names, for its users)
    BOOLEAN, FROM_CODES, NONE, NUMBER, SPACES, Group, Retired, Variable, _bool, _choice, _int, _num, _number,
    _probability)
from bitcode_allennlp.host.retired import environment_problem, read_problem

logger = logging.getLogger(__name__)

# ------------------------------------------------------------------------------------------------ the docs table

TABLE_HEADER = ("| variable | default (`config`: its own) | accepted values | meaning |\n"
                "|---|---|---|---|\n")
RETIRED_HEADING = "## Retired options"
RETIRED_INTRO = ("Options removed behind a version bump (CHANGELOG.md); naming one, in the environment or in a "
                 "config, is an error that says what follows. REPRODUCTION.md keeps the rows that measured them.\n")
RETIRED_HEADER = "| option | removed in | why | instead |\n|---|---|---|---|\n"


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |\n"


def render_table(groups: Sequence[Group] = GROUPS, retired: Sequence[Retired] = RETIRED) -> str:
    """docs/configs.md's table of config variables (markdown, one row per group, ending with a newline), followed,
    when some options are retired, by `RETIRED_HEADING` and their table (each with why and what instead)."""
    table = TABLE_HEADER + "".join(
        _row(", ".join(f"`{v.name}`" for v in group.variables), group.defaults(), group.accepts(), group.meaning)
        for group in groups)
    if retired:
        table += f"\n{RETIRED_HEADING}\n\n{RETIRED_INTRO}\n{RETIRED_HEADER}" + "".join(
            _row(f"`{r.option}`", r.version, r.measured, r.instead) for r in retired)
    return table


def _table_end(text: str, start: int) -> int:
    """The end of the markdown table whose first line starts at `start`."""
    return start + sum(map(len, takewhile(lambda line: line.startswith("|"), text[start:].splitlines(True))))


def table_in(text: str) -> Tuple[int, int]:
    """Where the rendered tables are in docs/configs.md's `text`: (start, end) offsets of their lines, with the
    retired options' heading and table when they follow the main table."""
    start = text.index(TABLE_HEADER.splitlines()[0].split(" | ")[0] + " | ")
    end = _table_end(text, start)
    if text[end:].startswith(f"\n{RETIRED_HEADING}\n") and RETIRED_HEADER in text[end:]:
        end = _table_end(text, text.index(RETIRED_HEADER, end))
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

ENV_READ = re.compile(r'\benv\.(?:str|num|bool|get|has)\(\s*"([A-Z][A-Z_0-9]*)"')
"""How a config reads a variable: `env.str|num|bool|get|has("NAME")` (env.libsonnet)."""
DEFAULT_WRITTEN = re.compile(r'\benv\.(?:str|num|bool|get|has)\(\s*"[A-Z][A-Z_0-9]*"\s*,')
"""A default written in a config (`env.num("K", 24)`): none may be (`tests/reliability/test_config_variables.py`)."""
IMPORT = re.compile(r"""\bimport\s+(?:'([^']+)'|"([^"]+)")""")
SETTINGS = "BITCODE_SETTINGS"
"""The ext var that carries the configs' settings (`config_settings`), as a JSON object."""
ENV_LIBRARY = f'std.extVar("{SETTINGS}")'
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
    `config`: the config file's name. Logs the warnings (misspelt names, DEV_DATA = TRAIN_DATA). A retired option
set (`bitcode_allennlp.host.retired`) is the one problem returned, whatever the config reads."""
    retired = environment_problem(environment)
    if retired is not None:
        return [retired]
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
        gpus = config_kinds._gpus() if workers > 1 and device >= 0 else workers
        if workers > gpus:
            found.append(f"{quoted('WORKERS', set_['WORKERS'])} must be at most {gpus} with CUDA_DEVICE="
                         f"{json.dumps(set_['CUDA_DEVICE'])}: one GPU per worker, and torch sees {gpus}")
    return found


def config_root() -> str:
    """What the declared default paths (``fixtures/...``) are relative to, for every config wherever it is (the
    repository's `training_configs/`, a task's own folder, a copy elsewhere; whatever the working folder): the
    folder holding the package's `training_configs/` and `fixtures/` (`bitcode_allennlp.resources.root`: the
    repository checkout, else the copy installed with the package), absolute. The same folder as `env.root` of the
    package's `env.libsonnet`."""
    return str(resources.root())


def codes_num_bits(path: str) -> Optional[int]:
    """K of the codes file at `path` (`allennlp hash-corpus` output): the ``num_bits`` of its first line, else of
    its record ``PATH.meta.json``; `None` when neither says it (not a codes file, a folder, unreadable)."""
    try:
        with open(path, encoding="utf-8") as file:
            first = next((line for line in file if line.strip()), "")
        record = json.loads(first)
        if isinstance(record, dict) and isinstance(record.get("num_bits"), int):
            return record["num_bits"]
        with open(path + ".meta.json", encoding="utf-8") as file:
            meta = json.load(file)
        return meta["num_bits"] if isinstance(meta.get("num_bits"), int) else None
    except (OSError, UnicodeDecodeError, ValueError, AttributeError, KeyError):
        return None


class _Resolver:
    """The typed value of each variable for one config: the set one, else the config's declared default."""

    def __init__(self, config_file: str, set_: Mapping[str, str]) -> None:
        self.name = os.path.basename(config_file)
        self.stem = self.name[: -len(".jsonnet")] if self.name.endswith(".jsonnet") else self.name
        self.root, self.set, self.values = config_root(), set_, {}  # type: Dict[str, Any]

    def default(self, variable: Variable) -> Optional[str]:
        for pattern, text in variable.by_config:
            config, _, condition = pattern.partition(" ")
            other, _, value = condition.partition("=")
            if fnmatch.fnmatchcase(self.stem, config) and (not condition or self(other) == value):
                return text
        return variable.default

    def __call__(self, name: str) -> Any:
        if name not in self.values:
            variable = VARIABLES[name]
            text = self.set.get(name)
            default = self.default(variable)
            if default is FROM_CODES:
                self.values[name] = self.from_codes(variable, text)
            elif text is None and default is not None and variable.kind in ("path", "plm"):
                self.values[name] = f"{self.root}/{default}"
            else:
                self.values[name] = variable.value(text if text is not None else default)
        return self.values[name]

    def from_codes(self, variable: Variable, text: Optional[str]) -> Any:
        """K from the TRAIN_DATA codes file; a set K must be the file's."""
        path = self("TRAIN_DATA")
        bits = codes_num_bits(path)
        if text is None:
            return bits if bits is not None else variable.value(variable.default)
        if bits is not None and variable.value(text) != bits:
            raise ValueError(f"{quoted(variable.name, text)} is not the K of the TRAIN_DATA codes file "
                             f"({os.path.abspath(path)}: codes of {bits} bits); leave K unset to read it from there")
        return variable.value(text)

    def requirement(self, name: str) -> Optional[str]:
        """What is wrong with `name` being set (`Variable.requires`), or `None`."""
        other, value, why = VARIABLES[name].requires
        if self(other) == value:
            return None
        return f"environment variable {name} is for {other}={value} only ({why.format(self(other))})"


def _set_variables(environment: Mapping[str, str], read: Iterable[str]) -> Dict[str, str]:
    return {name: value for name, value in environment.items()
            if name in read and name in VARIABLES and isinstance(value, str) and value != ""}


def config_settings(config_file: str, environment: Mapping[str, str]) -> Optional[Dict[str, Any]]:
    """What `BITCODE_SETTINGS` gives jsonnet for `config_file` with `environment` (what `BITCODE_ENV` carries):
    `None` for a config that does not import `env.libsonnet`; else the warnings of `problems`, a
    `ConfigurationError` ``<config_file>: environment variable NAME="value" <what it must be>`` for the first bad
    variable it reads, and otherwise the typed value of each variable it reads (name -> value)."""
    read = config_reads(config_file)
    if read is None:
        return None
    retired = read_problem(read)
    found = [retired] if retired is not None else problems(environment, read, os.path.basename(config_file))
    resolve = _Resolver(config_file, _set_variables(environment, read))
    if not found:
        found = [problem for problem in map(resolve.requirement, sorted(
            name for name in resolve.set if VARIABLES[name].requires)) if problem]
    try:
        settings = {name: resolve(name) for name in sorted(read)} if not found else {}
    except ValueError as error:
        found = [str(error)]
    if found:
        from allennlp.common.checks import ConfigurationError

        raise ConfigurationError(f"{config_file}: {found[0]}")
    return settings


def check_config_environment(config_file: str, environment: Mapping[str, str]) -> None:
    """`config_settings`'s check alone (the warnings and the `ConfigurationError`), its settings dropped."""
    config_settings(config_file, environment)


def main(argv: Optional[Sequence[str]] = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bitcode_allennlp.host.config_variables",
                                     description="Print docs/configs.md's table of config variables.")
    parser.add_argument("--update", metavar="CONFIGS_MD", help="rewrite the table in this file instead")
    parser.add_argument("--settings", metavar="CONFIG", help="print the BITCODE_SETTINGS of CONFIG with this "
                        "environment instead, for the plain jsonnet command: jsonnet --ext-str BITCODE_SETTINGS="
                        "\"$(python -m bitcode_allennlp.host.config_variables --settings CONFIG)\" CONFIG")
    args = parser.parse_args(argv)
    if args.settings:
        print(json.dumps(config_settings(args.settings, dict(os.environ))))
    elif args.update:
        print(f"{args.update}: {'updated' if update_docs(args.update) else 'already up to date'}")
    else:
        print(render_table(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

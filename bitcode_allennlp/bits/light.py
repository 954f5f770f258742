"""`allennlp bits ...` without AllenNLP: the light process that answers `allennlp bits search` in about a second.

Through AllenNLP, every `allennlp` command first imports torch, transformers, spaCy and all of AllenNLP and its plugins
(7-9 s), and `bits stats | heatmap | index | search | precision | probe | table | package` and `bits diff --codes` need
none of it. When the `allennlp` command starts with one of these (`is_light`), `start_light_bits` (an extension run just
before the `allennlp` package's code, after `host.console.start_cli`) calls `run_bits` before AllenNLP is imported: it
builds the same argument parser (`bits/command.py`, with AllenNLP's "(default = x)" help), runs the sub-command, prints
a user error as `allennlp bits <command>: error: <message>` (exit status 1, as through AllenNLP) and exits: a
`ConfigurationError` or an `OSError` of the user's situation (a full disk, a name too long: `console.is_user_error`,
the same test as through AllenNLP). Any other exception, and every error under `BITCODE_DEBUG=1`, is raised with its
traceback; `start_light_bits` prints it and exits with status 1 (it must not reach the import hook, which would log
it and go on to AllenNLP's parser, where this process has no `bits`). `bits diff ARCHIVE ...` loads a model and goes
through AllenNLP as before, as does any `--include-package` other than `bitcode_allennlp`.

In that process, and only there, the two AllenNLP names our `bits` modules use are stand-ins with the same interface
(`bitcode_allennlp.host.names`).
"""
import sys
from typing import Any, List

from bitcode_allennlp.host import names
from bitcode_allennlp.host.names import LightConfigurationError

LIGHT_COMMANDS = ("stats", "heatmap", "index", "search", "precision", "probe", "explore", "table", "package", "diff")
"""`bits` sub-commands that run without AllenNLP (`diff` only with `--codes`, `explore` only without `--serve`)."""

PLUGIN = "bitcode_allennlp"


def _include_packages(args: List[str]) -> List[str]:
    packages = []
    for i, arg in enumerate(args):
        if arg == "--include-package" and i + 1 < len(args):
            packages.append(args[i + 1])
        elif arg.startswith("--include-package="):
            packages.append(arg.split("=", 1)[1])
    return packages


def is_light(args: List[str]) -> bool:
    """Whether the `allennlp` arguments `args` (without the program) are a `bits` command that needs no AllenNLP."""
    if not args or args[0] != "bits":
        return False
    if any(package != PLUGIN and not package.startswith(PLUGIN + ".") for package in _include_packages(args)):
        return False
    words, skip = [], False
    for arg in args[1:]:
        if skip:
            skip = False
        elif arg == "--include-package":
            skip = True
        elif not arg.startswith("-"):
            words.append(arg)
    if not words:
        return True  # `allennlp bits`, `allennlp bits --help`: the help text
    if words[0] == "diff":
        return any(arg == "--codes" or arg.startswith("--codes=") for arg in args)
    if words[0] == "explore":
        return "--serve" not in args
    return words[0] in LIGHT_COMMANDS


def _parser_class():
    import argparse

    from bitcode_allennlp.host.console import add_verbose_argument

    class ArgumentParserWithDefaults(argparse.ArgumentParser):
        """AllenNLP's parser class (`allennlp.commands.ArgumentParserWithDefaults`): "(default = x)" in the help
        of every argument with a meaningful default; and `--verbose` on every parser, as through AllenNLP."""

        _action_defaults_to_ignore = {"help", "store_true", "store_false", "store_const"}

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            add_verbose_argument(self)

        @staticmethod
        def _is_empty_default(default: Any) -> bool:
            if default is None:
                return True
            if isinstance(default, (str, list, tuple, set)):
                return not bool(default)
            return False

        def add_argument(self, *args: Any, **kwargs: Any) -> Any:
            default = kwargs.get("default")
            if kwargs.get("action") not in self._action_defaults_to_ignore and not self._is_empty_default(default):
                kwargs["help"] = f"{kwargs.get('help', '')} (default = {default})"
            return super().add_argument(*args, **kwargs)

    return ArgumentParserWithDefaults


def run_bits(args: List[str], prog: str = "allennlp") -> int:
    """Runs `allennlp bits ...` (`args` without the program) without AllenNLP; returns the exit status."""
    names.LIGHT = True
    from bitcode_allennlp.bits.command import Bits
    from bitcode_allennlp.host.console import (
        INTERRUPTED_STATUS, debug, flush_stdout, is_user_error, release_stdout, report_interrupt, report_user_error,
    )

    parser = _parser_class()(description="Run AllenNLP", prog=prog)
    subparsers = parser.add_subparsers(title="Commands", metavar="")
    subparser = Bits().add_subparser(subparsers)
    subparser.add_argument("--include-package", type=str, action="append", default=[],
                           help="additional packages to include")
    user_errors: tuple = (LightConfigurationError,)
    checks = sys.modules.get("allennlp.common.checks")  # loaded only if a sub-command needed AllenNLP after all
    try:
        parsed = parser.parse_args(args)
        if "func" in dir(parsed):
            parsed.func(parsed)
        else:
            parser.print_help()
        flush_stdout()  # here, so that a full disk under stdout is reported like any other error
    except KeyboardInterrupt:
        if debug():
            raise
        report_interrupt(prog, args)
        return INTERRUPTED_STATUS
    except BrokenPipeError:  # the reader of stdout went away (`| head`): stop quietly, as Python's docs advise
        release_stdout(closed=True)
        return 1
    except Exception as error:
        checks = sys.modules.get("allennlp.common.checks") or checks
        if checks is not None:
            user_errors += (checks.ConfigurationError,)
        if debug() or not is_user_error(error, user_errors):  # a bug: raised, with its traceback
            raise
        report_user_error(prog, args, error)
        return 1
    finally:
        release_stdout()  # what stdout could not take is dropped: Python prints nothing more about it at exit
    return 0


def start_light_bits() -> None:
    """Just before the `allennlp` package's code (extension ``light_bits``): when this process is the `allennlp`
    command and its arguments are a light `bits` command, runs it and exits with its status."""
    from bitcode_allennlp.host.console import cli_arguments
    from bitcode_allennlp.host.patching import APPLIED, record

    args = cli_arguments()
    if args is None or "light_bits" in APPLIED or not is_light(args):
        return
    record("light_bits", "allennlp bits runs without importing AllenNLP")
    try:
        status = run_bits(args)
    except Exception:  # a bug, or any error under BITCODE_DEBUG=1: its traceback, as Python prints it
        # Not raised on: the import hook running this function would log it and go on to AllenNLP's parser,
        # which has no `bits` in this process ("invalid choice: 'bits'").
        sys.excepthook(*sys.exc_info())
        status = 1
    raise SystemExit(status)

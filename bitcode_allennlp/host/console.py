"""What the `allennlp` command prints: its results, progress bars, warnings and errors, but no INFO log flood.

Standard library only: the light `allennlp bits` process (`bitcode_allennlp.bits.light`) uses this module without
importing AllenNLP. An extension of AllenNLP, not a version fix: `start_cli` runs when the `allennlp` command starts,
and the `install_*` functions at the end patch AllenNLP's modules as they load (`bitcode_allennlp.host.extensions` lists
them; the patch names are ``quiet_cli``, ``light_bits``, ``verbose_flag``, ``quiet_training``, ``quiet_predict``,
``evaluate_metrics``).
Quiet, the command's default:

* stdout holds the results: `allennlp predict` prints one JSON line per prediction, `allennlp evaluate` the final
  metrics as JSON, `allennlp train` (whose logs go to stdout, as in AllenNLP) one line per epoch and the final metrics
  (`KEEP_INFO`, `KEEP_INFO_TRAINING`), `allennlp bits` its tables and hits;
* stderr holds progress bars, WARNING and ERROR log lines, and user errors (one line each, see `report_user_error`);
* INFO log lines are not printed, except the few in `KEEP_INFO`; `allennlp train` still writes all of them to
  ``<serialization dir>/out.log``;
* the library warnings in `NOISE_WARNINGS` are ignored, each matched by its message, category and the module it is
  attributed to; every other warning is shown.

Verbose, AllenNLP's own output: ``--verbose`` anywhere on the command line, ``BITCODE_VERBOSE=1``, or AllenNLP's
``ALLENNLP_LOG_LEVEL`` / ``ALLENNLP_DEBUG`` set. The command exports ``BITCODE_VERBOSE`` (0 or 1) so that its
worker processes (distributed training) follow it; ``BITCODE_VERBOSE=0`` also quiets `allennlp.commands.train`
functions called from a script.
"""
import errno
import os
import sys
from typing import Any, List, Optional, Union

from bitcode_allennlp.host.patching import APPLIED, patch, record

VERBOSE_VARIABLE = "BITCODE_VERBOSE"
"""1: AllenNLP's logs and all warnings; 0: quiet. The `allennlp` command sets it for itself and its workers."""

VERBOSE_FLAG = "--verbose"

DEBUG_VARIABLES = ("BITCODE_DEBUG", "ALLENNLP_DEBUG")
"""Either one set (to anything but empty or `0`) shows the full traceback of an error of the `allennlp` command."""

LOG_FORMAT = "%(asctime)s - %(levelname)s - %(name)s - %(message)s"
"""AllenNLP's console format (`allennlp/__main__.py`)."""

NOISE_WARNINGS = (
    # (start of the message, category, module the warning is attributed to (regex), why it is noise)
    ("pkg_resources is deprecated as an API", UserWarning, r"rouge\.rouge",
     "py-rouge, imported by allennlp-models at every start; setuptools<82 is pinned for it"),
    ("`torch.cuda.amp.autocast(args...)` is deprecated", FutureWarning,
     r"allennlp\.training\.gradient_descent_trainer",
     "AllenNLP 2.10's trainer uses the old name; it does the same (and nothing without use_amp)"),
    ("enable_nested_tensor is True, but self.use_nested_tensor is False", UserWarning,
     r"allennlp\.modules\.seq2seq_encoders\.pytorch_transformer_wrapper",
     "AllenNLP's pytorch_transformer encoder (our code model) is not batch-first; torch just skips a fast path"),
)

KEEP_INFO = {
    # logger -> the INFO records still printed when quiet: a set of message templates or function names; None: all
    "allennlp.training.gradient_descent_trainer": {"Epoch %d/%d", "Ran out of patience. Stopping training."},
    "bitcode_allennlp.training.callbacks": None,  # model size at the start, one line per epoch (`epoch_line`)
    "bitcode_allennlp.code_stage.hash_corpus": None,  # what `allennlp hash-corpus` wrote (and resumed)
}

KEEP_INFO_TRAINING = {
    # and on the console of `allennlp train` only (`evaluate` prints its metrics on stdout itself)
    "allennlp.common.util": {"dump_metrics"},  # the final metrics
}


def shown_path(path: Union[str, "os.PathLike[str]"]) -> str:
    """`path` as a user would type it: relative to the working directory when it is below it, else as given."""
    from pathlib import Path

    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def cli_arguments() -> Optional[List[str]]:
    """The arguments of the `allennlp` command (without the program) when this process is one, else None: the
    `allennlp` script, `python -m allennlp` (while runpy imports the package `sys.argv[0]` is still "-m"), or
    `python .../allennlp/__main__.py`."""
    argv = sys.argv
    if not argv:
        return None
    program = argv[0]
    if os.path.basename(program) in ("allennlp", "allennlp.exe") or program.endswith(
            os.path.join("allennlp", "__main__.py")):
        return list(argv[1:])
    if program == "-m":
        full = list(getattr(sys, "orig_argv", []))
        position = len(full) - len(argv)  # the module name comes just before the arguments
        if 0 < position < len(full):
            module = full[position]
            if module == "allennlp" or (module.startswith("-") and not module.startswith("--")
                                        and module.endswith("mallennlp")):
                return list(argv[1:])
    return None


def _truthy(value: Optional[str]) -> bool:
    return value is not None and value.strip().lower() not in ("", "0", "false", "no")


def verbose_requested(args: List[str]) -> bool:
    """Whether the `allennlp` command line `args` (without the program) or the environment ask for AllenNLP's
    own logs: `--verbose` (before a lone `--`), `BITCODE_VERBOSE`, `ALLENNLP_LOG_LEVEL` or `ALLENNLP_DEBUG`."""
    options = args[: args.index("--")] if "--" in args else args
    return (VERBOSE_FLAG in options or _truthy(os.environ.get(VERBOSE_VARIABLE))
            or bool(os.environ.get("ALLENNLP_LOG_LEVEL")) or bool(os.environ.get("ALLENNLP_DEBUG")))


def quiet() -> bool:
    """Whether this process prints quietly: the `allennlp` command (or its worker) without `--verbose`."""
    return os.environ.get(VERBOSE_VARIABLE, "").strip() == "0"


def start(args: List[str]) -> bool:
    """Called once when the `allennlp` command starts, before AllenNLP is imported: exports `BITCODE_VERBOSE` and,
    when quiet, filters the noise warnings and sets up the console log. Returns whether the run is verbose."""
    verbose = verbose_requested(args)
    os.environ[VERBOSE_VARIABLE] = "1" if verbose else "0"
    if not verbose:
        ignore_noise_warnings()
        quiet_console()
    return verbose


def ignore_noise_warnings() -> None:
    """Ignores each warning of `NOISE_WARNINGS`, and only those (message, category and module must all match)."""
    import re
    import warnings

    for message, category, module, _ in NOISE_WARNINGS:
        warnings.filterwarnings("ignore", message=re.escape(message), category=category, module=module)


def _import_logging():
    import logging  # not at the top: the `allennlp` import hook may import this module in any process

    return logging


def keep_record(record, training: bool = False) -> bool:
    """Whether the console prints `record` when quiet: WARNING and above, the INFO lines of `KEEP_INFO`, and with
    `training` (the console of `allennlp train`) those of `KEEP_INFO_TRAINING`."""
    logging = _import_logging()
    if record.levelno >= logging.WARNING:
        return True
    if record.levelno < logging.INFO:
        return False
    for keep in (KEEP_INFO, KEEP_INFO_TRAINING) if training else (KEEP_INFO,):
        if record.name in keep:
            kept = keep[record.name]
            if kept is None or record.msg in kept or record.funcName in kept:
                return True
    return False


def _console_filter(training: bool):
    logging = _import_logging()

    class QuietConsole(logging.Filter):
        """Lets through what `keep_record` keeps (added to the console handlers, not to log files)."""

        def filter(self, record) -> bool:
            return keep_record(record, training)

    return QuietConsole()


def _is_console(handler) -> bool:
    logging = _import_logging()
    return (isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler)
            and getattr(handler, "stream", None) in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__))


def quiet_console() -> None:
    """The console log when quiet: WARNING and above on stderr (AllenNLP's format) and the INFO lines of
    `KEEP_INFO`. A handler put on the root logger now makes `allennlp/__main__.py`'s `logging.basicConfig(INFO)` a
    no-op."""
    logging = _import_logging()
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        root.addHandler(handler)
    quiet_console_handlers()
    root.setLevel(logging.WARNING)
    for name in KEEP_INFO:
        logging.getLogger(name).setLevel(logging.INFO)


def quiet_console_handlers(training: bool = False) -> None:
    """Adds the quiet filter to the root logger's console handlers (once each); file handlers keep everything.
    Called with `training` after `allennlp train` replaces the handlers (`prepare_global_logging`)."""
    logging = _import_logging()
    for handler in logging.getLogger().handlers:
        if _is_console(handler) and not any(type(f).__name__ == "QuietConsole" for f in handler.filters):
            handler.addFilter(_console_filter(training))


def show_progress(print_to_console: bool) -> bool:
    """Whether `allennlp predict` shows a progress bar: stderr is a terminal, and the predictions are not printed
    to a terminal too (`--silent`, or stdout redirected), where the bar would be drawn between them."""
    return sys.stderr.isatty() and not (print_to_console and sys.stdout.isatty())


def add_verbose_argument(parser) -> None:
    """`--verbose` on an `argparse` parser, for `--help` and so that the parser accepts it (it is read from the
    command line before parsing, see `verbose_requested`)."""
    import argparse

    if VERBOSE_FLAG not in parser._option_string_actions:
        parser.add_argument(VERBOSE_FLAG, action="store_true", default=argparse.SUPPRESS,
                            help="print AllenNLP's INFO logs and every library warning (also BITCODE_VERBOSE=1)")


# ------------------------------------------------------------------------------------------------ user errors


USER_OS_ERRORS = (FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError, PermissionError)
"""Errors of the operating system about a path the user gave, printed as one line like a `ConfigurationError`
(`PermissionError` is errno EACCES or EPERM)."""


def _errnos(*names: str) -> "frozenset[int]":
    return frozenset(getattr(errno, name) for name in names if hasattr(errno, name))  # EDQUOT: not everywhere


WRITE_ERRNOS = _errnos("ENOSPC", "EDQUOT", "EFBIG")
"""What a write, flush or close of a file can fail with because of where it writes: a full disk, a disk quota, a
file over the size limit. Python's file objects raise them without a file name (`written_file` looks for it)."""

USER_ERRNOS = WRITE_ERRNOS | _errnos(
    "ENAMETOOLONG",  # a name over 255 bytes (or a path over 4095)
    "ELOOP",  # a symlink loop in a path
    "EROFS",  # a read-only file system
    "EMFILE", "ENFILE",  # too many open files (this process, the system)
    "EADDRINUSE", "EADDRNOTAVAIL",  # a port that is taken, an address not of this machine (`bits explore --serve`)
    "EACCES", "EPERM",  # permissions (`PermissionError`, already in USER_OS_ERRORS)
)
"""Errnos of an `OSError` that come from the user's situation (where they write, their limits), never from a bug:
such an error is one line (`is_user_error`). Any other errno (EIO, EBADF, EINVAL, ...) keeps its traceback."""


def is_user_error(error: BaseException, also: "tuple" = ()) -> bool:
    """Whether `error` is the user's (one line, exit status 1) rather than a bug (its traceback): one of `also`
    (`ConfigurationError`, which the caller knows), of `USER_OS_ERRORS`, or an `OSError` whose errno is in
    `USER_ERRNOS`."""
    if isinstance(error, also) or isinstance(error, USER_OS_ERRORS):
        return True
    return isinstance(error, OSError) and error.errno in USER_ERRNOS


def debug() -> bool:
    """Whether `BITCODE_DEBUG` or `ALLENNLP_DEBUG` asks for full tracebacks."""
    return any(os.environ.get(name, "") not in ("", "0") for name in DEBUG_VARIABLES)


STDOUT_NAME = "standard output"
"""How a message names `sys.stdout` (`flush_stdout`, `written_file`)."""


def _written_name(value: Any) -> Optional[str]:
    """The path of `value` if it is a file object opened by name for writing (not by descriptor), else None."""
    import io

    if not isinstance(value, io.IOBase):
        return None
    if value is sys.stdout or value is sys.__stdout__:
        return STDOUT_NAME
    name, mode = getattr(value, "name", None), getattr(value, "mode", None)
    if not isinstance(name, str) or not isinstance(mode, str) or not any(flag in mode for flag in "wax+"):
        return None
    return name


def written_file(error: BaseException) -> Optional[str]:
    """
    The file that a write error without a file name (`WRITE_ERRNOS`: ``file.write``, ``flush`` and ``close`` name
    none) was writing: the one file object opened for writing by name among the local variables (and the
    attributes of ``self``) of the frame that raised it, the innermost of its traceback. None when there is none,
    or more than one, or for any other error.
    """
    if not isinstance(error, OSError) or error.errno not in WRITE_ERRNOS or error.filename is not None:
        return None
    trace = error.__traceback__
    if trace is None:
        return None
    while trace.tb_next is not None:
        trace = trace.tb_next
    found: List[str] = []
    for key, value in trace.tb_frame.f_locals.items():
        values = [value]
        if key == "self" and isinstance(getattr(value, "__dict__", None), dict):
            values += list(vars(value).values())
        for item in values:
            name = _written_name(item)
            if name is not None and name not in found:
                found.append(name)
    return found[0] if len(found) == 1 else None


def _atomic_output(path: str) -> Optional[str]:
    """The output that `path` is the temporary file of (``.<name>.<pid>.<random>.tmp`` beside it, made by
    `outputs.atomic_file` and `atomic_path`), or the output folder whose staging folder it is in
    (`replaced_folder`, `staged_files`), or None."""
    from bitcode_allennlp.host.outputs import temporary_of

    folder, name = os.path.split(path)
    for where, entry in ((folder, name), os.path.split(folder)):  # the file itself, or its staging folder
        parsed = temporary_of(entry)
        if parsed is not None:
            return os.path.join(where, parsed[0])
    return None


def _name_detail(error: OSError, path: str) -> str:
    """What makes an ENAMETOOLONG or EMFILE error clear: the name's length, the process's limit of open files."""
    if error.errno == errno.ENAMETOOLONG:
        parts = os.fsencode(path).split(b"/")
        longest = max(len(part) for part in parts)
        if longest > 255:
            return f" (a name of {longest} bytes in it; most file systems allow 255)"
        return f" (the path has {len(os.fsencode(path))} bytes)"
    if error.errno == errno.EMFILE:
        try:
            import resource

            limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        except (ImportError, OSError, ValueError):
            return ""
        return f" (this process may open {limit}; `ulimit -n` raises the limit)"
    return ""


def os_error_message(error: OSError) -> str:
    """
    One line for an `OSError`: ``<file>: <the OS's reason>``, the file being the one the error names, or for a
    write error without one the file being written (`written_file`); the temporary file of an atomic write is named
    as its output, with what the failure kept (the old output, or none: outputs are written whole or not at all).
    Without a file: ``<reason> (<ERRNO>)``.
    """
    reason = error.strerror or str(error)
    path: Any = error.filename if error.filename is not None else written_file(error)
    if path is None:
        code = errno.errorcode.get(error.errno) if isinstance(error.errno, int) else None
        return f"{reason} ({code})" if code else reason
    path = os.fsdecode(path) if isinstance(path, (bytes, os.PathLike)) else str(path)
    detail = _name_detail(error, path)
    output = _atomic_output(path)
    if output is not None:
        kept = (f"the old {'folder' if os.path.isdir(output) else 'file'} is unchanged" if os.path.exists(output)
                else "nothing was written")
        return f"{output}: {reason}{detail}; {kept} (outputs are written whole or not at all)"
    if error.filename2 is not None:
        target = os.fsdecode(error.filename2) if isinstance(error.filename2, bytes) else str(error.filename2)
        return f"{path} -> {target}: {reason}{detail}"
    return f"{path}: {reason}{detail}"


def error_message(error: BaseException) -> str:
    """What the user reads about `error`: its message, or for an OS error `<file>: <reason>` (`os_error_message`)."""
    if isinstance(error, OSError) and error.strerror:
        return os_error_message(error)
    return str(error) or type(error).__name__


def flush_stdout() -> None:
    """Flushes `sys.stdout` at the end of a command, so that a full disk under a redirected stdout is an error of
    the command (named `STDOUT_NAME`) rather than a message of Python's at exit."""
    try:
        sys.stdout.flush()
    except OSError as error:
        if error.filename is None and not isinstance(error, BrokenPipeError):
            error.filename = STDOUT_NAME
        raise


def release_stdout(closed: bool = False) -> None:
    """After an error: stdout's remaining output is dropped if it cannot be written (a full disk), or at once when
    the pipe is `closed` (``| head``), so that Python prints nothing more about it at exit (as Python's docs advise
    for a closed pipe)."""
    if not closed:
        try:
            sys.stdout.flush()
            return
        except (OSError, ValueError):
            pass
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # not a real file (a test's capture): nothing is printed at exit anyway


def command_name(argv: List[str]) -> str:
    """The subcommand of an `allennlp` command line (`train`, `predict`, `bits stats`, ...), or "" when none."""
    words = [arg for arg in argv if not arg.startswith("-")][:2]
    return " ".join(words) if words[:1] == ["bits"] else " ".join(words[:1])


def command_label(prog: Optional[str], name: str) -> str:
    """``<prog> <command>`` as the user typed it (``allennlp train``, ``allennlp bits search``)."""
    return " ".join(part for part in (prog or "allennlp", name) if part)


def report_user_error(prog: Optional[str], argv: List[str], error: BaseException) -> None:
    """Prints ``<prog> <command>: error: <message>`` and the `BITCODE_DEBUG` hint on stderr."""
    command = command_label(prog, command_name(argv))
    sys.stderr.write(f"{command}: error: {error_message(error)}\n(set BITCODE_DEBUG=1 for the full traceback)\n")
    sys.stderr.flush()


INTERRUPTED_STATUS = 130
"""The exit status of a command stopped by Ctrl-C (128 + SIGINT), as a shell reports it."""

RESUMABLE = {
    # command -> (its output options, what the output holds after Ctrl-C and how to go on)
    "train": (("-s", "--serialization-dir"), "holds the checkpoints so far: resume with --recover"),
    "hash-corpus": (("-o", "--output"), "holds the sentences coded so far: run the same command to resume"),
}


def option_value(argv: List[str], names: "tuple") -> Optional[str]:
    """The value of the first option of `names` on the command line (`-s DIR`, `--output=FILE`), or None."""
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
            if name.startswith("--") and arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def report_interrupt(prog: Optional[str], argv: List[str]) -> None:
    """Prints one line for Ctrl-C: ``<prog> <command>: interrupted (Ctrl-C); <what its output holds>``."""
    name = command_name(argv)
    command = command_label(prog, name)
    options, holds = RESUMABLE.get(name, ((), ""))
    output = option_value(argv, options) if options else None
    after = (f"{output} {holds}" if output else
             "no partial output: outputs are written whole or not at all (files named by an option are unchanged)")
    sys.stderr.write(f"{command}: interrupted (Ctrl-C); {after}\n")
    sys.stderr.flush()


# ------------------------------------------------------------------------------------------------ into AllenNLP


def start_cli() -> None:
    """Just before the `allennlp` package's code, when this process is the `allennlp` command: quiet or verbose
    set-up (`start`). A light `bits` command then runs at once, without AllenNLP (`bits.light.start_light_bits`, the
    next extension of the same module)."""
    args = cli_arguments()
    if args is None or "quiet_cli" in APPLIED:
        return
    verbose = start(args)
    record("quiet_cli", "verbose: AllenNLP's logs" if verbose
           else "quiet: results on stdout, no INFO logs on the console, noise warnings ignored")


def install_verbose_flag(module) -> None:
    """`allennlp.commands`: `--verbose` in every parser of the `allennlp` command (read from the command line in
    `start_cli`)."""

    def with_verbose(base):
        class ArgumentParserWithDefaults(base):
            __doc__ = base.__doc__

            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                add_verbose_argument(self)

        return ArgumentParserWithDefaults

    patch(module, "ArgumentParserWithDefaults", with_verbose,
          mark="verbose_flag", reason="every allennlp parser accepts --verbose")


def install_quiet_training(module) -> None:
    """`allennlp.common.logging`: `prepare_global_logging` (`allennlp train`, each worker) puts new console handlers
    on the root logger: when quiet, they print only what `keep_record` keeps; `out.log` keeps every line."""

    def quiet_handlers(original):
        def prepare_global_logging(*args, **kwargs) -> None:
            original(*args, **kwargs)
            if quiet():
                ignore_noise_warnings()
                quiet_console_handlers(training=True)

        return prepare_global_logging

    patch(module, "prepare_global_logging", quiet_handlers, everywhere=True, mark="quiet_training",
          reason="quiet allennlp train: epoch lines and metrics on the console, everything in out.log")


def install_quiet_predict(module) -> None:
    """`allennlp.commands.predict`: when quiet, each prediction is one JSON line, without AllenNLP's `input N:` and
    `prediction:` prefixes and blank lines, and the inputs are counted in a progress bar on stderr when that is a
    terminal (and the predictions do not go to the same terminal: `show_progress`)."""
    reason = "quiet allennlp predict prints one JSON line per prediction (and a progress bar on a terminal's stderr)"

    def one_line(original):
        def _maybe_print_to_console_and_file(self, index: int, prediction: str, model_input: str = None) -> None:
            if not quiet():
                return original(self, index, prediction, model_input)
            if self._print_to_console:
                sys.stdout.write(prediction if prediction.endswith("\n") else prediction + "\n")
            if self._output_file is not None:
                self._output_file.write(prediction)

        return _maybe_print_to_console_and_file

    def with_progress(read):
        def read_inputs(self):
            inputs = read(self)
            if quiet() and show_progress(self._print_to_console):
                from allennlp.common.tqdm import Tqdm

                inputs = Tqdm.tqdm(inputs, desc="predict", unit=" inputs")
            return inputs

        return read_inputs

    manager = module._PredictManager
    patch(manager, "_maybe_print_to_console_and_file", one_line, mark="quiet_predict", reason=reason)
    patch(manager, "_get_json_data", with_progress, mark="quiet_predict", reason=reason)
    patch(manager, "_get_instance_data", with_progress, mark="quiet_predict", reason=reason)


def install_evaluate_metrics(module) -> None:
    """`allennlp.commands.evaluate`: `allennlp evaluate` prints its final metrics as JSON on stdout (with or without
    `--output-file`)."""

    def print_metrics(original):
        def add_subparser(self, parser):
            subparser = original(self, parser)
            evaluate = subparser.get_default("func")

            def func(args):
                import json

                from allennlp.common.util import sanitize

                metrics = evaluate(args)
                print(json.dumps(sanitize(metrics), indent=2))
                return metrics

            subparser.set_defaults(func=func)
            return subparser

        return add_subparser

    patch(module.Evaluate, "add_subparser", print_metrics,
          mark="evaluate_metrics", reason="allennlp evaluate prints its metrics as JSON on stdout")

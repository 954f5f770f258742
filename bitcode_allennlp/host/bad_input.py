"""Bad input through the `allennlp` command: one clear error line instead of a traceback, checked predict input,
readable archive errors, config variables named in errors, and reruns of runs that never started.

Each part is an extension of AllenNLP (not a version fix), installed by the `install_*` function below when the
AllenNLP module it changes is first imported (`bitcode_allennlp.host.extensions` lists them; the patch names are
``cli_errors``, ``config_errors``, ``predict_input``, ``archive_errors``, ``unstarted_runs``; ``output_files`` is
installed with ``cli_errors``):

* `wrap_main` (``allennlp.commands.main``): a `ConfigurationError` (which includes our `DataFormatError` and
  `ArchiveError`), a missing / unreadable file or another OS error of the user's situation (a full disk, a name
  too long, a symlink loop: `console.is_user_error`) prints ``allennlp <command>: error: <message>`` and a hint
  line on stderr and exits with status 1. `BITCODE_DEBUG=1` (or AllenNLP's own `ALLENNLP_DEBUG=1`) re-raises
  instead, with the full traceback. Every other exception (a bug, an OSError such as EIO) keeps its traceback.
* `output_files` (``allennlp predict`` and ``allennlp evaluate``): their numeric options are checked by argparse
  (`bitcode_allennlp.host.options`: ``--batch-size`` a positive integer, ``--cuda-device`` -1 or a GPU id), and
  before the model loads their outputs (``--output-file``, ``--predictions-output-file``) are checked, locked and
  written atomically (`bitcode_allennlp.host.outputs`): not an input, not a folder, creatable; a failed run leaves
  the old output (or none), never a half-written one.
* `wrap_evaluate` (``allennlp.common.params``): a jsonnet error becomes a `ConfigurationError`
  ``<config file>: <jsonnet's message>``. A bad config variable never gets that far: Python checks and reads it
  before jsonnet runs (`bitcode_allennlp.host.config_variables`, kinds in `bitcode_allennlp.host.config_kinds`),
  a `ConfigurationError` ``<config file>: environment variable K="abc" is not a number``; `env.libsonnet`'s own
  messages (``config variable NAME is not in BITCODE_SETTINGS ...``) name the variable.
* `get_json_data` (``allennlp predict``'s `_PredictManager`): input lines are read as UTF-8 JSON objects and checked
  by the predictor's `check_input` (`bitcode_allennlp.model.predictor`). A bad line is a `DataFormatError`
  ``<input>, line <n>: <what is wrong>``; every line of an input file is checked before the first prediction, so a
  failed run writes no predictions (an output file left empty by a failed run is removed). ``--skip-bad-lines``
  (added to ``allennlp predict``) instead logs each bad line as a warning, predicts the others, and ends with a count.
* `extracted_archive` (``allennlp.models.archival``): an empty, truncated or non-tar.gz `model.tar.gz`, or one
  without `config.json`, raises `ArchiveError` ``<archive>: <what is wrong>`` and leaves no temporary folder.
* `wrap_create_serialization_dir` (``allennlp.training.util``): a serialization directory that holds only what a
  run writes before its first checkpoint (`config.json`, `meta.json`, `vocabulary/`, `*.log`) is removed, with a
  warning, when `allennlp train` is run again without `--recover` / `--force`: that run never started, there is
  nothing to recover. A directory with a checkpoint, weights, metrics or anything else is kept, and the error says
  what to do (`--recover` continues, `--force` starts over).
"""
from __future__ import annotations

import contextvars
import json
import logging
import os
import shutil
import sys
import tarfile
import tempfile
import zlib
from contextlib import ExitStack, contextmanager
from typing import Any, Callable, Iterator, List, Optional, Tuple, Union

from allennlp.common.checks import ConfigurationError

# The module, not its names: this file is imported by the compat hook while `allennlp.common.params` loads,
# which can happen in the middle of importing `bitcode_allennlp.host.errors` itself (it imports allennlp).
from bitcode_allennlp.host import errors, options
from bitcode_allennlp.host.console import (
    INTERRUPTED_STATUS, USER_OS_ERRORS, debug, error_message, flush_stdout, is_user_error, release_stdout,
    report_interrupt, report_user_error,
)
from bitcode_allennlp.host.outputs import Input, atomic_path, guarded_outputs, model_archive, split_paths
from bitcode_allennlp.host.patching import patch, replacing

logger = logging.getLogger(__name__)

USER_ERRORS = (ConfigurationError,) + USER_OS_ERRORS
"""Errors about the user's input, printed as one line, with the `OSError`s of the user's situation (a full disk, a
name too long: `console.USER_ERRNOS`, see `console.is_user_error`); everything else keeps its traceback."""

UNSTARTED_ENTRIES = ("config.json", "meta.json", "vocabulary")
"""What `allennlp train` writes into a serialization directory before its first checkpoint (and `*.log`)."""


# ------------------------------------------------------------------------------------------------ the command


def wrap_main(original: Callable[..., None]) -> Callable[..., None]:
    """`allennlp.commands.main`, printing a user error (`USER_ERRORS`, or an `OSError` of the user's situation:
    `console.is_user_error`) as two lines on stderr and exiting with status 1, and Ctrl-C as one line naming what
    the output holds (`report_interrupt`), exiting with status 130. Stdout is flushed before the end, so that a
    full disk under it is such an error too; a closed stdout (``| head``) ends the command quietly with status 1."""

    def main(prog: Optional[str] = None) -> None:
        try:
            original(prog)
            flush_stdout()
        except KeyboardInterrupt:
            if debug():
                raise
            report_interrupt(prog, sys.argv[1:])
            raise SystemExit(INTERRUPTED_STATUS) from None
        except BrokenPipeError:  # the reader of stdout went away: stop quietly, as Python's docs advise
            release_stdout(closed=True)
            raise SystemExit(1) from None
        except Exception as error:
            if debug() or not is_user_error(error, USER_ERRORS):
                raise  # a bug: its traceback
            release_stdout()
            report_user_error(prog, sys.argv[1:], error)
            raise SystemExit(1) from None

    main.__doc__ = original.__doc__
    main.__wrapped__ = original  # type: ignore[attr-defined]
    return main


def install_cli_errors(module) -> None:
    """`allennlp.commands`: one error line (and exit status 1) instead of a traceback for a user's error; and
    `allennlp evaluate`'s numeric options and outputs checked (`add_evaluate_checks`; its module is loaded by now)."""
    patch(module, "main", wrap_main,
          mark="cli_errors", reason="allennlp's main prints a user error as one line (BITCODE_DEBUG=1: the traceback)")
    evaluate = sys.modules.get("allennlp.commands.evaluate")
    if evaluate is not None:
        patch(evaluate.Evaluate, "add_subparser", add_evaluate_checks, mark="output_files", reason=OUTPUT_FILES)


# ------------------------------------------------------------------------------------------------ options, outputs

OUTPUT_FILES = ("allennlp predict and evaluate: --batch-size and --cuda-device checked by argparse; their output files "
                "checked before the model loads, locked and written atomically")

NUMERIC_OPTIONS = {"batch_size": options.positive_int, "cuda_device": options.cuda_device}
"""The `type` of AllenNLP's numeric options of `predict` and `evaluate`, by destination."""


def set_numeric_types(subparser: Any) -> None:
    """Sets the argparse `type` of the existing numeric options of an AllenNLP sub-command (`NUMERIC_OPTIONS`)."""
    for action in subparser._actions:
        if action.dest in NUMERIC_OPTIONS:
            action.type = NUMERIC_OPTIONS[action.dest]


@contextmanager
def written_atomically(args: Any, outputs: List[Tuple[str, str, str]], inputs: List[Input]) -> Iterator[None]:
    """
    For the block (an AllenNLP command that writes its outputs by name): the outputs `(attribute of args, option,
    what)` (comma-separated lists, as AllenNLP takes them) are checked against `inputs` and locked, and
    `args.<attribute>` names temporary files beside them, renamed over them when the block ends without an
    exception (`outputs.atomic_path`); after the block `args` names the outputs again.
    """
    given = {attribute: getattr(args, attribute, None) for attribute, _, _ in outputs}
    paths = [(attribute, path, option, what) for attribute, option, what in outputs
             for path in split_paths(given[attribute])]
    with guarded_outputs([(path, option, what) for _, path, option, what in paths], inputs), ExitStack() as stack:
        temporary = {path: stack.enter_context(atomic_path(path)) for _, path, _, _ in paths}
        try:
            for attribute, value in given.items():
                if value is not None:
                    setattr(args, attribute, ",".join(temporary[path] for path in split_paths(value)))
            yield
        finally:
            for attribute, value in given.items():
                setattr(args, attribute, value)


def add_evaluate_checks(original: Callable[..., Any]) -> Callable[..., Any]:
    """`Evaluate.add_subparser` with checked numeric options (`set_numeric_types`) and outputs
    (`written_atomically`): `--output-file` and `--predictions-output-file` (unless `--auto-names` names them)."""

    def add_subparser(self, parser):
        subparser = original(self, parser)
        set_numeric_types(subparser)
        evaluate = subparser.get_default("func")

        def func(args):
            auto = getattr(args, "auto_names", "NONE")
            outputs = [("output_file", "--output-file", "the metrics file")] if auto not in ("METRICS", "ALL") else []
            if auto not in ("PREDS", "ALL"):
                outputs.append(("predictions_output_file", "--predictions-output-file", "the predictions file"))
            inputs = [Input(path, "the evaluation data") for path in split_paths(args.input_file)]
            inputs += [model_archive(args.archive_file), Input(args.weights_file, "the weights file")]
            with written_atomically(args, outputs, inputs):
                return evaluate(args)

        subparser.set_defaults(func=func)
        return subparser

    add_subparser.__wrapped__ = original  # type: ignore[attr-defined]
    return add_subparser


# ------------------------------------------------------------------------------------------------ configs


def jsonnet_message(text: str) -> str:
    """The first line of a jsonnet error without its `RUNTIME ERROR: ` prefix, and where it happened unless the
    message names a variable (`env.libsonnet`'s ``config variable NAME ...``)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return text
    first = lines[0]
    for prefix in ("RUNTIME ERROR: ", "STATIC ERROR: "):
        if first.startswith(prefix):
            first = first[len(prefix):]
    names_variable = first.startswith(("environment variable ", "config variable "))
    if not names_variable and len(lines) > 1 and text.startswith("RUNTIME ERROR"):
        first += f" (at {lines[1].split()[0]})"
    return first


def wrap_evaluate(original: Callable[..., str], snippet: bool = False) -> Callable[..., str]:
    """jsonnet's `evaluate_file` (or `evaluate_snippet`, the `--overrides`) raising `ConfigurationError`
    `<file>: <message>` instead of a multi-line `RuntimeError`."""

    def evaluate(filename: str, *args: Any, **kwargs: Any) -> str:
        try:
            return original(filename, *args, **kwargs)
        except RuntimeError as error:
            where = "--overrides" if snippet else filename
            raise ConfigurationError(f"{where}: {jsonnet_message(str(error))}") from error

    evaluate.__wrapped__ = original  # type: ignore[attr-defined]
    return evaluate


def install_config_errors(module) -> None:
    """`allennlp.common.params`: a jsonnet error as `ConfigurationError` `<config>: <message>`."""
    reason = "jsonnet errors are ConfigurationError '<config>: <message>'"
    patch(module, "evaluate_file", wrap_evaluate, everywhere=True, mark="config_errors", reason=reason)
    patch(module, "evaluate_snippet", lambda original: wrap_evaluate(original, snippet=True), everywhere=True,
          mark="config_errors", reason=reason)


# ------------------------------------------------------------------------------------------------ predict

_SKIP_BAD_LINES: "contextvars.ContextVar[bool]" = contextvars.ContextVar("skip_bad_lines", default=False)


def add_predict_arguments(original: Callable[..., Any]) -> Callable[..., Any]:
    """`Predict.add_subparser`, adding `--skip-bad-lines`, with checked numeric options (`set_numeric_types`) and
    `--output-file` checked, locked and written atomically (`written_atomically`). Idempotent: wrapping an already
    wrapped one returns it (a second wrapper would add the option twice, an argparse conflict; `patch` also applies
    it only once)."""
    if getattr(original, "_adds_skip_bad_lines", False):
        return original

    def add_subparser(self, parser):
        subparser = original(self, parser)
        subparser.add_argument("--skip-bad-lines", action="store_true",
                               help="skip input lines that are not a valid JSON input (each is logged with its "
                                    "line number) instead of failing before any prediction")
        set_numeric_types(subparser)
        predict = subparser.get_default("func")

        def func(args):
            token = _SKIP_BAD_LINES.set(bool(getattr(args, "skip_bad_lines", False)))
            inputs = [Input(args.input_file, "the input file"), model_archive(args.archive_file),
                      Input(getattr(args, "weights_file", None), "the weights file")]
            try:
                with written_atomically(args, [("output_file", "--output-file", "the predictions")], inputs):
                    return predict(args)
            finally:
                _SKIP_BAD_LINES.reset(token)

        subparser.set_defaults(func=func)
        return subparser

    add_subparser.__wrapped__ = original  # type: ignore[attr-defined]
    add_subparser._adds_skip_bad_lines = True  # type: ignore[attr-defined]
    return add_subparser


def _raw_lines(input_file: str) -> Iterator[Tuple[int, Union[str, errors.DataFormatError]]]:
    """`(line number, text)` of the predict input (`-` is stdin); invalid UTF-8 gives a `DataFormatError`."""
    from allennlp.common.file_utils import cached_path, open_compressed

    if input_file == "-":
        path = "<stdin>"
        lines: Any = (line.encode("utf-8", "surrogateescape") for line in sys.stdin)
        handle = None
    else:
        path = input_file
        handle = open_compressed(cached_path(input_file), "rb", encoding=None)
        lines = handle
    try:
        for number, raw in enumerate(lines, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                yield number, errors.DataFormatError(path, number,
                                                     f"invalid UTF-8 (byte {error.start + 1} of the line)")
                continue
            yield number, text[1:] if number == 1 and text.startswith("\ufeff") else text
    finally:
        if handle is not None:
            handle.close()


def checked_inputs(predictor: Any, input_file: str) -> Iterator[Union[Any, errors.DataFormatError]]:
    """Each non-blank line of `input_file` as the predictor's input, or the `DataFormatError` that says why not."""
    path = "<stdin>" if input_file == "-" else input_file
    check = getattr(predictor, "check_input", None)
    for number, text in _raw_lines(input_file):
        if isinstance(text, errors.DataFormatError):
            yield text
            continue
        if not text.strip():
            continue
        try:
            try:
                data = predictor.load_line(text)
            except json.JSONDecodeError as error:
                raise ValueError(f"not JSON ({error.msg} at column {error.colno})") from None
            if check is not None:
                check(data)
            elif not isinstance(data, dict):
                raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        except (ValueError, TypeError) as error:
            yield errors.DataFormatError(path, number, str(error))
            continue
        yield data


def get_json_data(self) -> Iterator[Any]:
    """`_PredictManager._get_json_data`, checked (see the module docstring)."""
    skip = getattr(self, "skip_bad_lines", None)
    skip = _SKIP_BAD_LINES.get() if skip is None else skip
    if not skip and self._input_file != "-":
        for item in checked_inputs(self._predictor, self._input_file):  # every line, before any prediction
            if isinstance(item, errors.DataFormatError):
                raise _with_hint(item)
    bad: List[errors.DataFormatError] = []
    for item in checked_inputs(self._predictor, self._input_file):
        if not isinstance(item, errors.DataFormatError):
            yield item
        elif skip:
            logger.warning("%s (skipped)", item)
            bad.append(item)
        else:
            raise _with_hint(item)
    if bad:
        lines = ", ".join(str(error.line) for error in bad[:10]) + (", ..." if len(bad) > 10 else "")
        logger.warning("%s: skipped %d bad line(s) (%s %s); first: %s", bad[0].path, len(bad),
                       "line" if len(bad) == 1 else "lines", lines, bad[0].message)


def _with_hint(error: errors.DataFormatError) -> errors.DataFormatError:
    return errors.DataFormatError(error.path, error.line, f"{error.message} (--skip-bad-lines skips bad lines)")


def wrap_predict_run(original: Callable[[Any], None]) -> Callable[[Any], None]:
    """`_PredictManager.run`, removing an output file left empty by a failed run (a bad or missing input)."""

    def run(self) -> None:
        try:
            original(self)
        except Exception:
            output = getattr(self, "_output_file", None)
            if output is not None:
                output.close()
                if os.path.isfile(output.name) and os.path.getsize(output.name) == 0:
                    os.remove(output.name)
            raise

    run.__wrapped__ = original  # type: ignore[attr-defined]
    return run


def install_predict_input(module) -> None:
    """`allennlp.commands.predict`: every input line checked, the bad one named; `--skip-bad-lines`."""
    reason = "allennlp predict names bad input lines (file, line, field); --skip-bad-lines"
    manager = module._PredictManager
    patch(manager, "_get_json_data", replacing(get_json_data), mark="predict_input", reason=reason)
    patch(manager, "run", wrap_predict_run, mark="predict_input", reason=reason)
    patch(module.Predict, "add_subparser", add_predict_arguments, mark="predict_input", reason=reason)


# ------------------------------------------------------------------------------------------------ archives


def _archive_problem(path: str, error: BaseException) -> str:
    if os.path.isfile(path) and os.path.getsize(path) == 0:
        return "the archive is empty (0 bytes); train the model again or copy the archive again"
    if isinstance(error, EOFError) or "unexpected end of data" in str(error):
        return "the archive is truncated (it ends before its data does); copy the archive again or train again"
    if isinstance(error, tarfile.ReadError) and "gzip" in str(error):
        return "not a model archive (not a gzipped tar file)"
    if isinstance(error, OSError) and error.strerror:
        return f"cannot extract the archive ({error.strerror})"
    return f"not a readable model archive ({error_message(error)})"


def extract_archive(path: str, directory: str) -> None:
    """Extracts a model archive into `directory`; raises `ArchiveError` naming `path` if it is not one, or if a
    member would land outside `directory` or is a link (`archival.checked_members`, checked before anything is
    written; Python's `data` extraction filter too, where it has one)."""
    from bitcode_allennlp.host.archival import checked_members

    try:
        with tarfile.open(path, "r:gz") as archive:
            members = checked_members(path, archive.getmembers())
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            archive.extractall(directory, members=members, **safe)
    except (tarfile.TarError, EOFError, zlib.error, OSError) as error:
        raise errors.ArchiveError(path, _archive_problem(path, error)) from error
    if not os.path.isfile(os.path.join(directory, "config.json")):
        raise errors.ArchiveError(path, "not a model archive (no config.json inside)")


@contextmanager
def extracted_archive(resolved_archive_file: str, cleanup: bool = True) -> Iterator[str]:
    """AllenNLP's `extracted_archive` with `ArchiveError` for a bad archive and no temporary folder left behind
    when extraction fails (AllenNLP's `load_archive` uses `cleanup=False` and removes the folder itself)."""
    tempdir = tempfile.mkdtemp()
    try:
        logger.info("extracting archive file %s to temp dir %s", resolved_archive_file, tempdir)
        extract_archive(str(resolved_archive_file), tempdir)
    except BaseException:
        shutil.rmtree(tempdir, ignore_errors=True)
        raise
    try:
        yield tempdir
    finally:
        if cleanup:
            shutil.rmtree(tempdir, ignore_errors=True)


def install_archive_errors(module) -> None:
    """`allennlp.models.archival`: a bad `model.tar.gz` raises `ArchiveError` naming it, no temporary folder left."""
    patch(module, "extracted_archive", replacing(extracted_archive), mark="archive_errors",
          reason="an empty, truncated or foreign model.tar.gz raises ArchiveError naming the file")


# ------------------------------------------------------------------------------------------------ train


def unstarted_run(serialization_dir: str) -> bool:
    """True for a non-empty directory that holds only what `allennlp train` writes before its first checkpoint."""
    if not os.path.isdir(serialization_dir):
        return False
    entries = os.listdir(serialization_dir)
    return bool(entries) and "config.json" in entries and all(
        entry in UNSTARTED_ENTRIES or entry.endswith(".log") for entry in entries)


def wrap_create_serialization_dir(original: Callable[..., None]) -> Callable[..., None]:
    """`allennlp.training.util.create_serialization_dir`, removing a run that never started (module docstring)."""

    def create_serialization_dir(params, serialization_dir, recover: bool, force: bool) -> None:
        if not recover and not force and unstarted_run(str(serialization_dir)):
            logger.warning("%s holds only the start of a run that stopped before its first checkpoint (%s): "
                           "removing it and starting over", serialization_dir,
                           ", ".join(sorted(os.listdir(serialization_dir))))
            shutil.rmtree(serialization_dir)
        try:
            original(params, serialization_dir, recover, force)
        except ConfigurationError as error:
            if "--recover" not in str(error) or recover:
                raise
            raise ConfigurationError(
                f"{serialization_dir} already holds a run (it has checkpoints or files of its own): --recover "
                "continues that run, --force deletes the folder and starts over, or choose another -s") from None

    create_serialization_dir.__doc__ = original.__doc__
    create_serialization_dir.__wrapped__ = original  # type: ignore[attr-defined]
    return create_serialization_dir


def install_unstarted_runs(module) -> None:
    """`allennlp.training.util`: `allennlp train` again into the folder of a run that never reached a checkpoint
    starts over."""
    patch(module, "create_serialization_dir", wrap_create_serialization_dir, everywhere=True, mark="unstarted_runs",
          reason="a serialization dir with no checkpoint, left by a failed run, is started over")

"""Where a command writes: one guard for every output file or folder, so that nothing is lost or half written.

Every command that writes a file goes through here: `allennlp hash-corpus` (OUTPUT and OUTPUT.meta.json),
`hash-corpus-merge`, `predict --output-file`, `evaluate --output-file` / `--predictions-output-file` and the outputs
of `allennlp bits` (`--json`, `--out`, `--html`, index folders). The guard:

* `check_output`, before any work (before a model is loaded): refuses an output that is one of the command's inputs
  (the same file by device and inode, after following symlinks, also a symlink to an input that does not resolve to
  the same name; `--force` never changes that), an output that is a folder where a file is written (or a file where
  a folder is), whose folder is a file, or that cannot be created or written; creates its folder if missing.
* `output_lock`, for the whole run: an exclusive `fcntl.flock` on the sibling file ``OUTPUT.lock`` (non-blocking: a
  second run on a locked output stops at once, naming the output and the process that holds it). The lock file is
  removed at the end; one left by a killed run does not block (the kernel releases a dead process's flock; only a
  held lock counts). Re-entrant within a thread (a command and the function it calls both take it).
* `atomic_file`, `atomic_path`, `staged_files`: the output is written to a temporary file in its own folder and
  renamed over it at the end, so a failed or interrupted run leaves the old output (or none), never a half-written
  or emptied one, and no temporary file. `allennlp hash-corpus` is the exception: it appends complete lines to
  OUTPUT and continues after the last complete one when run again (its documented resume), under the lock.

Standard library only: the light `allennlp bits` process, which has no AllenNLP, imports it. Errors are AllenNLP's
`ConfigurationError` (or its stand-in in the light process, `bitcode_allennlp.bits.light`), one line each.
"""
import errno
import fnmatch
import os
import stat
import threading
from contextlib import ExitStack, contextmanager
from typing import Any, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

try:
    import fcntl
except ImportError:  # not POSIX: no lock (every other check still applies)
    fcntl = None  # type: ignore[assignment]

LOCK_SUFFIX = ".lock"
"""``OUTPUT + LOCK_SUFFIX`` is locked while a run writes OUTPUT."""

TEMPORARY_SUFFIX = ".tmp"
"""Temporary files are ``.<name>.<pid>.<random>.tmp`` beside the output (hidden, so a glob of outputs misses them)."""


class Input(NamedTuple):
    """An input of a command, for `check_output`: its path, what it is in a message (``"the input corpus"``) and,
    for a folder, the patterns of the files in it that the command reads (an output on one of them is refused)."""

    path: Any
    role: str = "the input"
    members: Tuple[str, ...] = ()


InputLike = Union[Input, Tuple[Any, str], str, "os.PathLike[str]", None]


def _error(message: str) -> Exception:
    # AllenNLP's ConfigurationError, or its stand-in in the light `allennlp bits` process (see host/names.py)
    from bitcode_allennlp.host.names import ConfigurationError

    return ConfigurationError(message)


def _as_input(value: InputLike) -> Optional[Input]:
    if value is None:
        return None
    if isinstance(value, Input):
        return value if value.path is not None else None
    if isinstance(value, tuple):
        return Input(*value) if value[0] is not None else None
    return Input(value)


def _local(path: Any) -> bool:
    text = os.fspath(path)
    return bool(text) and "://" not in text


def _exists(path: str) -> bool:
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


def target(path: Any) -> Tuple[str, bool]:
    """Where an output is written: `(its path with symlinks followed, False)`, or for an existing output that is
    not a regular file or folder (``/dev/null``, ``/dev/stdout``, a pipe) `(the path as given, True)`: such an
    output is written in place, with no temporary file or lock beside it."""
    given = os.fspath(path)
    try:
        mode = os.stat(given).st_mode
    except (OSError, ValueError):
        return os.path.realpath(given), False
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return os.path.realpath(given), False
    return given, True


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _inside(path: str, folder: str, patterns: Sequence[str]) -> bool:
    """Whether `path` (resolved) is a file directly in `folder` (resolved) named like one of `patterns`."""
    parent, name = os.path.split(path)
    return bool(patterns) and _same_file(parent, folder) and any(fnmatch.fnmatch(name, p) for p in patterns)


def _overwrites(given: str, real: str, members: Sequence[str], item: Input) -> Optional[str]:
    """How the output `given` (at `real`) would overwrite the input `item`, or None when it would not."""
    source = os.fspath(item.path)
    if not _local(source) or not _exists(source):
        return None
    if _exists(real) and _same_file(real, source):
        if os.path.normpath(os.path.abspath(given)) == os.path.normpath(os.path.abspath(source)):
            return f"is {item.role}"
        if os.path.islink(given):
            return f"is a link to {item.role} {source}"
        return f"is the same file as {item.role} {source}"
    if item.members and os.path.isdir(source) and _inside(real, os.path.realpath(source), item.members):
        return f"is a file of {item.role} {source}"  # a file that the command reads from an input folder
    if members and os.path.isdir(real) and _inside(os.path.realpath(source), real, members):
        return f"holds {item.role} {source} among the files it would write"
    return None


def check_output(
    path: Any,
    inputs: Iterable[InputLike] = (),
    *,
    option: str = "--output",
    what: str = "the output file",
    folder: bool = False,
    members: Sequence[str] = (),
    has_force: bool = False,
) -> str:
    """
    Checks an output before any work and creates its folder; returns the path the output is written at (symlinks
    followed). Raises `ConfigurationError` naming the output (and the input, the option) when it cannot be written.

    # Parameters

    path : `str` or `PathLike`
        The output as the user gave it.
    inputs : `Iterable`
        The command's inputs: paths, `(path, role)` pairs or `Input`s; `None`, URLs and paths that do not exist
        are skipped.
    option : `str`
        The option that names the output, in messages (``--output-file``).
    what : `str`
        What the output is, in messages (``"the codes file"``).
    folder : `bool`
        The output is a folder (an index) rather than a file.
    members : `Sequence[str]`
        For a folder output: patterns of the files written into it (an input among them is refused).
    has_force : `bool`
        The command has `--force`: the message says that it does not override this check.
    """
    given = os.fspath(path)
    if not given:
        raise _error(f"{option} is empty; give {what} to write")
    real, in_place = target(given)
    for item in map(_as_input, inputs):
        how = None if item is None else _overwrites(given, real, members, item)
        if how is not None:
            force = "; --force does not change that" if has_force else ""
            raise _error(f"{given}: {how}; write {what} elsewhere ({option} would overwrite its own input{force})")
    if _exists(real):
        if folder and not os.path.isdir(real):
            raise _error(f"{given}: is a file; {option} is {what} to write (a folder)")
        if not folder and os.path.isdir(real):
            raise _error(f"{given}: is a folder; {option} is {what} to write")
        if not os.access(real, os.W_OK):
            raise _error(f"{given}: cannot be written (no write permission); write {what} elsewhere")
        if in_place:
            return real
    parent = os.path.dirname(real) or os.curdir
    existing = parent
    while not _exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise _error(f"{given}: cannot be created: {existing} is a file, not a folder")
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as error:
        raise _error(f"{given}: cannot create its folder {parent} ({error.strerror})") from None
    if not os.access(parent, os.W_OK | os.X_OK):
        raise _error(f"{given}: cannot write into its folder {parent} (no write permission)")
    return real


def check_outputs(outputs: Iterable[Tuple[Any, ...]], inputs: Iterable[InputLike] = (), **options: Any) -> None:
    """`check_output` for each `(path, option)` or `(path, option, what)` of `outputs` (`None` paths skipped)
    against the same `inputs` (`options`: the other arguments of `check_output`); two options naming one file are
    refused too."""
    inputs = list(inputs)
    seen: Dict[str, str] = {}
    for path, option, *what in outputs:
        if path is None:
            continue
        real = check_output(path, inputs, option=option, **options, **({"what": what[0]} if what else {}))
        if real in seen:
            raise _error(f"{os.fspath(path)}: given to both {seen[real]} and {option}; give each output its own file")
        seen[real] = option


# ------------------------------------------------------------------------------------------------ the lock

_HELD: Dict[Tuple[int, str], List[int]] = {}  # (thread, lock file) -> [file descriptor, depth]
_HELD_GUARD = threading.Lock()


def lock_path(path: Any) -> str:
    """The lock file of an output: ``OUTPUT.lock`` beside the file (or folder) it is written at."""
    return os.path.realpath(os.fspath(path)) + LOCK_SUFFIX


def _holder(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as file:
            pid = file.read().strip()
    except (OSError, ValueError):
        return ""
    return f" (process {pid})" if pid.isdigit() else ""


def _acquire(path: str, given: str) -> int:
    while True:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(descriptor)
            if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise _error(f"{given}: another run is writing it{_holder(path)}, holding {path}; wait for it to end "
                         "or write elsewhere") from None
        try:  # the run that held it may have removed the file just before: lock the file that is there now
            current = os.stat(path)
        except FileNotFoundError:
            current = None
        if current is not None and os.path.samestat(os.fstat(descriptor), current):
            os.ftruncate(descriptor, 0)
            os.write(descriptor, f"{os.getpid()}\n".encode("ascii"))
            return descriptor
        os.close(descriptor)


@contextmanager
def output_lock(path: Any) -> Iterator[None]:
    """
    Holds the exclusive lock of an output for the block (see the module docstring); raises `ConfigurationError`
    ``<output>: another run is writing it (process <pid>), holding <output>.lock; ...`` at once when another
    run (another process, or another thread of this one) holds it. Nothing is locked for an output that exists
    and is not a regular file or folder (``/dev/null``), or where `fcntl` is missing.
    """
    given = os.fspath(path)
    real, in_place = target(given)
    if fcntl is None or in_place:
        yield
        return
    lock = real + LOCK_SUFFIX
    key = (threading.get_ident(), lock)
    with _HELD_GUARD:
        held = _HELD.get(key)
        if held is not None:
            held[1] += 1
    if held is None:
        descriptor = _acquire(lock, given)
        with _HELD_GUARD:
            held = _HELD[key] = [descriptor, 1]
    try:
        yield
    finally:
        with _HELD_GUARD:
            held[1] -= 1
            last = held[1] == 0
            if last:
                del _HELD[key]
        if last:
            try:
                os.unlink(lock)  # while still held: a run waiting on this file then sees it is gone
            except FileNotFoundError:
                pass
            os.close(held[0])


@contextmanager
def guarded_outputs(outputs: Iterable[Tuple[Any, ...]], inputs: Iterable[InputLike] = (),
                    **options: Any) -> Iterator[None]:
    """`check_outputs`, then `output_lock` on each output for the block: what a command does before its work."""
    outputs = [output for output in outputs if output[0] is not None]
    check_outputs(outputs, inputs, **options)
    with ExitStack() as stack:
        for output in outputs:
            stack.enter_context(output_lock(output[0]))
        yield


# ------------------------------------------------------------------------------------------------ atomic writes


def _temporary_name(real: str) -> str:
    folder, name = os.path.split(real)
    return os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(4).hex()}{TEMPORARY_SUFFIX}")


def _create_temporary(real: str) -> Tuple[int, str]:
    while True:
        temporary = _temporary_name(real)
        try:
            return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), temporary  # umask applies
        except FileExistsError:
            continue


def _commit(temporary: str, real: str) -> None:
    if os.path.isfile(real):
        os.chmod(temporary, stat.S_IMODE(os.stat(real).st_mode))  # a replaced file keeps its permissions
    os.replace(temporary, real)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


@contextmanager
def atomic_file(path: Any, mode: str = "w", encoding: Optional[str] = "utf-8") -> Iterator[Any]:
    """
    An open file (`mode` ``"w"`` or ``"wb"``) whose content replaces `path` (its target, when `path` is a symlink)
    when the block ends without an exception; after an exception `path` is unchanged and the temporary file gone.
    """
    real, in_place = target(path)
    encoding = None if "b" in mode else encoding
    if in_place:
        with open(real, mode, encoding=encoding) as file:
            yield file
        return
    descriptor, temporary = _create_temporary(real)
    try:
        with os.fdopen(descriptor, mode, encoding=encoding) as file:
            yield file
        _commit(temporary, real)
    except BaseException:
        _remove(temporary)
        raise


@contextmanager
def atomic_path(path: Any) -> Iterator[str]:
    """
    A temporary path beside `path` for a writer that takes a file name (AllenNLP's predict and evaluate, FAISS);
    when the block ends without an exception, what was written there replaces `path` (nothing written: `path` is
    left as it is); after an exception the temporary file is removed and `path` is unchanged.
    """
    real, in_place = target(path)
    if in_place:
        yield real
        return
    descriptor, temporary = _create_temporary(real)
    os.close(descriptor)
    os.unlink(temporary)  # the name is ours (random); the writer creates the file
    try:
        yield temporary
        if os.path.isfile(temporary):
            _commit(temporary, real)
    finally:
        _remove(temporary)  # after a failure (after the commit it is gone already)


class StagedFiles:
    """Files of a folder written under temporary names (`path`) and renamed into place together by `commit`, in the
    order they were named (so the file that makes the folder valid, named last, is replaced last)."""

    def __init__(self, folder: Any) -> None:
        self.folder = os.path.realpath(os.fspath(folder))
        self._staged: List[Tuple[str, str]] = []
        self._removed: List[str] = []

    def path(self, name: str) -> str:
        """A temporary path in the folder for its file `name`."""
        final = os.path.join(self.folder, name)
        temporary = _temporary_name(final)
        self._staged.append((temporary, final))
        return temporary

    def remove(self, name: str) -> None:
        """Removes the folder's file `name` (if there) on `commit`."""
        self._removed.append(os.path.join(self.folder, name))

    def commit(self) -> None:
        for temporary, final in self._staged:
            if os.path.isfile(temporary):
                _commit(temporary, final)
        for final in self._removed:
            _remove(final)
        self._staged, self._removed = [], []

    def discard(self) -> None:
        for temporary, _ in self._staged:
            _remove(temporary)
        self._staged, self._removed = [], []


@contextmanager
def staged_files(folder: Any) -> Iterator[StagedFiles]:
    """`StagedFiles` of `folder` (created if missing), committed when the block ends without an exception and
    discarded (the folder's old files unchanged, no temporary file left) after one."""
    created = not os.path.isdir(os.fspath(folder))
    os.makedirs(os.fspath(folder), exist_ok=True)
    staged = StagedFiles(folder)
    try:
        yield staged
        staged.commit()
    except BaseException:
        staged.discard()
        if created:
            try:
                os.rmdir(staged.folder)  # made for this save, and empty again
            except OSError:
                pass
        raise


def write_text(path: Any, text: str) -> None:
    """`text` (UTF-8) to `path`, atomically (`atomic_file`)."""
    with atomic_file(path) as file:
        file.write(text)


def split_paths(value: Optional[str]) -> List[str]:
    """AllenNLP's comma-separated list of paths (``evaluate --output-file a.json,b.json``); `None`: none."""
    return [part for part in (value or "").split(",") if part]


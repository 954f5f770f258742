"""Where a command writes: one guard for every output file or folder, so that nothing is lost or half written.

Every command that writes a file goes through here: `allennlp hash-corpus` (OUTPUT and OUTPUT.meta.json),
`hash-corpus-merge`, `predict --output-file`, `evaluate --output-file` / `--predictions-output-file` and the outputs
of `allennlp bits` (`--json`, `--out`, `--html`, index folders). The guard:

* `check_output`, before any work (before a model is loaded): refuses an output that is one of the command's inputs
  (the same file by device and inode, after following symlinks, also a symlink to an input that does not resolve to
  the same name; `--force` never changes that), that lies inside an input folder (anywhere below it, unless the
  input names the files it reads: `Input.members`), a folder output that holds an input (at any depth) or, when it
  exists, anything that the command does not write there (a user's files, a link), an output that is a folder
  where a file is written (or a file where a folder is), whose folder is a file, or that cannot be created or
  written; creates its folder if missing.
* `output_lock`, for the whole run: an exclusive `fcntl.flock` on the sibling file ``OUTPUT.lock`` and, when OUTPUT
  exists, on the file itself, so that a hard link (another name of the same file) cannot let a second writer in
  (non-blocking: a second run on a locked output stops at once, naming the output and the process that holds
  it). The lock file is removed at the end; one left by a killed run does not block (the kernel releases a dead
  process's flock; only a held lock counts). Re-entrant within a thread (a command and the function it calls both
  take it).
* `atomic_file`, `atomic_path`: the output is written to a temporary file in its own folder and renamed over it
  at the end, so a failed or interrupted run leaves the old output (or none), never a half-written or emptied one,
  and no temporary file. `replaced_folder`, `staged_files`: a whole output folder (the code explorer, an index) is
  built in a sibling folder and renamed into place. `allennlp hash-corpus` is the exception: it appends complete
  lines to OUTPUT and continues after the last complete one when run again (its documented resume), under the lock.

Standard library only: the light `allennlp bits` process, which has no AllenNLP, imports it. Errors are AllenNLP's
`ConfigurationError` (or its stand-in in the light process, `bitcode_allennlp.bits.light`), one line each.
"""
import errno
import fnmatch
import os
import re
import shutil
import stat
import threading
from contextlib import ExitStack, contextmanager
from typing import Any, Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

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
    for a folder, the patterns (`fnmatch`, relative to it) of the files in it that the command reads: an output on
    one of them is refused; with none, the command reads the whole folder and any output inside it is refused."""

    path: Any
    role: str = "the input"
    members: Tuple[str, ...] = ()


ARCHIVE_FOLDER_FILES = ("config.json", "weights.th", "best.th", "meta.json", "vocabulary/*", "transformers/*",
                        "model.tar.gz")
"""What loading reads from a serialization folder given as a model archive (and its archive, which a user keeps)."""


def model_archive(path: Any, role: str = "the model archive") -> Input:
    """A model archive as an `Input`: a `model.tar.gz`, or a serialization folder whose `ARCHIVE_FOLDER_FILES` are
    read (an output beside them, `runs/ner/predictions.jsonl`, is fine)."""
    return Input(path, role, ARCHIVE_FOLDER_FILES)


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


def _below(path: str, folder: str) -> Optional[str]:
    """`path` relative to `folder` (both resolved) when `path` is `folder` ("") or below it; else None."""
    relative = os.path.relpath(path, folder)
    if relative == os.curdir:
        return ""
    if relative == os.pardir or relative.startswith(os.pardir + os.sep) or os.path.isabs(relative):
        return None
    return relative


def _overwrites(given: str, real: str, folder: bool, item: Input) -> Optional[str]:
    """How the output `given` (at `real`; a folder output when `folder`) would overwrite or remove the input `item`,
    or None when it would not."""
    source = os.fspath(item.path)
    if not _local(source) or not _exists(source):
        return None
    if _exists(real) and _same_file(real, source):
        if os.path.normpath(os.path.abspath(given)) == os.path.normpath(os.path.abspath(source)):
            return f"is {item.role}"
        if os.path.islink(given):
            return f"is a link to {item.role} {source}"
        return f"is the same file as {item.role} {source}"
    resolved = os.path.realpath(source)
    if os.path.isdir(source):
        inside = _below(real, resolved)
        if inside and not item.members:
            return f"is inside {item.role} {source}, a folder the command reads whole"
        if inside and any(fnmatch.fnmatch(inside, pattern) for pattern in item.members):
            return f"is a file of {item.role} {source}"  # a file that the command reads from an input folder
    if folder and _below(resolved, real) is not None:
        return f"holds {item.role} {source}, which writing the folder would replace or remove"
    return None


def _foreign_entries(real: str, members: Sequence[str], limit: int = 6) -> List[str]:
    """Up to `limit` paths in the existing folder `real` that the command does not write: a file whose path (relative,
    with `/`) matches none of `members` (`fnmatch` patterns), a folder that no pattern lies in, or any link (shown
    with `@`); our hidden temporary files are not counted."""
    folders = {"/".join(pattern.split("/")[:depth]) for pattern in members
               for depth in range(1, pattern.count("/") + 1)}  # the folders the patterns lie in
    foreign: List[str] = []
    for root, directories, files in os.walk(real):
        base = os.path.relpath(root, real).replace(os.sep, "/")
        base = "" if base == "." else base + "/"
        for name in sorted(directories):
            if os.path.islink(os.path.join(root, name)) or base + name not in folders:
                foreign.append(base + name + ("@" if os.path.islink(os.path.join(root, name)) else "/"))
        directories[:] = [name for name in directories if base + name in folders]
        for name in sorted(files):
            if name.startswith(".") and name.endswith(TEMPORARY_SUFFIX):
                continue
            if os.path.islink(os.path.join(root, name)):
                foreign.append(base + name + "@")
            elif not any(fnmatch.fnmatch(base + name, pattern) for pattern in members):
                foreign.append(base + name)
        if len(foreign) >= limit:
            break
    return foreign[:limit]


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
        For a folder output: patterns of what is written into it; an existing folder holding anything else (or a
        link) is refused, and so is any input at or below the folder.
    has_force : `bool`
        The command has `--force`: the message says that it does not override this check.
    """
    given = os.fspath(path)
    if not given:
        raise _error(f"{option} is empty; give {what} to write")
    real, in_place = target(given)
    for item in map(_as_input, inputs):
        how = None if item is None else _overwrites(given, real, folder, item)
        if how is not None:
            force = "; --force does not change that" if has_force else ""
            raise _error(f"{given}: {how}; write {what} elsewhere ({option} would overwrite its own input{force})")
    if _exists(real):
        _check_existing(given, real, folder, members, option, what)
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


def _check_existing(given: str, real: str, folder: bool, members: Sequence[str], option: str, what: str) -> None:
    """`check_output` on an output that exists: the right kind, holding only what the command writes (a folder), and
    writable."""
    if folder and not os.path.isdir(real):
        raise _error(f"{given}: is a file; {option} is {what} to write (a folder)")
    if not folder and os.path.isdir(real):
        raise _error(f"{given}: is a folder; {option} is {what} to write")
    foreign = _foreign_entries(real, members) if folder and members and os.access(real, os.R_OK) else []
    if foreign:
        shown = ", ".join(foreign[:5]) + (" and more" if len(foreign) > 5 else "")
        raise _error(f"{given}: holds {shown}, which is not {what}'s (links count too); give a new or empty "
                     f"folder, or {what} written before (nothing was changed)")
    if not os.access(real, os.W_OK):
        raise _error(f"{given}: cannot be written (no write permission); write {what} elsewhere")


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

_HELD: Dict[Tuple[int, str], List[Any]] = {}  # (thread, lock file) -> [its descriptor, depth, the file's or None]
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
        _flock_or_refuse(descriptor, lambda: f"{given}: another run is writing it{_holder(path)}, holding {path}; "
                         "wait for it to end or write elsewhere")
        try:  # the run that held it may have removed the file just before: lock the file that is there now
            current = os.stat(path)
        except FileNotFoundError:
            current = None
        if current is not None and os.path.samestat(os.fstat(descriptor), current):
            try:
                os.ftruncate(descriptor, 0)
                os.write(descriptor, f"{os.getpid()}\n".encode("ascii"))
            except OSError as error:  # a full disk: no lock file left behind, the error names it
                _release(path, descriptor)
                if error.filename is None:
                    error.filename = path
                raise
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
        try:
            itself = _lock_file_itself(real, given, lock)
        except BaseException:
            _release(lock, descriptor)
            raise
        with _HELD_GUARD:
            held = _HELD[key] = [descriptor, 1, itself]
    try:
        yield
    finally:
        with _HELD_GUARD:
            held[1] -= 1
            last = held[1] == 0
            if last:
                del _HELD[key]
        if last:
            if held[2] is not None:
                os.close(held[2])
            _release(lock, held[0])


def _lock_file_itself(real: str, given: str, lock: str) -> Optional[int]:
    """An exclusive `flock` on an existing output file itself (its inode), held with its ``.lock`` file: a second
    writer through another name of the same file (a hard link) stops at once too. None for a new output."""
    try:
        descriptor = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None  # no file yet (or not one we can open): the .lock file alone guards it
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        return None
    _flock_or_refuse(descriptor, lambda: f"{given}: another run is writing this file under another name (a hard "
                     "link to it); wait for it to end or write elsewhere")
    return descriptor


def _flock_or_refuse(descriptor: int, refusal: Callable[[], str]) -> None:
    """An exclusive non-blocking `flock` on `descriptor`; when another holds it, the descriptor is closed and
    `ConfigurationError(refusal())` raised."""
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        os.close(descriptor)
        if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise
        raise _error(refusal()) from None


def _release(lock: str, descriptor: int) -> None:
    try:
        os.unlink(lock)  # while still held: a run waiting on this file then sees it is gone
    except FileNotFoundError:
        pass
    os.close(descriptor)


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


def temporary_of(name: str) -> Optional[Tuple[str, int, bool]]:
    """For a temporary name of this module (`_temporary_name`, a staging folder, its ``.old`` copy):
    `(the output's name, the writer's process id, whether it is an old copy)`; else None."""
    match = re.fullmatch(r"\.(.+)\.([0-9]+)\.[0-9a-f]{8}(\.old)?" + re.escape(TEMPORARY_SUFFIX), name)
    return (match.group(1), int(match.group(2)), bool(match.group(3))) if match else None


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
    except BaseException as error:
        if isinstance(error, OSError) and error.filename is None:
            error.filename = temporary  # a write error of the unnamed file: the error layer names the output
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
    """The files of an output folder as `staged_files` writes them: `path(name)` is where its file `name` goes (in the
    staging folder that takes the folder's place at the end); a file not written is not in the new folder."""

    def __init__(self, staging: str) -> None:
        self.staging = staging

    def path(self, name: str) -> str:
        return os.path.join(self.staging, name)


@contextmanager
def staged_files(folder: Any, members: Sequence[str]) -> Iterator[StagedFiles]:
    """`StagedFiles` of the output folder `folder`, built whole in a sibling folder and renamed into place when the
    block ends without an exception (`replaced_folder`), so a failed or killed save leaves the old folder whole. An
    existing `folder` holding anything but `members` (`fnmatch` patterns: a user's files, a link) is refused
    (`ConfigurationError`) before anything is written: it is replaced whole."""
    real, _ = target(folder)
    foreign = _foreign_entries(real, members) if os.path.isdir(real) else []
    if foreign:
        raise _error(f"{os.fspath(folder)}: holds {', '.join(foreign[:5])}, which it would not write again; give a "
                     "new or empty folder (nothing was changed)")
    with replaced_folder(real) as staging:
        yield StagedFiles(staging)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # someone else's process: alive
        pass
    return True


def _remove_stale_folders(real: str) -> None:
    """Removes the staging folders of `replaced_folder` beside `real` left by runs that were killed (their process
    is gone); puts back a folder whose swap a kill interrupted (`real` missing, its old copy still there)."""
    folder, name = os.path.split(real)
    for entry in sorted(os.listdir(folder or os.curdir)):
        parsed = temporary_of(entry)
        if parsed is None or parsed[0] != name or parsed[1] == os.getpid() or _pid_alive(parsed[1]):
            continue
        path = os.path.join(folder, entry)
        if parsed[2] and not _exists(real):
            os.rename(path, real)
        else:
            shutil.rmtree(path, ignore_errors=True)


@contextmanager
def replaced_folder(path: Any) -> Iterator[str]:
    """A new sibling folder of the output folder `path` (``.<name>.<pid>.<random>.tmp``) to build the output in; when
    the block ends without an exception it takes the place of `path` (an old one renamed aside, then removed); after
    one it is removed and `path` is unchanged (after SIGKILL too: the next run removes it). Call `check_output(...,
    folder=True, members=...)` first: it refuses a `path` that holds anything the command does not write."""
    real, _ = target(path)
    _remove_stale_folders(real)
    staging = _temporary_name(real)
    os.mkdir(staging)
    try:
        yield staging
        if os.path.isdir(real):
            old = staging[:-len(TEMPORARY_SUFFIX)] + ".old" + TEMPORARY_SUFFIX
            os.rename(real, old)
            os.rename(staging, real)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(staging, real)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def write_text(path: Any, text: str) -> None:
    """`text` (UTF-8) to `path`, atomically (`atomic_file`)."""
    with atomic_file(path) as file:
        file.write(text)


def split_paths(value: Optional[str]) -> List[str]:
    """AllenNLP's comma-separated list of paths (``evaluate --output-file a.json,b.json``); `None`: none."""
    return [part for part in (value or "").split(",") if part]


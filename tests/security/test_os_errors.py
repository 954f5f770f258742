"""Operating-system errors that the user's situation causes (a full disk, a name too long, a read-only or missing
place, a symlink loop, a file over the size limit, too many open files, a port in use) are one error line, naming
the file and the OS's reason, in both the full `allennlp` process (`host.bad_input.wrap_main`) and the light
`allennlp bits` process (`bits.light.run_bits`): `host.console.is_user_error` decides, `error_message` words it.
Any other OSError (EIO, EBADF, ...) is a bug and keeps its traceback, as does every error under BITCODE_DEBUG=1.

Real failures where a test can make them without privileges: /dev/full (every write fails with ENOSPC), a
300-character file name, /proc (no file can be created there, even by root), a symlink loop, and RLIMIT_FSIZE set
in the child process (Python ignores SIGXFSZ, so a write past the limit fails with EFBIG): a real "file too large"
on a real atomically written output."""
import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bitcode_allennlp.host import console
from bitcode_allennlp.host.console import USER_ERRNOS, error_message, is_user_error, written_file
from bitcode_allennlp.host.outputs import TEMPORARY_SUFFIX, atomic_path
from tests.conftest import FIXTURES, ROOT, ner_hash_archive  # noqa: F401

HINT = "(set BITCODE_DEBUG=1 for the full traceback)"
CODES = FIXTURES / "data" / "codes" / "ner.dev.jsonl"
NER_DEV = FIXTURES / "data" / "conll2012" / "development"
LONG_NAME = "n" * 300  # over the 255 bytes a file name may have
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
ENV.pop("BITCODE_DEBUG", None)
ENV.pop("ALLENNLP_DEBUG", None)

needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full (not Linux)")


def oserror(code: int, filename=None) -> OSError:
    return OSError(code, os.strerror(code), *([filename] if filename is not None else []))


def run(*args, stdout=subprocess.PIPE, preexec_fn=None, cwd=ROOT, env=None) -> subprocess.CompletedProcess:
    """`allennlp ARGS` in a fresh process, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "allennlp", *map(str, args)], cwd=cwd, env=env or ENV,
                          stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=600, preexec_fn=preexec_fn)


def error_line(result: subprocess.CompletedProcess, command: str) -> str:
    """The one error line of a failed command: exit status 1, `allennlp <command>: error: ...` then the hint as the
    last lines of stderr, no traceback, nothing printed by Python at exit."""
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr, result.stderr[-3000:]
    lines = result.stderr.splitlines()
    errors = [line for line in lines if line.startswith(f"allennlp {command}: error: ")]
    assert len(errors) == 1 and lines[-2:] == [errors[0], HINT], result.stderr[-3000:]
    return errors[0][len(f"allennlp {command}: error: "):]


def file_size_limit(limit: int):
    """A `preexec_fn`: files written by the child may have at most `limit` bytes (then EFBIG)."""
    import resource

    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    return set_limit


def leftovers(folder: Path):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith((TEMPORARY_SUFFIX, ".lock")))


# ------------------------------------------------------------------------------------------------ the predicate


@pytest.mark.parametrize("name", ["ENOSPC", "EDQUOT", "ENAMETOOLONG", "EROFS", "ELOOP", "EFBIG", "EMFILE", "ENFILE",
                                  "EADDRINUSE", "EADDRNOTAVAIL", "EACCES", "EPERM"])
def test_errors_of_the_users_situation_are_user_errors(name):
    if not hasattr(errno, name):
        pytest.skip(f"no {name} on this system")
    code = getattr(errno, name)
    assert code in USER_ERRNOS
    assert is_user_error(oserror(code)) and is_user_error(oserror(code, "some/file"))


@pytest.mark.parametrize("error", [
    oserror(errno.EIO), oserror(errno.EIO, "x.json"), oserror(errno.EBADF), oserror(errno.EINVAL),
    oserror(errno.EPIPE), BrokenPipeError(errno.EPIPE, "Broken pipe"), OSError("no errno"),
    RuntimeError("bug"), ValueError("bug"), KeyError("bug"),
], ids=repr)
def test_other_errors_are_bugs(error):
    assert not is_user_error(error)


def test_the_callers_classes_and_the_path_errors_are_user_errors():
    class ConfigurationError(Exception):
        pass

    assert is_user_error(ConfigurationError("x"), (ConfigurationError,))
    assert not is_user_error(ConfigurationError("x"))
    for error in (FileNotFoundError(errno.ENOENT, "No such file or directory", "a"), IsADirectoryError(),
                  NotADirectoryError(), FileExistsError(), PermissionError()):
        assert is_user_error(error)


# ------------------------------------------------------------------------------------------------ the message


def test_an_os_error_is_the_file_and_the_reason_or_the_reason_and_its_errno():
    assert error_message(oserror(errno.ENOSPC, "out/stats.json")) == "out/stats.json: No space left on device"
    assert error_message(oserror(errno.ENOSPC)) == "No space left on device (ENOSPC)"
    assert error_message(oserror(errno.EADDRINUSE)) == f"{os.strerror(errno.EADDRINUSE)} (EADDRINUSE)"
    assert error_message(OSError(errno.EROFS, os.strerror(errno.EROFS), "a.tmp", None, "b.json")) == \
        f"a.tmp -> b.json: {os.strerror(errno.EROFS)}"
    assert error_message(OSError("a message of its own")) == "a message of its own"
    assert error_message(RuntimeError("x")) == "x" and error_message(RuntimeError()) == "RuntimeError"


def test_a_name_too_long_says_how_long_and_too_many_files_says_the_limit():
    path = f"out/{LONG_NAME}.json"
    message = error_message(oserror(errno.ENAMETOOLONG, path))
    assert message.startswith(f"{path}: File name too long") and "a name of 305 bytes" in message
    message = error_message(oserror(errno.EMFILE, "x.json"))
    assert message.startswith("x.json: Too many open files") and "ulimit -n" in message
    resource = pytest.importorskip("resource")
    assert f"may open {resource.getrlimit(resource.RLIMIT_NOFILE)[0]}" in message


def _write(file, text):
    file.write(text)
    file.flush()


@needs_dev_full
def test_a_write_error_without_a_name_names_the_file_being_written():
    with open("/dev/full", "wb", buffering=0) as file, pytest.raises(OSError) as caught:  # closes without a flush
        _write(file, b"x")
    assert caught.value.filename is None and caught.value.errno == errno.ENOSPC  # Python names no file
    assert written_file(caught.value) == "/dev/full"
    assert error_message(caught.value) == "/dev/full: No space left on device"


def _write_two(first, second):
    first.write("x")
    second.write(b"x")


@needs_dev_full
def test_two_files_being_written_name_neither(tmp_path):
    with open(tmp_path / "a.txt", "w") as first, open("/dev/full", "wb", buffering=0) as second, \
            pytest.raises(OSError) as caught:
        _write_two(first, second)
    assert written_file(caught.value) is None  # which one failed is not certain: none is named
    assert error_message(caught.value) == "No space left on device (ENOSPC)"


def _failing_writer(path):
    with open(path, "w") as file:
        file.write("half")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as file.write raises it: no file name


@pytest.mark.parametrize("existed", [True, False])
def test_the_temporary_of_an_atomic_output_is_named_as_the_output_with_what_is_kept(tmp_path, existed):
    out = tmp_path / "predictions.jsonl"
    if existed:
        out.write_text("old\n")
    with pytest.raises(OSError) as caught:
        with atomic_path(out) as temporary:
            _failing_writer(temporary)
    kept = "the old file is unchanged" if existed else "nothing was written"
    assert error_message(caught.value) == \
        f"{out}: No space left on device; {kept} (outputs are written whole or not at all)"
    assert (out.read_text() == "old\n") if existed else not out.exists()  # what the message says is true
    assert os.listdir(tmp_path) == (["predictions.jsonl"] if existed else [])


def test_a_read_error_is_not_attributed_to_a_file_being_written(tmp_path):
    def reading(file):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    with open(tmp_path / "a.txt", "w") as file, pytest.raises(OSError) as caught:
        reading(file)
    assert written_file(caught.value) is None and error_message(caught.value) == "Input/output error (EIO)"


# ------------------------------------------------------------------------------------------------ the full process


def _main(error):
    from bitcode_allennlp.host.bad_input import wrap_main

    def original(prog=None):
        raise error

    return wrap_main(original)


def test_wrap_main_prints_a_users_os_error_as_one_line(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["allennlp", "predict", "m.tar.gz", "in.jsonl"])
    monkeypatch.delenv("BITCODE_DEBUG", raising=False)
    monkeypatch.delenv("ALLENNLP_DEBUG", raising=False)
    with pytest.raises(SystemExit) as caught:
        _main(oserror(errno.ENOSPC, "out.jsonl"))(prog="allennlp")
    assert caught.value.code == 1
    assert capsys.readouterr().err.splitlines() == ["allennlp predict: error: out.jsonl: No space left on device", HINT]


@pytest.mark.parametrize("error", [oserror(errno.EIO, "x"), RuntimeError("a bug")], ids=repr)
def test_wrap_main_keeps_the_traceback_of_a_bug(error, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["allennlp", "predict"])
    monkeypatch.delenv("BITCODE_DEBUG", raising=False)
    monkeypatch.delenv("ALLENNLP_DEBUG", raising=False)
    with pytest.raises(type(error)) as caught:
        _main(error)(prog="allennlp")
    assert caught.value is error and "error:" not in capsys.readouterr().err


def test_wrap_main_under_bitcode_debug_raises_a_users_os_error(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["allennlp", "predict"])
    monkeypatch.setenv("BITCODE_DEBUG", "1")
    error = oserror(errno.ENOSPC, "out.jsonl")
    with pytest.raises(OSError) as caught:
        _main(error)(prog="allennlp")
    assert caught.value is error


@needs_dev_full
def test_predict_to_a_full_disk(ner_hash_archive, tmp_path):  # noqa: F811
    source = tmp_path / "input.jsonl"
    source.write_text(json.dumps({"sentence": "EU rejects German call"}) + "\n", encoding="utf-8")
    result = run("predict", ner_hash_archive, source, "--output-file", "/dev/full", "--silent")
    assert error_line(result, "predict") == "/dev/full: No space left on device"


def test_hash_corpus_with_a_name_too_long(ner_hash_archive, tmp_path):  # noqa: F811
    result = run("hash-corpus", ner_hash_archive, NER_DEV, "-o", tmp_path / LONG_NAME, "--silent")
    line = error_line(result, "hash-corpus")
    assert str(tmp_path / LONG_NAME) in line and ": File name too long (a name of " in line
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------------------------------------------ the light process


@needs_dev_full
def test_bits_json_to_a_full_disk():
    assert error_line(run("bits", "stats", CODES, "--json", "/dev/full"), "bits stats") == \
        "/dev/full: No space left on device"


@needs_dev_full
def test_bits_stdout_on_a_full_disk():
    with open("/dev/full", "w") as full:
        line = error_line(run("bits", "stats", CODES, stdout=full), "bits stats")
    assert line in ("No space left on device (ENOSPC)", "standard output: No space left on device")


@needs_dev_full
def test_bits_small_stdout_on_a_full_disk_is_named_when_flushed_at_the_end(tmp_path):
    lines = [{"words": ["a"], "codes": ["1"], "num_bits": 4}, {"words": ["b"], "codes": ["2"], "num_bits": 4}]
    codes = tmp_path / "small.jsonl"
    codes.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    buffered = {name: value for name, value in ENV.items() if name != "PYTHONUNBUFFERED"}  # as a user's stdout is
    with open("/dev/full", "w") as full:
        line = error_line(run("bits", "diff", "--codes", codes, "--lines", "1", "2", "--color", "never",
                              stdout=full, env=buffered), "bits diff")
    assert line == "standard output: No space left on device"  # a few lines: written by the flush at the end


def test_bits_with_a_name_too_long(tmp_path):
    out = tmp_path / f"{LONG_NAME}.json"
    line = error_line(run("bits", "stats", CODES, "--json", out), "bits stats")
    assert str(out) in line and ": File name too long (a name of " in line
    assert os.listdir(tmp_path) == []


def test_bits_output_where_no_file_can_be_created():
    # /proc takes no new file, even from root (as a user the check before any work refuses it; as root the lock
    # cannot be created): either way one line that names the path.
    line = error_line(run("bits", "stats", CODES, "--json", "/proc/version.json"), "bits stats")
    assert line.startswith("/proc/version.json")


def test_bits_input_in_a_symlink_loop(tmp_path):
    loop = tmp_path / "loop.jsonl"
    loop.symlink_to(loop.name)
    assert error_line(run("bits", "stats", loop), "bits stats") == \
        f"{loop}: {os.strerror(errno.ELOOP)}"


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and EFBIG as on Linux")
def test_bits_index_over_the_file_size_limit_keeps_the_old_index(tmp_path):
    index = tmp_path / "index"
    assert run("bits", "index", CODES, "--out", index).returncode == 0
    before = {p.name: p.read_bytes() for p in index.iterdir()}
    result = run("bits", "index", CODES, "--out", index, preexec_fn=file_size_limit(2000))
    line = error_line(result, "bits index")
    assert line.startswith(f"{index}: File too large; the old folder is unchanged (outputs are written whole or not "
                           "at all)")
    assert {p.name: p.read_bytes() for p in index.iterdir()} == before and leftovers(index) == []


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and EFBIG as on Linux")
def test_bits_json_over_the_file_size_limit_names_the_output(tmp_path):
    """`outputs.atomic_file` names its temporary file in the error, so the layer names the output."""
    out = tmp_path / "stats.json"
    out.write_text("old")
    line = error_line(run("bits", "stats", CODES, "--json", out, preexec_fn=file_size_limit(2000)), "bits stats")
    assert line.startswith(f"{out}: File too large; the old file is unchanged")
    assert out.read_text() == "old" and leftovers(tmp_path) == []


LIGHT_WITH_A_FAILING_READ = """
import errno, os, sys
from bitcode_allennlp.host import names
names.LIGHT = True
import bitcode_allennlp.bits.command as command
def failing(*args, **kwargs):
    raise OSError(errno.{name}, os.strerror(errno.{name}))
command.read_codes_corpus = failing
from bitcode_allennlp.bits.light import run_bits
sys.exit(run_bits(["bits", "stats", "codes.jsonl"]))
"""


@pytest.mark.parametrize("name", ["EIO", "ENOSPC"])
def test_light_bits_keeps_the_traceback_of_an_os_error_that_is_a_bug(name):
    result = subprocess.run([sys.executable, "-c", LIGHT_WITH_A_FAILING_READ.format(name=name)], cwd=ROOT, env=ENV,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    if name == "EIO":  # a bug: its traceback
        assert "Traceback" in result.stderr and result.stderr.rstrip().endswith(
            f"OSError: [Errno {errno.EIO}] {os.strerror(errno.EIO)}")
        assert "error:" not in result.stderr
    else:
        assert result.stderr.splitlines() == ["allennlp bits stats: error: No space left on device (ENOSPC)", HINT]


def test_stdout_flush_names_standard_output(monkeypatch):
    class Full:
        def flush(self):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(sys, "stdout", Full())
    with pytest.raises(OSError) as caught:
        console.flush_stdout()
    assert error_message(caught.value) == "standard output: No space left on device"

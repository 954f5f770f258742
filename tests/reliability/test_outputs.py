"""Nothing lost, nothing half written (issue 29): the one output guard (`bitcode_allennlp.host.outputs`) of every
command that writes a file. An output that is one of the command's inputs (also through a symlink, also with
`--force`) is refused and the input left byte for byte; a folder, or a path under a file, is refused before any work
(before `evaluate` loads its model); a second run on an output that another run is writing stops at once, and the
first run's output is complete; a run that fails mid-way leaves the old output (or none) and no temporary file. The
commands run in this process through AllenNLP's parser (`allennlp.commands.main`), the light `allennlp bits` launcher
in a fresh process. One NER hashing model is trained for the module (~15 s)."""
import concurrent.futures
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from allennlp.common.checks import ConfigurationError

import bitcode_allennlp.plugin  # noqa: F401
from bitcode_allennlp.host import outputs
from bitcode_allennlp.host.outputs import Input, atomic_file, check_output, output_lock, staged_files
from tests.conftest import FIXTURES, ROOT

NER_DEV = FIXTURES / "data" / "conll2012" / "development"
NER_FILE = NER_DEV / "data" / "english" / "annotations" / "tw" / "btc" / "00" / "btc_0000.gold_conll"
CODES = FIXTURES / "data" / "codes" / "ner.train.jsonl"
HINT = "(set BITCODE_DEBUG=1 for the full traceback)"


@pytest.fixture
def archive(ner_hash_archive) -> Path:
    return Path(ner_hash_archive)


def allennlp(monkeypatch, capsys, *args, env=None):
    """`allennlp ARGS` in this process through AllenNLP's parser; returns (exit status, the error line or None,
    stderr). An error is one line and the hint, never a traceback."""
    import allennlp.commands

    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys, "argv", ["allennlp", *map(str, args)])
    capsys.readouterr()
    root, handlers = logging.getLogger(), list(logging.getLogger().handlers)
    try:
        allennlp.commands.main(prog="allennlp")
        status = 0
    except SystemExit as exit:
        status = exit.code
    finally:
        root.handlers[:] = handlers
    err = capsys.readouterr().err
    lines = err.splitlines()
    errors = [i for i, line in enumerate(lines) if line.startswith("allennlp ") and ": error: " in line]
    if errors and status == 1:
        assert lines[errors[-1] + 1:] == [HINT] and "Traceback" not in err, err
    return status, (lines[errors[-1]] if errors else None), err


def light(*args, env=None):
    """`allennlp ARGS` in a fresh process (the light `allennlp bits` launcher runs only as the real command)."""
    return subprocess.run([sys.executable, "-m", "allennlp", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})})


def listing(folder: Path):
    return sorted(path.name for path in folder.iterdir())


# ------------------------------------------------------------------------------------------------ the guard itself


def test_an_output_that_is_an_input_is_refused_also_through_a_link(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("data\n")
    (tmp_path / "link.txt").symlink_to(source)
    (tmp_path / "folder").symlink_to(tmp_path)
    os.link(source, tmp_path / "hard.txt")
    expected = {"in.txt": f"{source}: is the input; write the output file elsewhere (--output would overwrite "
                          "its own input; --force does not change that)",
                "link.txt": f"{tmp_path / 'link.txt'}: is a link to the input {source}; write",
                "folder/in.txt": f"{tmp_path / 'folder' / 'in.txt'}: is the same file as the input {source}; write",
                "hard.txt": f"{tmp_path / 'hard.txt'}: is the same file as the input {source}; write"}
    for output, message in expected.items():
        with pytest.raises(ConfigurationError) as error:
            check_output(tmp_path / output, [source], has_force=True)
        assert str(error.value).startswith(message)
    assert source.read_text() == "data\n"
    check_output(tmp_path / "other.txt", [source, None, "http://example.com/x", tmp_path / "missing"])


def test_an_output_folder_must_not_hold_an_input_at_any_depth(tmp_path):
    (tmp_path / "index" / "deep").mkdir(parents=True)
    codes = tmp_path / "index" / "sentences.jsonl"
    codes.write_text("{}\n")
    with pytest.raises(ConfigurationError, match=f"index: holds the codes corpus {codes}, which writing the folder "
                       "would replace or remove; write the output file elsewhere"):
        check_output(tmp_path / "index", [Input(codes, "the codes corpus")], folder=True, members=("*.jsonl",))
    deep = tmp_path / "index" / "deep" / "corpus.txt"  # not among the files it writes: below it all the same
    deep.write_text("x\n")
    with pytest.raises(ConfigurationError, match="holds the codes corpus .*deep/corpus.txt, which writing"):
        check_output(tmp_path / "index", [Input(deep, "the codes corpus")], folder=True, members=("*.jsonl",))
    with pytest.raises(ConfigurationError, match="holds the codes corpus"):  # an ancestor of the input too
        check_output(tmp_path, [Input(deep, "the codes corpus")], folder=True, members=("*.jsonl",))
    with pytest.raises(ConfigurationError, match=f"index.json: is a file of the index {tmp_path / 'index'}; write"):
        check_output(tmp_path / "index" / "index.json", [Input(tmp_path / "index", "the index", ("index.json",))])
    check_output(tmp_path / "index" / "hits.json", [Input(tmp_path / "index", "the index", ("index.json",))])


def test_an_output_inside_an_input_folder_is_refused_unless_the_input_names_its_files(tmp_path):
    """`evaluate DIR --output-file DIR/file` replaced a corpus file with the metrics: a folder input without
    `members` is read whole, so nothing below it may be written; a serialization folder given as a model archive
    names the files loading reads, so predictions beside them are fine."""
    from bitcode_allennlp.host.outputs import model_archive

    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "sub" / "a.gold_conll").write_text("data\n")
    for output in ("sub/a.gold_conll", "new.json", "sub/new.json"):
        with pytest.raises(ConfigurationError, match=f"is inside the evaluation data {corpus}, a folder the command "
                           "reads whole"):
            check_output(corpus / output, [Input(corpus, "the evaluation data")], has_force=True)
    assert (corpus / "sub" / "a.gold_conll").read_text() == "data\n"
    run = tmp_path / "run"
    (run / "vocabulary").mkdir(parents=True)
    check_output(run / "predictions.jsonl", [model_archive(run)])
    for output in ("config.json", "best.th", "vocabulary/labels.txt", "model.tar.gz"):
        with pytest.raises(ConfigurationError, match="is a file of the model archive"):
            check_output(run / output, [model_archive(run)])


def test_an_existing_output_folder_must_hold_only_what_the_command_writes(tmp_path):
    """`bits explore --out DIR` removed DIR/data whatever it was: an existing folder output holding anything the
    command does not write (a user's file or folder, a link) is refused before any work."""
    out = tmp_path / "explorer"
    (out / "data").mkdir(parents=True)
    (out / "index.html").write_text("<html>")
    members = ("index.html", "explorer.js", "explorer.css", "data/meta.js", "data/sentences/*.js")
    (out / "data" / "sentences").mkdir()
    (out / "data" / "sentences" / "0.js").write_text("")
    check_output(out, [], folder=True, members=members)  # an explorer written before
    (out / "data" / "mine.csv").write_text("a user's data/ folder")
    with pytest.raises(ConfigurationError, match="holds data/mine.csv, which"):
        check_output(out, [], folder=True, members=members)
    (out / "data" / "mine.csv").unlink()
    shutil.rmtree(out / "data" / "sentences")
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ConfigurationError, match="explorer: holds notes.txt, which is not the explorer's folder's "
                       r"\(links count too\); give a new or empty folder"):
        check_output(out, [], folder=True, members=members, what="the explorer's folder")
    (out / "notes.txt").unlink()
    (out / "data").rmdir()
    (out / "data").symlink_to(tmp_path)
    with pytest.raises(ConfigurationError, match="holds data@"):
        check_output(out, [], folder=True, members=members)
    assert (out / "index.html").read_text() == "<html>"


def test_the_lock_holds_the_file_itself_so_a_hard_link_cannot_let_a_second_writer_in(tmp_path):
    output = tmp_path / "codes.jsonl"
    output.write_text("x\n")
    other_name = tmp_path / "other_name.jsonl"
    os.link(output, other_name)
    with output_lock(output):
        with pytest.raises(ConfigurationError, match="other_name.jsonl: another run is writing this file under "
                           "another name"):
            with concurrent.futures.ThreadPoolExecutor(1) as pool:  # another thread is another writer
                pool.submit(lambda: output_lock(other_name).__enter__()).result()
    assert not (tmp_path / "codes.jsonl.lock").exists() and not (tmp_path / "other_name.jsonl.lock").exists()
    with output_lock(other_name):  # free again
        pass


def test_folders_files_and_missing_folders(tmp_path):
    (tmp_path / "file").write_text("x")
    cases = {"": "--output is empty",
             str(tmp_path): f"{tmp_path}: is a folder; --output is the output file to write",
             str(tmp_path / "file" / "out.json"): f"{tmp_path / 'file' / 'out.json'}: cannot be created: "
                                                 f"{tmp_path / 'file'} is a file, not a folder",
             str(tmp_path / "file" / "a" / "b.json"): f"cannot be created: {tmp_path / 'file'} is a file"}
    for output, message in cases.items():
        with pytest.raises(ConfigurationError) as error:
            check_output(output)
        assert message in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(ConfigurationError, match="file: is a file; --out is the index folder to write"):
        check_output(tmp_path / "file", option="--out", what="the index folder", folder=True)
    assert check_output(tmp_path / "new" / "deep" / "out.json") == str(tmp_path / "new" / "deep" / "out.json")
    assert (tmp_path / "new" / "deep").is_dir()  # its folder is created
    check_output(os.devnull)  # an existing device is written in place


def test_the_lock_refuses_a_second_holder_and_is_removed_after(tmp_path):
    out = tmp_path / "out.jsonl"
    held, release, refused = threading.Event(), threading.Event(), []

    def first():
        with output_lock(out):
            held.set()
            release.wait(60)

    thread = threading.Thread(target=first)
    thread.start()
    assert held.wait(60)
    try:
        assert (tmp_path / "out.jsonl.lock").read_text() == f"{os.getpid()}\n"
        with pytest.raises(ConfigurationError) as error:
            with output_lock(out):
                refused.append(False)
        assert str(error.value) == (f"{out}: another run is writing it (process {os.getpid()}), holding {out}.lock; "
                                    "wait for it to end or write elsewhere")
    finally:
        release.set()
        thread.join()
    assert refused == [] and listing(tmp_path) == []
    with output_lock(out), output_lock(out):  # re-entrant in one thread (a command and the function it calls)
        assert listing(tmp_path) == ["out.jsonl.lock"]
    assert listing(tmp_path) == []


def test_a_stale_lock_file_does_not_block(tmp_path):
    out = tmp_path / "out.jsonl"
    (tmp_path / "out.jsonl.lock").write_text("12345\n")  # left by a killed run: nobody holds it
    with output_lock(out):
        pass
    assert listing(tmp_path) == []


def lock_holder(out: Path) -> subprocess.Popen:
    """Another process that holds `output_lock(out)` until its stdin closes (it prints "held" once it does)."""
    return subprocess.Popen([sys.executable, "-c", "import sys\nfrom bitcode_allennlp.host.outputs import "
                             f"output_lock\nwith output_lock({str(out)!r}):\n    print('held', flush=True)\n"
                             "    sys.stdin.read()\n"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            cwd=ROOT)


def test_the_lock_holds_across_processes(tmp_path):
    out = tmp_path / "out.jsonl"
    holder = lock_holder(out)
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(ConfigurationError, match=f"another run is writing it \\(process {holder.pid}\\)"):
            with output_lock(out):
                pass
    finally:
        holder.communicate("", timeout=60)
    assert listing(tmp_path) == []
    with output_lock(out):
        pass


def test_atomic_writes_leave_the_old_output_after_a_failure(tmp_path):
    out = tmp_path / "out.json"
    out.write_text("old\n")
    out.chmod(0o640)
    with pytest.raises(RuntimeError):
        with atomic_file(out) as file:
            file.write("half")
            raise RuntimeError("killed")
    assert out.read_text() == "old\n" and listing(tmp_path) == ["out.json"]
    with atomic_file(out) as file:
        file.write("new\n")
    assert out.read_text() == "new\n" and listing(tmp_path) == ["out.json"]
    assert out.stat().st_mode & 0o777 == 0o640  # a replaced file keeps its permissions
    (tmp_path / "link.json").symlink_to(out)
    outputs.write_text(tmp_path / "link.json", "through the link\n")
    assert (tmp_path / "link.json").is_symlink() and out.read_text() == "through the link\n"


def test_staged_files_replace_a_folder_whole(tmp_path):
    folder = tmp_path / "index"
    members = ("*.npy", "index.json")
    with staged_files(folder, members) as staged:
        Path(staged.path("a.npy")).write_text("a1")
        Path(staged.path("b.npy")).write_text("b1")
        Path(staged.path("index.json")).write_text("i1")
    assert listing(folder) == ["a.npy", "b.npy", "index.json"]
    with pytest.raises(RuntimeError):
        with staged_files(folder, members) as staged:
            Path(staged.path("a.npy")).write_text("a2")
            raise RuntimeError("killed")
    assert (folder / "a.npy").read_text() == "a1" and listing(folder) == ["a.npy", "b.npy", "index.json"]
    with staged_files(folder, members) as staged:  # a file not written again is gone
        Path(staged.path("a.npy")).write_text("a3")
        Path(staged.path("index.json")).write_text("i3")
    assert listing(folder) == ["a.npy", "index.json"] and listing(tmp_path) == ["index"]
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(ConfigurationError, match="index: holds notes.txt, which it would not write again"):
        with staged_files(folder, members):
            pass
    assert listing(folder) == ["a.npy", "index.json", "notes.txt"]
    with pytest.raises(RuntimeError):
        with staged_files(tmp_path / "fresh", members) as staged:
            Path(staged.path("a.npy")).write_text("a")
            raise RuntimeError("killed")
    assert not (tmp_path / "fresh").exists() and listing(tmp_path) == ["index"]


# ------------------------------------------------------------------------------------------------ hash-corpus


@pytest.fixture
def corpus(tmp_path):
    """A one-file CoNLL-2012 corpus (20 sentences) and a symlink to it."""
    path = tmp_path / "data" / "dev_gold_conll"
    path.parent.mkdir()
    shutil.copy(NER_FILE, path)
    (tmp_path / "link.jsonl").symlink_to(path)
    return path


@pytest.mark.parametrize("output", ["data/dev_gold_conll", "link.jsonl", "data/../data/dev_gold_conll"])
@pytest.mark.parametrize("force", [False, True], ids=["", "--force"])
def test_hash_corpus_refuses_to_write_over_its_input(output, force, archive, corpus, tmp_path, monkeypatch, capsys):
    before = corpus.read_bytes()
    status, line, err = allennlp(monkeypatch, capsys, "hash-corpus", archive, corpus, "-o", tmp_path / output,
                                 "--silent", *(["--force"] if force else []))
    assert status == 1 and line is not None, err
    assert line.startswith(f"allennlp hash-corpus: error: {tmp_path / output}: ")
    assert "; write the codes file elsewhere (--output would overwrite its own input; --force does not change " \
           "that)" in line
    if output == "link.jsonl":
        assert f"is a link to the input corpus {corpus};" in line
    assert corpus.read_bytes() == before
    assert listing(corpus.parent) == ["dev_gold_conll"]


def test_hash_corpus_refuses_to_write_over_its_archive(archive, corpus, tmp_path, monkeypatch, capsys):
    copy = tmp_path / "model.tar.gz"
    shutil.copy(archive, copy)
    status, line, err = allennlp(monkeypatch, capsys, "hash-corpus", copy, corpus, "-o", copy, "--force")
    assert status == 1 and f"{copy}: is the model archive; write the codes file elsewhere" in line, err
    assert copy.read_bytes() == archive.read_bytes()


def test_a_second_hash_corpus_on_the_same_output_stops_at_once(archive, corpus, tmp_path, monkeypatch, capsys):
    """A run (in a thread: another process is the same lock) is paused after its first chunk; `allennlp hash-corpus`
    on its output refuses before loading the model; the first run then finishes: its file is the one a lone run
    writes, its record says complete, and no lock file is left."""
    from allennlp.models.archival import load_archive

    import bitcode_allennlp.code_stage.hash_corpus as hash_corpus

    loaded = load_archive(archive)
    reader = loaded.validation_dataset_reader
    alone = tmp_path / "alone.jsonl"
    hash_corpus.reannotate(loaded.model, reader, str(corpus), str(alone), chunk_size=4, progress=False,
                           archive_path=str(archive))
    out = tmp_path / "codes" / "dev.jsonl"
    paused, resume, failures = threading.Event(), threading.Event(), []
    code_chunk = hash_corpus._code_chunk

    def slow_chunk(*args, **kwargs):
        lines = code_chunk(*args, **kwargs)
        if threading.current_thread() is not threading.main_thread() and not paused.is_set():
            paused.set()
            resume.wait(60)
        return lines

    def first():
        try:
            hash_corpus.reannotate(loaded.model, reader, str(corpus), str(out), chunk_size=4, progress=False,
                                   archive_path=str(archive))
        except BaseException as error:  # pragma: no cover (reported below)
            failures.append(error)

    monkeypatch.setattr(hash_corpus, "_code_chunk", slow_chunk)
    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert paused.wait(120)
        monkeypatch.setattr(hash_corpus, "load_archive", lambda *a, **k: pytest.fail("loaded the model"))
        status, line, err = allennlp(monkeypatch, capsys, "hash-corpus", archive, corpus, "-o", out, "--silent")
        assert status == 1 and line == (f"allennlp hash-corpus: error: {out}: another run is writing it (process "
                                        f"{os.getpid()}), holding {out}.lock; wait for it to end or write elsewhere")
    finally:
        resume.set()
        thread.join()
    assert failures == []
    assert out.read_bytes() == alone.read_bytes()
    meta = json.loads((tmp_path / "codes" / "dev.jsonl.meta.json").read_text())
    assert meta["complete"] is True and meta["sentences"] == len(alone.read_bytes().splitlines()) == 20
    assert listing(out.parent) == ["dev.jsonl", "dev.jsonl.meta.json"]


def test_hash_corpus_after_a_killed_run_left_its_lock_file(archive, corpus, tmp_path, monkeypatch, capsys):
    out = tmp_path / "dev.jsonl"
    (tmp_path / "dev.jsonl.lock").write_text("4242\n")
    status, line, err = allennlp(monkeypatch, capsys, "hash-corpus", archive, corpus, "-o", out, "--silent")
    assert status == 0, err
    assert len(out.read_text().splitlines()) == 20 and not (tmp_path / "dev.jsonl.lock").exists()


# ------------------------------------------------------------------------------------------------ atomic outputs


def test_a_failed_predict_leaves_the_old_output(archive, tmp_path, monkeypatch, capsys):
    from allennlp.commands.predict import _PredictManager

    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps({"sentence": s}) + "\n" for s in ("Obama visits Berlin", "Hi", "Rain")))
    out.write_text("old\n")
    predict_json = _PredictManager._predict_json
    calls = []

    def failing(self, batch):
        calls.append(len(batch))
        if len(calls) == 2:
            raise RuntimeError("the machine went away")
        return predict_json(self, batch)

    monkeypatch.setattr(_PredictManager, "_predict_json", failing)
    with pytest.raises(RuntimeError, match="the machine went away"):  # a bug keeps its traceback
        allennlp(monkeypatch, capsys, "predict", archive, source, "--output-file", out, "--silent")
    assert out.read_text() == "old\n" and listing(tmp_path) == ["in.jsonl", "out.jsonl"]
    monkeypatch.setattr(_PredictManager, "_predict_json", predict_json)
    status, line, err = allennlp(monkeypatch, capsys, "predict", archive, source, "--output-file", out, "--silent")
    assert status == 0, err
    assert len(out.read_text().splitlines()) == 3 and listing(tmp_path) == ["in.jsonl", "out.jsonl"]


def test_predict_refuses_its_input_as_output(archive, tmp_path, monkeypatch, capsys):
    source = tmp_path / "in.jsonl"
    source.write_text('{"sentence": "Obama visits Berlin"}\n')
    status, line, err = allennlp(monkeypatch, capsys, "predict", archive, source, "--output-file", source)
    assert status == 1 and line == (f"allennlp predict: error: {source}: is the input file; write the predictions "
                                    "elsewhere (--output-file would overwrite its own input)"), err
    assert source.read_text() == '{"sentence": "Obama visits Berlin"}\n'


def test_a_failed_evaluate_leaves_no_partial_predictions(archive, tmp_path, monkeypatch, capsys):
    from allennlp.evaluation.serializers.serializers import SimpleSerializer

    calls = []
    serialize = SimpleSerializer.__call__

    def failing(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # the first batch's predictions are written
            raise RuntimeError("killed")
        return serialize(self, *args, **kwargs)

    monkeypatch.setattr(SimpleSerializer, "__call__", failing)
    metrics, predictions = tmp_path / "metrics.json", tmp_path / "predictions.jsonl"
    metrics.write_text("{}\n")
    with pytest.raises(RuntimeError, match="killed"):
        allennlp(monkeypatch, capsys, "evaluate", archive, NER_DEV, "--output-file", metrics,
                 "--predictions-output-file", predictions, "--overrides",
                 json.dumps({"validation_data_loader.batch_sampler.max_tokens": 40}))  # several batches
    assert len(calls) == 2 and metrics.read_text() == "{}\n" and listing(tmp_path) == ["metrics.json"]


def test_evaluate_into_a_folder_fails_before_evaluating(archive, tmp_path, monkeypatch, capsys):
    import allennlp.commands.evaluate as evaluate

    monkeypatch.setattr(evaluate, "load_archive", lambda *a, **k: pytest.fail("loaded the model"))
    status, line, err = allennlp(monkeypatch, capsys, "evaluate", archive, NER_DEV, "--output-file", tmp_path)
    assert status == 1 and line == (f"allennlp evaluate: error: {tmp_path}: is a folder; --output-file is the "
                                    "metrics file to write"), err
    (tmp_path / "file").write_text("x")
    status, line, err = allennlp(monkeypatch, capsys, "evaluate", archive, NER_DEV, "--predictions-output-file",
                                 tmp_path / "file" / "p.jsonl")
    assert status == 1 and line.endswith(f"p.jsonl: cannot be created: {tmp_path / 'file'} is a file, not a "
                                         "folder"), err


def test_a_failed_merge_leaves_the_old_output(archive, corpus, tmp_path):
    from allennlp.models.archival import load_archive

    from bitcode_allennlp.code_stage.hash_corpus import reannotate
    from bitcode_allennlp.code_stage.shards import merge_shards

    loaded = load_archive(archive)
    shards = [tmp_path / f"shard-{index}.jsonl" for index in range(2)]
    for index, shard in enumerate(shards):
        reannotate(loaded.model, loaded.validation_dataset_reader, str(corpus), str(shard), chunk_size=4,
                   num_shards=2, shard_index=index, progress=False, archive_path=str(archive))
    out = tmp_path / "merged.jsonl"
    out.write_text("old\n")
    good = shards[1].read_bytes()
    shards[1].write_bytes(good[: good.rindex(b"\n", 0, len(good) - 1) + 1])  # its last line lost after it finished
    with pytest.raises(ConfigurationError, match="shard-1.jsonl: ends after 7 complete lines, but its record says 8"):
        merge_shards([str(shard) for shard in shards], str(out), force=True)
    assert out.read_text() == "old\n"
    assert listing(tmp_path) == ["data", "link.jsonl", "merged.jsonl", "shard-0.jsonl", "shard-0.jsonl.meta.json",
                                 "shard-1.jsonl", "shard-1.jsonl.meta.json"]
    (tmp_path / "merged-link.jsonl").symlink_to(shards[0])
    with pytest.raises(ConfigurationError, match=f"merged-link.jsonl: is a link to one of the shards {shards[0]};"):
        merge_shards([str(shard) for shard in shards], str(tmp_path / "merged-link.jsonl"), force=True)


def test_a_failed_index_leaves_the_old_index(tmp_path, monkeypatch, capsys):
    from bitcode_allennlp.bits.faiss_index import FaissBinaryIndex

    index = tmp_path / "index"
    status, line, err = allennlp(monkeypatch, capsys, "bits", "index", CODES, "--out", index)
    assert status == 0, err
    before = {name: (index / name).read_bytes() for name in listing(index)}

    def failing(self, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(FaissBinaryIndex, "write", failing)
    status, line, err = allennlp(monkeypatch, capsys, "bits", "index", CODES, "--out", index, "--index-type",
                                 "multihash")
    assert status == 1 and "No space left on device" in line, err  # a user's situation: one line (SECURITY.md)
    assert {name: (index / name).read_bytes() for name in listing(index)} == before
    assert listing(tmp_path) == ["index"]


def test_bits_json_output_refused_while_locked_and_over_its_input(tmp_path, monkeypatch, capsys):
    out = tmp_path / "stats.json"
    holder = lock_holder(out)
    try:
        assert holder.stdout.readline() == "held\n"
        status, line, err = allennlp(monkeypatch, capsys, "bits", "stats", CODES, "--json", out)
        assert status == 1 and f"{out}: another run is writing it (process {holder.pid})" in line, err
    finally:
        holder.communicate("", timeout=60)
    assert not out.exists()
    copy = tmp_path / "codes.jsonl"
    shutil.copy(CODES, copy)
    status, line, err = allennlp(monkeypatch, capsys, "bits", "stats", copy, "--json", copy)
    assert status == 1 and line == (f"allennlp bits stats: error: {copy}: is the codes corpus; write the JSON file "
                                    "elsewhere (--json would overwrite its own input)"), err
    assert copy.read_bytes() == CODES.read_bytes()


# ------------------------------------------------------------------------------------------------ the light launcher


def test_light_bits_output_under_a_file_is_its_own_error(tmp_path):
    (tmp_path / "file").write_text("x")
    result = light("bits", "stats", CODES, "--json", tmp_path / "file" / "stats.json")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [f"allennlp bits stats: error: {tmp_path / 'file' / 'stats.json'}: cannot "
                                          f"be created: {tmp_path / 'file'} is a file, not a folder", HINT]


def test_light_bits_diff_line_out_of_range_names_the_file_s_lines():
    result = light("bits", "diff", "--codes", CODES, "--lines", "3", "999")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [f"allennlp bits diff: error: --lines: {CODES} has 44 lines, so no line 999 "
                                          "(lines are 1-based)", HINT]


def test_light_bits_debug_shows_the_real_traceback(tmp_path):
    result = light("bits", "diff", "--codes", CODES, "--lines", "3", "999", env={"BITCODE_DEBUG": "1"})
    assert result.returncode == 1
    assert result.stderr.startswith("Traceback (most recent call last):")
    assert result.stderr.splitlines()[-1] == (f"bitcode_allennlp.host.names.LightConfigurationError: --lines: "
                                              f"{CODES} has 44 lines, so no line 999 (lines are 1-based)")
    assert "invalid choice" not in result.stderr and "fix start_cli failed" not in result.stderr

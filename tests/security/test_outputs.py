"""Nothing a user had is deleted or half overwritten (SECURITY.md): `bits explore --out` replaces only an explorer,
whole and at once; no output lands inside a folder input; an input inside an output folder is refused."""
import json
import os
import subprocess
import sys

import pytest

from bitcode_allennlp.bits.explore import build_explorer
from tests.conftest import ROOT, ner_hash_archive  # noqa: F401

LINES = [{"words": ["EU", "rejects", "German", "call"], "codes": ["f", "0", "e", "0"], "num_bits": 4,
          "tags": ["U-ORG", "O", "U-MISC", "O"]},
         {"words": ["Peter", "Smith"], "codes": ["c", "c"], "num_bits": 4, "tags": ["B-PER", "L-PER"]}]


def allennlp(*args):
    return subprocess.run([sys.executable, "-m", "allennlp", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def refused(result, *says):
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and all(part in result.stderr for part in says), result.stderr


@pytest.fixture
def codes(tmp_path):
    path = tmp_path / "codes.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    return path


def snapshot(folder):
    """Every file under `folder` with its bytes (links as their target)."""
    found = {}
    for root, directories, files in os.walk(folder):
        for name in directories + files:
            path = os.path.join(root, name)
            if os.path.islink(path):
                found[os.path.relpath(path, folder)] = "-> " + os.readlink(path)
            elif os.path.isfile(path):
                with open(path, "rb") as handle:
                    found[os.path.relpath(path, folder)] = handle.read()
    return found


def siblings(folder):
    return sorted(entry for entry in os.listdir(folder.parent) if entry.startswith(f".{folder.name}."))


def test_explore_refuses_a_folder_that_is_not_an_explorer_and_keeps_it(codes, tmp_path):
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "data" / "corpus.txt").write_text("a user's data")
    (project / "index.html").write_text("<p>my page</p>")
    before = snapshot(project)
    refused(allennlp("bits", "explore", codes, "--out", project), "holds data/corpus.txt", "give a new or empty folder")
    assert snapshot(project) == before
    (project / "data" / "corpus.txt").unlink()
    (project / "data" / "meta.js").symlink_to(codes)  # a link where the explorer writes: refused too
    refused(allennlp("bits", "explore", codes, "--out", project), "holds data/meta.js@")
    assert codes.read_text().startswith('{"words"')


@pytest.mark.parametrize("where", ["codes.jsonl", "data/codes.jsonl", "deeper/still/codes.jsonl"])
def test_explore_refuses_an_input_below_its_folder(codes, tmp_path, where):
    out = tmp_path / "explorer"
    inside = out / where
    inside.parent.mkdir(parents=True)
    inside.write_bytes(codes.read_bytes())
    refused(allennlp("bits", "explore", inside, "--out", out), "holds the codes corpus",
            "would overwrite its own input")
    assert inside.read_bytes() == codes.read_bytes()


def test_explore_replaces_an_explorer_whole_and_leaves_no_staging_folder(codes, tmp_path):
    out = tmp_path / "explorer"
    build_explorer(str(codes), str(out))
    first = snapshot(out)
    assert "data/meta.js" in first and "index.html" in first
    (codes.parent / "two.jsonl").write_text(json.dumps(LINES[1]) + "\n")
    result = allennlp("bits", "explore", codes.parent / "two.jsonl", "--out", out)
    assert result.returncode == 0, result.stderr
    second = snapshot(out)
    assert second["data/meta.js"] != first["data/meta.js"] and b'"sentences":1' in second["data/meta.js"]
    assert siblings(out) == []


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_failed_or_interrupted_build_leaves_the_old_explorer_whole(codes, tmp_path, monkeypatch, failure):
    from bitcode_allennlp.bits import explore

    out = tmp_path / "explorer"
    build_explorer(str(codes), str(out))
    before = snapshot(out)
    original = explore._write_explorer

    def half_then_fail(corpus, out_dir, *args):
        original(corpus, out_dir, *args)  # every file written into the staging folder, then the disk fills
        raise failure

    monkeypatch.setattr(explore, "_write_explorer", half_then_fail)
    with pytest.raises(type(failure)):
        build_explorer(str(codes), str(out))
    assert snapshot(out) == before and siblings(out) == []


def test_a_killed_build_leaves_the_old_explorer_and_the_next_run_clears_its_staging(codes, tmp_path):
    out = tmp_path / "explorer"
    build_explorer(str(codes), str(out))
    before = snapshot(out)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a process id that no longer runs: what SIGKILL leaves behind
    stale = tmp_path / f".explorer.{dead.pid}.0badf00d.tmp"
    (stale / "data").mkdir(parents=True)
    (stale / "index.html").write_text("half")
    assert snapshot(out) == before
    build_explorer(str(codes), str(out))
    assert not stale.exists() and siblings(out) == []
    # a kill between the two renames of the swap: the folder is missing, its old copy beside it is put back
    old = tmp_path / f".explorer.{dead.pid}.0badf00d.old.tmp"
    os.rename(out, old)
    build_explorer(str(codes), str(out))
    assert snapshot(out)["index.html"] == before["index.html"] and siblings(out) == []


def test_evaluate_and_hash_corpus_never_write_into_a_folder_input(ner_hash_archive, tmp_path):  # noqa: F811
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    gold = corpus / "dev.gold_conll"
    gold.write_bytes(next((ROOT / "fixtures/data/conll2012/development").rglob("*gold_conll")).read_bytes())
    before = gold.read_bytes()
    refused(allennlp("evaluate", ner_hash_archive, corpus, "--output-file", gold),
            f"is inside the evaluation data {corpus}")
    refused(allennlp("evaluate", ner_hash_archive, corpus, "--output-file", corpus / "metrics.json"),
            "a folder the command reads whole")
    refused(allennlp("hash-corpus", ner_hash_archive, corpus, "-o", gold, "--force"),
            f"is inside the input corpus {corpus}", "--force does not change that")
    assert gold.read_bytes() == before and sorted(os.listdir(corpus)) == ["dev.gold_conll"]


def test_predictions_beside_a_serialization_folder_are_still_fine(ner_hash_archive, tmp_path):  # noqa: F811
    """The rule is not over-strict: a serialization folder names the files loading reads."""
    import tarfile

    run = tmp_path / "run"
    with tarfile.open(ner_hash_archive) as archive:
        archive.extractall(run, filter="data")
    lines = tmp_path / "in.jsonl"
    lines.write_text('{"sentence": "Obama visits Berlin"}\n')
    result = allennlp("predict", run, lines, "--output-file", run / "predictions.jsonl", "--silent")
    assert result.returncode == 0, result.stderr
    assert json.loads((run / "predictions.jsonl").read_text())["words"] == ["Obama", "visits", "Berlin"]
    refused(allennlp("predict", run, lines, "--output-file", run / "config.json"), "is a file of the model archive")

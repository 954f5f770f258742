"""`allennlp hash-corpus --num-shards N --shard-index i` and `allennlp hash-corpus-merge`: the shards, merged, are
byte for byte the unsharded file (fixture corpus and slices of the shared corpora); a merge of shards that do not
belong together, or do not cover the input exactly once, is refused with one line naming the file; a shard is
continued after a kill like an unsharded file, and only as itself."""
import json
import logging
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import load_archive

import bitcode_allennlp.code_stage.hash_corpus as hash_corpus
from bitcode_allennlp.data.dataset_readers import ConlluPosDatasetReader
from bitcode_allennlp.code_stage.hash_corpus import reannotate
from bitcode_allennlp.code_stage.shards import SHARDING, meta_path, merge_shards, read_meta, shard_of, shard_size
from tests.conftest import FIXTURES

NER_DEV = FIXTURES / "data" / "conll2012" / "development"  # a release folder: its fingerprint covers every file
HINT = "(set BITCODE_DEBUG=1 for the full traceback)"


@pytest.fixture(scope="module")
def archive(ner_hash_archive):
    """The fixture NER hashing archive, loaded, with its path (recorded by every run, as the command does)."""
    loaded = load_archive(ner_hash_archive)
    return SimpleNamespace(model=loaded.model, validation_dataset_reader=loaded.validation_dataset_reader,
                           path=ner_hash_archive)


def archive_reader(archive, shared_data):
    return archive.validation_dataset_reader


def ewt_reader(archive, shared_data):
    """CoNLL-U read by `conllu_pos` with the archive's own token indexers (codes need only the words)."""
    return ConlluPosDatasetReader(token_indexers=archive.validation_dataset_reader._token_indexers)


CORPORA = {  # name: (path under the shared data or the fixture path, reader, sentences read (None: all))
    "fixture NER dev (release folder)": (NER_DEV, archive_reader, None),
    "shared BTC dev, first 200": ("ner/btc/conll2012/development", archive_reader, 200),
    "shared EWT dev, first 200": ("pos/ud_english_ewt/en_ewt-ud-dev.conllu", ewt_reader, 200),
}
SHARDINGS = {  # name: [(shards, chunk size)]
    "fixture NER dev (release folder)": [(1, 512), (2, 3), (3, 2), (3, 512), (7, 1), (25, 1), (4, 6)],
    "shared BTC dev, first 200": [(3, 16)],
    "shared EWT dev, first 200": [(4, 32)],
}


def corpus(name, archive, request):
    path, make_reader, limit = CORPORA[name]
    if not Path(path).is_absolute():
        path = request.getfixturevalue("shared_data") / path
    reader = make_reader(archive, None)
    reader.max_instances = limit
    return str(path), reader


def run(archive, reader, path, out, **kwargs):
    return reannotate(archive.model, reader, path, str(out), max_tokens=256, progress=False,
                      archive_path=archive.path, **kwargs)


def write_shards(archive, reader, path, folder, num_shards, chunk_size, **kwargs):
    shards = [folder / f"codes.shard-{index}.jsonl" for index in range(num_shards)]
    for index, shard in enumerate(shards):
        run(archive, reader, path, shard, num_shards=num_shards, shard_index=index, chunk_size=chunk_size, **kwargs)
    return shards


@pytest.mark.parametrize("name, num_shards, chunk_size",
                         [(name, n, c) for name in CORPORA for n, c in SHARDINGS[name]])
def test_merged_shards_equal_the_unsharded_file(name, num_shards, chunk_size, archive, tmp_path, request):
    path, reader = corpus(name, archive, request)
    whole = tmp_path / "codes.jsonl"
    counts = run(archive, reader, path, whole, chunk_size=chunk_size)
    shards = write_shards(archive, reader, path, tmp_path, num_shards, chunk_size)
    total = counts["input_sentences"]
    assert counts["sentences"] == total == (CORPORA[name][2] or total)
    sources = [json.loads(line)["source"] for line in whole.read_text().splitlines()]
    for index, shard in enumerate(shards):
        meta = read_meta(str(shard))
        assert (meta["num_shards"], meta["shard_index"], meta["chunk_size"], meta["sharding"]) == (
            num_shards, index, chunk_size, SHARDING)
        assert meta["complete"] and meta["input_sentences"] == total
        lines = shard.read_text().splitlines()
        assert meta["sentences"] == len(lines) == shard_size(total, num_shards, index, chunk_size)
        assert [json.loads(line)["source"] for line in lines] == [
            source for k, source in enumerate(sources) if (k // chunk_size) % num_shards == index]
    merged = tmp_path / "merged.jsonl"
    assert merge_shards(list(map(str, reversed(shards))), str(merged)) == {"sentences": total,
                                                                            "shards": num_shards}
    assert merged.read_bytes() == whole.read_bytes()
    merged_meta = read_meta(str(merged))
    assert merged_meta.pop("merged_from") == [str(shard.resolve()) for shard in shards]
    assert merged_meta == read_meta(str(whole))


def test_cli_shards_and_merge_a_shared_corpus(ner_hash_archive, shared_data, tmp_path, monkeypatch, capsys):
    """What a job array runs, with the defaults (chunks of 512): the whole BTC dev file (1,000 sentences) in 2 shards
    with `hash-corpus --num-shards 2 --shard-index $i`, then `hash-corpus-merge`."""
    btc = shared_data / "ner" / "btc" / "conll2012" / "development"
    status, line, err = allennlp(monkeypatch, capsys, "hash-corpus", ner_hash_archive, btc, "-o",
                                 tmp_path / "all.jsonl", "--silent")
    assert status == 0, err
    for index in range(2):
        status, line, err = allennlp(monkeypatch, capsys, "hash-corpus", ner_hash_archive, btc, "-o",
                                     tmp_path / f"shard-{index}.jsonl", "--num-shards", "2", "--shard-index",
                                     str(index), "--silent", "--batch-size", "512")  # the budgets may differ
        assert status == 0, err
    shards = sorted(tmp_path.glob("shard-*.jsonl"))
    assert [len(shard.read_bytes().splitlines()) for shard in shards] == [512, 488]
    status, line, err = allennlp(monkeypatch, capsys, "hash-corpus-merge", *shards, "-o", tmp_path / "merged.jsonl")
    assert status == 0, err
    assert (tmp_path / "merged.jsonl").read_bytes() == (tmp_path / "all.jsonl").read_bytes()
    assert len((tmp_path / "merged.jsonl").read_bytes().splitlines()) == 1000
    meta = json.loads(Path(meta_path(tmp_path / "shard-1.jsonl")).read_text())
    assert meta["reader"] == {"dataset_reader_choice": "validation", "overrides": "", "max_instances": None}
    assert (meta["chunk_size"], meta["sentences"], meta["input_sentences"]) == (512, 488, 1000)
    status, line, err = allennlp(monkeypatch, capsys, "hash-corpus-merge", shards[1], "-o",
                                 tmp_path / "merged2.jsonl")
    assert status == 1 and line == (f"allennlp hash-corpus-merge: error: {shards[1]}: 1 of its 2 shards not given "
                                    "(shard index 0); give every shard of the run")
    assert not (tmp_path / "merged2.jsonl").exists()


# ---------------------------------------------------------------------------------------------- refused merges


def edit_meta(shard, **changes):
    meta = read_meta(str(shard))
    meta.update(changes)
    Path(meta_path(shard)).write_text(json.dumps(meta))


def copy_shard(shard, to):
    shutil.copy(shard, to)
    shutil.copy(meta_path(shard), meta_path(to))
    return to


def drop_last_line(shard):
    lines = shard.read_bytes().splitlines(keepends=True)
    shard.write_bytes(b"".join(lines[:-1]))


def killed_run(archive, reader, tmp_path, shard):
    """Shard 1 of 3 written again by a run killed after its first chunk (a real kill: the model raises)."""
    calls = []

    def code_chunk(*args, **kwargs):
        if calls:
            raise KeyboardInterrupt
        calls.append(1)
        return original(*args, **kwargs)

    original = hash_corpus._code_chunk
    hash_corpus._code_chunk = code_chunk
    try:
        with pytest.raises(KeyboardInterrupt):
            run(archive, reader, str(NER_DEV), shard, num_shards=3, shard_index=1, force=True, chunk_size=CHUNK)
    finally:
        hash_corpus._code_chunk = original


BAD_MERGES = {  # name: (what to do to the shards (a list of 3 paths, returning the paths given to the merge), error)
    "missing shard": (lambda s, **_: [s[0], s[2]],
                      "{s0}: 1 of its 3 shards not given (shard index 1); give every shard of the run"),
    "duplicate shard": (lambda s, tmp, **_: [s[0], s[1], copy_shard(s[1], tmp / "copy.jsonl"), s[2]],
                        "{s1} and {tmp}/copy.jsonl are both shard 1 of 3; give each shard once"),
    "another archive": (lambda s, **_: edit_meta(s[2], archive="/other/model.tar.gz", archive_sha256="f" * 64) or s,
                        "{s2}: written by '/other/model.tar.gz' (sha256 ffffffffffff..., K = 24), but {s0} by "),
    "another K": (lambda s, **_: edit_meta(s[1], num_bits=16) or s,
                  "every shard must come from the same archive and K"),
    "another input": (lambda s, **_: edit_meta(s[1], input="other.conll") or s,
                      "{s1}: input path 'other.conll', but {s0} has "),
    "another input content": (lambda s, **_: edit_meta(s[1], input_fingerprint={"sha256": "0", "bytes": 1}) or s,
                              "{s1}: input content {{'sha256': '0', 'bytes': 1}}, but {s0} has "),
    "another number of shards": (lambda s, **_: edit_meta(s[2], num_shards=4) or s,
                                 "{s2}: number of shards 4, but {s0} has 3"),
    "another chunk size": (lambda s, **_: edit_meta(s[1], chunk_size=512) or s,
                           "{s1}: chunk size 512, but {s0} has 2"),
    "incomplete shard (killed run)": (lambda s, archive, reader, tmp: killed_run(archive, reader, tmp, s[1]) or s,
                                      "{s1}: shard 1 of 3 is incomplete (its hash-corpus run has not finished); run "
                                      "its command again to finish it"),
    "shard cut after it finished": (lambda s, **_: drop_last_line(s[2]) or s,
                                    "{s2}: ends after 5 complete lines, but its record says 6"),
    "shard grown after it finished": (lambda s, **_: s[0].write_bytes(s[0].read_bytes() * 2) and s,
                                      "{s0}: has more lines than the 8 its record says"),
    "not a shard": (lambda s, tmp, **_: [*s, (tmp / "x.jsonl").write_text("{}\n") and tmp / "x.jsonl"],
                    "{tmp}/x.jsonl: no record {tmp}/x.jsonl.meta.json beside it, so it is not hash-corpus output"),
    "a record given": (lambda s, **_: [*s, Path(meta_path(s[0]))],
                       "{s0}.meta.json: is a hash-corpus record; give the codes file beside it ({s0})"),
    "output is a shard": (lambda s, tmp, **_: shutil.copy(s[0], tmp / "merged.jsonl") and [tmp / "merged.jsonl",
                                                                                            *s[1:]],
                          "{tmp}/merged.jsonl: is one of the shards; write the merged file elsewhere"),
}


CHUNK = 2  # the fixture's 20 sentences in 10 chunks: shards 0, 1, 2 hold 8, 6, 6 sentences


@pytest.fixture(scope="module")
def three_shards(archive, tmp_path_factory):
    folder = tmp_path_factory.mktemp("shards")
    return write_shards(archive, archive.validation_dataset_reader, str(NER_DEV), folder, 3, CHUNK)


@pytest.mark.parametrize("name", list(BAD_MERGES))
def test_merge_refuses(name, archive, three_shards, tmp_path):
    shards = [copy_shard(shard, tmp_path / shard.name) for shard in three_shards]
    if name == "output is a shard":
        shutil.copy(meta_path(shards[0]), meta_path(tmp_path / "merged.jsonl"))
    change, expected = BAD_MERGES[name]
    given = change(shards, tmp=tmp_path, archive=archive, reader=archive.validation_dataset_reader)
    expected = expected.format(tmp=tmp_path, **{f"s{i}": shard for i, shard in enumerate(shards)})
    out = tmp_path / "merged.jsonl"
    existed = out.exists()
    with pytest.raises(ConfigurationError) as error:
        merge_shards([str(path) for path in given], str(out))
    assert expected in str(error.value) and "\n" not in str(error.value)
    assert out.exists() == existed and not (tmp_path / "merged.jsonl.merging").exists()


def test_merge_does_not_replace_an_output_unless_forced(three_shards, tmp_path):
    out = tmp_path / "merged.jsonl"
    out.write_text("old\n")
    with pytest.raises(ConfigurationError, match="merged.jsonl: exists; pass --force to replace it"):
        merge_shards(list(map(str, three_shards)), str(out))
    merge_shards(list(map(str, three_shards)), str(out), force=True)
    merge_shards(list(map(str, three_shards)), str(tmp_path / "fresh.jsonl"))
    assert out.read_bytes() == (tmp_path / "fresh.jsonl").read_bytes()


# ------------------------------------------------------------------------------------------------ resuming a shard


@pytest.mark.parametrize("kept_lines", [0, 1, 3, 4, 6])
def test_a_killed_shard_continues_to_the_same_file(kept_lines, archive, three_shards, tmp_path):
    reader = archive.validation_dataset_reader
    full = three_shards[1].read_text()
    lines = full.splitlines(keepends=True)
    partial = tmp_path / "shard-1.jsonl"
    copy_shard(three_shards[1], partial)
    edit_meta(partial, complete=False, sentences=None, input_sentences=None)
    partial.write_text("".join(lines[:kept_lines]) + (lines[kept_lines][:17] if kept_lines < len(lines) else ""))
    counts = run(archive, reader, str(NER_DEV), partial, num_shards=3, shard_index=1, chunk_size=CHUNK)
    assert partial.read_text() == full
    assert counts["resumed"] == kept_lines and counts["sentences"] == len(lines)
    assert read_meta(str(partial)) == read_meta(str(three_shards[1]))


def test_a_killed_shard_is_refused_by_merge_then_continued(archive, three_shards, tmp_path):
    shards = [copy_shard(shard, tmp_path / shard.name) for shard in three_shards]
    reader = archive.validation_dataset_reader
    killed_run(archive, reader, tmp_path, shards[1])
    assert len(shards[1].read_text().splitlines()) == 2  # one chunk of 2 sentences, then the kill
    with pytest.raises(ConfigurationError, match="shard 1 of 3 is incomplete"):
        merge_shards(list(map(str, shards)), str(tmp_path / "merged.jsonl"))
    counts = run(archive, reader, str(NER_DEV), shards[1], num_shards=3, shard_index=1, chunk_size=CHUNK)
    assert counts["resumed"] == 2
    merge_shards(list(map(str, shards)), str(tmp_path / "merged.jsonl"))
    whole = tmp_path / "whole.jsonl"
    run(archive, reader, str(NER_DEV), whole, chunk_size=CHUNK)
    assert (tmp_path / "merged.jsonl").read_bytes() == whole.read_bytes()


SHARD_1 = {"num_shards": 3, "shard_index": 1, "chunk_size": CHUNK}
RESUME_REFUSED = {  # name: (run arguments, what to do to the record first, error)
    "as another shard": ({**SHARD_1, "shard_index": 2}, {},
                         "it is shard 1 of 3 (chunks of 2 sentences), not shard 2 of 3 (chunks of 2 sentences); "
                         "check --num-shards, --shard-index and --chunk-size"),
    "as an unsharded run": ({}, {}, "it is shard 1 of 3 (chunks of 2 sentences), not an unsharded run (shard 0 of 1)"),
    "with another number of shards": ({**SHARD_1, "num_shards": 4}, {},
                                      "it is shard 1 of 3 (chunks of 2 sentences), not shard 1 of 4 (chunks of 2 "),
    "with another chunk size": ({**SHARD_1, "chunk_size": 3}, {},
                                "it is shard 1 of 3 (chunks of 2 sentences), not shard 1 of 3 (chunks of 3 "),
    "from another input": (SHARD_1, {"input_fingerprint": {"sha256": "ab" * 32, "bytes": 5}},
                           "it was made from '{input}' with another content (sha256 abababababab..., 5 bytes; now "),
    "by another archive": (SHARD_1, {"archive_sha256": "0" * 64, "archive": "/x.tar.gz"},
                           "it was written by '/x.tar.gz' (K = 24, sha256 000000000000...), not by "),
}


@pytest.mark.parametrize("name", list(RESUME_REFUSED))
def test_a_shard_is_continued_only_as_itself(name, archive, three_shards, tmp_path):
    kwargs, changes, expected = RESUME_REFUSED[name]
    shard = copy_shard(three_shards[1], tmp_path / "shard-1.jsonl")
    edit_meta(shard, **changes)
    with pytest.raises(ConfigurationError) as error:
        run(archive, archive.validation_dataset_reader, str(NER_DEV), shard, **kwargs)
    assert f"cannot continue {shard}: " + expected.format(input=NER_DEV) in str(error.value)
    assert shard.read_bytes() == three_shards[1].read_bytes()  # untouched
    run(archive, archive.validation_dataset_reader, str(NER_DEV), shard, force=True, **kwargs)  # --force: allowed


def test_an_archive_rebuilt_at_the_same_path_is_told_apart_by_its_digest(tmp_path):
    from bitcode_allennlp.code_stage.shards import CodesRecord, check_same_model, write_meta

    output = tmp_path / "codes.jsonl"
    output.write_text('{"words": ["a"], "codes": ["00a3f0"]}\n')
    archive = str(tmp_path / "last_epoch.tar.gz")
    write_meta(str(output), CodesRecord(archive, "ab" * 32, 24, "train.conll"))
    check_same_model(str(output), CodesRecord(archive, "ab" * 32, 24, "train.conll"))  # the same archive: continued
    with pytest.raises(ConfigurationError) as error:
        check_same_model(str(output), CodesRecord(archive, "cd" * 32, 24, "train.conll"))
    assert str(error.value) == (f"cannot continue {output}: it was written by {archive!r} (K = 24, sha256 "
                                "abababababab...), not by the archive now at that path (K = 24, sha256 cdcdcdcdcdcd...)"
                                "; delete it or pass --force")


@pytest.mark.parametrize("num_shards, shard_index, chunk_size, expected", [
    (0, 0, 512, "--num-shards must be positive, got 0"),
    (3, 3, 512, "--shard-index must be in 0..2 for --num-shards 3, got 3"),
    (3, -1, 512, "--shard-index must be in 0..2 for --num-shards 3, got -1"),
    (3, 0, 0, "--chunk-size must be positive, got 0"),
])
def test_shard_numbers_are_checked(num_shards, shard_index, chunk_size, expected, archive, tmp_path):
    with pytest.raises(ConfigurationError, match=expected):
        run(archive, archive.validation_dataset_reader, str(NER_DEV), tmp_path / "x.jsonl", num_shards=num_shards,
            shard_index=shard_index, chunk_size=chunk_size)
    assert not (tmp_path / "x.jsonl").exists()


# ------------------------------------------------------------------------------------------------ the command


def allennlp(monkeypatch, capsys, *args):
    """Runs `allennlp ARGS` in this process; returns (exit status, the error line or None, stderr)."""
    import allennlp.commands

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
    lines = [line for line in err.splitlines() if line.startswith("allennlp ") and ": error: " in line]
    if lines:
        assert err.splitlines()[-1] == HINT and "Traceback" not in err, err
    return status, (lines[-1] if lines else None), err


def test_shard_sizes_count_the_sentences_of_each_shard():
    for total in range(0, 40):
        for num_shards in range(1, 6):
            for chunk_size in range(1, 8):
                owners = [shard_of(k, num_shards, chunk_size) for k in range(total)]
                sizes = [shard_size(total, num_shards, index, chunk_size) for index in range(num_shards)]
                assert sizes == [owners.count(index) for index in range(num_shards)]

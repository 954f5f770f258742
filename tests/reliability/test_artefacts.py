"""Broken artefacts (issue 29 class 9): a damaged `allennlp bits index` folder and a junk model archive end in one
clear error naming the file, never in a raw numpy, FAISS or AttributeError traceback, and never with advice to load
pickles.

* Index folders: every file is read through `bitcode_allennlp.bits.index.IndexFiles` (`HammingIndex.load`); a
  missing, truncated, damaged or foreign file raises `IndexFileError` / `MissingIndexFileError` (`DataFormatError`s)
  naming it.
* Archives: `check_archive` (`bitcode_allennlp/host/archival.py`, in the patched `load_archive`) raises
  `ArchiveError` naming the archive before AllenNLP builds anything, for `load_archive` and `allennlp predict`.
"""
import io
import json
import os
import shutil
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

from bitcode_allennlp.bits.corpus import read_codes_corpus
from bitcode_allennlp.bits.index import HammingIndex, index_corpus, precision_at_k
from bitcode_allennlp.bits.index_files import IndexFileError, MissingIndexFileError
from bitcode_allennlp.host.errors import ArchiveError, DataFormatError
from tests.conftest import FIXTURES

TRAIN = FIXTURES / "data" / "codes" / "ner.train.jsonl"
SIZE = 691  # words of the fixture (44 sentences, K = 24)


@pytest.fixture(scope="module")
def saved_index(tmp_path_factory):
    directory = tmp_path_factory.mktemp("index") / "index"
    index_corpus(str(TRAIN), str(directory), "flat")
    return directory


@pytest.fixture
def index_dir(saved_index, tmp_path):
    """A fresh copy of the saved index (flat FAISS index) for one test to damage."""
    return Path(shutil.copytree(saved_index, tmp_path / "index"))


def open_and_use(directory: Path) -> HammingIndex:
    """What `allennlp bits search` does with a folder: load it, search, read the hits (the sentences are read on
    first use)."""
    index = HammingIndex.load(str(directory))
    top, distances = index.search(np.asarray(index.codes[:2]), 3)
    index.hits(top[0], distances[0])
    return index


# ------------------------------------------------------------------------------------------------ corruptions
def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def junk(path: Path) -> None:
    path.write_bytes(b"\x00\xffjunk bytes, not what this file should hold\n" * 4)


def empty(path: Path) -> None:
    path.write_bytes(b"")


def delete(path: Path) -> None:
    path.unlink()


def save_array(values: np.ndarray):
    def write(path: Path) -> None:
        np.save(path, values, allow_pickle=True)  # (np.save adds no suffix to an open file name ending in .npy)
    return write


def wrong_dtype(dtype):
    return lambda path: save_array(np.load(path).astype(dtype))(path)


def wrong_length(path: Path) -> None:
    save_array(np.load(path)[:-1])(path)


def pickled(path: Path) -> None:
    save_array(np.array([{"a": 1}, "x", 3] * 3, dtype=object))(path)


def two_dimensional(path: Path) -> None:
    save_array(np.load(path).reshape(1, -1))(path)


def wide_codes(path: Path) -> None:
    codes = np.load(path)
    codes[5] = np.uint64(1 << 30)
    save_array(codes)(path)


def edit_json(change):
    def write(path: Path) -> None:
        meta = json.loads(path.read_text())
        path.write_text(json.dumps(change(meta)))
    return write


def other_faiss_index(path: Path) -> None:
    other = HammingIndex(np.arange(10, dtype=np.uint64), 24, np.zeros(10, np.int32), np.arange(10, dtype=np.int32),
                         [{"words": ["w"] * 10}]).build_search_index("flat")
    other.search_index.write(str(path))


def cut_sentences(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2], encoding="utf-8")


def extra_sentence(path: Path) -> None:
    with open(path, "a", encoding="utf-8") as file:
        file.write(json.dumps({"words": ["extra"], "source": None, "line": None}) + "\n")


# (file, corruption, fragment of the message)
CORRUPTIONS = [
    ("index.json", truncate, "not JSON ("),
    ("index.json", junk, "not UTF-8 text"),
    ("index.json", empty, "empty"),
    ("index.json", edit_json(lambda meta: [meta]), "not a JSON object (a list)"),
    ("index.json", edit_json(lambda meta: {**meta, "num_bits": 99}), "num_bits must be an integer in 1..63"),
    ("index.json", edit_json(lambda meta: {**meta, "size": "691"}), "size must be a count"),
    ("index.json", edit_json(lambda meta: {**meta, "label_views": {"../x": []}}), "label_views must map view names"),
    ("index.json", edit_json(lambda meta: {**meta, "search": {"type": "lsh"}}), "search must be an object whose type"),
    ("index.json", edit_json(lambda meta: {**meta, "search": {**meta["search"], "file": "../faiss.index"}}),
     "search.file must be a file name in the index folder"),
    ("index.json", delete, "index.json is missing: not a Hamming index"),
    ("codes.npy", truncate, "truncated: "),
    ("codes.npy", junk, "not an .npy file (it does not start with numpy's magic string)"),
    ("codes.npy", empty, "empty (0 bytes), not an .npy file"),
    ("codes.npy", lambda path: path.write_bytes(path.read_bytes()[:20]),
     "an .npy file cut short or damaged in its header"),
    ("codes.npy", wrong_dtype(np.int64), "dtype int64, expected uint64"),
    ("codes.npy", wrong_dtype(">u8"), "dtype >u8, expected uint64"),
    ("codes.npy", pickled, "holds Python objects (dtype object), not uint64 numbers"),
    ("codes.npy", wrong_length, f"{SIZE - 1} values, but index.json says {SIZE} words (size)"),
    ("codes.npy", two_dimensional, f"shape (1, {SIZE}), expected ({SIZE},)"),
    ("codes.npy", lambda path: path.write_bytes(path.read_bytes() + b"\0" * 8), "8 bytes after its 691 values"),
    ("codes.npy", wide_codes, "code 40000000 (entry 5) has bits set above its K = 24 bits"),
    ("codes.npy", delete, "codes.npy is missing"),
    ("sentence_ids.npy", truncate, "truncated: "),
    ("sentence_ids.npy", wrong_dtype(np.float32), "dtype float32, expected int32"),
    ("sentence_ids.npy", wrong_length, f"{SIZE - 1} values, but index.json says {SIZE}"),
    ("sentence_ids.npy", pickled, "holds Python objects"),
    ("sentence_ids.npy", delete, "sentence_ids.npy is missing"),
    ("positions.npy", junk, "not an .npy file"),
    ("positions.npy", wrong_dtype(np.int64), "dtype int64, expected int32"),
    ("positions.npy", delete, "positions.npy is missing"),
    ("labels.type.npy", truncate, "truncated: "),
    ("labels.type.npy", wrong_length, f"{SIZE - 1} values"),
    ("labels.type.npy", pickled, "holds Python objects"),
    ("labels.type.npy", delete, "labels.type.npy is missing"),
    ("labels.tag.npy", lambda path: save_array(np.full(SIZE, 99, dtype=np.int32))(path),
     "labels.tag must be label ids in [0, "),  # read where used: the hits
    ("sentence_ids.npy", lambda path: save_array(np.full(SIZE, 500, dtype=np.int32))(path),
     "sentence_ids must be sentence numbers in [0, 44), got 500"),
    ("sentences.jsonl", cut_sentences, "line 44: not JSON ("),
    ("sentences.jsonl", extra_sentence, "45 sentences, but index.json says 44"),
    ("sentences.jsonl", junk, "line 1: invalid UTF-8"),
    ("sentences.jsonl", lambda path: path.write_text('{"words": "Frodo"}\n'),
     'line 1: expected a JSON object whose "words"'),
    ("sentences.jsonl", delete, "sentences.jsonl is missing"),
    ("faiss.index", truncate, "not a FAISS binary index, or a truncated one (FAISS: "),
    ("faiss.index", junk, "not a FAISS binary index, or a truncated one"),
    ("faiss.index", empty, "not a FAISS binary index (an empty file)"),
    ("faiss.index", other_faiss_index, "a IndexBinaryFlat of 10 codes of 32 bits, but index.json says IndexBinaryFlat "
                                       f"of {SIZE} codes of K = 24 bits"),
    ("faiss.index", delete, "faiss.index is missing (index.json says index type flat)"),
]


@pytest.mark.parametrize("name, corrupt, fragment", CORRUPTIONS,
                         ids=[f"{row[0]}-{row[1].__name__}-{i}" for i, row in enumerate(CORRUPTIONS)])
def test_a_damaged_index_file_is_named(index_dir, name, corrupt, fragment):
    corrupt(index_dir / name)
    with pytest.raises(DataFormatError) as info:
        open_and_use(index_dir)
    error = info.value
    message = str(error)
    assert isinstance(error, IndexFileError) and isinstance(error, ValueError)  # what load raised before, too
    assert fragment in message, message
    assert name in message and "\n" not in message
    assert "pickle" not in message.lower()  # never advise allow_pickle
    assert "rebuild it with 'allennlp bits index CODES.jsonl --out" in message or "make one with" in message
    if corrupt is delete:
        assert isinstance(error, MissingIndexFileError) and isinstance(error, FileNotFoundError)
        assert message.startswith(f"{index_dir}: {name} is missing")
    else:
        assert message.startswith(str(index_dir / name)), message


def test_label_ids_out_of_range_are_named_by_precision(index_dir):
    save_array(np.full(SIZE, -1, dtype=np.int32))(index_dir / "labels.type.npy")
    index = HammingIndex.load(str(index_dir))
    with pytest.raises(IndexFileError, match=r"labels\.type\.npy: labels\.type must be label ids in \[0, 7\), got -1 "
                                             r"\(entry 0\)"):
        precision_at_k(index, read_codes_corpus(str(TRAIN)), k=5)


def test_not_an_index_folder(tmp_path):
    with pytest.raises(MissingIndexFileError, match="no such folder: not a Hamming index; make one with"):
        HammingIndex.load(str(tmp_path / "nothing"))
    with pytest.raises(IndexFileError, match="not a folder: an index is the folder that 'allennlp bits index' writes"):
        HammingIndex.load(str(TRAIN))
    with pytest.raises(MissingIndexFileError, match="index.json is missing: not a Hamming index"):
        HammingIndex.load(str(tmp_path))


def test_the_intact_index_loads_and_numpy_scan_skips_faiss(index_dir):
    index = open_and_use(index_dir)
    assert len(index) == SIZE and index.index_type == "flat" and len(index.sentences) == 44
    (index_dir / "faiss.index").unlink()
    assert HammingIndex.load(str(index_dir), numpy_scan=True).index_type == "numpy"  # --numpy-scan needs no FAISS


def test_bits_search_prints_one_line_naming_the_file(index_dir, capsys):
    """Through the command's function (`allennlp bits search`): a `ConfigurationError` naming the file."""
    import argparse

    from bitcode_allennlp.bits.command import search_from_args
    from bitcode_allennlp.host.names import ConfigurationError

    truncate(index_dir / "codes.npy")
    args = argparse.Namespace(index_dir=str(index_dir), numpy_scan=False, threads=1, code="a3f00c", word=None,
                              k=3, radius=None, limit=10, json=None)
    with pytest.raises(ConfigurationError, match=r"codes\.npy: truncated: \d+ bytes of data, its header says 691 "
                                                 r"values of 8 bytes \(5528 bytes\); rebuild it with"):
        search_from_args(args)


# ------------------------------------------------------------------------------------------------ archives
JUNK_CONFIGS = [
    ("list", b"[1, 2]", 'not a model archive: its config.json is a JSON list, not an object with "model" and '
                        '"dataset_reader"'),
    ("no model", b'{"dataset_reader": {"type": "x"}}', 'not a model archive: its config.json has no "model" object'),
    ("no reader", b'{"model": {"type": "x"}}', 'its config.json has no "dataset_reader" object'),
    ("model a list", b'{"model": [], "dataset_reader": {}}',
     'in its config.json, "model" is a JSON list, not an object'),
    ("reader a number", b'{"model": {}, "dataset_reader": 3}', '"dataset_reader" is a JSON number, not an object'),
    ("not json", b"not json {", "not a model archive, or a damaged one: its config.json is not JSON (Expecting value "
                                "at line 1, column 1)"),
    ("not utf-8", b"\xff\xfe{}", "its config.json is not UTF-8 text (byte 1)"),
    ("empty", b"", "its config.json is not JSON"),
    ("no weights", b'{"model": {"type": "x"}, "dataset_reader": {"type": "y"}}', "no weights "),
]


def folder_archive(root: Path, config: bytes, weights: bool = False) -> Path:
    root.mkdir()
    (root / "config.json").write_bytes(config)
    if weights:
        (root / "best.th").write_bytes(b"weights")
    return root


def tar_archive(path: Path, config: bytes, weights: bool = False) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in [("config.json", config)] + ([("weights.th", b"weights")] if weights else []):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


ARCHIVE_KINDS = {"folder": lambda tmp, config: folder_archive(tmp / "model", config),
                 "tar.gz": lambda tmp, config: tar_archive(tmp / "model.tar.gz", config)}


@pytest.mark.parametrize("kind", list(ARCHIVE_KINDS))
@pytest.mark.parametrize("case, config, fragment", JUNK_CONFIGS, ids=[row[0] for row in JUNK_CONFIGS])
def test_load_archive_names_a_junk_archive(tmp_path, kind, case, config, fragment):
    from allennlp.models.archival import load_archive

    import bitcode_allennlp.plugin  # noqa: F401

    archive = ARCHIVE_KINDS[kind](tmp_path, config)
    with pytest.raises(ArchiveError) as info:
        load_archive(str(archive))
    assert str(info.value).startswith(f"{archive}: ") and fragment in str(info.value), str(info.value)
    assert info.value.path == str(archive) and "\n" not in str(info.value)


def run_allennlp(*argv) -> None:
    """`allennlp ARGV` through AllenNLP's parser and the sub-command's function, in this process."""
    from allennlp.commands import parse_args

    import bitcode_allennlp.plugin  # noqa: F401

    saved = sys.argv
    sys.argv = ["allennlp", *map(str, argv)]
    try:
        _, args = parse_args("allennlp")
        args.func(args)
    finally:
        sys.argv = saved


COMMANDS = {
    "predict": lambda archive, tmp: ["predict", archive, tmp / "in.jsonl", "--output-file", tmp / "out.jsonl",
                                     "--silent"],
    "evaluate": lambda archive, tmp: ["evaluate", archive, FIXTURES / "data" / "conll2012" / "development"],
    "hash-corpus": lambda archive, tmp: ["hash-corpus", archive, FIXTURES / "data" / "conll2012" / "development",
                                         "-o", tmp / "codes.jsonl"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("kind", list(ARCHIVE_KINDS))
def test_allennlp_commands_name_a_junk_archive(tmp_path, kind, command):
    archive = ARCHIVE_KINDS[kind](tmp_path, b'{"foo": 1}')
    (tmp_path / "in.jsonl").write_text('{"sentence": "Frodo left"}\n')
    with pytest.raises(ArchiveError, match=f"^{archive}: not a model archive: its config.json has no \"model\""):
        run_allennlp(*COMMANDS[command](archive, tmp_path))
    assert not (tmp_path / "out.jsonl").exists() or (tmp_path / "out.jsonl").stat().st_size == 0


def test_spacy_component_names_a_junk_archive(tmp_path):
    import spacy

    archive = tar_archive(tmp_path / "model.tar.gz", b"[]")
    nlp = spacy.blank("en")
    nlp.add_pipe("bitcode_ner", config={"archive": str(archive)})
    with pytest.raises(ArchiveError, match=f"^{archive}: not a model archive: its config.json is a JSON list"):
        nlp("Obama visits Berlin")


def test_the_check_passes_real_looking_archives(tmp_path):
    """Not over-strict: a config with both sections (a type name for either) and weights passes; an explicit weights
    file stands in for missing ones; overrides may add sections. A jsonnet config is refused (an archive's config is
    read as plain JSON: tests/security/test_archives.py)."""
    from bitcode_allennlp.host.archival import check_archive

    good = b'{"model": {"type": "hash_crf_tagger"}, "dataset_reader": "ontonotes_hash"}'
    check_archive(folder_archive(tmp_path / "a", good, weights=True))
    check_archive(tar_archive(tmp_path / "a.tar.gz", good, weights=True))
    with pytest.raises(ArchiveError, match="is not JSON .*never evaluated as jsonnet"):
        check_archive(folder_archive(tmp_path / "b", b'// jsonnet\n{model: {}, dataset_reader: {},}', weights=True))
    check_archive(folder_archive(tmp_path / "c", good), weights_file=str(tmp_path / "c" / "elsewhere.th"))
    check_archive(folder_archive(tmp_path / "d", b'{"model": {}}', weights=True), overrides='{"dataset_reader": {}}')
    check_archive(tmp_path / "missing.tar.gz")  # left to load_archive (FileNotFoundError)
    (tmp_path / "junk.tar.gz").write_bytes(b"not a tar")
    check_archive(tmp_path / "junk.tar.gz")  # left to bad_input.extracted_archive
    with pytest.raises(ArchiveError, match="the folder has no config.json"):
        check_archive(tmp_path / "d" / "..")
    assert os.path.isdir(tmp_path / "a")

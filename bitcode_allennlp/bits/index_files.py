"""The on-disk format of a Hamming index and its one checked reader (`IndexFiles`).

Where this sits: below `faiss_index` (whose `FaissBinaryIndex.read` raises these errors) and `index` (whose
`HammingIndex.save` writes this layout and `HammingIndex.load` reads it through `IndexFiles`).

**Layout.** One entry per word of a codes corpus, in corpus order (`index` module docstring). On disk
(`HammingIndex.save`), a directory with

    index.json         format, version, num_bits, size, sentences, corpus path, label names per view, search
    codes.npy          (n,) uint64
    sentence_ids.npy   (n,) int32       0-based sentence (non-empty line of the corpus)
    positions.npy      (n,) int32       0-based word position in the sentence
    labels.<view>.npy  (n,) int32       ids into index.json's names, one file per view
    sentences.jsonl    one line per sentence: {"words", "source", "line"}
    faiss.index        the FAISS binary index (`faiss.write_index_binary`); none for index type numpy

`HammingIndex.load` memory-maps the `.npy` files (`mmap=True`) and a flat `faiss.index`, so opening an index reads
`index.json`, the `.npy` headers and one pass over the codes (checked to fit in K bits); the sentences are read on the
first lookup of a word. Every file is read through one checked reader, `IndexFiles`: a missing, truncated or damaged
file, one of another dtype or length, or a FAISS index of another size raises `IndexFileError`, a `DataFormatError`
naming the file (arrays are never unpickled). Directories of version 1 (written before FAISS indexes, no `search` in
index.json) still load and are searched with the numpy scan.
"""
import errno
import json
import re
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from bitcode_allennlp.common.code_format import check_num_bits
from bitcode_allennlp.host.errors import DataFormatError

FORMAT = "bitcode_allennlp.bits.HammingIndex"
VERSION = 2
"""2: index.json's `search` and `faiss.index`. Version 1 (numpy scan only) still loads."""
INDEX_TYPES = ("flat", "multihash", "hnsw", "ivf", "numpy")
"""index.json's `search.type` values (`faiss_index` for the FAISS ones, `numpy`: no FAISS index)."""
FAISS_FILE = "faiss.index"
INDEX_FILES = ("index.json", "codes.npy", "sentence_ids.npy", "positions.npy", "labels.*.npy", "sentences.jsonl",
               FAISS_FILE)
"""The files of an index folder (`HammingIndex.save`), as `fnmatch` patterns."""
NPY_MAGIC = b"\x93NUMPY"
VIEW_NAME = re.compile(r"[A-Za-z0-9_-]+")
"""Label view names in index.json (they name the files labels.<view>.npy)."""


class IndexFileError(DataFormatError, ValueError):
    """
    A file of a saved index that cannot be read (`IndexFiles`, `HammingIndex.load`): a `DataFormatError`
    ``<file>: <what is wrong>; rebuild it with 'allennlp bits index CODES.jsonl --out DIR'`` (with a line number for
    a line of sentences.jsonl). Also a `ValueError`, which `load` raised for these before.
    """


class MissingIndexFileError(IndexFileError, FileNotFoundError):
    """A file of a saved index that is not there: ``<folder>: <file> is missing; rebuild it ...``. Also a
    `FileNotFoundError`; its message is ``str(error)`` (no `strerror`)."""

    def __init__(self, path: str, line: Optional[int], message: str) -> None:
        super().__init__(path, line, message)
        self.errno, self.strerror, self.filename = errno.ENOENT, None, str(path)


class IndexFiles:
    """
    The one checked reader of a saved index folder: `HammingIndex.load` (and the sentences it reads on first use,
    and `FaissBinaryIndex.read`) reads every file through it. A missing file raises `MissingIndexFileError`, any
    other problem `IndexFileError` (a `DataFormatError` naming the file), each with how to rebuild the index:

    * ``index.json`` -- UTF-8 JSON object with this format, version 1 or 2, num_bits in 1..63, size and sentences
      (counts), label_views (view -> label names) and search (index type, file, parameters);
    * ``*.npy`` -- numpy's header is read first (an array is never unpickled): an .npy file of the layout's dtype
      (codes uint64, the others int32), shape ``(size,)``, exactly as long as its header says; codes below 2 ** K
      (`HammingIndex` checks them, one vectorised pass);
    * ``sentences.jsonl`` -- on the first lookup of a word: one JSON object with ``"words"`` per line, as many lines
      as index.json's sentences, as many words as codes;
    * ``faiss.index`` -- `FaissBinaryIndex.read`: a FAISS binary index of the type, width and size index.json says.

    The values of sentence_ids.npy, positions.npy and labels.*.npy are checked where they are used
    (`HammingIndex.hit`, `HammingIndex.label_ids`), so that opening a memory-mapped index does not read them.
    """

    def __init__(self, directory: str, mmap: bool = True) -> None:
        self.directory = str(directory)
        self.root = Path(directory)
        self.mode = "r" if mmap else None
        self.rebuild = f"rebuild it with 'allennlp bits index CODES.jsonl --out {self.directory}'"

    def error(self, name: str, message: str, line: Optional[int] = None) -> IndexFileError:
        """`IndexFileError` for the file `name` of the folder, with the rebuild hint."""
        return IndexFileError(str(self.root / name), line, f"{message}; {self.rebuild}")

    def existing(self, name: str) -> Path:
        """The path of the file `name`; `MissingIndexFileError` when it is not there."""
        path = self.root / name
        if path.is_dir():
            raise self.error(name, "a folder, not a file")
        if not path.is_file():
            raise MissingIndexFileError(self.directory, None, f"{name} is missing; {self.rebuild}")
        return path

    # ------------------------------------------------------------------------------------------------ index.json
    def meta(self) -> Dict[str, Any]:
        """index.json, checked (class docstring)."""
        make = "make one with 'allennlp bits index CODES.jsonl --out DIR'"
        if not self.root.is_dir():
            if self.root.exists():
                raise IndexFileError(self.directory, None, f"not a folder: an index is the folder that 'allennlp "
                                     f"bits index' writes; {make}")
            raise MissingIndexFileError(self.directory, None, f"no such folder: not a Hamming index; {make}")
        path = self.root / "index.json"
        if not path.is_file():
            raise MissingIndexFileError(self.directory, None, f"index.json is missing: not a Hamming index; {make}")
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as error:
            raise self.error("index.json", f"not UTF-8 text (byte {error.start + 1})") from None
        if not text.strip():
            raise self.error("index.json", "empty")
        try:
            meta = json.loads(text)
        except json.JSONDecodeError as error:
            raise self.error("index.json", f"not JSON ({error.msg} at line {error.lineno}, column {error.colno}): "
                                           "cut short or damaged") from None
        if not isinstance(meta, dict):
            raise self.error("index.json", f"not a JSON object (a {type(meta).__name__})")
        if meta.get("format") != FORMAT:
            raise IndexFileError(str(path), None, f"not a {FORMAT} index (format {meta.get('format')!r})")
        if meta.get("version") not in (1, VERSION) or isinstance(meta.get("version"), bool):
            raise IndexFileError(str(path), None, f"version {meta.get('version')!r} of the index format, this "
                                 f"bitcode_allennlp reads versions 1 and {VERSION}: {self.rebuild}")
        try:
            check_num_bits(meta.get("num_bits"), "num_bits")
        except ValueError as error:
            raise self.error("index.json", str(error)) from None
        for key in ("size", "sentences"):
            value = meta.get(key)
            if (key == "size" or value is not None) and (
                    not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise self.error("index.json", f"{key} must be a count (an integer >= 0), got {value!r}")
        views = meta.get("label_views", {})
        if not isinstance(views, dict) or not all(
                isinstance(view, str) and VIEW_NAME.fullmatch(view) and isinstance(names, list)
                and all(isinstance(name, str) for name in names) for view, names in views.items()):
            raise self.error("index.json", "label_views must map view names (letters, digits, _ and -) to lists of "
                                           f"label strings, got {_shorten(views)}")
        meta["label_views"] = views
        search = meta.get("search")
        if search is not None:
            if not isinstance(search, dict) or search.get("type") not in INDEX_TYPES:
                raise self.error("index.json", f"search must be an object whose type is one of "
                                               f"{', '.join(INDEX_TYPES)}, got {_shorten(search)}")
            file = search.get("file", FAISS_FILE)
            if not isinstance(file, str) or not file or Path(file).name != file or file.startswith("."):
                raise self.error("index.json", f"search.file must be a file name in the index folder, got {file!r}")
            params = search.get("params") or {}
            if not isinstance(params, dict) or not all(
                    isinstance(value, int) and not isinstance(value, bool) and value >= 1 for value in params.values()):
                raise self.error("index.json", f"search.params must map names to positive integers, got "
                                               f"{_shorten(params)}")
        return meta

    # ------------------------------------------------------------------------------------------------ .npy files
    def array(self, name: str, dtype: Any, size: int) -> np.ndarray:
        """
        The 1-D array of `size` values of `dtype` in the .npy file `name`, memory-mapped read-only when the reader
        was made with `mmap`. Its header is checked before numpy loads it (never with pickles).
        """
        path = self.existing(name)
        expected = np.dtype(dtype)
        on_disk = path.stat().st_size
        with open(path, "rb") as file:
            head = file.read(len(NPY_MAGIC))
            if not head:
                raise self.error(name, "empty (0 bytes), not an .npy file")
            if head != NPY_MAGIC[: len(head)]:
                raise self.error(name, "not an .npy file (it does not start with numpy's magic string)")
            file.seek(0)
            try:
                version = np.lib.format.read_magic(file)
                if version == (1, 0):
                    shape, _, found = np.lib.format.read_array_header_1_0(file)
                elif version == (2, 0):
                    shape, _, found = np.lib.format.read_array_header_2_0(file)
                else:
                    found = None
                offset = file.tell()
            except (ValueError, EOFError, SyntaxError, TypeError):
                raise self.error(name, "an .npy file cut short or damaged in its header") from None
        if found is None:
            raise self.error(name, f"an .npy file of format version {version[0]}.{version[1]}, not 1.0 or 2.0 (numpy "
                                   "writes arrays of numbers in those)")
        if found.hasobject:
            raise self.error(name, f"holds Python objects (dtype {found}), not {expected.name} numbers: it was not "
                                   "written by 'allennlp bits index'")
        if found != expected:
            raise self.error(name, f"dtype {found.name if found.isnative else found.str}, expected {expected.name}")
        if len(shape) != 1:
            raise self.error(name, f"shape {tuple(shape)}, expected ({size},): one value per indexed word")
        if shape[0] != size:
            raise self.error(name, f"{shape[0]} values, but index.json says {size} words (size)")
        need = size * expected.itemsize
        if on_disk - offset < need:
            raise self.error(name, f"truncated: {on_disk - offset} bytes of data, its header says {size} values of "
                                   f"{expected.itemsize} bytes ({need} bytes)")
        if on_disk - offset > need:
            raise self.error(name, f"{on_disk - offset - need} bytes after its {size} values (damaged, or not "
                                   "written by 'allennlp bits index')")
        if size == 0:
            return np.zeros(0, dtype=expected)
        try:
            return np.load(path, mmap_mode=self.mode, allow_pickle=False)
        except (OSError, ValueError) as error:
            reason = "" if "pickle" in str(error) else f" ({error})"
            raise self.error(name, f"cannot be read as an array{reason}") from None

    # ------------------------------------------------------------------------------------------------ sentences
    def sentences(self, expected: Optional[int], size: int, name: str = "sentences.jsonl") -> List[Dict[str, Any]]:
        """sentences.jsonl: `{"words", "source", "line"}` per line, `expected` lines (when index.json says how many)
        holding `size` words in all."""
        path = self.existing(name)
        sentences: List[Dict[str, Any]] = []
        words = 0
        with open(path, "rb") as file:
            for number, raw in enumerate(file, start=1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise self.error(name, f"invalid UTF-8 (byte {error.start + 1} of the line)", number) from None
                try:
                    record = json.loads(text)
                except json.JSONDecodeError as error:
                    raise self.error(name, f"not JSON ({error.msg} at column {error.colno})", number) from None
                if not isinstance(record, dict) or not isinstance(record.get("words"), list) or not all(
                        isinstance(word, str) for word in record["words"]):
                    raise self.error(name, 'expected a JSON object whose "words" is a list of strings', number)
                sentences.append(record)
                words += len(record["words"])
        if expected is not None and len(sentences) != expected:
            raise self.error(name, f"{len(sentences)} sentences, but index.json says {expected}")
        if words != size:
            raise self.error(name, f"{words} words in its sentences, but index.json says {size} (size)")
        return sentences


def _shorten(value: Any, width: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


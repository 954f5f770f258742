"""Hamming-space search over the words of a codes corpus (`allennlp bits index | search | precision`).

Where this sits: the top of the Hamming index, over `hamming` (the numpy scan), `faiss_index` (FAISS binary
indexes), `index_files` (the folder on disk and its checked reader) and `precision` (the scoring of precision@k).

**Index.** One entry per word of a codes corpus, in corpus order: its code packed into a uint64 (bit i = head i,
head 0 the most significant bit; K <= 63 as everywhere), its sentence id, its position in the sentence and one
label id per label view (`corpus.label_views`). `HammingIndex.save` writes it to a folder and `HammingIndex.load`
opens one (layout and checks in `index_files`); its search index is a FAISS binary index of one of the types in
`faiss_index`, or none (index type numpy: the numpy scan of `hamming`).

**Ranking and ties.** `search(q, k)` returns the k entries with the smallest (distance, entry index) pairs: entries
at the same distance come in corpus order, so among the entries tied at the k-th distance the ones earlier in the
indexed corpus are taken. `radius(q, r)` returns every entry at distance <= r in the same order. Every index type
follows this order, so the exact ones (numpy, flat, multihash) give the same arrays. FAISS returns the entries
tied at the k-th distance in any order and may cut such a group at k, so on flat and multihash a k-NN query is
answered with radius searches (`HammingIndex.candidate_sets`): r is guessed from a strided sample of about
`SAMPLE` codes (`radius_guess`: the smallest r estimated to hold 2k entries; the k-th distance when the index has
at most `SAMPLE` codes), every entry within r is fetched (`range_search`), r is raised by one for the queries that
got fewer than k, and the entries are sorted by (distance, entry index) and cut at k.
The approximate types sort FAISS's k neighbours the same way (retrying with twice the nprobe or efSearch for a
query that got fewer than k).

**precision@k** (`precision_at_k`): DHIM's retrieval protocol adapted to words (definition and ties in `precision`).
"""
import json
import os
from math import comb
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from bitcode_allennlp.bits.corpus import CodesCorpus, LabelColumn, read_codes_corpus
from bitcode_allennlp.bits.faiss_index import (
    DEFAULT_THREADS, FAISS_CLASSES, FaissBinaryIndex, check_threads, code_bytes, pack_codes,
)
from bitcode_allennlp.bits.hamming import candidates, hamming_distances
from bitcode_allennlp.bits.index_files import FAISS_FILE, FORMAT, INDEX_FILES, INDEX_TYPES, VERSION, IndexFiles
from bitcode_allennlp.bits.precision import neighbour_label_counts, view_precision
from bitcode_allennlp.common.code_format import check_code, check_codes, check_num_bits
from bitcode_allennlp.common.code_value import Codes, HexCodeError
from bitcode_allennlp.host.outputs import staged_files

BLOCK_BYTES = 1 << 24
"""Size of the uint8 distance matrix of one block of queries (16 MiB)."""
SAMPLE = 4096
"""Codes in the strided sample that guesses the radius of a k-NN query on a FAISS index (`radius_guess`)."""
GUESS_MARGIN = 2
"""The first radius of a k-NN query is estimated to hold 2k entries: one range search usually suffices."""
QUERY_BLOCK = 256
"""Queries per FAISS call."""


class HammingIndex:
    """
    Hamming-space index over the words of a codes corpus (ranking and ties in the module docstring, file layout in
    `index_files`).

    # Parameters

    codes : `np.ndarray`
        `(n,)` codes below 2 ** K (checked by `code_format.check_codes`; a uint64 array, a memory map too, is kept as
        it is, another integer array converted).
    num_bits : `int`
        K, at most 63.
    sentence_ids : `np.ndarray`
        `(n,)` sentence of each entry.
    positions : `np.ndarray`
        `(n,)` position of each entry in its sentence.
    sentences : `List[Dict[str, Any]]`, optional (default = `None`)
        `{"words", "source", "line"}` per sentence; `None` for a loaded index, whose sentences.jsonl is read when
        first needed (`load`).
    labels : `Dict[str, LabelColumn]`, optional (default = `None`)
        One label column per view.
    corpus : `str`, optional (default = `None`)
        The indexed codes corpus (for the record).
    search_index : `FaissBinaryIndex`, optional (default = `None`)
        The FAISS index of the codes that `search`, `radius` and `precision_at_k` query; `None` scans the codes
        with numpy (index type numpy). `build_search_index` makes one.
    """

    def __init__(
        self,
        codes: np.ndarray,
        num_bits: int,
        sentence_ids: np.ndarray,
        positions: np.ndarray,
        sentences: Optional[List[Dict[str, Any]]] = None,
        labels: Optional[Dict[str, LabelColumn]] = None,
        corpus: Optional[str] = None,
        search_index: Optional[FaissBinaryIndex] = None,
    ) -> None:
        self.num_bits = check_num_bits(num_bits)
        codes = check_codes(codes, self.num_bits, "codes")  # (n,) a uint64 array as it is (one max), else converted
        if codes.ndim != 1:
            raise ValueError(f"codes must be a 1-D array, got shape {tuple(codes.shape)}")
        n = codes.shape[0]
        if sentence_ids.shape != (n,) or positions.shape != (n,):
            raise ValueError("codes, sentence_ids and positions must have the same length")
        self.codes = codes
        self.sentence_ids = sentence_ids
        self.positions = positions
        self.labels = labels or {}
        for view, column in self.labels.items():
            if column.ids.shape != (n,):
                raise ValueError(f"labels {view!r} have {column.ids.shape[0]} entries, not {n}")
        self.corpus = corpus
        self._sentences = sentences
        self._sentences_path: Optional[str] = None  # sentences.jsonl, for a loaded index
        self._offsets: Optional[np.ndarray] = None
        self._sample: Optional[np.ndarray] = None
        self._files: Optional[IndexFiles] = None  # the folder's reader, for a loaded index
        self._sentence_count: Optional[int] = None  # index.json's sentences, for a loaded index
        if search_index is not None and (len(search_index) != n or search_index.num_bits != self.num_bits):
            raise ValueError(f"the {search_index.index_type} index has {len(search_index)} codes of K = "
                             f"{search_index.num_bits}, the index {n} codes of K = {self.num_bits}")
        self.search_index = search_index
        self.version = VERSION
        """index.json's version of a loaded index (1: written before FAISS indexes)."""

    @property
    def index_type(self) -> str:
        """`"numpy"` or the type of the FAISS index (`INDEX_TYPES`)."""
        return "numpy" if self.search_index is None else self.search_index.index_type

    @property
    def exact(self) -> bool:
        """Whether search returns the exact (distance, entry index) ranking (index types numpy, flat, multihash)."""
        return self.search_index is None or self.search_index.exact

    def build_search_index(self, index_type: str = "flat", threads: int = DEFAULT_THREADS,
                           **params: Optional[int]) -> "HammingIndex":
        """Builds the FAISS index of type `index_type` over the codes (`numpy`: none, search scans the codes) that
        builds and searches on `threads` FAISS threads; parameters in `FaissBinaryIndex.build`. Returns the index
        itself."""
        if index_type not in INDEX_TYPES:
            raise ValueError(f"index type must be one of {', '.join(INDEX_TYPES)}, got {index_type!r}")
        check_threads(threads)
        if index_type == "numpy":
            given = [name for name, value in params.items() if value is not None]
            if given:
                raise ValueError(f"{given[0]} applies to a FAISS index type, not numpy")
            self.search_index = None
        else:
            self.search_index = FaissBinaryIndex.build(self.codes, self.num_bits, index_type, threads, **params)
        return self

    # ------------------------------------------------------------------------------------------- building
    @classmethod
    def from_corpus(cls, corpus: CodesCorpus, index_type: str = "flat", **params: Optional[int]) -> "HammingIndex":
        """Indexes a codes corpus read into memory, with a FAISS index of type `index_type` (`build_search_index`)."""
        index = cls(corpus.codes, corpus.num_bits, corpus.sentence_ids, corpus.positions, corpus.sentences,
                    corpus.labels, corpus.path)
        return index.build_search_index(index_type, **params)

    @classmethod
    def from_file(cls, path: str, index_type: str = "flat", **params: Optional[int]) -> "HammingIndex":
        """Indexes a codes corpus (`allennlp hash-corpus` output), with a FAISS index of type `index_type`."""
        return cls.from_corpus(read_codes_corpus(path), index_type, **params)

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    @property
    def sentences(self) -> List[Dict[str, Any]]:
        if self._sentences is None:
            path = Path(self._sentences_path)  # type: ignore[arg-type]
            files = self._files or IndexFiles(str(path.parent))
            self._sentences = files.sentences(self._sentence_count, len(self), path.name)
        return self._sentences

    # ---------------------------------------------------------------------------------------------- disk
    def save(self, directory: str) -> None:
        """
        Writes the index to `directory` (files listed in `index_files`), built whole in a sibling folder that
        takes its place once every file is written (`outputs.staged_files`): a failed or killed save leaves the old
        index whole and no temporary file, a `directory` holding other files is refused, and an index loaded from
        `directory` (memory maps, the sentences read on first use) can be saved back onto it.
        """
        with staged_files(directory, INDEX_FILES) as staged:
            self._save(staged)

    def _save(self, staged: Any) -> None:
        def array(name: str, values: np.ndarray) -> None:
            with open(staged.path(name), "wb") as file:
                np.save(file, values)

        array("codes.npy", np.ascontiguousarray(self.codes, dtype=np.uint64))
        array("sentence_ids.npy", np.asarray(self.sentence_ids, dtype=np.int32))
        array("positions.npy", np.asarray(self.positions, dtype=np.int32))
        for view, column in self.labels.items():
            array(f"labels.{view}.npy", np.asarray(column.ids, dtype=np.int32))
        lines = "".join(json.dumps({"words": sentence["words"], "source": sentence.get("source"),
                                    "line": sentence.get("line")}, ensure_ascii=False) + "\n"
                        for sentence in self.sentences)
        Path(staged.path("sentences.jsonl")).write_text(lines, encoding="utf-8")
        search: Dict[str, Any] = {"type": self.index_type, "exact": self.exact}
        if self.search_index is not None:
            self.search_index.write(staged.path(FAISS_FILE))
            search.update(file=FAISS_FILE, faiss_class=FAISS_CLASSES[self.index_type],
                          bits=8 * code_bytes(self.num_bits), params=self.search_index.params)
        meta = {"format": FORMAT, "version": VERSION, "num_bits": self.num_bits, "size": len(self),
                "sentences": len(self.sentences), "corpus": self.corpus,
                "label_views": {view: column.names for view, column in self.labels.items()}, "search": search}
        Path(staged.path("index.json")).write_text(json.dumps(meta, indent=1, ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, directory: str, mmap: bool = True, numpy_scan: bool = False,
             threads: int = DEFAULT_THREADS) -> "HammingIndex":
        """
        Opens a saved index; with `mmap` the arrays (and a flat FAISS index) are memory-mapped read-only instead
        of read. With `numpy_scan`, or for a version-1 directory, the FAISS index is not read and search scans the
        codes with numpy; else the FAISS index searches on `threads` threads (0: every core).

        Every file is read through `IndexFiles`, which checks it: a missing, truncated or damaged file, one of
        another dtype or length, codes wider than K or a FAISS index of another size raise `IndexFileError` (a
        `DataFormatError` naming the file; `MissingIndexFileError` for a missing one).
        """
        check_threads(threads)
        files = IndexFiles(directory, mmap)
        meta = files.meta()
        num_bits, size = meta["num_bits"], meta["size"]
        codes = files.array("codes.npy", np.uint64, size)
        sentence_ids = files.array("sentence_ids.npy", np.int32, size)
        positions = files.array("positions.npy", np.int32, size)
        labels = {view: LabelColumn(files.array(f"labels.{view}.npy", np.int32, size), list(names))
                  for view, names in meta["label_views"].items()}
        sentences_path = files.existing("sentences.jsonl")
        try:
            index = cls(codes, num_bits, sentence_ids, positions, labels=labels, corpus=meta.get("corpus"))
        except (ValueError, TypeError) as error:  # lengths and dtypes are checked above: codes wider than K
            raise files.error("codes.npy", str(error)) from None
        index._files, index._sentence_count = files, meta.get("sentences")
        index._sentences_path = str(sentences_path)
        index.version = meta["version"]
        search = meta.get("search") or {"type": "numpy"}
        if search["type"] != "numpy" and not numpy_scan:
            index.search_index = FaissBinaryIndex.read(
                str(files.root / search.get("file", FAISS_FILE)), search["type"], index.num_bits, len(index),
                search.get("params"), mmap=mmap, threads=threads)
        return index

    # -------------------------------------------------------------------------------------------- search
    def parse_code(self, code: str) -> int:
        """A hex code of this index's K (`ceil(K / 4)` digits, `Codes.from_hex`: strict) to its integer."""
        try:
            return Codes.from_hex([code], self.num_bits).ints[0]
        except HexCodeError as error:
            raise ValueError(error.reason) from None

    def distance_blocks(self, queries: np.ndarray) -> Iterator[Tuple[int, np.ndarray]]:
        """`(start, distances)` for consecutive blocks of `queries` (q,); `distances` (block, n) uint8."""
        queries = check_codes(queries, self.num_bits, "queries").reshape(-1)  # (q,)
        block = max(1, BLOCK_BYTES // max(1, len(self)))
        for start in range(0, queries.shape[0], block):
            yield start, hamming_distances(queries[start : start + block], self.codes)

    def radius_guess(self, queries: np.ndarray, k: int) -> np.ndarray:
        """
        Per query of `queries` `(q,)` uint64, the radius of its first range search on a FAISS index: the smallest r
        whose estimated count of entries within r reaches `GUESS_MARGIN` k (at most n). The estimate comes from a
        strided sample of about `SAMPLE` codes: n / s times the s sampled codes within r; below the distance m of
        the nearest sampled code, where the sample sees none, the count at m scaled by the number of K-bit codes
        within r over those within m (codes spread evenly). When the sample is the whole index (n <= `SAMPLE`),
        the count is exact and the radius is the k-th distance.

        # Returns

        `np.ndarray` int64 of shape `(q,)`.
        """
        queries = check_codes(queries, self.num_bits, "queries").reshape(-1)  # (q,)
        n, num_bits = len(self), self.num_bits
        stride = max(1, n // SAMPLE)
        if self._sample is None:
            self._sample = np.ascontiguousarray(self.codes[::stride])  # (s,)
        s = self._sample.shape[0]
        distances = hamming_distances(queries, self._sample).astype(np.int64)  # (q, s)
        rows = np.arange(queries.shape[0])[:, None] * (num_bits + 1)  # (q, 1)
        within = np.bincount((rows + distances).reshape(-1), minlength=queries.shape[0] * (num_bits + 1))
        within = within.reshape(-1, num_bits + 1).cumsum(axis=1)  # (q, K + 1) sampled codes within r
        volume = np.cumsum([comb(num_bits, i) for i in range(num_bits + 1)]).astype(np.float64)  # (K + 1,)
        nearest = distances.min(axis=1)  # (q,) m
        below = within[np.arange(queries.shape[0]), nearest][:, None] * volume[None, :] / volume[nearest][:, None]
        estimate = np.where(within > 0, within, below) * (n / s)  # (q, K + 1)
        target = min(k, n) if stride == 1 else min(n, GUESS_MARGIN * k)
        return np.argmax(estimate >= target - 1e-9, axis=1).astype(np.int64)  # (q,) first radius reaching it

    def candidate_sets(self, queries: np.ndarray, k: int) -> Iterator[Tuple[int, np.ndarray, np.ndarray]]:
        """
        The entries from which the k nearest of each query are taken (module docstring, *Ranking and ties*).

        # Parameters

        queries : `np.ndarray`
            `(q,)` uint64 codes.
        k : `int`
            Neighbours per query (at most the index size counts).

        # Returns

        `(row, entries, distances)` per query, rows in any order: `entries` `(m,)` int64 and their `distances`
        `(m,)` uint8, in any order. Index types numpy, flat and multihash: every entry at a distance <= the k-th
        smallest distance of the query, and maybe more (m >= k); hnsw and ivf: FAISS's k neighbours.
        """
        queries = check_codes(queries, self.num_bits, "queries").reshape(-1)  # (q,)
        k = min(k, len(self))
        if k == 0:  # an empty index
            return
        if self.search_index is None:
            for start, block in self.distance_blocks(queries):
                for row_index, row in enumerate(block):
                    found = candidates(row, k, self.num_bits)  # (m,)
                    yield start + row_index, found, row[found]
            return
        for start in range(0, queries.shape[0], QUERY_BLOCK):
            block = queries[start : start + QUERY_BLOCK]  # (b,)
            if not self.search_index.exact:
                found = self.search_index.nearest(pack_codes(block, self.num_bits), k)
                for row, (entries, distances) in enumerate(found):
                    yield start + row, entries, distances
                continue
            guess = self.radius_guess(block, k)  # (b,)
            pending = np.arange(block.shape[0])  # (p,)
            while pending.shape[0]:
                short = []
                for radius in np.unique(guess[pending]).tolist():
                    rows = pending[guess[pending] == radius]  # (r,)
                    found = self.search_index.within(pack_codes(block[rows], self.num_bits), radius)
                    for row, (entries, distances) in zip(rows.tolist(), found):
                        if entries.shape[0] >= k or radius >= self.num_bits:
                            yield start + row, entries, distances
                        else:
                            short.append(row)
                pending = np.array(short, dtype=np.int64)
                guess[pending] += 1

    def search(self, queries: Any, k: int) -> Tuple[np.ndarray, np.ndarray]:
        """
        The k nearest entries of each query by (Hamming distance, entry index), from the index's FAISS index
        (approximate for hnsw and ivf) or the numpy scan.

        # Parameters

        queries : `int` or array-like of ints
            Packed codes, shape `(q,)` (a scalar counts as one query), checked by `code_format.check_codes`
            (integers in `[0, 2 ** K)`; no floats or bools).
        k : `int`
            Neighbours per query; at most the index size is returned.

        # Returns

        `(indices, distances)`: `np.ndarray` int64 and uint8, both `(q, min(k, n))`.
        """
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        queries = check_codes(queries, self.num_bits, "queries").reshape(-1)  # (q,)
        unique, inverse = np.unique(queries, return_inverse=True)  # (u,), (q,)
        k = min(k, len(self))
        indices = np.empty((unique.shape[0], k), dtype=np.int64)  # (u, k)
        distances = np.empty((unique.shape[0], k), dtype=np.uint8)  # (u, k)
        for row, entries, found in self.candidate_sets(unique, k):
            order = np.lexsort((entries, found))[:k]  # (k,) by distance, then entry index
            indices[row] = entries[order]
            distances[row] = found[order]
        return indices[inverse.reshape(-1)], distances[inverse.reshape(-1)]

    def radius(self, query: int, radius: int) -> Tuple[np.ndarray, np.ndarray]:
        """Every entry within Hamming distance `radius` of `query`, by (distance, entry index): `(m,)` int64 indices
        and `(m,)` uint8 distances (on an ivf index, those in the nprobe cells nearest to the query)."""
        if isinstance(radius, bool) or not isinstance(radius, (int, np.integer)) or radius < 0:
            raise ValueError(f"radius must be >= 0 (an integer), got {radius!r}")
        query = check_code(query, self.num_bits, "query")
        if self.search_index is None:
            row = hamming_distances(np.array([query], dtype=np.uint64), self.codes)[0]  # (n,)
            found = np.flatnonzero(row <= radius)  # (m,)
            distances = row[found]  # (m,)
        else:
            packed = pack_codes(np.array([query], dtype=np.uint64), self.num_bits)  # (1, d / 8)
            found, distances = self.search_index.within(packed, radius)[0]  # (m,), (m,)
        order = np.lexsort((found, distances))  # (m,)
        return found[order], distances[order]

    # ------------------------------------------------------------------------------------------- entries
    def entry_index(self, sentence_id: int, position: int) -> int:
        if self._offsets is None:
            lengths = np.array([len(sentence["words"]) for sentence in self.sentences], dtype=np.int64)
            self._offsets = np.cumsum(lengths) - lengths  # (sentences,)
        return int(self._offsets[sentence_id]) + position

    def entries_of_word(self, word: str) -> np.ndarray:
        """Entry indices of every occurrence of `word` (exact string), in corpus order."""
        found = [self.entry_index(s, p) for s, sentence in enumerate(self.sentences)
                 for p, w in enumerate(sentence["words"]) if w == word]
        return np.array(found, dtype=np.int64)  # (occurrences,)

    def word_code(self, word: str) -> Tuple[int, int, int, int]:
        """
        The code to query for a word: its most frequent code in the index (ties: the smallest code).

        # Returns

        `(code, occurrences of the word, its distinct codes, occurrences with that code)`.
        """
        entries = self.entries_of_word(word)
        if entries.shape[0] == 0:
            raise KeyError(f"{word!r} does not occur in the index")
        codes, counts = np.unique(np.asarray(self.codes[entries]), return_counts=True)  # (c,), (c,)
        best = int(np.argmax(counts))  # first maximum: the smallest code among the most frequent
        return int(codes[best]), int(entries.shape[0]), int(codes.shape[0]), int(counts[best])

    def hit(self, index: int, distance: Optional[int] = None) -> Dict[str, Any]:
        """One entry as a dict: `index`, `distance`, `code` (hex), `word`, `labels` (per view), `sentence_id`,
        `position`, `sentence` (its words), `source`."""
        sentence_id, position = int(self.sentence_ids[index]), int(self.positions[index])
        if not 0 <= sentence_id < len(self.sentences):
            self._corrupt("sentence_ids.npy", f"sentence_ids must be sentence numbers in [0, {len(self.sentences)}), "
                                              f"got {sentence_id} (entry {index})")
        sentence = self.sentences[sentence_id]
        if not 0 <= position < len(sentence["words"]):
            words = len(sentence["words"])
            self._corrupt("positions.npy", f"positions must be word positions in their sentence, got {position} "
                                           f"(entry {index}; sentence {sentence_id} has {words} words)")
        labels = {}
        for view, column in self.labels.items():
            label = int(column.ids[index])
            if not 0 <= label < len(column.names):
                self._corrupt(f"labels.{view}.npy", f"labels.{view} must be label ids in [0, {len(column.names)}), "
                                                    f"got {label} (entry {index})")
            labels[view] = column.names[label]
        return {"index": int(index), "distance": None if distance is None else int(distance),
                "code": Codes(self.codes[index], self.num_bits).hex[0],
                "word": sentence["words"][position],
                "labels": labels,
                "sentence_id": sentence_id, "position": position, "sentence": sentence["words"],
                "source": sentence.get("source")}

    def hits(self, indices: Sequence[int], distances: Sequence[int]) -> List[Dict[str, Any]]:
        return [self.hit(i, d) for i, d in zip(np.asarray(indices).tolist(), np.asarray(distances).tolist())]

    def label_ids(self, view: str) -> np.ndarray:
        """The label ids of `view` as int64 `(n,)`, checked to lie in `[0, len(names))` (one min and max)."""
        column = self.labels[view]
        ids = np.asarray(column.ids, dtype=np.int64)  # (n,)
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= len(column.names)):
            entry = int(np.flatnonzero((ids < 0) | (ids >= len(column.names)))[0])
            self._corrupt(f"labels.{view}.npy", f"labels.{view} must be label ids in [0, {len(column.names)}), got "
                                                f"{int(ids[entry])} (entry {entry})")
        return ids

    def _corrupt(self, name: str, message: str) -> None:
        """Raises `IndexFileError` naming the file `name` for a loaded index, else `ValueError` (`message`)."""
        if self._files is not None:
            raise self._files.error(name, message)
        raise ValueError(message)



def precision_at_k(
    index: HammingIndex,
    queries: CodesCorpus,
    k: int = 100,
    views: Optional[Sequence[str]] = None,
    ties: str = "index",
) -> Dict[str, Any]:
    """
    precision@k of the query words against the index (protocol and ties in `precision`).

    # Parameters

    index : `HammingIndex`
        The database (train words).
    queries : `CodesCorpus`
        The query words (dev), with gold labels, of the same K.
    k : `int`, optional (default = `100`)
        Neighbours per query (at most the index size).
    views : `Sequence[str]`, optional (default = every label view both have)
    ties : `str`, optional (default = `"index"`)
        `"index"` or `"average"` (`"average"` needs an exact index type: numpy, flat or multihash).

    # Returns

    `{"k", "ties", "queries", "distinct_query_codes", "database", "precision": {view: p}, "chance": {view: c},
    "macro": {view: m}, "macro_chance": {view: c}, "per_label": {view: {label: [precision, queries]}}}`.
    `precision` is the mean over the query words (DHIM); `macro` the mean over the query labels of the mean over
    their words (so that `O` does not dominate NER); `chance` and `macro_chance` are the same for k neighbours drawn
    at random from the database: sum_l P_queries(l) P_database(l), and mean_l P_database(l).
    """
    views = _precision_views(index, queries, views, ties)
    k = min(k, len(index))
    unique, inverse = np.unique(queries.codes, return_inverse=True)  # (u,), (q,)
    inverse = inverse.reshape(-1)
    database_labels = {view: index.label_ids(view) for view in views}  # (n,) each, checked
    sizes = {view: len(index.labels[view].names) for view in views}
    neighbours = neighbour_label_counts(index.candidate_sets(unique, k), unique.shape[0], k, ties, database_labels,
                                        sizes)  # (u, L) each
    result: Dict[str, Any] = {"k": k, "ties": ties, "index_type": index.index_type, "queries": len(queries),
                              "distinct_query_codes": int(unique.shape[0]), "database": len(index),
                              "database_corpus": index.corpus, "query_corpus": queries.path,
                              "precision": {}, "chance": {}, "macro": {}, "macro_chance": {}, "per_label": {}}
    for view in views:
        database = LabelColumn(database_labels[view], index.labels[view].names)
        scores = view_precision(neighbours[view], inverse, k, queries.labels[view], database, len(index), len(queries))
        for key, value in scores.items():
            result[key][view] = value
    return result


def _precision_views(index: HammingIndex, queries: CodesCorpus, views: Optional[Sequence[str]],
                     ties: str) -> List[str]:
    """The label views `precision_at_k` scores, after checking its arguments (`ValueError`)."""
    if ties not in ("index", "average"):
        raise ValueError(f"ties must be 'index' or 'average', got {ties!r}")
    if ties == "average" and not index.exact:
        raise ValueError(f"ties 'average' needs every entry tied at the k-th distance, which an approximate "
                         f"({index.index_type}) index does not give: use ties 'index', or index type flat or multihash")
    if queries.num_bits != index.num_bits:
        raise ValueError(f"queries have {queries.num_bits}-bit codes, the index {index.num_bits}-bit codes")
    shared = [view for view in index.labels if view in queries.labels]
    views = list(views) if views else shared
    for view in views:
        if view not in shared:
            raise ValueError(f"label view {view!r} is not in both the index ({', '.join(index.labels)}) and the "
                             f"queries ({', '.join(queries.labels)})")
    if not views:
        raise ValueError("the index and the queries share no label view (do both have gold tags or trees?)")
    return views


def format_hits(hits: List[Dict[str, Any]], context: int = 6) -> str:
    """Search hits as a markdown table: rank, distance, code, word, labels, the sentence around the word, source."""
    views = list(hits[0]["labels"]) if hits else []
    lines = ["| rank | distance | code | word |" + "".join(f" {view} |" for view in views) + " context | source |",
             "|---:|---:|---|---|" + "---|" * len(views) + "---|---|"]
    for rank, hit in enumerate(hits, start=1):
        words, position = hit["sentence"], hit["position"]
        left = max(0, position - context)
        shown = words[left:position] + [f"[{words[position]}]"] + words[position + 1 : position + 1 + context]
        text = ("… " if left > 0 else "") + " ".join(shown) + (" …" if position + 1 + context < len(words) else "")
        lines.append(f"| {rank} | {hit['distance']} | {hit['code']} | {hit['word']} |"
                     + "".join(f" {hit['labels'][view]} |" for view in views)
                     + f" {text.replace('|', '&#124;')} | {hit['source']} |")
    return "\n".join(lines)


def index_corpus(codes_path: str, out_dir: str, index_type: str = "flat", **params: Optional[int]) -> HammingIndex:
    """`allennlp bits index`: indexes a codes corpus with a FAISS index of type `index_type` (`threads` and the
    parameters of `FaissBinaryIndex.build`) and saves it to `out_dir`."""
    index = HammingIndex.from_file(codes_path, index_type, **params)
    index.save(out_dir)
    return index


def index_size_bytes(directory: str) -> int:
    return sum(os.path.getsize(os.path.join(directory, name)) for name in os.listdir(directory))

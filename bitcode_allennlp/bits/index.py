"""Hamming-space search over the words of a codes corpus (`allennlp bits index | search | precision`).

**Index.** One entry per word of a codes corpus, in corpus order: its code packed into a uint64 (bit i = head i,
head 0 the most significant bit; K <= 63 as everywhere), its sentence id, its position in the sentence and one
label id per label view (`corpus.label_views`). On disk (`HammingIndex.save`), a directory with

    index.json         format, version, num_bits, size, sentences, corpus path, label names per view
    codes.npy          (n,) uint64
    sentence_ids.npy   (n,) int32       0-based sentence (non-empty line of the corpus)
    positions.npy      (n,) int32       0-based word position in the sentence
    labels.<view>.npy  (n,) int32       ids into index.json's names, one file per view
    sentences.jsonl    one line per sentence: {"words", "source", "line"}

`HammingIndex.load` memory-maps the `.npy` files (`mmap=True`), so opening an index reads only `index.json`; the
sentences are read on the first lookup of a word.

**Distances.** d(q, x) = popcount(q XOR x), vectorized in numpy: `np.bitwise_count` where numpy has it (2.0+),
otherwise the SWAR bit count (`popcount_swar`). The database is scanned in chunks of `CHUNK` codes for a block
of queries at a time, so each chunk is read from memory once per block and the (queries, n) distance matrix is
uint8.

**Ranking and ties.** `search(q, k)` returns the k entries with the smallest (distance, entry index) pairs: entries
at the same distance come in corpus order, so among the entries tied at the k-th distance the ones earlier in the
indexed corpus are taken. The result depends only on the code and the corpus, never on timing or on numpy's
selection algorithm. `radius(q, r)` returns every entry at distance <= r in the same order.

**precision@k** (the retrieval protocol of DHIM, "Refining BERT Embeddings for Document Hashing via Mutual
Information Maximization", after Chaidaroon and Fang 2017: for each query, the share of its top-100 Hamming
neighbours that share its label, averaged over the queries), adapted to words: queries are the words of one codes
corpus (dev), the database the words of another (train), the label one view (entity `type`, POS `tag`, ...).
`ties="index"` scores exactly the list `search` returns; `ties="average"` scores the expectation over a uniformly
random order of the entries tied at the k-th distance (entries closer than that count fully, the m tied slots are
shared by the tied entries in proportion), which does not depend on the corpus order. Queries with the same code
have the same neighbours, so each distinct query code is searched once.
"""
import json
import os
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from bitcode_allennlp.bits.corpus import (
    CodesCorpus, LabelColumn, check_num_bits, hex_to_uint64, read_codes_corpus, uint64_to_hex,
)

FORMAT = "bitcode_allennlp.bits.HammingIndex"
VERSION = 1
CHUNK = 1 << 15
"""Database codes per chunk of the scan (256 KiB of uint64: one chunk stays in cache while a block of queries
reads it)."""
BLOCK_BYTES = 1 << 24
"""Size of the uint8 distance matrix of one block of queries (16 MiB)."""
HAS_BITWISE_COUNT = hasattr(np, "bitwise_count")
_M1, _M2, _M4, _H01 = (np.uint64(m) for m in (0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F,
                                             0x0101010101010101))
_1, _2, _4, _56 = (np.uint64(s) for s in (1, 2, 4, 56))


def popcount_swar(values: np.ndarray) -> np.ndarray:
    """
    Bits set in each uint64 without `np.bitwise_count` (numpy < 2.0): the SWAR bit count (sums of 2, 4, 8 bits in
    place, then one multiply adds the 8 byte counts into the top byte). On 32k codes on the development machine:
    7.8x the time of `np.bitwise_count`, and 6x faster than a numpy byte lookup table.
    """
    x = np.asarray(values, dtype=np.uint64)  # (...)
    x = x - ((x >> _1) & _M1)  # (...) 2-bit sums
    x = (x & _M2) + ((x >> _2) & _M2)  # (...) 4-bit sums
    x = (x + (x >> _4)) & _M4  # (...) 8-bit sums
    return ((x * _H01) >> _56).astype(np.uint8)  # (...)


def popcount(values: np.ndarray, out: Optional[np.ndarray] = None) -> np.ndarray:
    """Bits set in each uint64 as uint8 (`np.bitwise_count` when available, else `popcount_swar`)."""
    if HAS_BITWISE_COUNT:
        return np.bitwise_count(values, out=out)  # (...)
    counts = popcount_swar(values)  # (...)
    if out is None:
        return counts
    out[...] = counts
    return out


def hamming_distances(queries: np.ndarray, database: np.ndarray, chunk: Optional[int] = None) -> np.ndarray:
    """
    All Hamming distances between `queries` (q,) and `database` (n,), both uint64 codes, scanning `database` in
    chunks of `chunk` codes (default `CHUNK`).

    # Returns

    `np.ndarray` uint8 of shape `(q, n)`.
    """
    queries = np.asarray(queries, dtype=np.uint64).reshape(-1)  # (q,)
    n = database.shape[0]
    chunk = chunk or CHUNK
    distances = np.empty((queries.shape[0], n), dtype=np.uint8)  # (q, n)
    scratch = np.empty((queries.shape[0], min(chunk, n)), dtype=np.uint64)  # (q, chunk)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        width = stop - start
        np.bitwise_xor(queries[:, None], database[None, start:stop], out=scratch[:, :width])
        popcount(scratch[:, :width], out=distances[:, start:stop])
    return distances


def candidates(row: np.ndarray, k: int, num_bits: int) -> np.ndarray:
    """
    Entry indices, in index order, of at least `min(k, n)` entries that include every entry at distance <= the k-th
    smallest distance of `row` (n,) uint8.

    A distance threshold is guessed from a strided sample of about 4096 distances (the smallest level whose
    extrapolated count reaches k) and raised until enough entries pass it, so usually one pass over `row` suffices.
    """
    n = row.shape[0]
    k = min(k, n)
    stride = max(1, n // 4096)
    sample = row[::stride]  # (~4096,)
    expected = np.cumsum(np.bincount(sample, minlength=num_bits + 1)) * (n / sample.shape[0])  # (K + 1,)
    threshold = min(int(np.searchsorted(expected, k)), num_bits)
    while True:
        found = np.flatnonzero(row <= threshold)  # (m,)
        if found.shape[0] >= k or threshold >= num_bits:
            return found
        threshold += 1


class HammingIndex:
    """
    Hamming-space index over the words of a codes corpus (file layout, ranking and ties in the module docstring).

    # Parameters

    codes : `np.ndarray`
        `(n,)` uint64 codes (a memory map is fine).
    num_bits : `int`
        K, at most 64.
    sentence_ids : `np.ndarray`
        `(n,)` sentence of each entry.
    positions : `np.ndarray`
        `(n,)` position of each entry in its sentence.
    sentences : `List[Dict[str, Any]]`, optional (default = `None`)
        `{"words", "source", "line"}` per sentence; `None` reads them from `sentences_path` when first needed.
    labels : `Dict[str, LabelColumn]`, optional (default = `None`)
        One label column per view.
    corpus : `str`, optional (default = `None`)
        The indexed codes corpus (for the record).
    sentences_path : `str`, optional (default = `None`)
        `sentences.jsonl` of a saved index.
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
        sentences_path: Optional[str] = None,
    ) -> None:
        self.num_bits = check_num_bits(num_bits)
        if codes.dtype != np.uint64 or codes.ndim != 1:
            raise ValueError(f"codes must be a 1-D uint64 array, got {codes.dtype} of shape {codes.shape}")
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
        self._sentences_path = sentences_path
        self._offsets: Optional[np.ndarray] = None

    # ------------------------------------------------------------------------------------------- building
    @classmethod
    def from_corpus(cls, corpus: CodesCorpus) -> "HammingIndex":
        return cls(corpus.codes, corpus.num_bits, corpus.sentence_ids, corpus.positions, corpus.sentences,
                   corpus.labels, corpus.path)

    @classmethod
    def from_file(cls, path: str) -> "HammingIndex":
        """Indexes a codes corpus (`allennlp hash-corpus` output)."""
        return cls.from_corpus(read_codes_corpus(path))

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    @property
    def sentences(self) -> List[Dict[str, Any]]:
        if self._sentences is None:
            with open(self._sentences_path, encoding="utf-8") as file:  # type: ignore[arg-type]
                self._sentences = [json.loads(line) for line in file]
        return self._sentences

    # ---------------------------------------------------------------------------------------------- disk
    def save(self, directory: str) -> None:
        """Writes the index to `directory` (created if needed; files listed in the module docstring)."""
        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        np.save(root / "codes.npy", np.ascontiguousarray(self.codes, dtype=np.uint64))
        np.save(root / "sentence_ids.npy", np.asarray(self.sentence_ids, dtype=np.int32))
        np.save(root / "positions.npy", np.asarray(self.positions, dtype=np.int32))
        for view, column in self.labels.items():
            np.save(root / f"labels.{view}.npy", np.asarray(column.ids, dtype=np.int32))
        with open(root / "sentences.jsonl", "w", encoding="utf-8") as file:
            for sentence in self.sentences:
                file.write(json.dumps({"words": sentence["words"], "source": sentence.get("source"),
                                       "line": sentence.get("line")}, ensure_ascii=False) + "\n")
        meta = {"format": FORMAT, "version": VERSION, "num_bits": self.num_bits, "size": len(self),
                "sentences": len(self.sentences), "corpus": self.corpus,
                "label_views": {view: column.names for view, column in self.labels.items()}}
        (root / "index.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, directory: str, mmap: bool = True) -> "HammingIndex":
        """Opens a saved index; with `mmap` the arrays are memory-mapped read-only instead of read."""
        root = Path(directory)
        meta_path = root / "index.json"
        if not meta_path.is_file():
            raise FileNotFoundError(f"{directory} is not a Hamming index (no index.json): make one with "
                                    "'allennlp bits index CODES.jsonl --out DIR'")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise ValueError(f"{meta_path}: not a version-{VERSION} {FORMAT} index")
        mode = "r" if mmap else None

        def array(name: str) -> np.ndarray:
            return np.load(root / name, mmap_mode=mode)

        labels = {view: LabelColumn(array(f"labels.{view}.npy"), list(names))
                  for view, names in meta["label_views"].items()}
        index = cls(array("codes.npy"), meta["num_bits"], array("sentence_ids.npy"), array("positions.npy"),
                    labels=labels, corpus=meta.get("corpus"), sentences_path=str(root / "sentences.jsonl"))
        if len(index) != meta["size"]:
            raise ValueError(f"{root / 'codes.npy'} has {len(index)} codes but index.json says {meta['size']}")
        return index

    # -------------------------------------------------------------------------------------------- search
    def parse_code(self, code: str) -> int:
        """A hex code of this index's K (`ceil(K / 4)` digits, `bitcode_allennlp.codes.parse_hex_code`) to its
        integer."""
        return int(hex_to_uint64([code], self.num_bits)[0])

    def distance_blocks(self, queries: np.ndarray) -> Iterator[Tuple[int, np.ndarray]]:
        """`(start, distances)` for consecutive blocks of `queries` (q,); `distances` (block, n) uint8."""
        queries = np.asarray(queries, dtype=np.uint64).reshape(-1)  # (q,)
        block = max(1, BLOCK_BYTES // max(1, len(self)))
        for start in range(0, queries.shape[0], block):
            yield start, hamming_distances(queries[start : start + block], self.codes)

    def search(self, queries: Any, k: int) -> Tuple[np.ndarray, np.ndarray]:
        """
        The k nearest entries of each query by (Hamming distance, entry index).

        # Parameters

        queries : `int` or array-like of ints
            Packed codes, shape `(q,)` (a scalar counts as one query).
        k : `int`
            Neighbours per query; at most the index size is returned.

        # Returns

        `(indices, distances)`: `np.ndarray` int64 and uint8, both `(q, min(k, n))`.
        """
        if k < 1:
            raise ValueError(f"k must be positive, got {k}")
        queries = np.asarray(queries, dtype=np.uint64).reshape(-1)  # (q,)
        unique, inverse = np.unique(queries, return_inverse=True)  # (u,), (q,)
        k = min(k, len(self))
        indices = np.empty((unique.shape[0], k), dtype=np.int64)  # (u, k)
        distances = np.empty((unique.shape[0], k), dtype=np.uint8)  # (u, k)
        for start, block in self.distance_blocks(unique):
            for row_index, row in enumerate(block):
                found = candidates(row, k, self.num_bits)  # (m,)
                order = np.argsort(row[found], kind="stable")[:k]  # (k,)
                indices[start + row_index] = found[order]
                distances[start + row_index] = row[found[order]]
        return indices[inverse.reshape(-1)], distances[inverse.reshape(-1)]

    def radius(self, query: int, radius: int) -> Tuple[np.ndarray, np.ndarray]:
        """Every entry within Hamming distance `radius` of `query`, by (distance, entry index): `(m,)` int64 indices
        and `(m,)` uint8 distances."""
        row = hamming_distances(np.array([query], dtype=np.uint64), self.codes)[0]  # (n,)
        found = np.flatnonzero(row <= radius)  # (m,)
        order = np.argsort(row[found], kind="stable")  # (m,)
        return found[order], row[found[order]]

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
        sentence = self.sentences[sentence_id]
        return {"index": int(index), "distance": None if distance is None else int(distance),
                "code": uint64_to_hex([self.codes[index]], self.num_bits)[0],
                "word": sentence["words"][position],
                "labels": {view: column.names[int(column.ids[index])] for view, column in self.labels.items()},
                "sentence_id": sentence_id, "position": position, "sentence": sentence["words"],
                "source": sentence.get("source")}

    def hits(self, indices: Sequence[int], distances: Sequence[int]) -> List[Dict[str, Any]]:
        return [self.hit(i, d) for i, d in zip(np.asarray(indices).tolist(), np.asarray(distances).tolist())]


def precision_at_k(
    index: HammingIndex,
    queries: CodesCorpus,
    k: int = 100,
    views: Optional[Sequence[str]] = None,
    ties: str = "index",
) -> Dict[str, Any]:
    """
    precision@k of the query words against the index (protocol and ties in the module docstring).

    # Parameters

    index : `HammingIndex`
        The database (train words).
    queries : `CodesCorpus`
        The query words (dev), with gold labels, of the same K.
    k : `int`, optional (default = `100`)
        Neighbours per query (at most the index size).
    views : `Sequence[str]`, optional (default = every label view both have)
    ties : `str`, optional (default = `"index"`)
        `"index"` or `"average"`.

    # Returns

    `{"k", "ties", "queries", "distinct_query_codes", "database", "precision": {view: p}, "chance": {view: c},
    "macro": {view: m}, "macro_chance": {view: c}, "per_label": {view: {label: [precision, queries]}}}`.
    `precision` is the mean over the query words (DHIM); `macro` the mean over the query labels of the mean over
    their words (so that `O` does not dominate NER); `chance` and `macro_chance` are the same for k neighbours drawn
    at random from the database: sum_l P_queries(l) P_database(l), and mean_l P_database(l).
    """
    if ties not in ("index", "average"):
        raise ValueError(f"ties must be 'index' or 'average', got {ties!r}")
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
    k = min(k, len(index))
    unique, inverse = np.unique(queries.codes, return_inverse=True)  # (u,), (q,)
    inverse = inverse.reshape(-1)
    database_labels = {view: np.asarray(index.labels[view].ids, dtype=np.int64) for view in views}  # (n,) each
    sizes = {view: len(index.labels[view].names) for view in views}
    neighbours = {view: np.zeros((unique.shape[0], sizes[view]), dtype=np.float64) for view in views}  # (u, L)
    for start, block in index.distance_blocks(unique):
        for row_index, row in enumerate(block):
            found = candidates(row, k, index.num_bits)  # (m,)
            order = np.argsort(row[found], kind="stable")  # (m,)
            if ties == "index":
                parts = [(found[order[:k]], 1.0)]
            else:
                kth = row[found[order[k - 1]]]
                closer = found[row[found] < kth]
                tied = found[row[found] == kth]
                parts = [(closer, 1.0), (tied, (k - closer.shape[0]) / tied.shape[0])]
            for view in views:
                for entries, weight in parts:
                    counts = np.bincount(database_labels[view][entries], minlength=sizes[view])  # (L,)
                    neighbours[view][start + row_index] += weight * counts
    result: Dict[str, Any] = {"k": k, "ties": ties, "queries": len(queries),
                              "distinct_query_codes": int(unique.shape[0]), "database": len(index),
                              "database_corpus": index.corpus, "query_corpus": queries.path,
                              "precision": {}, "chance": {}, "macro": {}, "macro_chance": {}, "per_label": {}}
    for view in views:
        names = index.labels[view].names
        lookup = {name: i for i, name in enumerate(names)}
        query_column = queries.labels[view]
        to_database = np.array([lookup.get(name, -1) for name in query_column.names], dtype=np.int64)  # (Lq,)
        query_labels = to_database[query_column.ids]  # (q,) -1: label absent from the database
        table = neighbours[view]  # (u, L)
        precision = np.where(query_labels >= 0, table[inverse, np.maximum(query_labels, 0)], 0.0) / k  # (q,)
        result["precision"][view] = float(precision.mean())
        database_share = np.bincount(database_labels[view], minlength=len(names)) / len(index)  # (L,)
        query_share = np.bincount(query_column.ids, minlength=len(query_column.names)) / len(queries)  # (Lq,)
        result["chance"][view] = float(sum(query_share[i] * database_share[j]
                                           for i, j in enumerate(to_database.tolist()) if j >= 0))
        per_label = {}
        for i, name in enumerate(query_column.names):
            mask = query_column.ids == i
            per_label[name] = [float(precision[mask].mean()), int(mask.sum())]
        result["per_label"][view] = per_label
        result["macro"][view] = float(np.mean([value for value, _ in per_label.values()]))
        result["macro_chance"][view] = float(np.mean([database_share[j] if j >= 0 else 0.0
                                                      for j in to_database.tolist()]))
    return result


def format_precision(result: Dict[str, Any], per_label: bool = False) -> str:
    """precision@k as a markdown table (one row per label view); with `per_label` a table per view of each query
    label's precision (most frequent label first)."""
    lines = [f"precision@{result['k']} (ties: {result['ties']}): {result['queries']:,} query words "
             f"({result['distinct_query_codes']:,} distinct codes) from {result['query_corpus']}, "
             f"database {result['database']:,} words from {result['database_corpus']}",
             "", "| label | precision@k | chance | macro over labels | macro chance |", "|---|---:|---:|---:|---:|"]
    for view, value in result["precision"].items():
        lines.append(f"| {view} | {100 * value:.2f} | {100 * result['chance'][view]:.2f} | "
                     f"{100 * result['macro'][view]:.2f} | {100 * result['macro_chance'][view]:.2f} |")
    if per_label:
        for view, labels in result["per_label"].items():
            lines += ["", f"| {view} | query words | precision@k |", "|---|---:|---:|"]
            for name, (value, count) in sorted(labels.items(), key=lambda item: (-item[1][1], item[0])):
                lines.append(f"| {name} | {count:,} | {100 * value:.2f} |")
    return "\n".join(lines)


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


def index_corpus(codes_path: str, out_dir: str) -> HammingIndex:
    """`allennlp bits index`: indexes a codes corpus and saves it to `out_dir`."""
    index = HammingIndex.from_file(codes_path)
    index.save(out_dir)
    return index


def index_size_bytes(directory: str) -> int:
    return sum(os.path.getsize(os.path.join(directory, name)) for name in os.listdir(directory))

"""Hamming-space search over the words of a codes corpus (`allennlp bits index | search | precision`).

**Index.** One entry per word of a codes corpus, in corpus order: its code packed into a uint64 (bit i = head i,
head 0 the most significant bit; K <= 63 as everywhere), its sentence id, its position in the sentence and one
label id per label view (`corpus.label_views`). On disk (`HammingIndex.save`), a directory with

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

**Index types** (index.json's `search.type`, `allennlp bits index --index-type`):

    flat       faiss.IndexBinaryFlat: every code compared (SIMD popcount); exact. The default.
    multihash  faiss.IndexBinaryMultiHash: H hash tables, table h keyed by bits [hB, (h + 1)B) of the code.
               A radius-r query looks up, in every table, the buckets within nflip = floor(r / H) flipped key
               bits and checks the full distance of what it finds; exact, because a code within r differs in at
               most r bits spread over the H disjoint slices, so in one slice in at most floor(r / H) (pigeonhole).
               With more lookups than 1/128 of the codes (`multihash_scans`), the query scans the codes the
               index keeps instead (same result). Defaults: B = min(K, 24), H = floor(K / B).
    hnsw       faiss.IndexBinaryHNSW: a neighbour graph; APPROXIMATE k-NN (may miss true neighbours), no radius
               search. For corpora too large to scan.
    ivf        faiss.IndexBinaryIVF: codes in nlist cells (binary k-means), the nprobe cells nearest to the
               query searched; APPROXIMATE k-NN and radius search. For corpora too large to scan.
    numpy      no FAISS index: popcount(q XOR codes) over the packed uint64 codes in numpy (below), the
               reference the FAISS index types are tested against.

**FAISS codes.** A FAISS binary vector has d bits, d a multiple of 8: here d = 32 for K <= 32 and 64 above
(`code_bytes`), the code sizes FAISS has a one-word popcount for (a 3-byte code, d = 24, takes a generic byte
loop, about 5x slower in a trial). A code becomes the first d / 8 of the little-endian bytes of its uint64
(`pack_codes`): bits 0..K-1 of the code and d - K zero bits above them. The padding bits are 0 in every database
code and every query, so they never differ and popcount over the d bits is the Hamming distance of the K-bit codes
(tests/bits/test_faiss_search.py checks it for K = 1..63). A code with a bit set at K or above is refused.

**Distances (numpy).** d(q, x) = popcount(q XOR x), vectorized in numpy: `np.bitwise_count` where numpy has it
(2.0+), otherwise the SWAR bit count (`popcount_swar`). The database is scanned in chunks of `CHUNK` codes for a
block of queries at a time, so each chunk is read from memory once per block and the (queries, n) distance matrix
is uint8.

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

**precision@k** (the retrieval protocol of DHIM, "Refining BERT Embeddings for Document Hashing via Mutual
Information Maximization", after Chaidaroon and Fang 2017: for each query, the share of its top-100 Hamming
neighbours that share its label, averaged over the queries), adapted to words: queries are the words of one codes
corpus (dev), the database the words of another (train), the label one view (entity `type`, POS `tag`, ...).
`ties="index"` scores exactly the list `search` returns; `ties="average"` scores the expectation over a uniformly
random order of the entries tied at the k-th distance (entries closer than that count fully, the m tied slots are
shared by the tied entries in proportion), which does not depend on the corpus order (exact index types only).
Queries with the same code have the same neighbours, so each distinct query code is searched once.
"""
import errno
import json
import os
import re
from contextlib import contextmanager
from math import comb
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from bitcode_allennlp.bits.corpus import CodesCorpus, LabelColumn, read_codes_corpus
from bitcode_allennlp.common.code_format import check_code, check_codes, check_num_bits, hex_to_uint64, uint64_to_hex
from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.host.outputs import staged_files

FORMAT = "bitcode_allennlp.bits.HammingIndex"
VERSION = 2
"""2: index.json's `search` and `faiss.index`. Version 1 (numpy scan only) still loads."""
CHUNK = 1 << 15
"""Database codes per chunk of the scan (256 KiB of uint64: one chunk stays in cache while a block of queries
reads it)."""
BLOCK_BYTES = 1 << 24
"""Size of the uint8 distance matrix of one block of queries (16 MiB)."""
HAS_BITWISE_COUNT = hasattr(np, "bitwise_count")
_M1, _M2, _M4, _H01 = (np.uint64(m) for m in (0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F,
                                             0x0101010101010101))
_1, _2, _4, _56 = (np.uint64(s) for s in (1, 2, 4, 56))

INDEX_TYPES = ("flat", "multihash", "hnsw", "ivf", "numpy")
EXACT_TYPES = ("flat", "multihash", "numpy")
FAISS_CLASSES = {"flat": "IndexBinaryFlat", "multihash": "IndexBinaryMultiHash", "hnsw": "IndexBinaryHNSW",
                 "ivf": "IndexBinaryIVF"}
PARAMETERS = {"flat": (), "multihash": ("hash_tables", "hash_bits"), "hnsw": ("hnsw_m", "ef_search"),
              "ivf": ("nlist", "nprobe")}
"""Build parameters of each FAISS index type (`FaissBinaryIndex.build`)."""
FAISS_FILE = "faiss.index"
INDEX_FILES = ("index.json", "codes.npy", "sentence_ids.npy", "positions.npy", "labels.*.npy", "sentences.jsonl",
               FAISS_FILE)
"""The files of an index folder (`HammingIndex.save`), as `fnmatch` patterns."""
SAMPLE = 4096
"""Codes in the strided sample that guesses the radius of a k-NN query on a FAISS index (`radius_guess`)."""
GUESS_MARGIN = 2
"""The first radius of a k-NN query is estimated to hold 2k entries: one range search usually suffices."""
QUERY_BLOCK = 256
"""Queries per FAISS call."""
ADD_CHUNK = 1 << 20
"""Codes packed and added to a FAISS index at a time (4 MiB of bytes for K <= 32)."""
MULTIHASH_SHARE = 128
"""A multihash search with more bucket lookups than 1/128 of the codes (or of the buckets of a table) scans the codes
instead: a lookup cost about 100 times a code's popcount in a trial."""
DEFAULT_THREADS = 1
"""FAISS's OpenMP threads during a call of this module (0: FAISS's default, every core). One, as the numpy scan: on a
machine whose cores were busy, a one-query search on two threads took 100 times as long as on one in a trial."""


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


def hamming_distances(queries: Any, database: Any, chunk: Optional[int] = None) -> np.ndarray:
    """
    All Hamming distances between `queries` (q,) and `database` (n,), both packed codes, scanning `database` in
    chunks of `chunk` codes (default `CHUNK`). Both are checked by `code_format.check_codes` (non-negative integers;
    no floats or bools): a uint64 array (a memory map too) is used as it is, another integer array converted.

    # Returns

    `np.ndarray` uint8 of shape `(q, n)`.
    """
    queries = check_codes(queries, name="queries").reshape(-1)  # (q,)
    database = check_codes(database, name="database")  # (n,)
    if database.ndim != 1:
        raise ValueError(f"database must be a 1-D array of codes, got shape {tuple(database.shape)}")
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


def import_faiss() -> Any:
    """`faiss`, imported on first use (so that `import bitcode_allennlp.bits` stays cheap)."""
    try:
        import faiss
    except ImportError as error:
        raise ImportError("FAISS is not installed: 'pip install faiss-cpu' (index type 'numpy' needs no FAISS)") \
            from error
    return faiss


def check_threads(threads: Any) -> int:
    """`threads` if it is an int >= 0 (FAISS threads, 0: every core); else `ValueError`."""
    if not isinstance(threads, (int, np.integer)) or isinstance(threads, bool) or threads < 0:
        raise ValueError(f"threads must be an integer >= 0 (0: every core), got {threads!r}")
    return int(threads)


def code_bytes(num_bits: int) -> int:
    """Bytes of a FAISS binary vector for K-bit codes: 4 for K <= 32, else 8 (d = 8 of them bits)."""
    return 4 if num_bits <= 32 else 8


def pack_codes(codes: Any, num_bits: int) -> np.ndarray:
    """
    uint64 codes `(n,)` to FAISS binary vectors: the first `code_bytes(K)` little-endian bytes of each, bits K and
    above 0 (module docstring, *FAISS codes*). `codes` checked by `code_format.check_codes`: `ValueError` for a
    code with a bit set at K or above (or negative), `TypeError` for floats or bools.

    # Returns

    `np.ndarray` uint8 of shape `(n, code_bytes(K))`, C-contiguous.
    """
    codes = np.ascontiguousarray(check_codes(codes, num_bits, "codes").reshape(-1), dtype="<u8")  # (n,)
    return np.ascontiguousarray(codes.view(np.uint8).reshape(-1, 8)[:, : code_bytes(num_bits)])  # (n, d / 8)


class FaissBinaryIndex:
    """
    A FAISS binary index over the codes of a `HammingIndex` (index types, padding and exactness in the module
    docstring). FAISS is imported by `build` and `read`, not by this module. Search parameters (nflip, nprobe,
    efSearch) are set on the FAISS index per call, and FAISS's thread count for the call: one search at a time.

    # Parameters

    index_type : `str`
        `"flat"`, `"multihash"`, `"hnsw"` or `"ivf"`.
    index : `faiss.IndexBinary`
        The FAISS index, `8 * code_bytes(num_bits)` bits, entry i = code i of the `HammingIndex`.
    num_bits : `int`
        K of the codes.
    params : `Dict[str, int]`, optional (default = `None`)
        The build parameters of the type (`PARAMETERS`), as recorded in index.json.
    threads : `int`, optional (default = `DEFAULT_THREADS`)
        FAISS's OpenMP threads during each call (0: FAISS's default, every core).
    """

    def __init__(self, index_type: str, index: Any, num_bits: int, params: Optional[Dict[str, int]] = None,
                 threads: int = DEFAULT_THREADS) -> None:
        if index_type not in FAISS_CLASSES:
            raise ValueError(f"FAISS index type must be one of {', '.join(FAISS_CLASSES)}, got {index_type!r}")
        self.index_type = index_type
        self.index = index
        self.num_bits = num_bits
        self.params = dict(params or {})
        self.exact = index_type in EXACT_TYPES
        self.threads = check_threads(threads)

    def __len__(self) -> int:
        return int(self.index.ntotal)

    @contextmanager
    def thread_count(self) -> Iterator[None]:
        """FAISS on `self.threads` threads inside the block, its previous count restored after."""
        if self.threads == 0:
            yield
            return
        faiss = import_faiss()
        previous = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(self.threads)
        try:
            yield
        finally:
            faiss.omp_set_num_threads(previous)

    @classmethod
    def build(cls, codes: np.ndarray, num_bits: int, index_type: str = "flat", threads: int = DEFAULT_THREADS,
              **params: Optional[int]) -> "FaissBinaryIndex":
        """
        Builds an index of type `index_type` over `codes` (n,) uint64 on `threads` FAISS threads, adding
        `ADD_CHUNK` codes at a time (a memory map is read chunk by chunk). Parameters (`None`: the default):

        * multihash: `hash_tables` H and `hash_bits` B (B = min(K, 24), H = floor(K / B); H * B <= K);
        * hnsw: `hnsw_m` (neighbours per node, 32), `ef_search` (64; raised to k per query);
        * ivf: `nlist` (cells: min(4 sqrt(n), n / 39, 65536), at least 1), `nprobe` (cells searched, 16).
        """
        if index_type not in FAISS_CLASSES:
            raise ValueError(f"index type must be one of {', '.join(INDEX_TYPES)}, got {index_type!r}")
        for name, value in params.items():
            if value is not None and name not in PARAMETERS[index_type]:
                owners = [kind for kind, names in PARAMETERS.items() if name in names]
                raise ValueError(f"{name} applies to index type {owners[0] if owners else '(none)'}, "
                                 f"not {index_type}")
            if value is not None and (not isinstance(value, (int, np.integer)) or value < 1):
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        faiss = import_faiss()
        n = int(codes.shape[0])
        d = 8 * code_bytes(num_bits)
        chosen: Dict[str, int] = {}
        if index_type == "flat":
            index = faiss.IndexBinaryFlat(d)
        elif index_type == "multihash":
            bits = int(params.get("hash_bits") or min(num_bits, 24))
            tables = int(params.get("hash_tables") or max(1, num_bits // bits))
            if bits * tables > num_bits:
                raise ValueError(f"hash_tables * hash_bits = {tables} * {bits} exceeds the K = {num_bits} bits of "
                                 "the codes")
            index = faiss.IndexBinaryMultiHash(d, tables, bits)
            chosen = {"hash_tables": tables, "hash_bits": bits}
        elif index_type == "hnsw":
            chosen = {"hnsw_m": int(params.get("hnsw_m") or 32), "ef_search": int(params.get("ef_search") or 64)}
            index = faiss.IndexBinaryHNSW(d, chosen["hnsw_m"])
            index.hnsw.efSearch = chosen["ef_search"]
        else:
            nlist = int(params.get("nlist") or max(1, min(int(4 * np.sqrt(n)), n // 39, 65536)))
            if nlist > n:
                raise ValueError(f"nlist = {nlist} cells for {n} codes: at most one cell per code")
            chosen = {"nlist": nlist, "nprobe": min(nlist, int(params.get("nprobe") or 16))}
            index = faiss.IndexBinaryIVF(faiss.IndexBinaryFlat(d), d, nlist)
            index.nprobe = chosen["nprobe"]
        built = cls(index_type, index, num_bits, chosen, threads)
        with built.thread_count():
            if index_type == "ivf":
                train = np.linspace(0, n - 1, min(n, 256 * chosen["nlist"])).astype(np.int64)  # (t,)
                index.train(pack_codes(np.asarray(codes[train]), num_bits))  # (t, d / 8) strided sample
            for start in range(0, n, ADD_CHUNK):
                index.add(pack_codes(codes[start : start + ADD_CHUNK], num_bits))  # (chunk, d / 8)
        return built

    def write(self, path: str) -> None:
        import_faiss().write_index_binary(self.index, str(path))

    @classmethod
    def read(cls, path: str, index_type: str, num_bits: int, size: int, params: Optional[Dict[str, int]] = None,
             mmap: bool = True, threads: int = DEFAULT_THREADS) -> "FaissBinaryIndex":
        """Reads `path` (a flat index memory-mapped with `mmap`), checked against what index.json says:
        `MissingIndexFileError` when it is missing, `IndexFileError` (a `DataFormatError` naming it) when it is not
        a FAISS binary index (or a truncated one) or holds another type, size or width of codes."""
        faiss = import_faiss()
        path = Path(path)
        rebuild = f"rebuild it with 'allennlp bits index CODES.jsonl --out {path.parent} --index-type {index_type}'"
        if index_type not in FAISS_CLASSES:
            raise IndexFileError(str(path.parent / "index.json"), None, f"unknown FAISS index type {index_type!r}; "
                                 f"{rebuild}")
        if not path.is_file():
            raise MissingIndexFileError(str(path.parent), None, f"{path.name} is missing (index.json says index type "
                                        f"{index_type}); {rebuild}")
        if path.stat().st_size == 0:
            raise IndexFileError(str(path), None, f"not a FAISS binary index (an empty file); {rebuild}")
        flags = getattr(faiss, "IO_FLAG_MMAP_IFC", 0) if mmap and index_type == "flat" else 0
        try:
            index = faiss.read_index_binary(str(path), flags)
        except RuntimeError as error:
            raise IndexFileError(str(path), None, f"not a FAISS binary index, or a truncated one (FAISS: "
                                 f"{faiss_reason(error)}); {rebuild}") from None
        found = type(index).__name__
        if found != FAISS_CLASSES[index_type] or index.d != 8 * code_bytes(num_bits) or index.ntotal != size:
            raise IndexFileError(str(path), None, f"a {found} of {index.ntotal} codes of {index.d} bits, but "
                                 f"index.json says {FAISS_CLASSES[index_type]} of {size} codes of K = {num_bits} bits; "
                                 f"{rebuild}")
        params = dict(params or {})
        if index_type == "ivf" and "nprobe" in params:
            index.nprobe = params["nprobe"]
        elif index_type == "hnsw" and "ef_search" in params:
            index.hnsw.efSearch = params["ef_search"]
        return cls(index_type, index, num_bits, params, threads)

    def multihash_scans(self, radius: int) -> bool:
        """Whether a multihash range search of `radius` scans the stored codes instead of the hash tables: when it
        would look up more than 1 / `MULTIHASH_SHARE` of min(codes, buckets per table) buckets (same result)."""
        tables, bits = self.params["hash_tables"], self.params["hash_bits"]
        lookups = tables * sum(comb(bits, flips) for flips in range(min(bits, radius // tables) + 1))
        return lookups * MULTIHASH_SHARE > min(len(self), 1 << bits)

    def within(self, packed: np.ndarray, radius: int) -> List[Tuple[np.ndarray, np.ndarray]]:
        """
        Every entry within Hamming distance `radius` of each query `packed` `(q, d / 8)` uint8 (exact on flat and
        multihash; on ivf, those in the nprobe nearest cells).

        # Returns

        Per query `(entries, distances)`: int64 and uint8, both `(m,)`, in FAISS's order.
        """
        if self.index_type == "hnsw":
            raise ValueError("an hnsw index answers k-NN queries only, not radius queries: use --k, or an index "
                             "of type flat, multihash or ivf")
        if packed.shape[0] == 0:
            return []
        index = self.index
        if self.index_type == "multihash":
            if self.multihash_scans(radius):
                index = self.index.storage  # the IndexBinaryFlat of the codes the multihash index keeps
            else:
                self.index.nflip = min(self.params["hash_bits"], radius // self.params["hash_tables"])
        with self.thread_count():
            lims, distances, labels = index.range_search(packed, radius + 1)  # FAISS keeps distances < its radius
        results = []
        for row in range(packed.shape[0]):
            found = distances[lims[row] : lims[row + 1]]  # (m,)
            keep = found <= radius
            results.append((labels[lims[row] : lims[row + 1]][keep].astype(np.int64), found[keep].astype(np.uint8)))
        return results

    def nearest(self, packed: np.ndarray, k: int) -> List[Tuple[np.ndarray, np.ndarray]]:
        """
        FAISS's k nearest entries of each query `packed` `(q, d / 8)` (approximate on hnsw and ivf). A query that
        gets fewer than k (ivf: too few codes in its cells; hnsw: efSearch too small) is asked again with twice the
        nprobe or efSearch, up to every cell or efSearch = n.

        # Returns

        Per query `(entries, distances)`: int64 and uint8, both `(min(k, n),)`, in FAISS's order.
        """
        k = min(k, len(self))
        results: List[Optional[Tuple[np.ndarray, np.ndarray]]] = [None] * packed.shape[0]
        if self.index_type == "hnsw":
            effort, most = max(self.index.hnsw.efSearch, k), max(len(self), k)
        elif self.index_type == "ivf":
            effort, most = self.index.nprobe, self.index.nlist
        else:
            effort = most = 1
        saved = effort
        rows = np.arange(packed.shape[0])
        try:
            while rows.shape[0]:
                if self.index_type == "hnsw":
                    self.index.hnsw.efSearch = effort
                elif self.index_type == "ivf":
                    self.index.nprobe = effort
                with self.thread_count():
                    distances, labels = self.index.search(packed[rows], k)  # (r, k), (r, k)
                missing = []
                for row, found, far in zip(rows.tolist(), labels, distances):
                    if (found >= 0).all():
                        results[row] = (found.astype(np.int64), far.astype(np.uint8))
                    else:
                        missing.append(row)
                rows = np.array(missing, dtype=np.int64)
                if rows.shape[0] and effort >= most:
                    raise RuntimeError(f"the {self.index_type} index found fewer than {k} neighbours for "
                                       f"{rows.shape[0]} queries at its largest search effort ({effort})")
                effort = min(most, 2 * effort)
        finally:
            if self.index_type == "hnsw":
                self.index.hnsw.efSearch = self.params.get("ef_search", saved)
            elif self.index_type == "ivf":
                self.index.nprobe = saved
        return results  # type: ignore[return-value]


# ------------------------------------------------------------------------------------------- reading an index
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


def faiss_reason(error: BaseException) -> str:
    """The reason in the first line of a FAISS error, without its C++ function, source file and assertion."""
    text = (str(error).splitlines() or [""])[0]
    text = re.sub(r"^Error in .*? at \S+:\d+: ", "", text)
    return re.sub(r"^Error: '.*?' failed: ", "", text).strip() or type(error).__name__


NPY_MAGIC = b"\x93NUMPY"
VIEW_NAME = re.compile(r"[A-Za-z0-9_-]+")
"""Label view names in index.json (they name the files labels.<view>.npy)."""


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


class HammingIndex:
    """
    Hamming-space index over the words of a codes corpus (file layout, ranking and ties in the module docstring).

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
        `{"words", "source", "line"}` per sentence; `None` reads them from `sentences_path` when first needed.
    labels : `Dict[str, LabelColumn]`, optional (default = `None`)
        One label column per view.
    corpus : `str`, optional (default = `None`)
        The indexed codes corpus (for the record).
    sentences_path : `str`, optional (default = `None`)
        `sentences.jsonl` of a saved index.
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
        sentences_path: Optional[str] = None,
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
        self._sentences_path = sentences_path
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
        Writes the index to `directory` (created if needed; files listed in the module docstring). Each file is
        written beside its old version under a temporary name, and all are renamed over the old ones (index.json
        last) once every one is written (`outputs.staged_files`): a failed save leaves the old index and no
        temporary file, and an index loaded from `directory` (memory maps, the sentences read on first use) can be
        saved back onto it.
        """
        with staged_files(directory) as staged:
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
        if self.search_index is None:
            staged.remove(FAISS_FILE)
        else:
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
            index = cls(codes, num_bits, sentence_ids, positions, labels=labels, corpus=meta.get("corpus"),
                        sentences_path=str(sentences_path))
        except (ValueError, TypeError) as error:  # lengths and dtypes are checked above: codes wider than K
            raise files.error("codes.npy", str(error)) from None
        index._files, index._sentence_count = files, meta.get("sentences")
        index.version = meta["version"]
        search = meta.get("search") or {"type": "numpy"}
        if search["type"] != "numpy" and not numpy_scan:
            index.search_index = FaissBinaryIndex.read(
                str(files.root / search.get("file", FAISS_FILE)), search["type"], index.num_bits, len(index),
                search.get("params"), mmap=mmap, threads=threads)
        return index

    # -------------------------------------------------------------------------------------------- search
    def parse_code(self, code: str) -> int:
        """A hex code of this index's K (`ceil(K / 4)` digits, `bitcode_allennlp.common.code_format.parse_hex_code`) to its
        integer."""
        return int(hex_to_uint64([code], self.num_bits)[0])

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
                "code": uint64_to_hex([self.codes[index]], self.num_bits)[0],
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
        `"index"` or `"average"` (`"average"` needs an exact index type: numpy, flat or multihash).

    # Returns

    `{"k", "ties", "queries", "distinct_query_codes", "database", "precision": {view: p}, "chance": {view: c},
    "macro": {view: m}, "macro_chance": {view: c}, "per_label": {view: {label: [precision, queries]}}}`.
    `precision` is the mean over the query words (DHIM); `macro` the mean over the query labels of the mean over
    their words (so that `O` does not dominate NER); `chance` and `macro_chance` are the same for k neighbours drawn
    at random from the database: sum_l P_queries(l) P_database(l), and mean_l P_database(l).
    """
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
    k = min(k, len(index))
    unique, inverse = np.unique(queries.codes, return_inverse=True)  # (u,), (q,)
    inverse = inverse.reshape(-1)
    database_labels = {view: index.label_ids(view) for view in views}  # (n,) each, checked
    sizes = {view: len(index.labels[view].names) for view in views}
    neighbours = {view: np.zeros((unique.shape[0], sizes[view]), dtype=np.float64) for view in views}  # (u, L)
    for row, found, distances in index.candidate_sets(unique, k):
        order = np.lexsort((found, distances))  # (m,) by distance, then entry index
        if ties == "index":
            parts = [(found[order[:k]], 1.0)]
        else:
            kth = distances[order[k - 1]]
            closer = found[distances < kth]
            tied = found[distances == kth]
            parts = [(closer, 1.0), (tied, (k - closer.shape[0]) / tied.shape[0])]
        for view in views:
            for entries, weight in parts:
                counts = np.bincount(database_labels[view][entries], minlength=sizes[view])  # (L,)
                neighbours[view][row] += weight * counts
    result: Dict[str, Any] = {"k": k, "ties": ties, "index_type": index.index_type, "queries": len(queries),
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
             f"database {result['database']:,} words from {result['database_corpus']} "
             f"(index type {result.get('index_type', 'numpy')})",
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


def index_corpus(codes_path: str, out_dir: str, index_type: str = "flat", **params: Optional[int]) -> HammingIndex:
    """`allennlp bits index`: indexes a codes corpus with a FAISS index of type `index_type` (`threads` and the
    parameters of `FaissBinaryIndex.build`) and saves it to `out_dir`."""
    index = HammingIndex.from_file(codes_path, index_type, **params)
    index.save(out_dir)
    return index


def index_size_bytes(directory: str) -> int:
    return sum(os.path.getsize(os.path.join(directory, name)) for name in os.listdir(directory))

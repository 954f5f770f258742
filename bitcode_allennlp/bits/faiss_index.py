"""FAISS binary indexes over packed codes (`FaissBinaryIndex`): the index types, the padding of codes, build and read.

Where this sits: above `index_files` (its errors), below `index` (`HammingIndex.search_index` is one of these).
FAISS is imported on first use (`import_faiss`), not by this module.

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
    numpy      no FAISS index: popcount(q XOR codes) over the packed uint64 codes in numpy (`hamming`), the
               reference the FAISS index types are tested against.

**FAISS codes.** A FAISS binary vector has d bits, d a multiple of 8: here d = 32 for K <= 32 and 64 above
(`code_bytes`), the code sizes FAISS has a one-word popcount for (a 3-byte code, d = 24, takes a generic byte
loop, about 5x slower in a trial). A code becomes the first d / 8 of the little-endian bytes of its uint64
(`pack_codes`): bits 0..K-1 of the code and d - K zero bits above them. The padding bits are 0 in every database
code and every query, so they never differ and popcount over the d bits is the Hamming distance of the K-bit codes
(tests/bits/test_faiss_search.py checks it for K = 1..63). A code with a bit set at K or above is refused.
"""
import re
from contextlib import contextmanager
from math import comb
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np

from bitcode_allennlp.bits.index_files import INDEX_TYPES, IndexFileError, MissingIndexFileError
from bitcode_allennlp.common.code_format import check_codes

EXACT_TYPES = ("flat", "multihash", "numpy")
FAISS_CLASSES = {"flat": "IndexBinaryFlat", "multihash": "IndexBinaryMultiHash", "hnsw": "IndexBinaryHNSW",
                 "ivf": "IndexBinaryIVF"}
PARAMETERS = {"flat": (), "multihash": ("hash_tables", "hash_bits"), "hnsw": ("hnsw_m", "ef_search"),
              "ivf": ("nlist", "nprobe")}
"""Build parameters of each FAISS index type (`FaissBinaryIndex.build`)."""
ADD_CHUNK = 1 << 20
"""Codes packed and added to a FAISS index at a time (4 MiB of bytes for K <= 32)."""
MULTIHASH_SHARE = 128
"""A multihash search with more bucket lookups than 1/128 of the codes (or of the buckets of a table) scans the codes
instead: a lookup cost about 100 times a code's popcount in a trial."""
DEFAULT_THREADS = 1
"""FAISS's OpenMP threads during a call of this module (0: FAISS's default, every core). One, as the numpy scan: on a
machine whose cores were busy, a one-query search on two threads took 100 times as long as on one in a trial."""


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


def faiss_reason(error: BaseException) -> str:
    """The reason in the first line of a FAISS error, without its C++ function, source file and assertion."""
    text = (str(error).splitlines() or [""])[0]
    text = re.sub(r"^Error in .*? at \S+:\d+: ", "", text)
    return re.sub(r"^Error: '.*?' failed: ", "", text).strip() or type(error).__name__


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

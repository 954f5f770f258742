"""Hamming distances of packed codes in numpy: the scan behind index type numpy and the k-NN probes.

Where this sits: the lowest layer of the Hamming index (`index.HammingIndex` scans with it when it has no FAISS index,
`probe` votes with it); no FAISS, no files.

**Distances.** d(q, x) = popcount(q XOR x), vectorized in numpy: `np.bitwise_count` where numpy has it
(2.0+), otherwise the SWAR bit count (`popcount_swar`). The database is scanned in chunks of `CHUNK` codes for a
block of queries at a time, so each chunk is read from memory once per block and the (queries, n) distance matrix
is uint8.
"""
from typing import Any, Optional

import numpy as np

from bitcode_allennlp.common.code_format import check_codes

CHUNK = 1 << 15
"""Database codes per chunk of the scan (256 KiB of uint64: one chunk stays in cache while a block of queries
reads it)."""
HAS_BITWISE_COUNT = hasattr(np, "bitwise_count")
_M1, _M2, _M4, _H01 = (np.uint64(m) for m in (0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F,
                                             0x0101010101010101))
_1, _2, _4, _56 = (np.uint64(s) for s in (1, 2, 4, 56))


def popcount_swar(values: np.ndarray) -> np.ndarray:
    """
    Bits set in each uint64 without `np.bitwise_count` (numpy < 2.0): the SWAR bit count (sums of 2, 4, 8 bits in
    place, then one multiply adds the 8 byte counts into the top byte). Its speed against `np.bitwise_count` and a
    byte lookup table: docs/results.md, "Cost of the hashing step".
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


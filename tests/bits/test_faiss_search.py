"""`bits.index` on FAISS binary indexes: the zero-bit padding leaves distances unchanged, flat and multihash give the
numpy scan's arrays (top-k, radius, precision@k) on data full of ties, save / load of every index type, old index
directories, and hnsw / ivf (approximate) at least return valid neighbours."""
import json
import subprocess
import sys

import numpy as np
import pytest

import bitcode_allennlp.bits.faiss_index as faiss_module
import bitcode_allennlp.bits.index as index_module
from bitcode_allennlp.bits.corpus import CodesCorpus, LabelColumn
from bitcode_allennlp.bits.faiss_index import FaissBinaryIndex, code_bytes, pack_codes
from bitcode_allennlp.bits.hamming import hamming_distances
from bitcode_allennlp.bits.index import HammingIndex, precision_at_k
from bitcode_allennlp.bits.index_files import FAISS_FILE

faiss = pytest.importorskip("faiss")


def tied_codes(seed, n, num_bits, distinct):
    """n codes drawn from `distinct` random K-bit codes: every code repeats, so every distance has a tie group."""
    rng = np.random.default_rng(seed)
    pool = rng.integers(0, 2 ** num_bits, distinct, dtype=np.uint64)  # (distinct,)
    return pool[rng.integers(0, distinct, n)]  # (n,)


def make_index(codes, num_bits, index_type="numpy", **params):
    n = codes.shape[0]
    rng = np.random.default_rng(n)
    labels = {"tag": LabelColumn(rng.integers(0, 5, n).astype(np.int32), [f"T{i}" for i in range(5)])}
    index = HammingIndex(codes, num_bits, np.zeros(n, np.int32), np.arange(n, dtype=np.int32),
                         [{"words": [f"w{i}" for i in range(n)]}], labels, corpus="tied")
    return index.build_search_index(index_type, **params)


def reference(codes, query, k=None, radius=None):
    """(entries, distances) by (distance, entry index) from np.lexsort over numpy distances."""
    distances = hamming_distances(np.array([query], dtype=np.uint64), codes)[0].astype(np.int64)  # (n,)
    order = np.lexsort((np.arange(codes.shape[0]), distances))  # (n,)
    if radius is not None:
        order = order[distances[order] <= radius]
    if k is not None:
        order = order[:k]
    return order.tolist(), distances[order].tolist()


@pytest.mark.parametrize("num_bits", range(1, 64))
def test_zero_padding_leaves_distances_unchanged(num_bits):
    rng = np.random.default_rng(num_bits)
    codes = rng.integers(0, 2 ** num_bits, 200, dtype=np.uint64)  # (200,)
    packed = pack_codes(codes, num_bits)  # (200, ceil(K / 8))
    assert packed.shape == (200, code_bytes(num_bits)) and packed.flags.c_contiguous
    bits = np.unpackbits(packed, axis=1, bitorder="little")  # (200, d)
    assert not bits[:, num_bits:].any()  # the d - K padding bits are 0
    assert np.array_equal(bits[:, :num_bits], (codes[:, None] >> np.arange(num_bits, dtype=np.uint64)) & np.uint64(1))
    flat = faiss.IndexBinaryFlat(8 * code_bytes(num_bits))
    flat.add(packed)
    distances, labels = flat.search(packed[:20], 200)  # (20, 200): every distance of 20 queries
    expected = hamming_distances(codes[:20], codes)  # (20, 200)
    assert np.array_equal(np.take_along_axis(expected, labels, axis=1), distances)


def test_pack_codes_refuses_bits_above_k():
    with pytest.raises(ValueError, match=r"code 100 \(entry 1\) has bits set above its K = 8 bits"):
        pack_codes(np.array([3, 256], dtype=np.uint64), 8)
    index = make_index(np.array([1, 2, 3], dtype=np.uint64), 4, "flat")
    with pytest.raises(ValueError, match="above its K = 4 bits"):
        index.search(np.array([16], dtype=np.uint64), 1)


def test_faiss_alone_orders_ties_its_own_way():
    # The reason for the re-ranking: the 60 entries at distance 0 are a tie group FAISS cuts at k.
    codes = np.concatenate([np.full(40, 5), np.zeros(60)]).astype(np.uint64)  # entries 40..99 equal the query
    index = make_index(codes, 3, "flat")
    top, distances = index.search(0, 10)
    assert top[0].tolist() == list(range(40, 50)) and distances[0].tolist() == [0] * 10
    raw_distances, raw = index.search_index.index.search(pack_codes([0], 3), 10)
    assert set(raw[0].tolist()) <= set(range(40, 100)) and raw_distances[0].tolist() == [0] * 10


CASES = [  # seed, n, K, distinct codes
    (0, 500, 1, 2), (1, 700, 2, 4), (2, 1000, 3, 8), (3, 1500, 5, 20), (4, 2000, 8, 60), (5, 3000, 12, 400),
    (6, 1200, 24, 300), (7, 600, 24, 600), (8, 400, 63, 100), (9, 5000, 20, 5000),
]


@pytest.mark.parametrize("seed, n, num_bits, distinct", CASES)
def test_flat_and_multihash_equal_the_numpy_scan_with_ties(seed, n, num_bits, distinct, monkeypatch):
    # A small sample and query blocks, so that guessed radii are too small for some queries and get raised.
    monkeypatch.setattr(index_module, "SAMPLE", 64)
    monkeypatch.setattr(index_module, "QUERY_BLOCK", 7)
    codes = tied_codes(seed, n, num_bits, distinct)
    indexes = {"numpy": make_index(codes, num_bits), "flat": make_index(codes, num_bits, "flat"),
               "multihash": make_index(codes, num_bits, "multihash")}
    bits = min(num_bits, 8)
    indexes["multihash small keys"] = make_index(codes, num_bits, "multihash", hash_bits=bits,
                                                 hash_tables=num_bits // bits)
    rng = np.random.default_rng(100 + seed)
    queries = np.concatenate([rng.integers(0, 2 ** num_bits, 15, dtype=np.uint64), codes[:5], codes[:3]])  # (23,)
    for share in (1, 10 ** 9):  # multihash: hash tables unless absurd (lookups > codes), and always the scan
        monkeypatch.setattr(faiss_module, "MULTIHASH_SHARE", share)
        for k in (1, 5, 37, n // 2, n + 10):
            expected = indexes["numpy"].search(queries, k)
            for kind in ("flat", "multihash", "multihash small keys"):
                top, distances = indexes[kind].search(queries, k)
                assert np.array_equal(top, expected[0]) and np.array_equal(distances, expected[1]), (kind, k)
            for row in (0, 16):
                assert (expected[0][row].tolist(), expected[1][row].tolist()) == reference(codes, queries[row], k)
        for radius in sorted({0, 1, 2, num_bits // 3, num_bits}):
            for query in queries[[0, 1, 16, 21]].tolist():
                expected = reference(codes, query, radius=radius)
                for kind, index in indexes.items():
                    found, distances = index.radius(query, radius)
                    assert (found.tolist(), distances.tolist()) == expected, (kind, radius)


def test_radius_guess_is_near_the_kth_distance():
    # The first range search of a k-NN query: too small costs a second search, too large fetches many entries.
    codes = tied_codes(1, 200_000, 24, 200_000)
    index = make_index(codes, 24)
    queries = tied_codes(2, 40, 24, 10 ** 6)
    for k in (10, 100):
        off = index.radius_guess(queries, k) - index.search(queries, k)[1][:, -1].astype(np.int64)  # (40,)
        assert set(off.tolist()) <= {-1, 0, 1, 2} and (off >= 0).mean() >= 0.7 and off.mean() <= 1
    small = make_index(codes[:1000], 24)  # the sample is the whole index: the guess is the k-th distance
    assert np.array_equal(small.radius_guess(queries, 7), small.search(queries, 7)[1][:, -1])


def test_multihash_radius_search_uses_the_hash_tables_when_few_buckets_are_looked_up():
    index = make_index(tied_codes(0, 100_000, 24, 100_000), 24, "multihash")
    assert index.search_index.params == {"hash_tables": 1, "hash_bits": 24}
    assert not index.search_index.multihash_scans(2) and index.search_index.multihash_scans(6)
    assert make_index(tied_codes(0, 1000, 24, 1000), 24, "multihash").search_index.multihash_scans(2)


@pytest.mark.parametrize("kind", ["flat", "multihash"])
@pytest.mark.parametrize("ties", ["index", "average"])
def test_precision_at_k_equals_the_numpy_scan(kind, ties, monkeypatch):
    monkeypatch.setattr(index_module, "SAMPLE", 50)
    num_bits = 6
    rng = np.random.default_rng(3)
    database = tied_codes(1, 800, num_bits, 30)
    queries = CodesCorpus("q", num_bits, tied_codes(2, 120, num_bits, 40), np.zeros(120, np.int32),
                          np.arange(120, dtype=np.int32), [{"words": ["w"] * 120}],
                          {"tag": LabelColumn.from_strings([f"T{i}" for i in rng.integers(0, 6, 120)])})
    for k in (1, 10, 100):
        expected = precision_at_k(make_index(database, num_bits), queries, k=k, ties=ties)
        result = precision_at_k(make_index(database, num_bits, kind), queries, k=k, ties=ties)
        assert result["index_type"] == kind and expected["index_type"] == "numpy"
        for key in ("precision", "chance", "macro", "macro_chance", "per_label"):
            assert result[key] == expected[key]  # exactly: the same neighbours, summed in the same order


@pytest.mark.parametrize("kind, params", [("flat", {}), ("multihash", {"hash_tables": 2, "hash_bits": 6}),
                                          ("hnsw", {"hnsw_m": 8, "ef_search": 20}), ("ivf", {"nlist": 8, "nprobe": 3}),
                                          ("numpy", {})])
def test_save_load_round_trip(kind, params, tmp_path):
    codes = tied_codes(5, 900, 12, 200)
    index = make_index(codes, 12, kind, **params)
    queries = tied_codes(6, 30, 12, 4000)
    expected = index.search(queries, 9)
    index.save(str(tmp_path / "index"))
    meta = json.loads((tmp_path / "index" / "index.json").read_text())
    assert meta["version"] == 2 and meta["search"]["type"] == kind
    assert (tmp_path / "index" / FAISS_FILE).is_file() == (kind != "numpy")
    for mmap in (True, False):
        loaded = HammingIndex.load(str(tmp_path / "index"), mmap=mmap)
        assert loaded.index_type == kind and loaded.exact == (kind in ("flat", "multihash", "numpy"))
        if kind != "numpy":
            assert loaded.search_index.params == index.search_index.params
            assert {key: meta["search"]["params"][key] for key in params} == params
        top, distances = loaded.search(queries, 9)
        assert np.array_equal(top, expected[0]) and np.array_equal(distances, expected[1])
    scan = HammingIndex.load(str(tmp_path / "index"), numpy_scan=True)
    assert scan.index_type == "numpy"
    if kind in ("flat", "multihash"):
        assert np.array_equal(scan.search(queries, 9)[0], expected[0])
    loaded = HammingIndex.load(str(tmp_path / "index"))  # memory-mapped, sentences not read yet
    loaded.save(str(tmp_path / "index"))  # onto the files it maps
    again = HammingIndex.load(str(tmp_path / "index"))
    assert np.array_equal(again.search(queries, 9)[0], expected[0])
    assert [sentence["words"] for sentence in again.sentences] == [sentence["words"] for sentence in index.sentences]
    assert np.array_equal(loaded.codes, codes)  # the old files it maps are intact
    index.build_search_index("numpy").save(str(tmp_path / "index"))  # rewritten without FAISS: no stale file
    assert not (tmp_path / "index" / FAISS_FILE).exists()


def test_version_1_directory_loads_with_the_numpy_scan(tmp_path, ner_codes):
    index = HammingIndex.from_file(str(ner_codes), "numpy")
    index.save(str(tmp_path / "old"))
    meta_path = tmp_path / "old" / "index.json"
    meta = json.loads(meta_path.read_text())
    del meta["search"]
    meta_path.write_text(json.dumps({**meta, "version": 1}))  # as written before FAISS indexes
    old = HammingIndex.load(str(tmp_path / "old"))
    assert (old.version, old.index_type) == (1, "numpy")
    assert np.array_equal(old.search(np.array([0b1100], dtype=np.uint64), 3)[0], index.search(0b1100, 3)[0])
    meta_path.write_text(json.dumps({**meta, "version": 7}))
    with pytest.raises(ValueError, match=r"index.json: version 7 of the index format, this bitcode_allennlp reads "
                                         r"versions 1 and 2: rebuild it with 'allennlp bits index"):
        HammingIndex.load(str(tmp_path / "old"))


def test_missing_or_foreign_faiss_file_is_a_clear_error(tmp_path, ner_codes):
    HammingIndex.from_file(str(ner_codes), "flat").save(str(tmp_path / "a"))
    make_index(tied_codes(0, 50, 4, 5), 4, "flat").save(str(tmp_path / "b"))
    (tmp_path / "a" / FAISS_FILE).write_bytes((tmp_path / "b" / FAISS_FILE).read_bytes())
    with pytest.raises(ValueError, match=r"faiss.index: a IndexBinaryFlat of 50 codes of 32 bits, but index.json "
                                         r"says IndexBinaryFlat of 6 codes of K = 4 bits; rebuild it"):
        HammingIndex.load(str(tmp_path / "a"))
    (tmp_path / "a" / FAISS_FILE).write_bytes(b"not an index")
    with pytest.raises(ValueError, match="faiss.index: not a FAISS binary index"):
        HammingIndex.load(str(tmp_path / "a"))
    (tmp_path / "a" / FAISS_FILE).unlink()
    with pytest.raises(FileNotFoundError, match=r"faiss.index is missing \(index.json says index type flat\); "
                                                r"rebuild it with 'allennlp bits index CODES.jsonl --out"):
        HammingIndex.load(str(tmp_path / "a"))


@pytest.mark.parametrize("kind, params, found_share", [
    ("hnsw", {"hnsw_m": 8}, 0.8), ("hnsw", {"hnsw_m": 4, "ef_search": 1}, 0.0),
    ("ivf", {"nlist": 16, "nprobe": 1}, 0.8), ("ivf", {}, 0.8)])
def test_approximate_indexes_return_valid_neighbours(kind, params, found_share):
    codes = tied_codes(7, 3000, 16, 1500)
    index = make_index(codes, 16, kind, **params)
    assert not index.exact
    queries = np.concatenate([tied_codes(8, 40, 16, 60000), codes[:10]])  # (50,)
    for k in (1, 10, 400):
        top, distances = index.search(queries, k)
        assert top.shape == distances.shape == (50, k) and top.min() >= 0 and top.max() < 3000
        true = hamming_distances(queries, codes)  # (50, n)
        assert np.array_equal(np.take_along_axis(true, top, axis=1), distances)  # the distances are right
        for row in range(50):
            assert len(set(top[row].tolist())) == k  # no entry twice
            assert np.array_equal(np.lexsort((top[row], distances[row])), np.arange(k))  # (distance, index) order
        assert (distances[40:, 0] == 0).mean() >= found_share  # queries that are indexed codes find distance 0
    with pytest.raises(ValueError, match="ties 'average' needs every entry tied"):
        precision_at_k(index, CodesCorpus("q", 16, codes[:5], np.zeros(5, np.int32), np.arange(5, dtype=np.int32),
                                          [{"words": ["w"] * 5}], {"tag": index.labels["tag"]}), ties="average")
    if kind == "hnsw":
        with pytest.raises(ValueError, match="an hnsw index answers k-NN queries only"):
            index.radius(int(codes[0]), 2)
    else:
        found, distances = index.radius(int(codes[0]), 2)
        expected = dict(zip(*reference(codes, int(codes[0]), radius=2)))
        assert 0 < len(found) <= len(expected) and all(expected[i] == d for i, d in zip(found, distances))
        assert np.array_equal(np.lexsort((found, distances)), np.arange(len(found)))


def test_ivf_asks_more_cells_when_its_cells_hold_fewer_than_k():
    codes = tied_codes(9, 400, 16, 400)
    index = make_index(codes, 16, "ivf", nlist=8, nprobe=1)
    top, _ = index.search(codes[:5], 300)  # one cell holds about 50 codes
    assert top.shape == (5, 300) and (top >= 0).all() and index.search_index.index.nprobe == 1


def test_faiss_runs_on_the_threads_asked_and_restores_the_count():
    seen = []
    index = make_index(tied_codes(0, 300, 12, 100), 12, "flat", threads=1)
    original = index.search_index.index.range_search
    index.search_index.index.range_search = lambda *a: seen.append(faiss.omp_get_max_threads()) or original(*a)
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(3)
    try:
        index.search(np.array([1, 2], dtype=np.uint64), 4)
        assert seen and set(seen) == {1} and faiss.omp_get_max_threads() == 3
        index.search_index.threads = 0  # FAISS's own count
        index.radius(1, 2)
        assert seen[-1] == 3
    finally:
        faiss.omp_set_num_threads(before)
    with pytest.raises(ValueError, match=r"threads must be an integer >= 0 \(0: every core\), got -1"):
        make_index(tied_codes(0, 30, 12, 10), 12, "flat", threads=-1)


def test_bad_build_parameters():
    codes = tied_codes(0, 100, 24, 50)
    with pytest.raises(ValueError, match="hash_bits applies to index type multihash, not flat"):
        make_index(codes, 24, "flat", hash_bits=8)
    with pytest.raises(ValueError, match=r"hash_tables \* hash_bits = 4 \* 8 exceeds the K = 24 bits of the codes"):
        make_index(codes, 24, "multihash", hash_tables=4, hash_bits=8)
    with pytest.raises(ValueError, match="nprobe must be a positive integer, got 0"):
        make_index(codes, 24, "ivf", nprobe=0)
    with pytest.raises(ValueError, match="index type must be one of flat, multihash, hnsw, ivf, numpy, got 'lsh'"):
        make_index(codes, 24, "lsh")
    with pytest.raises(ValueError, match="nlist applies to a FAISS index type, not numpy"):
        make_index(codes, 24, "numpy", nlist=4)
    with pytest.raises(ValueError, match="radius must be >= 0"):
        make_index(codes, 24, "flat").radius(0, -1)


def test_importing_bits_does_not_import_faiss():
    code = "import sys, bitcode_allennlp.bits; assert 'faiss' not in sys.modules, 'faiss imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_faiss_binary_index_checks_its_size():
    codes = tied_codes(0, 10, 8, 10)
    other = FaissBinaryIndex.build(codes[:5], 8)
    with pytest.raises(ValueError, match="the flat index has 5 codes of K = 8, the index 10 codes of K = 8"):
        HammingIndex(codes, 8, np.zeros(10, np.int32), np.arange(10, dtype=np.int32), search_index=other)

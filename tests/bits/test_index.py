"""`bits.index`: top-k and radius search against brute force on random codes (many ties), the bit counts, the
save / load round trip (memory-mapped), and precision@k against its definition."""
import numpy as np
import pytest

import bitcode_allennlp.bits.hamming as hamming_module
import bitcode_allennlp.bits.index as index_module
from bitcode_allennlp.bits.corpus import CodesCorpus, LabelColumn, read_codes_corpus
from bitcode_allennlp.bits.hamming import candidates, hamming_distances, popcount_swar
from bitcode_allennlp.bits.index import HammingIndex, precision_at_k


def python_distance(a: int, b: int) -> int:
    return bin(a ^ b).count("1")


def brute_force(codes, query, k=None, radius=None):
    """(index, distance) of the k nearest (or all within radius) by (distance, index), in pure Python."""
    ranked = sorted((python_distance(c, query), i) for i, c in enumerate(codes))
    if radius is not None:
        ranked = [(d, i) for d, i in ranked if d <= radius]
    ranked = ranked[:k] if k is not None else ranked
    return [i for _, i in ranked], [d for d, _ in ranked]


def random_index(seed, n, num_bits, num_labels=4):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 2 ** num_bits, n, dtype=np.uint64) if num_bits < 64 else \
        rng.integers(0, 2 ** 63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n, dtype=np.uint64)
    lengths = rng.integers(1, 12, n)
    sentence_ids = np.repeat(np.arange(n), lengths)[:n].astype(np.int32)
    positions = np.concatenate([np.arange(length) for length in lengths])[:n].astype(np.int32)
    sentences = [{"words": [f"w{s}_{p}" for p in range(int(length))], "source": f"s{s}", "line": s + 1}
                 for s, length in enumerate(lengths[: sentence_ids[-1] + 1])]
    labels = {"tag": LabelColumn(rng.integers(0, num_labels, n).astype(np.int32), [f"T{i}" for i in range(num_labels)])}
    return HammingIndex(codes, num_bits, sentence_ids, positions, sentences, labels, corpus=f"random{seed}")


@pytest.mark.parametrize("seed, n, num_bits", [(0, 700, 8), (1, 2000, 12), (2, 300, 24), (3, 200, 63)])
def test_top_k_and_radius_equal_brute_force(seed, n, num_bits, monkeypatch):
    # Small chunks and blocks, so that the scan crosses chunk and block borders.
    monkeypatch.setattr(hamming_module, "CHUNK", 64)
    monkeypatch.setattr(index_module, "BLOCK_BYTES", 5 * n)
    index = random_index(seed, n, num_bits)
    rng = np.random.default_rng(100 + seed)
    queries = np.concatenate([rng.integers(0, 2 ** min(num_bits, 63), 20, dtype=np.uint64),
                              index.codes[:3], index.codes[:2]])  # some queries repeat, some hit codes exactly
    codes = index.codes.tolist()
    for k in (1, 5, 37, n + 10):
        top, distances = index.search(queries, k)
        assert top.shape == distances.shape == (len(queries), min(k, n))
        for row, query in enumerate(queries.tolist()):
            expected, expected_distances = brute_force(codes, query, k=k)
            assert top[row].tolist() == expected and distances[row].tolist() == expected_distances
    for radius in (0, 2, num_bits // 3):
        for query in queries[:6].tolist():
            found, distances = index.radius(query, radius)
            expected, expected_distances = brute_force(codes, query, radius=radius)
            assert found.tolist() == expected and distances.tolist() == expected_distances


def test_ties_at_the_kth_distance_go_by_corpus_order():
    codes = np.array([0b1111, 0b0001, 0b0010, 0b0000, 0b0100, 0b1000, 0b0011], dtype=np.uint64)
    index = HammingIndex(codes, 4, np.zeros(7, np.int32), np.arange(7, dtype=np.int32), [{"words": list("abcdefg")}])
    top, distances = index.search(0, 3)
    assert top[0].tolist() == [3, 1, 2] and distances[0].tolist() == [0, 1, 1]  # 4 and 5 are also at distance 1


def test_candidates_raise_a_threshold_the_sample_set_too_low():
    row = np.full(8192, 7, dtype=np.uint8)
    row[[0, 2]] = 0  # both sampled (stride 2): the sample promises 4 entries at distance 0, the row has 2
    row[5] = 3
    found = candidates(row, 3, num_bits=8)
    assert {0, 2, 5} <= set(found.tolist())


def test_bit_counts():
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.integers(0, 2 ** 63, 500, dtype=np.uint64) * np.uint64(2) + np.uint64(1),
                             np.array([0, 1, 2 ** 64 - 1, 2 ** 63], dtype=np.uint64)])
    expected = [bin(v).count("1") for v in values.tolist()]
    assert popcount_swar(values).tolist() == expected
    assert hamming_module.popcount(values).tolist() == expected


def test_distances_without_bitwise_count(monkeypatch):
    rng = np.random.default_rng(1)
    database = rng.integers(0, 2 ** 40, 300, dtype=np.uint64)
    queries = rng.integers(0, 2 ** 40, 7, dtype=np.uint64)
    native = hamming_distances(queries, database)
    monkeypatch.setattr(hamming_module, "HAS_BITWISE_COUNT", False)
    fallback = hamming_distances(queries, database, chunk=50)
    assert (fallback == native).all()
    assert native[2, 5] == python_distance(int(queries[2]), int(database[5]))


def test_save_load_round_trip_memory_mapped(tmp_path, ner_codes):
    index = HammingIndex.from_file(str(ner_codes))
    index.save(str(tmp_path / "index"))
    loaded = HammingIndex.load(str(tmp_path / "index"))
    assert isinstance(loaded.codes, np.memmap) and isinstance(loaded.sentence_ids, np.memmap)
    assert isinstance(loaded.labels["type"].ids, np.memmap)
    assert (loaded.num_bits, len(loaded)) == (4, 6)
    for name in ("codes", "sentence_ids", "positions"):
        assert np.array_equal(getattr(loaded, name), getattr(index, name))
    assert {view: column.names for view, column in loaded.labels.items()} == \
        {view: column.names for view, column in index.labels.items()}
    top, distances = loaded.search(np.array([0b1100, 0b0001], dtype=np.uint64), 4)
    expected_top, expected_distances = index.search(np.array([0b1100, 0b0001], dtype=np.uint64), 4)
    assert np.array_equal(top, expected_top) and np.array_equal(distances, expected_distances)
    assert loaded.hits(top[0], distances[0]) == index.hits(top[0], distances[0])
    hit = loaded.hit(5, 0)
    assert (hit["word"], hit["labels"], hit["code"], hit["sentence"]) == \
        ("Smith", {"tag": "L-PER", "prefix": "L", "type": "PER"}, "c", ["Peter", "Smith"])
    in_memory = HammingIndex.load(str(tmp_path / "index"), mmap=False)
    assert not isinstance(in_memory.codes, np.memmap) and np.array_equal(in_memory.codes, index.codes)


def test_word_code_is_the_most_frequent_code(tmp_path):
    corpus = tmp_path / "words.jsonl"
    corpus.write_text('{"words": ["a", "b", "a", "a"], "codes": ["3", "1", "5", "5"], "num_bits": 4}\n'
                      '{"words": ["a"], "codes": ["3"], "num_bits": 4}\n')
    index = HammingIndex.from_file(str(corpus))
    assert index.labels == {}
    assert index.word_code("a") == (3, 4, 2, 2)  # codes 3 and 5 twice each: the smaller one
    assert index.entries_of_word("a").tolist() == [0, 2, 3, 4]
    with pytest.raises(KeyError):
        index.word_code("zzz")


def corpus_of(codes, labels, num_bits):
    n = len(codes)
    return CodesCorpus("q", num_bits, np.asarray(codes, dtype=np.uint64), np.zeros(n, np.int32),
                       np.arange(n, dtype=np.int32), [{"words": ["w"] * n}], {"tag": LabelColumn.from_strings(labels)})


@pytest.mark.parametrize("k", [1, 10, 60])
def test_precision_at_k_against_its_definition(k):
    rng = np.random.default_rng(k)
    num_bits = 6
    database = corpus_of(rng.integers(0, 64, 400), [f"T{i}" for i in rng.integers(0, 4, 400)], num_bits)
    queries = corpus_of(rng.integers(0, 64, 80), [f"T{i}" for i in rng.integers(0, 5, 80)], num_bits)  # T4: unseen
    index = HammingIndex.from_corpus(database)
    db_codes, db_labels = database.codes.tolist(), database.labels["tag"].strings(range(400))
    q_labels = queries.labels["tag"].strings(range(80))
    by_index, by_average = [], []
    for query, label in zip(queries.codes.tolist(), q_labels):
        top, distances = brute_force(db_codes, query, k=k)
        by_index.append(sum(db_labels[i] == label for i in top) / k)
        kth = distances[-1]
        closer = [i for i, c in enumerate(db_codes) if python_distance(c, query) < kth]
        tied = [i for i, c in enumerate(db_codes) if python_distance(c, query) == kth]
        share = sum(db_labels[i] == label for i in tied) / len(tied)
        by_average.append((sum(db_labels[i] == label for i in closer) + (k - len(closer)) * share) / k)
    result = precision_at_k(index, queries, k=k)
    assert result["precision"]["tag"] == pytest.approx(np.mean(by_index))
    assert precision_at_k(index, queries, k=k, ties="average")["precision"]["tag"] == pytest.approx(np.mean(by_average))
    chance = sum(q_labels.count(t) / 80 * db_labels.count(t) / 400 for t in set(q_labels))
    assert result["chance"]["tag"] == pytest.approx(chance)
    assert result["per_label"]["tag"]["T4"][0] == 0.0
    per_label = [np.mean([p for p, y in zip(by_index, q_labels) if y == t]) for t in sorted(set(q_labels))]
    assert result["macro"]["tag"] == pytest.approx(np.mean(per_label))
    assert result["macro_chance"]["tag"] == pytest.approx(np.mean([db_labels.count(t) / 400 for t in set(q_labels)]))


def test_precision_of_codes_that_determine_the_label(ner_codes):
    index = HammingIndex.from_file(str(ner_codes))
    result = precision_at_k(index, read_codes_corpus(str(ner_codes)), k=1, views=["type"])
    assert result["precision"] == {"type": 1.0}  # the nearest word has the same code, and the code fixes the type
    from bitcode_allennlp.bits.precision import format_precision

    text = format_precision({**result, "k": 1, "ties": "index", "queries": 1, "distinct_query_codes": 1,
                             "query_corpus": "q", "database": 1, "database_corpus": "d"})
    gain = 100 * (1.0 - result["chance"]["type"])
    assert f"takeaway: type is {gain:+.2f} points from chance" in text and "share labels more than random" in text
    assert "chance: the same for k database words drawn at random" in text
    with pytest.raises(ValueError, match="label view 'nope'"):
        precision_at_k(index, read_codes_corpus(str(ner_codes)), views=["nope"])

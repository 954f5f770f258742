"""`bits.stats` and `bits.corpus`: the hand-written corpus of conftest.py worked out by hand; mutual information
against the textbook formula and pair agreement against enumerating every pair, on random corpora."""
import itertools
import json
import math
from collections import Counter

import numpy as np
import pytest
import torch

from bitcode_allennlp.bits.corpus import CodesCorpus, LabelColumn, read_codes_corpus
from bitcode_allennlp.common.code_format import hex_to_uint64, pack_bits, uint64_to_hex, unpack_bits
from bitcode_allennlp.bits.stats import code_statistics, floor_bits
from bitcode_allennlp.common.codes import bits_to_ints
from bitcode_allennlp.host.errors import DataFormatError
from tests.bits.conftest import write_lines


def h(*probabilities):
    return -sum(p * math.log2(p) for p in probabilities if p > 0)


def test_hand_written_corpus(ner_codes):
    stats = code_statistics(read_codes_corpus(str(ner_codes)))
    assert (stats["words"], stats["sentences"], stats["num_bits"]) == (6, 2, 4)
    # bits: f=1111, 0=0000, e=1110, 0=0000, c=1100, c=1100
    assert stats["bits"]["p_one"] == pytest.approx([4 / 6, 4 / 6, 2 / 6, 1 / 6])
    assert stats["bits"]["balance"] == pytest.approx([2 / 3, 2 / 3, 2 / 3, 1 / 3])
    assert stats["bits"]["entropy"] == pytest.approx([h(2 / 3, 1 / 3)] * 3 + [h(1 / 6, 5 / 6)])
    matrix = stats["correlation"]["matrix"]
    assert matrix[0][1] == pytest.approx(1.0)  # bits 0 and 1 are equal in every word
    assert matrix[0][2] == pytest.approx(0.5)  # cov = 2/6 - (4/6)(2/6) = 1/9; std = sqrt(2/9) each
    assert stats["correlation"]["max_abs"] == pytest.approx(1.0) and stats["correlation"]["max_abs_pair"] == [0, 1]
    assert stats["distinct_codes"] == 4 and stats["single_word_codes"] == 2  # f and e
    h_code = h(1 / 6, 2 / 6, 1 / 6, 2 / 6)
    assert stats["code_entropy"] == pytest.approx(h_code)

    tag = stats["labels"]["tag"]
    assert (tag["num_labels"], tag["floor_bits"]) == (5, 3)
    # every (code, tag) cell is one word, but for (0, O): H(code, tag) = H(tag), so I = H(code)
    assert tag["label_entropy"] == pytest.approx(h(1 / 6, 2 / 6, 1 / 6, 1 / 6, 1 / 6))
    assert tag["mutual_information"] == pytest.approx(h_code)
    # pairs: 15; same tag: (rejects, call); same code: (rejects, call), (Peter, Smith); both: (rejects, call)
    assert tag["same_label_pairs"] == 1 and tag["diff_label_pairs"] == 14
    assert tag["same_label_same_code"] == pytest.approx(1.0)
    assert tag["diff_label_diff_code"] == pytest.approx(13 / 14)
    assert tag["majority_accuracy"] == pytest.approx(5 / 6)  # code c holds B-PER and L-PER once each

    prefix = stats["labels"]["prefix"]
    assert prefix["labels"] == ["B", "L", "U", "O"] and prefix["counts"] == [1, 1, 2, 2]
    assert prefix["mutual_information"] == pytest.approx(math.log2(3))  # 2 H(code) - H(code, prefix)
    assert prefix["same_label_same_code"] == pytest.approx(1 / 2)  # same prefix: (EU, German), (rejects, call)
    assert prefix["diff_label_diff_code"] == pytest.approx(12 / 13)
    assert prefix["bit_mutual_information"][2] == pytest.approx(h(1 / 3, 2 / 3))  # bit 2 is 1 exactly for U

    types = stats["labels"]["type"]
    assert types["labels"] == ["PER", "MISC", "ORG", "O"]  # by count, O last
    assert (types["num_labels"], types["floor_bits"]) == (4, 2)
    assert types["mutual_information"] == pytest.approx(types["label_entropy"])  # the code determines the type
    assert types["normalized_mutual_information"] == pytest.approx(1.0)
    assert types["same_label_same_code"] == pytest.approx(1.0) and types["diff_label_diff_code"] == pytest.approx(1.0)
    assert types["bit_mutual_information"][3] == pytest.approx(h(1 / 6, 5 / 6))  # bit 3 is 1 only for ORG
    assert types["bit_mutual_information"][0] == pytest.approx(h(2 / 3, 1 / 3))  # bit 0 is 0 only for O
    assert types["p_one_given_label"]["PER"] == [1.0, 1.0, 0.0, 0.0]
    assert types["p_one_given_label"]["O"] == [0.0, 0.0, 0.0, 0.0]
    json.dumps(stats, allow_nan=False)  # strict JSON


def direct_mutual_information(codes, labels):
    n = len(codes)
    joint, by_code, by_label = Counter(zip(codes, labels)), Counter(codes), Counter(labels)
    return sum(c / n * math.log2(c * n / (by_code[x] * by_label[y])) for (x, y), c in joint.items())


def random_corpus(rng, n, num_bits, distinct_codes, num_labels):
    pool = rng.integers(0, 1 << num_bits, distinct_codes, dtype=np.uint64)
    codes = pool[rng.integers(0, distinct_codes, n)]  # (n,)
    labels = [f"L{i}" for i in rng.integers(0, num_labels, n)]
    corpus = CodesCorpus("random", num_bits, codes, np.zeros(n, np.int32), np.arange(n, dtype=np.int32),
                         [{"words": ["w"] * n}], {"tag": LabelColumn.from_strings(labels)})
    return corpus, codes.tolist(), labels


def test_kept_records_are_the_lines_read(ner_codes):
    lines = [json.loads(text) for text in ner_codes.read_text().splitlines() if text.strip()]
    kept = read_codes_corpus(str(ner_codes), keep_records=True)
    assert [sentence["record"] for sentence in kept.sentences] == lines
    assert all("record" not in sentence for sentence in read_codes_corpus(str(ner_codes)).sentences)


@pytest.mark.parametrize("seed", range(4))
def test_mutual_information_and_pairs_against_direct_formulas(seed):
    rng = np.random.default_rng(seed)
    n, num_bits = 150, 6
    corpus, codes, labels = random_corpus(rng, n, num_bits, distinct_codes=12, num_labels=5)
    stats = code_statistics(corpus)["labels"]["tag"]
    assert stats["mutual_information"] == pytest.approx(direct_mutual_information(codes, labels), abs=1e-12)
    for i in range(num_bits):
        bit = [(c >> (num_bits - 1 - i)) & 1 for c in codes]
        assert stats["bit_mutual_information"][i] == pytest.approx(direct_mutual_information(bit, labels), abs=1e-12)
    same_label = both = diff_label = diff_both = 0
    for a, b in itertools.combinations(range(n), 2):
        if labels[a] == labels[b]:
            same_label += 1
            both += codes[a] == codes[b]
        else:
            diff_label += 1
            diff_both += codes[a] != codes[b]
    assert (stats["same_label_pairs"], stats["diff_label_pairs"]) == (same_label, diff_label)
    assert stats["same_label_same_code"] == pytest.approx(both / same_label)
    assert stats["diff_label_diff_code"] == pytest.approx(diff_both / diff_label)
    for label in set(labels):
        rows = [c for c, y in zip(codes, labels) if y == label]
        expected = [sum((c >> (num_bits - 1 - i)) & 1 for c in rows) / len(rows) for i in range(num_bits)]
        assert stats["p_one_given_label"][label] == pytest.approx(expected)


def test_floor_bits():
    assert [floor_bits(n) for n in (1, 2, 3, 4, 5, 73)] == [0, 1, 2, 2, 3, 7]  # paper §6: 73 NER labels → 7 bits


def test_parse_corpus_labels_are_preterminals(parse_codes):
    corpus = read_codes_corpus(str(parse_codes))
    assert list(corpus.labels) == ["tag"]
    assert corpus.labels["tag"].strings(range(4)) == ["DT", "NN", "NNS", "VBP"]
    assert corpus.positions.tolist() == [0, 1, 0, 1] and corpus.sentence_ids.tolist() == [0, 0, 1, 1]


def test_packing_follows_codes_py():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2, (50, 24)).astype(np.uint8)
    packed = pack_bits(bits)
    assert packed.tolist() == bits_to_ints(torch.tensor(bits)).tolist()  # head 0 = most significant bit
    assert (unpack_bits(packed, 24) == bits).all()
    assert hex_to_uint64(uint64_to_hex(packed, 24), 24).tolist() == packed.tolist()
    top = hex_to_uint64(["7fffffffffffffff", "4000000000000000"], 63)  # K = 63, the limit everywhere
    assert top.tolist() == [2 ** 63 - 1, 2 ** 62] and unpack_bits(top, 63)[1].tolist() == [1] + [0] * 62
    with pytest.raises(ValueError, match="num_bits must be an integer in 1\\.\\.63"):
        hex_to_uint64(["ffffffffffffffff"], 64)
    assert uint64_to_hex([5], 10) == ["005"]
    with pytest.raises(ValueError, match="does not fit in 10 bits"):
        hex_to_uint64(["7ff"], 10)


@pytest.mark.parametrize("line, message", [
    ({"codes": ["g"], "num_bits": 4, "tags": ["O"]}, "not a hex code"),
    ({"codes": ["fff"], "num_bits": 10, "tags": ["O"]}, "codes of 10 bits after lines of 4 bits"),
    ({"codes": ["f"], "num_bits": 4}, "some lines have gold tags"),
    ({"codes": ["f", "0"], "num_bits": 4, "tags": ["O"]}, '"tags" must be a list of 2'),
    ({"codes": ["f"], "num_bits": 4, "tree": "(S (NN x))", "words": ["y"]}, "words of"),
])
def test_bad_lines_name_file_and_line(tmp_path, line, message):
    path = write_lines(tmp_path / "bad.jsonl", [{"codes": ["a"], "num_bits": 4, "tags": ["O"]}, line])
    with pytest.raises(DataFormatError, match=message) as error:
        read_codes_corpus(str(path))
    assert error.value.line == 2

"""`bits.explain` and the prose of `allennlp bits stats`: the labels each bit is 1 and 0 on, their shares and parts of
I(bit; label) against counting word by word, the ranking of the bits, and the text of a corpus where one bit marks
one label exactly."""
import json
import math
import subprocess
import sys
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from bitcode_allennlp.bits.corpus import CodesCorpus, read_codes_corpus
from bitcode_allennlp.bits.explain import check_request, format_explanation, marked_label
from bitcode_allennlp.bits.stats import code_statistics, format_statistics
from tests.bits.conftest import write_lines
from tests.bits.test_stats import direct_mutual_information, random_corpus
from tests.conftest import ROOT, run_cli


def naive_meaning(bit, labels):
    """Per label, counted word by word: (side, share, part of I(bit; label)) with side +1 / -1 / 0, the part as
    sum over b of P(l, b) log2(P(b | l) / P(b))."""
    n = len(bit)
    ones = sum(bit)
    per_label = {}
    for label, count in Counter(labels).items():
        mine = [b for b, y in zip(bit, labels) if y == label]
        q = Fraction(sum(mine), count)
        side = (q > Fraction(ones, n)) - (q < Fraction(ones, n))
        part = sum(mine.count(b) / n * math.log2((mine.count(b) / count) / (bit.count(b) / n))
                   for b in (0, 1) if mine.count(b))
        per_label[label] = (side, float(q if side > 0 else 1 - q), part)
    return per_label


@pytest.mark.parametrize("seed", range(4))
def test_meanings_and_ranking_against_counting_word_by_word(seed):
    rng = np.random.default_rng(seed)
    num_bits = 6
    corpus, codes, labels = random_corpus(rng, 120, num_bits, distinct_codes=10, num_labels=4)
    stats = code_statistics(corpus)["labels"]["tag"]
    information = []
    for i in range(num_bits):
        bit = [(c >> (num_bits - 1 - i)) & 1 for c in codes]
        information.append(direct_mutual_information(bit, labels))
        expected = naive_meaning(bit, labels)
        meaning = stats["bit_meaning"][i]
        for key, side in (("one", 1), ("zero", -1)):
            entries = meaning[key]
            assert {e["label"] for e in entries} == {label for label, v in expected.items() if v[0] == side}
            assert [e["information"] for e in entries] == sorted((e["information"] for e in entries), reverse=True)
            for e in entries:
                assert e["share"] == pytest.approx(expected[e["label"]][1], abs=1e-12)
                assert e["information"] == pytest.approx(expected[e["label"]][2], abs=1e-12)
        parts = sum(e["information"] for e in meaning["one"] + meaning["zero"])
        assert parts == pytest.approx(information[i], abs=1e-12)  # the parts add up to I(bit; label)
    assert stats["bit_ranking"] == sorted(range(num_bits), key=lambda i: (-round(information[i], 12), i))


MARKED = ["A", "A", "B", "B", "B", "C", "C", "C"]
# bit 0: noise, bit 1: 1 exactly on A, bit 2: constant 0
MARKED_BITS = [[1, 1, 0], [0, 1, 0], [1, 0, 0], [0, 0, 0], [0, 0, 0], [1, 0, 0], [0, 0, 0], [1, 0, 0]]


def marked_corpus(tmp_path):
    codes = [f"{(b0 << 3) | (b1 << 2) | (b2 << 1):x}" for b0, b1, b2 in MARKED_BITS]  # K = 4, bit 3 always 0
    line = {"words": [f"w{i}" for i in range(8)], "codes": codes, "num_bits": 4, "tags": MARKED}
    return write_lines(tmp_path / "marked.jsonl", [line])


def test_one_bit_marks_one_label(tmp_path):
    stats = code_statistics(read_codes_corpus(str(marked_corpus(tmp_path))))
    tag = stats["labels"]["tag"]
    assert tag["bit_ranking"] == [1, 0, 2, 3]
    one, zero = tag["bit_meaning"][1]["one"], tag["bit_meaning"][1]["zero"]
    assert [(e["label"], e["share"]) for e in one] == [("A", 1.0)]
    assert [(e["label"], e["share"]) for e in zero] == [("B", 1.0), ("C", 1.0)]  # equal parts: by label order
    assert one[0]["information"] == pytest.approx(2 / 8 * math.log2(4))  # (n_A / N) KL(1 || 1/4)
    assert zero[0]["information"] == pytest.approx(3 / 8 * math.log2(4 / 3))
    assert marked_label(tag["bit_meaning"][1], 3) == ("A", 1) and marked_label(tag["bit_meaning"][0], 3) is None
    assert tag["bit_meaning"][2] == {"one": [], "zero": []}  # a constant bit is on no side
    text = format_explanation(stats)
    h_bit = -(0.25 * math.log2(0.25) + 0.75 * math.log2(0.75))
    h_tag = -(0.25 * math.log2(0.25) + 2 * 0.375 * math.log2(0.375))
    assert f"| 1 | 1 | {h_bit:.4f} | {h_bit / h_tag:.3f} | 0.250 | A 100% | B 100%, C 100% |" in text
    assert "| 3 | 2 | 0.0000 | 0.000 | 0.000 | - | - |" in text
    assert f"takeaway: bit 1 tells the most about tag ({h_bit:.3f} of H(tag) = {h_tag:.3f} bits): 1 on A 100%, 0 on " \
           "B 100%; bit 1 is 1 exactly on A; bits carrying under 1% of H(tag): 2, 3." in " ".join(text.splitlines())
    only = format_explanation(stats, bits=[0])
    assert "| 2 | 0 |" in only and "| 1 | 1 |" not in only and "takeaway: of the bits asked, bit 0" in only


def test_the_hand_written_corpus(ner_codes):
    stats = code_statistics(read_codes_corpus(str(ner_codes)))
    prefix, types = stats["labels"]["prefix"], stats["labels"]["type"]
    assert marked_label(prefix["bit_meaning"][2], 4) == ("U", 1)  # bit 2 is 1 exactly for U
    assert marked_label(types["bit_meaning"][3], 4) == ("ORG", 1)  # bit 3 is 1 only for ORG (EU)
    assert marked_label(types["bit_meaning"][0], 4) == ("O", 0)  # bit 0 is 0 only for O
    assert [e["label"] for e in types["bit_meaning"][2]["one"]] == ["MISC", "ORG"]  # 1 on e and f
    text = format_statistics(stats)
    assert "What each bit says about type" in text  # NER: the entity types by default
    assert "bits by I(bit; prefix), most first: " in text
    assert "takeaway, type: the code gives 100.0% of H(type); majority acc. 100.0%, vs 33.3% labelling every word " \
           "PER." in " ".join(text.splitlines())
    assert "near-copies (abs corr >= 0.9): 0 and 1 (1.00)." in " ".join(text.splitlines())
    assert "caution: 33.3% of the words have a code no other word has" in text  # f and e
    json.dumps(stats, allow_nan=False)


def test_parse_corpus_is_explained_by_its_pos_tags(parse_codes):
    stats = code_statistics(read_codes_corpus(str(parse_codes)))
    text = format_statistics(stats, bits=[0, 3])
    assert "What each bit says about tag" in text and "bits by I(bit; tag), most first" in text
    with pytest.raises(ValueError, match="--label-view type: .* has the label views tag"):
        check_request(stats, "type", None)
    with pytest.raises(ValueError, match="--bits: 4 not a bit of K = 4"):
        check_request(stats, None, [0, 4])


def test_without_labels_there_is_nothing_to_explain():
    corpus = CodesCorpus("plain", 3, np.array([1, 2, 2], np.uint64), np.zeros(3, np.int32),
                         np.arange(3, dtype=np.int32), [{"words": ["a", "b", "c"]}], {})
    stats = code_statistics(corpus)
    assert "What each bit says" not in format_statistics(stats) and format_explanation(stats) == ""
    with pytest.raises(ValueError, match="no labels"):
        check_request(stats, "tag", None)


def test_the_command(tmp_path, ner_codes):
    out = run_cli(["bits", "stats", ner_codes, "--label-view", "prefix", "--bits", "2"]).stdout
    assert "| 3 | 2 | 0.9183 |" in out  # bits 0, 1 and 2 tell as much: ranked by bit
    assert "| U 100% | O 100%, B 100%, L 100% |" in out  # O has 2 words: the larger part
    assert "bit 2 is 1 exactly on U" in out
    bad = subprocess.run([sys.executable, "-m", "allennlp", "bits", "stats", str(ner_codes), "--bits", "9"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert bad.returncode == 1 and "--bits: 9 not a bit of K = 4 (0..3)" in bad.stderr

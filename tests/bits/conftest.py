"""A hand-written codes corpus (K = 4, six words, BIOUL NER tags) whose statistics are worked out by hand in
test_stats.py, and a two-line parsing corpus."""
import json

import pytest

# word   code  bits   tag      prefix  type
# EU     f     1111   U-ORG    U       ORG
# rejects 0    0000   O        O       O
# German e     1110   U-MISC   U       MISC
# call   0     0000   O        O       O
# Peter  c     1100   B-PER    B       PER
# Smith  c     1100   L-PER    L       PER
NER_LINES = [
    {"words": ["EU", "rejects", "German", "call"], "codes": ["f", "0", "e", "0"], "num_bits": 4,
     "tags": ["U-ORG", "O", "U-MISC", "O"], "source": "hand:1"},
    {"words": ["Peter", "Smith"], "codes": ["c", "c"], "num_bits": 4, "tags": ["B-PER", "L-PER"], "source": "hand:2"},
]
PARSE_LINES = [
    {"words": ["The", "cat"], "codes": ["3", "a"], "num_bits": 4, "tree": "(TOP (S (NP (DT The) (NN cat))))"},
    {"words": ["Cats", "sleep"], "codes": ["a", "5"], "num_bits": 4, "tree": "(S (NP (NNS Cats)) (VP (VBP sleep)))"},
]


def write_lines(path, lines):
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def ner_codes(tmp_path):
    return write_lines(tmp_path / "ner.jsonl", NER_LINES)


@pytest.fixture
def parse_codes(tmp_path):
    return write_lines(tmp_path / "parse.jsonl", PARSE_LINES)

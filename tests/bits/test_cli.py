"""`allennlp bits ...` in a fresh process (~9 s each, mostly importing AllenNLP), one test per sub-command; outputs
checked against the Python API."""
import json

import numpy as np

from bitcode_allennlp.bits.corpus import read_codes_corpus
from bitcode_allennlp.bits.index import HammingIndex, precision_at_k
from bitcode_allennlp.bits.stats import code_statistics
from tests.conftest import FIXTURES, run_cli

TRAIN = FIXTURES / "data" / "codes" / "ner.train.jsonl"
DEV = FIXTURES / "data" / "codes" / "ner.dev.jsonl"


def test_registered():
    from allennlp.commands.subcommand import Subcommand

    import bitcode_allennlp.plugin  # noqa: F401

    assert Subcommand.resolve_class_name("bits")[0].__module__ == "bitcode_allennlp.bits.command"


def test_stats(ner_codes, tmp_path):
    result = run_cli(["bits", "stats", ner_codes, "--json", tmp_path / "stats.json"])
    written = json.loads((tmp_path / "stats.json").read_text())
    assert written == json.loads(json.dumps(code_statistics(read_codes_corpus(str(ner_codes)))))
    assert "| type | 4 | 2 | 1.918 | 1.918 | 1.000 |" in result.stdout


def test_heatmap(tmp_path):
    result = run_cli(["bits", "heatmap", TRAIN, "--out", tmp_path / "fig.png", "--by", "type"])
    assert (tmp_path / "fig.png").read_bytes()[:4] == b"\x89PNG"
    panels = json.loads((tmp_path / "fig.json").read_text())["panels"]
    assert [panel["view"] for panel in panels] == ["type"] and panels[0]["labels"][-1] == "O"
    assert "fig.png" in result.stdout


def test_diff_of_two_corpus_lines(ner_codes, tmp_path):
    result = run_cli(["bits", "diff", "--codes", ner_codes, "--lines", "1", "2", "--words", "0", "1",
                      "--html", tmp_path / "diff.html"])
    # EU = f = 1111, Smith = c = 1100
    assert "line 1: [EU] rejects German call" in result.stdout
    assert "2 bits differ: 2 3" in result.stdout and "\x1b" not in result.stdout  # not a terminal: no colour
    assert (tmp_path / "diff.html").read_text().count('<span class="b" title="bit') == 2


def test_index(tmp_path):
    result = run_cli(["bits", "index", TRAIN, "--out", tmp_path / "index"])
    loaded = HammingIndex.load(str(tmp_path / "index"))
    assert np.array_equal(loaded.codes, HammingIndex.from_file(str(TRAIN)).codes) and len(loaded) == 691
    assert "691 words of 44 sentences, K = 24, label views: tag, prefix, type; index type flat (FAISS " \
        "IndexBinaryFlat, exact)" in result.stdout
    assert loaded.index_type == "flat" and len(loaded.search_index) == 691


def test_search(tmp_path):
    HammingIndex.from_file(str(TRAIN)).save(str(tmp_path / "index"))  # flat FAISS index
    result = run_cli(["bits", "search", tmp_path / "index", "--word", "Frodo", "--k", "4", "--json",
                      tmp_path / "hits.json"])
    index = HammingIndex.from_file(str(TRAIN), "numpy")
    top, distances = index.search(index.word_code("Frodo")[0], 4)  # the numpy scan's answer
    hits = json.loads((tmp_path / "hits.json").read_text())["hits"]
    assert [hit["index"] for hit in hits] == top[0].tolist()
    assert [hit["distance"] for hit in hits] == distances[0].tolist()
    assert "| 1 | 0 | 7bc5eb | Frodo | B-PERSON | B | PERSON | [Frodo] Baggins left" in result.stdout


def test_multihash_index_and_radius_search(tmp_path):
    result = run_cli(["bits", "index", TRAIN, "--out", tmp_path / "index", "--index-type", "multihash",
                      "--hash-tables", "3", "--hash-bits", "8"])
    assert "index type multihash (FAISS IndexBinaryMultiHash, hash_tables 3, hash_bits 8, exact)" in result.stdout
    hits = {}
    for flags in ([], ["--numpy-scan"]):
        output = run_cli(["bits", "search", tmp_path / "index", "--code", "7bc5eb", "--radius", "9", "--json",
                          tmp_path / "hits.json"] + flags).stdout
        hits[tuple(flags)] = json.loads((tmp_path / "hits.json").read_text())["hits"]
        assert ("index type numpy" if flags else "index type multihash") in output
    index = HammingIndex.from_file(str(TRAIN), "numpy")
    found, distances = index.radius(0x7BC5EB, 9)
    assert hits[()] == hits[("--numpy-scan",)] == index.hits(found[:100], distances[:100]) and len(found) > 1


def test_precision(tmp_path):
    result = run_cli(["bits", "precision", "--database", TRAIN, "--queries", DEV, "--k", "20", "--ties", "average",
                      "--json", tmp_path / "p.json"])
    expected = precision_at_k(HammingIndex.from_file(str(TRAIN), "numpy"), read_codes_corpus(str(DEV)), k=20,
                              ties="average")  # the numpy scan; the command builds a flat FAISS index
    written = json.loads((tmp_path / "p.json").read_text())
    assert written["precision"] == expected["precision"] and written["queries"] == 319
    assert f"| type | {100 * expected['precision']['type']:.2f} |" in result.stdout


def test_every_sub_command_help_is_clean():
    """No `==SUPPRESS==` (argparse's marker for an option without a default) in any `allennlp bits X --help`."""
    import subprocess
    import sys

    for command in ("stats", "heatmap", "diff", "index", "search", "precision", "probe", "explore", "table",
                    "package"):
        result = subprocess.run([sys.executable, "-m", "allennlp", "bits", command, "--help"], capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 0 and "usage:" in result.stdout, result.stderr
        assert "SUPPRESS" not in result.stdout, command

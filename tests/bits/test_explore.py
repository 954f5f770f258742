"""`allennlp bits explore` without a browser: the data files the page reads, and the command's checks.
(The page itself, in headless Chromium: tests/bits/test_explorer_browser.py.)"""
import base64
import json
import re

import numpy as np
import pytest

from bitcode_allennlp.bits.corpus import read_codes_corpus
from bitcode_allennlp.bits.explore import SHARD_SENTENCES, build_explorer, check_index
from bitcode_allennlp.bits.heatmap import FEW_WORDS
from bitcode_allennlp.bits.index import index_corpus
from bitcode_allennlp.bits.light import is_light
from bitcode_allennlp.bits.stats import code_statistics
from bitcode_allennlp.common.code_format import hex_to_uint64
from bitcode_allennlp.host.errors import DataFormatError
from tests.conftest import FIXTURES, run_cli

CODES = FIXTURES / "data" / "codes"


def read_script(path, name):
    text = path.read_text(encoding="utf-8")
    match = re.fullmatch(r'BitcodeData\.put\("([^"]+)", (.*)\);\n', text, re.DOTALL)
    assert match and match.group(1) == name
    return json.loads(match.group(2))


def column(value, dtype):
    return np.frombuffer(base64.b64decode(value), dtype=np.dtype(dtype).newbyteorder("<"))


@pytest.mark.parametrize("task", ["ner", "pos", "parse"])
def test_the_data_files_hold_the_corpus(task, tmp_path):
    codes_file = CODES / f"{task}.train.jsonl"
    meta = build_explorer(str(codes_file), str(tmp_path / "explorer"))
    corpus = read_codes_corpus(str(codes_file))
    data = tmp_path / "explorer" / "data"
    assert read_script(data / "meta.js", "meta") == meta
    assert meta["task"] == ("parser" if task == "parse" else "tags") and meta["words"] == len(corpus)
    assert meta["few_words"] == FEW_WORDS  # the page fades a label of fewer words, as `bits heatmap` does
    stats = code_statistics(corpus)
    for view, numbers in meta["views"].items():  # the bit view's counts are those of `bits stats`
        counts = dict(zip(stats["labels"][view]["labels"], stats["labels"][view]["counts"]))
        assert dict(zip(numbers["labels"], numbers["counts"])) == counts
    entries = read_script(data / "entries.js", "entries")
    packed = (column(entries["hi"], "u4").astype(np.uint64) << np.uint64(32)) | column(entries["lo"], "u4")
    assert np.array_equal(packed, corpus.codes)
    words = [entries["vocabulary"][i] for i in column(entries["word"], "u4")]
    assert words == [corpus.word(i) for i in range(len(corpus))]
    starts = column(entries["starts"], "u4")
    assert starts[-1] == len(corpus) and len(starts) == len(corpus.sentences) + 1
    lines = [json.loads(line) for line in codes_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    shards = sorted(data.glob("sentences/*.js"))
    assert len(shards) == meta["shards"] == -(-len(lines) // SHARD_SENTENCES)
    first = read_script(data / "sentences" / "0.js", "sentences/0")
    assert [s["w"] for s in first] == [line["words"] for line in lines[:SHARD_SENTENCES]]
    assert all(np.array_equal(hex_to_uint64(s["c"], meta["num_bits"]), hex_to_uint64(line["codes"], 24))
               for s, line in zip(first, lines))
    assert ("tree" in first[0]) == (task == "parse")
    for asset in ("index.html", "explorer.js", "explorer.css"):
        assert (tmp_path / "explorer" / asset).is_file()


def test_bit_counts_per_label(tmp_path):
    meta = build_explorer(str(CODES / "pos.dev.jsonl"), str(tmp_path / "x"))
    corpus = read_codes_corpus(str(CODES / "pos.dev.jsonl"))
    view = meta["views"]["tag"]
    bits = ((corpus.codes[:, None] >> np.arange(23, -1, -1, dtype=np.uint64)) & np.uint64(1)).astype(int)  # (n, K)
    for label, ones in zip(view["labels"], view["ones"]):
        mask = np.array(corpus.labels["tag"].strings(range(len(corpus)))) == label
        assert ones == bits[mask].sum(axis=0).tolist()


def test_an_index_of_another_corpus_is_refused(tmp_path):
    meta = build_explorer(str(CODES / "ner.dev.jsonl"), str(tmp_path / "x"))
    index_corpus(str(CODES / "ner.dev.jsonl"), str(tmp_path / "same"))
    check_index(str(tmp_path / "same"), meta)
    index_corpus(str(CODES / "ner.train.jsonl"), str(tmp_path / "other"))
    with pytest.raises(DataFormatError, match="not the index of this corpus"):
        check_index(str(tmp_path / "other"), meta)


def test_the_command_is_light_without_serve_and_checks_its_arguments(tmp_path):
    assert is_light(["bits", "explore", "c.jsonl", "--out", "x"])
    assert not is_light(["bits", "explore", "c.jsonl", "--out", "x", "--archive", "m.tar.gz", "--serve"])
    result = run_cli(["bits", "explore", CODES / "ner.dev.jsonl", "--out", tmp_path / "x"])
    assert f"open {tmp_path / 'x' / 'index.html'} in a browser" in result.stdout  # the path as given
    assert "(2 sentences" in result.stdout or " sentences, " in result.stdout
    assert (tmp_path / "x" / "data" / "meta.js").is_file()
    import subprocess
    import sys

    bad = subprocess.run([sys.executable, "-m", "allennlp", "bits", "explore", str(CODES / "ner.dev.jsonl"), "--out",
                          str(tmp_path / "y"), "--serve"], capture_output=True, text=True)
    assert bad.returncode == 1 and "--serve needs --archive" in bad.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    command = [sys.executable, "-m", "allennlp", "bits", "explore", str(empty), "--out", str(tmp_path / "z")]
    bad = subprocess.run(command, capture_output=True, text=True)
    assert bad.returncode == 1 and "empty.jsonl: empty codes file" in bad.stderr and "Traceback" not in bad.stderr


def test_the_server_answers_encode_diff_and_refuses_bad_requests(ner_hash_archive, tmp_path):
    import threading
    import urllib.error
    import urllib.request

    from bitcode_allennlp.bits.explore_server import make_server

    build_explorer(str(CODES / "ner.dev.jsonl"), str(tmp_path / "x"))
    server = make_server(str(tmp_path / "x"), ner_hash_archive, port=0, threads=1)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"

    def post(path, body, content_type="application/json", **headers):
        request = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": content_type, **headers})
        with urllib.request.urlopen(request) as answer:
            return json.loads(answer.read())

    try:
        model = server.RequestHandlerClass.func.model
        with urllib.request.urlopen(base + "/api/info") as answer:
            assert json.loads(answer.read()) == {"archive": model.archive, "task": "ner", "num_bits": 24}
        with urllib.request.urlopen(base + "/index.html") as answer:
            assert b"bitcode explorer" in answer.read()
        sentences = ["Obama visits Berlin", ["Rain", "in", "Leeds"]]
        encoded = post("/api/encode", {"sentences": sentences})
        assert encoded["predictions"] == [e.to_dict() for e in model.encode(sentences)]
        diff = post("/api/diff", {"a": "I love Paris", "b": "I love Paris Hilton"})
        assert [pair[:2] for pair in diff["pairs"]] == [[0, 0], [1, 1], [2, 2], [None, 3]]
        for path, body, status, headers in (
                ("/api/encode", {"sentences": []}, 400, {}), ("/api/encode", {}, 400, {}),
                ("/api/encode", {"sentences": ["ok", 3]}, 400, {}), ("/api/diff", {"a": "x", "b": ["y"]}, 400, {}),
                ("/api/nothing", {}, 404, {}),
                ("/api/encode", {"sentences": ["x"]}, 415, {"content_type": "text/plain"}),
                ("/api/encode", {"sentences": ["x"]}, 403, {"Origin": "http://evil.example"}),
                ("/api/encode", {"sentences": ["x"]}, 421, {"Host": "evil.example"})):
            with pytest.raises(urllib.error.HTTPError) as error:
                post(path, body, **headers)
            assert error.value.code == status and "error" in json.loads(error.value.read())
        for path in ("/data/", "/../README.md", "/api/encode"):  # no listing, no file outside, no GET of the encoder
            with pytest.raises(urllib.error.HTTPError) as error:
                urllib.request.urlopen(base + path)
            assert error.value.code in (404, 405)
    finally:
        server.shutdown()
        server.server_close()

"""`make demo` (bitcode_allennlp/demo.py) end to end on the tiny fixture transformer, and its BTC sample."""
import json
import re
import subprocess
import sys

import pytest
import torch

from bitcode_allennlp.data.dataset_readers.conll_columns import ConllColumnsDatasetReader
from bitcode_allennlp.demo import OUTPUTS, SAMPLE, columns, main, query_word, remove_outputs
from tests.data.helpers import read, shared

SENTENCES = ["RT @BBCNews: Obama visits Berlin today", "Rain again in Leeds"]


def sample_tags(path):
    """The tags of a column file (last column of each non-blank line), and its sentences."""
    lines = path.read_text(encoding="utf-8").split("\n")
    tags = [line.split("\t")[-1] for line in lines if line != ""]
    return tags, sum(1 for i, line in enumerate(lines) if line == "" and i > 0 and lines[i - 1] != "")


@pytest.mark.parametrize("name, sentences", [("btc_train.conll", 900), ("btc_dev.conll", 100)])
def test_sample_parses_with_the_reader(name, sentences):
    path = SAMPLE / name
    tags, blocks = sample_tags(path)
    assert blocks == sentences
    read_back = read(ConllColumnsDatasetReader(token_policy="repair"), path)
    assert len(read_back) == sentences  # no sentence is only empty tokens
    # BIOUL from IOB2: one B- or U- per entity of the file, every entity a PER, ORG or LOC
    bioul = [tag for _, tags_, _ in read_back for tag in tags_]
    assert sum(tag[:1] in "BU" for tag in bioul) == sum(tag.startswith("B-") for tag in tags) > 0
    assert {tag[2:] for tag in bioul if tag != "O"} == {"PER", "ORG", "LOC"}
    assert "Attribution 4.0 International (CC BY 4.0)" in (SAMPLE / "BTC_LICENSE.txt").read_text()


def test_sample_is_the_stated_stride_of_the_corpus(tmp_path):
    shared("ner/btc/btc.train.conll")
    subprocess.run([sys.executable, str(SAMPLE / "make_sample.py"), "--out", str(tmp_path)], check=True,
                   capture_output=True)
    for name in ("btc_train.conll", "btc_dev.conll", "BTC_LICENSE.txt", "BTC_PROVENANCE.txt"):
        assert (tmp_path / name).read_bytes() == (SAMPLE / name).read_bytes(), name
    # train sentence 8 (1-based) is the sample's second: the stride starts at the first sentence
    corpus = shared("ner/btc/btc.train.conll").read_text(encoding="utf-8").split("\n\n")
    assert (SAMPLE / "btc_train.conll").read_text(encoding="utf-8").split("\n\n")[1] == corpus[7]


def test_demo_end_to_end_on_the_tiny_transformer(tmp_path, capsys, monkeypatch):
    import bitcode_allennlp.demo as demo

    monkeypatch.setattr(demo, "TICK", 0.2)  # a progress line every 0.2 s of silence while training
    threads = torch.get_num_threads()
    out = tmp_path / "demo"
    (out / "model").mkdir(parents=True)
    (out / "model" / "stale.th").write_text("from an earlier run")  # removed: the demo retrains into model/
    (out / "notes.txt").write_text("mine")  # not the demo's: kept
    try:
        result = main(["--out", str(out), "--plm", "tiny-bert", "--epochs", "1", "--threads", "1",
                       "--sentences", *SENTENCES])
    finally:
        torch.set_num_threads(threads)
    printed = capsys.readouterr().out
    assert (out / "notes.txt").read_text() == "mine" and not (out / "model" / "stale.th").exists()
    assert (out / "model" / "model.tar.gz").is_file() and (out / "model" / "best.th").is_file()
    assert not list((out / "model").glob("*_state_e*.th")) and "per-epoch checkpoints removed (" in printed
    assert "epoch  1/1  dev span F1" in printed
    assert re.search(r"^  epoch 1/1: (starting|batch \d+/\d+)", printed, re.M), printed  # while training
    # predict: one prediction per sentence, one 24-bit code per word, printed as aligned rows
    predictions = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert predictions == result["predictions"] and len(predictions) == len(SENTENCES)
    assert predictions[0]["words"] == ["RT", "@BBCNews", ":", "Obama", "visits", "Berlin", "today"]
    for prediction in predictions:
        assert len(prediction["codes"]) == len(prediction["tags"]) == len(prediction["words"])
        assert all(len(code) == 6 and int(code, 16) < 2 ** 24 for code in prediction["codes"])
        for line in columns([prediction["words"], prediction["tags"], prediction["codes"]]):
            assert "    " + line in printed
    # hash-corpus: the whole train and dev samples, the words and tags the reader gives
    for split in ("train", "dev"):
        codes = [json.loads(line) for line in (out / "codes" / f"{split}.jsonl").read_text().splitlines()]
        gold = read(ConllColumnsDatasetReader(token_policy="repair"), SAMPLE / f"btc_{split}.conll")
        assert [c["words"] for c in codes] == [words for words, _, _ in gold]
        assert [c["tags"] for c in codes] == [tags for _, tags, _ in gold]
    assert result["codes"] == str(out / "codes" / "dev.jsonl")
    # search: the query is a predicted code, the hits the 10 nearest dev words by exact Hamming distance
    search = result["search"]
    assert (search["word"], search["code"]) == query_word(predictions)
    query = int(search["code"], 16)
    distances = sorted(bin(query ^ int(code, 16)).count("1") for c in codes for code in c["codes"])
    hits = search["hits"]
    assert [hit["distance"] for hit in hits] == distances[:10]
    dev_pairs = {(w, code) for c in codes for w, code in zip(c["words"], c["codes"])}
    for hit in hits:
        assert bin(query ^ int(hit["code"], 16)).count("1") == hit["distance"]
        assert (hit["word"], hit["code"]) in dev_pairs
        assert f"| {hit['distance']} | {hit['code']} | {hit['word']} |" in printed
    assert f"--code {search['code']} --k 10" in printed
    # the explorer of the dev codes, and how to open it
    explorer = out / "explorer"
    assert result["explorer"] == str(explorer) and (explorer / "data" / "meta.js").is_file()
    assert f"open {(explorer / 'index.html').resolve().as_uri()} in a browser" in printed

    # A second run with the same settings reuses the model, codes and index: new sentences, nothing trained
    archive_time = (out / "model" / "model.tar.gz").stat().st_mtime_ns
    try:
        again = main(["--out", str(out), "--plm", "tiny-bert", "--epochs", "1", "--threads", "1",
                      "--sentences", "Messi joins Inter Miami"])
    finally:
        torch.set_num_threads(threads)
    printed = capsys.readouterr().out
    assert "reuse the model, codes and index of an earlier run" in printed and "dev span F1" not in printed
    assert (out / "model" / "model.tar.gz").stat().st_mtime_ns == archive_time
    assert [p["words"] for p in again["predictions"]] == [["Messi", "joins", "Inter", "Miami"]]
    assert again["search"]["hits"] and (out / "codes" / "dev.jsonl").is_file()
    # other settings (or --retrain) train again
    try:
        main(["--out", str(out), "--plm", "tiny-bert", "--epochs", "1", "--threads", "1", "--retrain",
              "--sentences", "Messi joins Inter Miami"])
    finally:
        torch.set_num_threads(threads)
    assert "epoch  1/1  dev span F1" in capsys.readouterr().out
    assert (out / "model" / "model.tar.gz").stat().st_mtime_ns != archive_time


def test_query_word_prefers_a_person():
    def prediction(words, entities):
        return {"words": words, "codes": [f"{i:06x}" for i in range(len(words))], "entities": entities}

    org = prediction(["BBC", "news"], [{"label": "ORG", "start": 0, "end": 1}])
    per = prediction(["meet", "Ed", "Sheeran"], [{"label": "PER", "start": 1, "end": 3}])
    assert query_word([org, per]) == ("Ed", "000001")
    assert query_word([org]) == ("BBC", "000000")
    assert query_word([prediction([], []), prediction(["rain"], [])]) == ("rain", "000000")


def test_columns_align_and_wrap():
    rows = [["Obama", "visits", "Berlin"], ["U-PER", "O", "U-LOC"], ["ffdfdf", "166590", "829742"]]
    assert columns(rows) == ["Obama   visits  Berlin", "U-PER   O       U-LOC", "ffdfdf  166590  829742"]
    assert columns(rows, width=16) == ["Obama   visits", "U-PER   O", "ffdfdf  166590", "",
                                       "Berlin", "U-LOC", "829742"]


def test_remove_outputs_removes_only_what_the_demo_writes(tmp_path):
    for name in OUTPUTS:
        path = tmp_path / name
        if "." in name:
            path.write_text("x")
        else:
            (path / "sub").mkdir(parents=True)
    (tmp_path / "other.jsonl").write_text("kept")
    remove_outputs(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.jsonl"]


def test_wrong_plm_and_arguments_are_clear_errors(tmp_path, capsys):
    with pytest.raises(SystemExit, match=f"--plm {tmp_path / 'nope'}: .* is not a directory"):
        main(["--out", str(tmp_path), "--plm", str(tmp_path / "nope")])
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path), "--epochs", "0"])
    assert "--epochs must be at least 1, got 0" in capsys.readouterr().err
    for item in ("EPOCHS=3", "TRAIN_DATA=x.conll", "BETTA=0.1", "BETA"):
        with pytest.raises(SystemExit):
            main(["--out", str(tmp_path), "--set", "CODE_HEAD=0", item])
        assert f"--set {item!r}: not VAR=VALUE with VAR a config variable other than READER" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing written

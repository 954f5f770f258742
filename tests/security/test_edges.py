"""Edge cases of a hostile review, each a one-line error naming the file, the line (and field) or a documented
behaviour, never a traceback and never silent wrong output:

1. invalid UTF-8 in a codes file (`allennlp bits ...`, the `binary_codes` reader);
2. `CodeModel.encode` given something that is not a sentence (a dict, a number, None, a list with a non-string);
3. a word with a trailing NUL in the explorer (numpy's fixed-width strings dropped it, merging two words);
4. a sentence of 20,000 words in the explorer (the data keeps every word; the page's layout is bounded: the browser
   test is in tests/bits/test_explorer_browser.py);
5. a `PLM` folder that is not a Hugging Face model folder (`allennlp train`).
"""
import base64
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from bitcode_allennlp.bits.corpus import LabelColumn, distinct_strings, read_codes_corpus
from bitcode_allennlp.host.errors import DataFormatError
from tests.conftest import CONFIGS, ROOT, TINY_BERT

BAD_BYTE = b"\xff"


def allennlp(*args, cwd=None, env=None, timeout=300):
    """`allennlp ARGS` in a fresh process; the CompletedProcess whatever its exit status."""
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "allennlp", *map(str, args)], cwd=cwd or ROOT, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def assert_one_line_error(result, *needles):
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1, result.stderr[-3000:]
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])
    return errors[0]


def codes_line(words, codes=None, **extra):
    return json.dumps({"words": words, "codes": codes or ["00a3ff"] * len(words), "num_bits": 24, **extra},
                      ensure_ascii=False)


# ------------------------------------------------------------------------------------------------ 1. invalid UTF-8
@pytest.fixture
def bad_utf8(tmp_path):
    """A codes file whose line 2 holds a byte that is not UTF-8 (the 13th byte of the line, inside a word)."""
    path = tmp_path / "bad.jsonl"
    second = codes_line(["b"]).encode()
    at = second.index(b'"b"') + 2  # after `"b`: 0-based position of the bad byte
    path.write_bytes(codes_line(["a"]).encode() + b"\n" + second[:at] + BAD_BYTE + second[at:] + b"\n"
                     + codes_line(["c"]).encode() + b"\n")
    return path, at + 1


def test_invalid_utf8_is_a_data_format_error_naming_its_line_and_byte(bad_utf8):
    path, byte = bad_utf8
    with pytest.raises(DataFormatError) as caught:
        read_codes_corpus(str(path))
    assert caught.value.path == str(path) and caught.value.line == 2
    assert caught.value.message.startswith(f"invalid UTF-8 (byte {byte} of the line")
    assert read_codes_corpus(str(path), max_sentences=1).sentences[0]["words"] == ["a"]  # line 2 is never read


def test_a_codes_file_with_a_bom_and_crlf_is_read_and_lines_are_counted_on_lf(tmp_path):
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + codes_line(["a"]).encode() + b"\r\n\r\n" + codes_line(["b"]).encode() + b"\r\n")
    corpus = read_codes_corpus(str(path))
    assert [s["words"] for s in corpus.sentences] == [["a"], ["b"]]
    assert [s["line"] for s in corpus.sentences] == [1, 3]


@pytest.mark.parametrize("command", [["stats", "{bad}"], ["explore", "{bad}", "--out", "{tmp}/explorer"],
                                     ["index", "{bad}", "--out", "{tmp}/index"],
                                     ["probe", "--train", "{bad}", "--dev", "{bad}"]])
def test_allennlp_bits_reports_invalid_utf8_in_one_line(bad_utf8, tmp_path, command):
    path, byte = bad_utf8
    args = [part.format(bad=path.name, tmp=tmp_path) for part in command]
    result = allennlp("bits", *args, cwd=path.parent)
    assert_one_line_error(result, "bad.jsonl, line 2: ", f"invalid UTF-8 (byte {byte} of the line")
    assert not (tmp_path / "explorer").exists() and not (tmp_path / "index").exists()  # nothing written


def test_the_binary_codes_reader_reports_invalid_utf8_with_its_line(bad_utf8):
    from bitcode_allennlp.code_stage.binary_codes_reader import BinaryCodesDatasetReader

    path, byte = bad_utf8
    with pytest.raises(DataFormatError) as caught:
        list(BinaryCodesDatasetReader(num_bits=24).read(str(path)))
    assert caught.value.line == 2 and str(caught.value).startswith(f"{path}, line 2: invalid UTF-8 (byte {byte} ")
    instances = list(BinaryCodesDatasetReader(num_bits=24, skip_invalid=True).read(str(path)))
    assert [instance["metadata"]["words"] for instance in instances] == [["a"], ["c"]]  # the rest is kept


# ------------------------------------------------------------------------------------------------ 2. encode's input
@pytest.fixture(scope="module")
def ner_model(ner_hash_archive):
    import bitcode_allennlp

    return bitcode_allennlp.load(ner_hash_archive, threads=1)


@pytest.fixture
def model_calls(ner_model, monkeypatch):
    """The batches `encode` sends to the predictor (the model calls)."""
    calls = []
    original = ner_model.predictor.predict_batch_json

    def counted(batch):
        calls.append(list(batch))
        return original(batch)

    monkeypatch.setattr(ner_model.predictor, "predict_batch_json", counted)
    return calls


@pytest.mark.parametrize("sentences, message", [
    ([{"sentence": "Obama visits Berlin"}],
     'sentence 0 is a dict; give a string or a list of words (encode_json takes {"sentence": ...} dicts)'),
    (["Obama visits Berlin", 7], "sentence 1 is an int; give a string or a list of words"),
    (["fine", "fine", None], "sentence 2 is None; give a string or a list of words"),
    ([b"Obama visits"], "sentence 0 is a bytes; give a string or a list of words"),
    ([["Obama", 3, "Berlin"]], "sentence 0, word 1 is an int (3); a sentence's words are strings"),
    ((["Obama"], ("Obama", None)), "sentence 1, word 1 is None (None); a sentence's words are strings"),
])
def test_encode_refuses_what_is_not_a_sentence_before_any_model_call(ner_model, model_calls, sentences, message):
    with pytest.raises(TypeError) as caught:
        ner_model.encode(sentences)
    assert str(caught.value) == message
    assert model_calls == []


def test_encode_names_the_sentence_the_predictor_refuses_before_any_model_call(ner_model, model_calls):
    with pytest.raises(ValueError, match=r"^sentence 1: \"tokens\"\[1\] '' is empty$"):
        ner_model.encode([["fine"], ["fine", ""]])
    assert model_calls == []


@pytest.mark.parametrize("texts, got", [({"sentence": "Obama visits Berlin"}, "a dict"), (7, "an int"),
                                        (None, "None"), ({"Obama", "Berlin"}, "a set"), (b"Obama", "a bytes")])
def test_encode_refuses_texts_that_are_not_sentences(ner_model, model_calls, texts, got):
    with pytest.raises(TypeError, match=f"^encode takes a string, or a list, tuple or other ordered iterable of "
                                        f"sentences; got {got} "):
        ner_model.encode(texts)
    assert model_calls == []


def test_a_stream_is_checked_batch_by_batch_and_names_the_sentence(ner_model, model_calls):
    def sentences():
        yield from ["Obama visits Berlin", "Rain in Leeds", ["Rain", "in", "Leeds"], "fine", {"sentence": "no"}]

    stream = ner_model.encode(sentences(), batch_size=3)
    first = [next(stream) for _ in range(3)]
    assert [e.words for e in first][1:] == [["Rain", "in", "Leeds"]] * 2 and len(model_calls) == 1
    with pytest.raises(TypeError, match=r"^sentence 4 is a dict; give a string or a list of words"):
        next(stream)
    assert len(model_calls) == 1  # the batch holding the bad sentence never reached the model


def test_strings_lists_and_tuples_still_encode_alike(ner_model):
    one, words, words_tuple = ner_model.encode(["Obama visits Berlin", ["Obama", "visits", "Berlin"],
                                                ("Obama", "visits", "Berlin")])
    assert one.words == words.words == words_tuple.words == ["Obama", "visits", "Berlin"]
    assert one.codes == words.codes == words_tuple.codes
    assert ner_model.encode(("Obama visits Berlin",))[0].codes == one.codes


# ------------------------------------------------------------------------------------------------ 3. trailing NUL
def read_script(path, name):
    text = path.read_text(encoding="utf-8")
    match = re.fullmatch(r'BitcodeData\.put\("([^"]+)", (.*)\);\n', text, re.DOTALL)
    assert match and match.group(1) == name
    return json.loads(match.group(2))


def test_distinct_strings_keep_trailing_nuls():
    names, ids = distinct_strings(["Paris\x00", "Paris", "Paris\x00\x00", "Paris", "\x00", ""])
    assert names == ["", "\x00", "Paris", "Paris\x00", "Paris\x00\x00"]
    assert ids.tolist() == [3, 2, 4, 2, 1, 0]
    assert np.asarray(["Paris\x00"], dtype=object).astype(str)[0] == "Paris"  # why: numpy's strings drop them
    column = LabelColumn.from_strings(["B-LOC", "B-LOC\x00", "O"])
    assert column.names == ["B-LOC", "B-LOC\x00", "O"] and column.strings([0, 1, 2]) == ["B-LOC", "B-LOC\x00", "O"]


def test_the_explorer_keeps_a_word_with_a_trailing_nul_apart(tmp_path):
    from bitcode_allennlp.bits.explore import build_explorer

    path = tmp_path / "nul.jsonl"
    path.write_text(codes_line(["Paris", "Paris\x00", "Paris"], ["00000a", "00000b", "00000a"],
                               tags=["U-LOC", "U-LOC\x00", "U-LOC"]) + "\n", encoding="utf-8")
    meta = build_explorer(str(path), str(tmp_path / "out"))
    entries = read_script(tmp_path / "out" / "data" / "entries.js", "entries")
    assert entries["vocabulary"] == ["Paris", "Paris\x00"] and meta["vocabulary"] == 2
    word_ids = np.frombuffer(base64.b64decode(entries["word"]), dtype="<u4")
    assert [entries["vocabulary"][i] for i in word_ids] == ["Paris", "Paris\x00", "Paris"]
    sentences = read_script(tmp_path / "out" / "data" / "sentences" / "0.js", "sentences/0")
    assert sentences[0]["w"] == ["Paris", "Paris\x00", "Paris"]
    assert meta["views"]["tag"]["labels"] == ["U-LOC", "U-LOC\x00"] and meta["views"]["tag"]["counts"] == [2, 1]


# ------------------------------------------------------------------------------------------------ 4. long sentences
def test_the_explorer_keeps_every_word_of_a_long_sentence(tmp_path):
    from bitcode_allennlp.bits.explore import build_explorer

    words = [f"w{i}" for i in range(20_000)]
    path = tmp_path / "long.jsonl"
    path.write_text(codes_line(words, [format(i, "06x") for i in range(20_000)]) + "\n" + codes_line(["short"]) + "\n")
    meta = build_explorer(str(path), str(tmp_path / "out"))
    assert meta["words"] == 20_001 and meta["vocabulary"] == 20_001
    sentences = read_script(tmp_path / "out" / "data" / "sentences" / "0.js", "sentences/0")
    assert sentences[0]["w"] == words and len(sentences[0]["c"]) == 20_000  # search and neighbours see them all


def test_the_page_bounds_what_it_lays_out_of_one_sentence():
    script = (ROOT / "bitcode_allennlp" / "bits" / "explorer" / "explorer.js").read_text(encoding="utf-8")
    assert re.search(r"^const MAX_SENTENCE_WORDS = 500;", script, re.MULTILINE)
    assert re.search(r"^const MAX_TREE_WORDS = 500;", script, re.MULTILINE)


# ------------------------------------------------------------------------------------------------ 5. the PLM folder
def folder_with(tmp_path, name, config=None, files=()):
    folder = tmp_path / name
    folder.mkdir()
    if config is not None:
        (folder / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    for file in files:
        (folder / file).write_text("{}")
    return folder


@pytest.mark.parametrize("name, config, files, why", [
    ("foo", {"foo": 1}, (), 'its config.json has no "model_type"'),
    ("null_type", {"model_type": None}, (), 'its config.json has no "model_type" (got None)'),
    ("unknown", {"model_type": "no-such-model"}, (), 'its config.json has "model_type": "no-such-model", which '
                                                     "transformers "),
    ("not_json", "{model_type: bert", (), "its config.json is not JSON ("),
    ("a_list", [1, 2], (), "its config.json is not a JSON object (got list)"),
    ("tokenizer_only", None, ("tokenizer_config.json", "tokenizer.json"),
     "it has no config.json (tokenizer files alone are not a model)"),
    ("empty", None, (), "it has no config.json"),
])
def test_a_folder_that_is_not_a_model_is_refused_in_one_line(tmp_path, name, config, files, why):
    from allennlp.common.checks import ConfigurationError

    from bitcode_allennlp.plm import check_plm_folder

    folder = folder_with(tmp_path, name, config, files)
    with pytest.raises(ConfigurationError) as caught:
        check_plm_folder(str(folder))
    assert str(caught.value).startswith(f"{folder}: not a Hugging Face model folder: {why}")
    assert "\n" not in str(caught.value)


def test_model_folders_and_hub_names_pass_and_missing_paths_do_not(tmp_path):
    from allennlp.common.checks import ConfigurationError

    from bitcode_allennlp.plm import check_plm_folder

    check_plm_folder(str(TINY_BERT))
    check_plm_folder("bert-base-cased")  # a hub name: left to transformers (its cache, or the network)
    check_plm_folder(str(folder_with(tmp_path, "custom", {"model_type": "mine", "auto_map": {}})))  # own code
    with pytest.raises(ConfigurationError, match=f"^{re.escape(str(tmp_path / 'nope'))}: no such PLM folder$"):
        check_plm_folder(str(tmp_path / "nope"))
    (tmp_path / "file").write_text("{}")
    with pytest.raises(ConfigurationError, match="not a Hugging Face model folder: it is a file"):
        check_plm_folder(str(tmp_path / "file"))


def test_the_indexer_and_the_embedders_check_the_folder_before_transformers(tmp_path):
    from allennlp.common.checks import ConfigurationError

    from bitcode_allennlp.data.token_indexers.plm_words import PlmWordsIndexer
    from bitcode_allennlp.modules.frozen_plm import FrozenPlmWordsEmbedder
    from bitcode_allennlp.modules.plm_words_embedder import PlmWordsEmbedder

    folder = str(folder_with(tmp_path, "foo", {"foo": 1}))
    for make in (PlmWordsIndexer, PlmWordsEmbedder, FrozenPlmWordsEmbedder):
        with pytest.raises(ConfigurationError, match=f'^{re.escape(folder)}: not a Hugging Face model folder: its '
                                                     f'config.json has no "model_type"$'):
            make(folder)


def test_a_folder_without_weights_or_tokenizer_is_one_line_naming_it(tmp_path):
    import shutil

    from allennlp.common.checks import ConfigurationError

    from bitcode_allennlp.data.token_indexers.plm_words import load_tokenizer
    from bitcode_allennlp.modules.plm_words_embedder import PlmWordsEmbedder

    no_tokenizer = folder_with(tmp_path, "config_only", {"model_type": "bert"})
    with pytest.raises(ConfigurationError, match=f"^{re.escape(str(no_tokenizer))}: transformers cannot read its "
                                                 "tokenizer "):
        load_tokenizer(str(no_tokenizer))
    no_weights = tmp_path / "no_weights"
    shutil.copytree(TINY_BERT, no_weights, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    with pytest.raises(ConfigurationError, match=f"^{re.escape(str(no_weights))}: transformers cannot read its "
                                                 r"weights \(OSError: "):
        PlmWordsEmbedder(str(no_weights))


def test_allennlp_train_with_a_plm_that_is_not_a_model_folder_is_one_line(tmp_path):
    folder = folder_with(tmp_path, "x", {"foo": 1})
    result = allennlp("train", CONFIGS / "ner_hash.jsonnet", "-s", tmp_path / "run", cwd=tmp_path,
                      env={"PLM": str(folder), "EPOCHS": "1"})
    assert_one_line_error(result, f'{folder}: not a Hugging Face model folder: its config.json has no "model_type"')

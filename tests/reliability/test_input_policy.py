"""The input boundary (`bitcode_allennlp/common/text_checks.py`), through the real commands: words with no word
piece get codes (alone, in a batch, with --skip-bad-lines, in spaCy); text that is not valid Unicode and sentences
over the length limits are refused with the file and line before any tensor is built; labels the model never saw
are named with their sentence's file and line at `allennlp evaluate` (a new phrase label is an EVALB miss)."""
import json
import logging
import re

import pytest
import spacy

from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.common.text_checks import length_problem, unicode_problem
from bitcode_allennlp.data.dataset_readers import ConllColumnsDatasetReader
from bitcode_allennlp.parsing.dataset_readers.ptb_spans import PtbSpansDatasetReader
from tests.conftest import FIXTURES, allennlp_in_process

NER_DEV = FIXTURES / "data" / "conll2012" / "development"
PARSE_DEV = FIXTURES / "data" / "ptb" / "craft_dev.tree"


@pytest.fixture
def ner_archive(ner_hash_archive):
    return ner_hash_archive


@pytest.fixture
def parse_archive(parse_hash_archive):
    return parse_hash_archive


def predict(archive, tmp_path, lines, *options):
    source, target = tmp_path / "input.jsonl", tmp_path / "output.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")  # \ud800 as an escape
    allennlp_in_process("predict", archive, source, "--output-file", target, "--silent", *options)
    return [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]


ZERO_PIECES = ["\u200b", "\u200d", "\u0007"]  # no word piece under the tiny BERT's normalizer


@pytest.mark.parametrize("options", [(), ("--skip-bad-lines",), ("--batch-size", "3")])
def test_words_with_no_piece_get_codes(ner_archive, tmp_path, options):
    lines = [{"tokens": ZERO_PIECES}, {"tokens": ["Obama", "\u200b", "visits"]}, {"tokens": ["\u200d"]}]
    outputs = predict(ner_archive, tmp_path, lines, *options)
    assert [len(output["codes"]) for output in outputs] == [3, 3, 1]


def test_words_with_no_piece_in_spacy(ner_archive):
    nlp = spacy.blank("en")
    nlp.add_pipe("bitcode_ner", config={"archive": str(ner_archive)})
    doc = nlp("\u200b \u200d\u0007 Obama")
    assert all(token._.bitcode is not None for token in doc if not token.is_space)


BAD_LINES = [  # (input line, what the error says)
    ({"tokens": ["Obama", "a\ud800"]}, r'"tokens"\[1\] is not valid Unicode: a lone surrogate \\ud800 at character 1'),
    ({"sentence": "x \udfff"}, r'"sentence" is not valid Unicode: a lone surrogate \\udfff at character 2'),
    ({"tokens": ["w"] * 2001}, r'"tokens": a sentence of 2,001 words is over the limit of 2,000'),
    ({"sentence": "w " * 2001}, r'"sentence": a sentence of 2,001 words is over the limit of 2,000'),
    ({"sentence": "w" * 1_000_001}, r'"sentence" has 1,000,001 characters, over the limit of 1,000,000'),
]


@pytest.mark.parametrize("line, message", BAD_LINES)
def test_bad_lines_are_refused_with_file_and_line(ner_archive, tmp_path, line, message):
    good = {"tokens": ["Obama", "visits"]}
    with pytest.raises(DataFormatError, match=r"input\.jsonl, line 2: " + message):
        predict(ner_archive, tmp_path, [good, line, good])
    assert not (tmp_path / "output.jsonl").exists() or not (tmp_path / "output.jsonl").read_text()
    outputs = predict(ner_archive, tmp_path, [good, line, good], "--skip-bad-lines")  # the others are predicted
    assert [output["words"] for output in outputs] == [good["tokens"]] * 2


def test_the_predictor_in_python_raises_value_error(ner_archive):
    from allennlp.predictors import Predictor

    predictor = Predictor.from_path(str(ner_archive))
    with pytest.raises(ValueError, match="lone surrogate"):
        predictor.predict_json({"tokens": ["\ud800"]})
    with pytest.raises(ValueError, match="over the limit of 2,000"):
        predictor.predict_batch_json([{"tokens": ["w"] * 2500}])


def test_readers_refuse_a_sentence_over_max_words_before_any_tensor(tmp_path):
    path = tmp_path / "long.conll"
    path.write_text("a\tO\nb\tO\n\n" + "w\tO\n" * 7 + "\nc\tO\n", encoding="utf-8")
    reader = ConllColumnsDatasetReader(max_words=5)
    with pytest.raises(DataFormatError, match=re.escape(f"{path}, line 4: a sentence of 7 words is over the "
                                                        "limit of 5")):
        list(reader.read(str(path)))
    assert [len(i["tokens"]) for i in ConllColumnsDatasetReader(max_words=5, skip_invalid=True).read(str(path))] \
        == [2, 1]
    assert ConllColumnsDatasetReader().max_words == 2000 and PtbSpansDatasetReader().max_words == 2000
    trees = tmp_path / "long.tree"
    trees.write_text("(S (NN a) (NN b))\n(S " + "(NN w) " * 4 + ")\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=re.escape(f"{trees}, line 2: a sentence of 4 words")):
        list(PtbSpansDatasetReader(max_words=3).read(str(trees)))


def test_text_checks():
    assert unicode_problem("naïve 😀 \u200b") is None and length_problem(5, None) is None
    assert unicode_problem("ab\udc80") == "is not valid Unicode: a lone surrogate \\udc80 at character 2"
    assert length_problem(3, 3) is None and "4 words is over the limit of 3" in length_problem(4, 3)


def test_evaluate_names_an_unseen_tag_with_its_file_and_line(ner_archive, tmp_path):
    text = (next(NER_DEV.rglob("*gold_conll"))).read_text(encoding="utf-8")
    line = next(i for i, row in enumerate(text.split("\n"), 1) if "(ORG)" in row)
    dev = tmp_path / "new_type.gold_conll"
    dev.write_text(text.replace("(ORG)", "(XYZ)", 1), encoding="utf-8")
    with pytest.raises(DataFormatError) as caught:
        allennlp_in_process("evaluate", ner_archive, dev, "--output-file", tmp_path / "metrics.json")
    message = str(caught.value)
    assert message.startswith(f"{dev}, line ") and "tags 'U-XYZ' is not a label of the model" in message
    sentence_start = int(message.split("line ")[1].split(":")[0])
    assert sentence_start <= line


def test_evaluate_counts_an_unseen_phrase_label_as_a_miss(parse_archive, tmp_path, caplog):
    original = tmp_path / "dev.tree"
    original.write_text(PARSE_DEV.read_text(encoding="utf-8"), encoding="utf-8")
    changed = tmp_path / "new_label.tree"
    changed.write_text(original.read_text(encoding="utf-8").replace("(NP ", "(QQQ ", 1), encoding="utf-8")
    scores = {}
    for path in (original, changed):
        with caplog.at_level(logging.WARNING):
            allennlp_in_process("evaluate", parse_archive, path, "--output-file", tmp_path / f"{path.stem}.json")
        scores[path.stem] = json.loads((tmp_path / f"{path.stem}.json").read_text())["evalb_f1"]
    assert re.search(r"span label '[^']*QQQ' is not one of the model's: the loss reads it as '[^']*\|<>', EVALB "
                     "counts its bracket as a miss", caplog.text)
    assert scores["new_label"] <= scores["dev"]


def test_sentence_and_tokens_in_one_line_are_refused(ner_archive, tmp_path):
    with pytest.raises(DataFormatError, match=r'input\.jsonl, line 1: give either "sentence" \(raw text\) or '
                                              r'"tokens" \(its words\), not both'):
        predict(ner_archive, tmp_path, [{"sentence": "a b", "tokens": ["a", "b"]}])


def test_probe_warns_when_dev_labels_never_occur_in_train(tmp_path, caplog):
    from bitcode_allennlp.bits.corpus import read_codes_corpus
    from bitcode_allennlp.bits.probe import probe_codes

    codes = FIXTURES / "data" / "codes" / "ner.train.jsonl"
    lines = codes.read_text(encoding="utf-8").splitlines()
    dev = tmp_path / "dev.jsonl"
    renamed = [json.loads(line) for line in lines[:5]]
    for record in renamed:
        record["tags"] = ["U-NEW"] * len(record["tags"])
    dev.write_text("".join(json.dumps(record) + "\n" for record in renamed), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        probe_codes(read_codes_corpus(str(codes)), read_codes_corpus(str(dev)), epochs=1, min_steps=1)
    assert "have a tag label that no train word has (U-NEW): no probe can get them right; no dev label occurs " \
           "in train" in caplog.text

"""The readers on the real corpora in ``<repo>/../shared/data``: counts, hand-checked sentences, and the two BTC
versions (CoNLL-2003 columns and CoNLL-2012) giving the same sentences."""
import logging

import pytest

from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.data.dataset_readers import (
    ConllColumnsDatasetReader,
    ConlluPosDatasetReader,
    OntonotesHashDatasetReader,
    PtbHashDatasetReader,
)
from tests.data.helpers import read, shared

# The CoNLL-2012 release of BTC writes standalone brackets as PTB escapes; nothing else differs.
PTB_ESCAPES = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}


def test_btc_train_columns_with_token_repair():
    path = shared("ner/btc/btc.train.conll")
    with pytest.raises(DataFormatError) as info:
        read(ConllColumnsDatasetReader(), path)
    assert (info.value.line, info.value.message) == (
        52661, "token '\U0001f494 ' contains whitespace (token_policy='repair' fixes this)")
    sentences = read(ConllColumnsDatasetReader(token_policy="repair"), path)
    assert len(sentences) == 6338
    assert sentences[0] == ("I hate the words chunder , vomit and puke . BUUH .".split(), ["O"] * 12, f"{path}:1")
    blink = next(s for s in sentences if s[2] == f"{path}:119")
    assert blink[:2] == ("middle aged man band playing blink 182 . l0 l .".split(),
                         ["O"] * 5 + ["B-ORG", "I-ORG", "L-ORG"] + ["O"] * 3)
    repaired = next(s for s in sentences if s[2].endswith(":52653"))  # tokens ending with a space, stripped
    assert repaired[0][-4:] == ["\U0001f494", "MH17", "PrayForMH17", "ttp://t.co/sGX65yebKk"]


def test_btc_dev_columns_empty_tokens_are_dropped_by_token_repair(caplog):
    path = shared("ner/btc/btc.dev.conll")
    with pytest.raises(DataFormatError) as info:
        read(ConllColumnsDatasetReader(), path)
    assert (info.value.line, info.value.message) == (7465, "token '' is empty (token_policy='repair' drops it)")
    with caplog.at_level(logging.WARNING):
        sentences = read(ConllColumnsDatasetReader(token_policy="repair"), path)
    assert len(sentences) == 1000
    assert f"{path}:15426: sentence dropped, it has only empty tokens (token_policy='repair')" in caplog.text
    # Lines 15428 ('') and 15435 (' ') are dropped, the tokens with a space get '_'.
    words = next(words for words, _, source in sentences if source == f"{path}:15428")
    assert words == ["ke_s", "re_y", "u_R", "AD_t", "e..", ".", "h", "tp://t.co/p317FyKXfF"]


@pytest.mark.parametrize("columns, conll2012, count", [
    ("ner/btc/btc.train.conll", "ner/btc/conll2012/train/btc_train.gold_conll", 6338),
    ("ner/btc/btc.dev.conll", "ner/btc/conll2012/development/btc_dev.gold_conll", 1000),
])
def test_btc_columns_and_conll2012_agree(columns, conll2012, count):
    from_columns = read(ConllColumnsDatasetReader(token_policy="repair"), shared(columns))
    from_conll2012 = read(OntonotesHashDatasetReader(), shared(conll2012))
    assert len(from_columns) == len(from_conll2012) == count  # dev: one sentence of empty tokens is dropped
    for (words, tags, _), (words2012, tags2012, _) in zip(from_columns, from_conll2012):
        assert words == [PTB_ESCAPES.get(word, word) for word in words2012]
        assert tags == tags2012


def test_btc_conll2012_directory_and_first_entities():
    root = shared("ner/btc/conll2012")
    sentences = read(OntonotesHashDatasetReader(), root)
    assert len(sentences) == 6338 + 1000  # development/ before train/
    path = root / "train" / "btc_train.gold_conll"
    first = next(s for s in sentences if s[2] == f"{path}:2")
    assert first[0] == "I hate the words chunder , vomit and puke . BUUH .".split()
    blink = next(s for s in sentences if s[2] == f"{path}:120")
    assert blink[1][5:8] == ["B-ORG", "I-ORG", "L-ORG"]
    second = next(s for s in sentences if s[2] == f"{path}:15")
    assert second[0][:6] == ["\u2665", ".", ".", "-RRB-", "-RRB-", "-LRB-"]


def test_ewt_dev_xpos_and_upos():
    path = shared("pos/ud_english_ewt/en_ewt-ud-dev.conllu")
    sentences = read(ConlluPosDatasetReader(), path)
    assert len(sentences) == 2001
    assert sentences[0] == ("From the AP comes this story :".split(), "IN DT NNP VBZ DT NN :".split(), f"{path}:1")
    upos = read(ConlluPosDatasetReader(tag="upos", max_instances=1), path)
    assert upos[0][1] == "ADP DET PROPN VERB DET NOUN PUNCT".split()
    # Line 158 is the multiword token "didn't" (29-30): its syntactic words are read instead.
    didnt = next(s for s in sentences if s[2] == f"{path}:128")
    assert didnt[0][28:30] == ["did", "n't"] and didnt[1][28:30] == ["VBD", "RB"]


def test_craft_dev_trees():
    path = shared("const/craft/craft-dev.tree")
    with pytest.raises(DataFormatError) as info:
        read(PtbHashDatasetReader(), path)
    assert (info.value.line, info.value.message) == (
        405, "token 'Bmp7\\u2009' contains whitespace (token_policy='repair' fixes this)")
    sentences = read(PtbHashDatasetReader(token_policy="repair"), path)
    assert len(sentences) == 2780
    assert all(source == f"{path}:{number}" for number, (_, _, source) in enumerate(sentences, 1))


def test_craft_train_first_trees():
    path = shared("const/craft/craft-train.tree")
    sentences = read(PtbHashDatasetReader(max_instances=4), path)
    assert sentences[0][:2] == (
        "Intraocular pressure in genetically distinct mice : an update and strain survey".split(),
        "JJ NN IN RB JJ NNS : DT NN CC NN NN".split(),
    )
    assert sentences[1][:2] == (["Abstract"], ["NN"])
    # (NP-1 (-NONE- *)) is removed; -LRB- / -RRB- are kept verbatim.
    assert sentences[3][:2] == (
        "Little is known about genetic factors affecting intraocular pressure -LRB- IOP -RRB- in mice and other "
        "mammals .".split(),
        "JJ VBZ VBN IN JJ NNS VBG JJ NN -LRB- NN -RRB- IN NNS CC JJ NNS .".split(),
    )

"""The readers on the repository's data fixtures (``fixtures/data``), with hand-checked tokens and tags."""
from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.data.dataset_readers import (
    ConllColumnsDatasetReader,
    ConlluPosDatasetReader,
    OntonotesHashDatasetReader,
    PtbHashDatasetReader,
)
from bitcode_allennlp.data.dataset_readers.ptb_trees import read_trees
from bitcode_allennlp.structs.trees import clean_tree, tree_to_string
from tests.data.helpers import FIXTURE_DATA, fixture, read, read_error

ANNOTATIONS = "data/english/annotations"


def pairs(sentence):
    words, tags, _ = sentence
    return list(zip(words, tags))


def test_hand_written_mrg():
    path = fixture("ptb/hand_written.mrg")
    sentences = read(PtbHashDatasetReader(), path)
    assert [source for _, _, source in sentences] == [f"{path}:{n}" for n in (1, 21, 33, 50, 67, 70, 78)]
    words = [" ".join(w) for w, _, _ in sentences]
    assert words == [
        "`` The ring that glowed was heavy , '' Sam said .",  # -NONE- *T*-2, 0 and *T*-1 removed
        "Hobbits like to eat mushrooms in the Shire .",  # (TOP ...)
        "Merry bought apples in Bree , and Pippin pears in Hobbiton .",  # (ROOT ...)
        "The wizard -LRB- an old friend -RRB- arrived late , paying $ 5 for the cart .",  # *U* removed
        "Gandalf",
        "Go home , Sam !",
        "What did the dwarves find ?",
    ]
    assert sentences[0][1] == ["``", "DT", "NN", "WDT", "VBD", "VBD", "JJ", ",", "''", "NNP", "VBD", "."]
    assert sentences[3][1][2:7] == ["-LRB-", "DT", "JJ", "NN", "-RRB-"]
    assert sentences[5][1] == ["VB", "RB", ",", "NNP", "."]


def test_hand_written_mrg_cleaned_trees():
    path = fixture("ptb/hand_written.mrg")
    trees = [clean_tree(str(path), 1, tree) for tree, _ in read_trees(path)]
    assert tree_to_string(trees[0]) == (
        "(S (`` ``) (S (NP (NP (DT The) (NN ring)) (SBAR (WHNP (WDT that)) (S (VP (VBD glowed))))) "
        "(VP (VBD was) (ADJP (JJ heavy)))) (, ,) ('' '') (NP (NNP Sam)) (VP (VBD said)) (. .))"
    )
    assert tree_to_string(trees[2]) == (
        "(S (S (NP (NNP Merry)) (VP (VBD bought) (NP (NNS apples)) (PP (IN in) (NP (NNP Bree))))) (, ,) (CC and) "
        "(S (NP (NNP Pippin)) (NP (NNS pears)) (PP (IN in) (NP (NNP Hobbiton)))) (. .))"
    )
    assert tree_to_string(trees[4]) == "(FRAG (NP (NNP Gandalf)))"
    assert tree_to_string(trees[5]).startswith("(S (VP (VB Go) (ADVP (RB home))) (, ,) (NP (NNP Sam))")


def test_craft_samples():
    train = read(PtbHashDatasetReader(), fixture("ptb/craft_train.tree"))
    assert len(train) == 60
    assert pairs(train[0])[:6] == [("Intraocular", "JJ"), ("pressure", "NN"), ("in", "IN"),
                                   ("genetically", "RB"), ("distinct", "JJ"), ("mice", "NNS")]
    dev = read(PtbHashDatasetReader(), fixture("ptb/craft_dev.tree"))
    assert len(dev) == 25
    assert dev[0][0][:5] == ["Genetic", "Analysis", "of", "the", "Roles"]
    assert dev[1][:2] == (["Abstract"], ["NN"])
    assert dev[2][:2] == (
        ["Bone", "morphogenetic", "protein", "-LRB-", "BMP", "-RRB-"] + dev[2][0][6:],
        ["NN", "JJ", "NN", "-LRB-", "NN", "-RRB-"] + dev[2][1][6:],
    )


def test_conll2012_directory_tree():
    root = fixture("conll2012/train")
    hand = str(root / ANNOTATIONS / "nw/hand/00/hand_0001.gold_conll")
    sentences = read(OntonotesHashDatasetReader(), root)
    assert len(sentences) == 44  # nw/hand (4) before tw/btc (2 x 20)
    assert sentences[0] == (
        ["Frodo", "Baggins", "left", "the", "Shire", "on", "Monday", "."],
        ["B-PERSON", "L-PERSON", "O", "O", "U-GPE", "O", "U-DATE", "O"], f"{hand}:2")
    assert pairs(sentences[1])[3:9] == [("Fellowship", "B-ORG"), ("of", "I-ORG"), ("the", "I-ORG"),
                                        ("Ring", "L-ORG"), ("in", "O"), ("Rivendell", "U-GPE")]
    # Two predicate columns (14 columns) and a second part of the document.
    assert sentences[2][1] == ["U-PERSON", "O", "U-PERSON"] + ["O"] * 7
    assert sentences[3][2] == f"{hand}:35"
    assert sentences[3][1][4:6] == ["B-LOC", "L-LOC"]
    assert sentences[4][0] == "I hate the words chunder , vomit and puke . BUUH .".split()
    assert [s[2] for s in read(OntonotesHashDatasetReader(domain_identifier="nw"), root)] == [
        f"{hand}:{n}" for n in (2, 11, 22, 35)]
    assert len(read(OntonotesHashDatasetReader(domain_identifier="tw"), root)) == 40
    dev = read(OntonotesHashDatasetReader(coding_scheme="BIO"), fixture("conll2012/development"))
    assert pairs(dev[0])[:9] == [("RT", "O"), ("@", "B-ORG"), ("SportsCenter", "B-ORG"), (":", "O"),
                                 ("76ers", "B-ORG"), ("to", "O"), ("retire", "O"), ("Allen", "B-PER"),
                                 ("Iverson", "I-PER")]


def test_conll2003_btc_samples_agree_with_conll2012_samples():
    columns = read(ConllColumnsDatasetReader(), fixture("conll2003/btc_train.conll"))
    assert len(columns) == 60
    assert columns[0][0] == "I hate the words chunder , vomit and puke . BUUH .".split()
    btc_files = sorted((FIXTURE_DATA / "conll2012/train" / ANNOTATIONS / "tw/btc/00").glob("*.gold_conll"))
    conll2012 = [s for path in btc_files for s in read(OntonotesHashDatasetReader(), path)]
    escapes = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}
    assert len(conll2012) == 40
    # btc_0000 holds corpus sentences 0-19, btc_0001 sentences 50-69 (50 sentences per document).
    for (words, tags, _), (words2012, tags2012, _) in zip(columns[:20] + columns[50:], conll2012):
        assert (words, tags) == ([escapes.get(w, w) for w in words2012], tags2012)


def test_conll2003_edge_cases():
    path = fixture("conll2003/edge_cases.conll")
    error = read_error(ConllColumnsDatasetReader(), path)
    assert (error.path, error.line) == (str(path), 9)
    assert error.message == "token '\U0001f494 ' contains whitespace (token_policy='repair' fixes this)"
    sentences = read(ConllColumnsDatasetReader(token_policy="repair"), path)
    assert [s[2] for s in sentences] == [f"{path}:{n}" for n in (1, 14, 35, 76)]  # line 74: only an empty token
    assert sentences[0][0][-4:] == ["\U0001f494", "MH17", "PrayForMH17", "ttp://t.co/sGX65yebKk"]
    assert pairs(sentences[1])[10:12] == [("in", "O"), ("#dungarvan", "U-LOC")]
    assert pairs(sentences[1])[-2:] == [("@", "U-PER"), ("Johndelx", "U-PER")]  # B-PER B-PER: two entities
    assert sentences[2][0][-3:] == ["\U0001f1eb\U0001f1f7", "\U0001f499", "\U0001f499"]  # line 72 dropped
    assert sentences[3][0] == ["ke_s", "re_y", "u_R", "AD_t", "e..", ".", "h", "tp://t.co/p317FyKXfF"]


def test_conllu_samples_and_edge_cases():
    train = read(ConlluPosDatasetReader(), fixture("conllu/ewt_train.conllu"))
    assert len(train) == 60
    assert pairs(train[0])[:4] == [("Al", "NNP"), ("-", "HYPH"), ("Zaman", "NNP"), (":", ":")]
    path = fixture("conllu/edge_cases.conllu")
    edge = read(ConlluPosDatasetReader(), path)
    assert [s[2] for s in edge] == [f"{path}:{n}" for n in (1, 40, 57)]
    assert pairs(edge[0])[17:21] == [("I", "PRP"), ("do", "VBP"), ("n't", "RB"), ("find", "VB")]  # 19-20 don't
    assert edge[1][0] == "Over 300 Iraqis are reported dead and 500 wounded in Fallujah alone .".split()  # 8.1 out
    assert pairs(edge[2])[20:24] == [("John", "NNP"), ("'s", "POS"), ("name", "NN"), ("(", "-LRB-")]
    upos = read(ConlluPosDatasetReader(tag="upos"), path)
    assert upos[1][1][:3] == ["ADV", "NUM", "PROPN"]


def test_fixtures_raise_no_error_with_strict_defaults():
    for reader, relative in [(PtbHashDatasetReader(), "ptb"), (ConlluPosDatasetReader(), "conllu/ewt_dev.conllu"),
                             (ConllColumnsDatasetReader(), "conll2003/btc_dev.conll")]:
        path = fixture(relative)
        for file in sorted(path.glob("*.tree")) if path.is_dir() else [path]:
            try:
                assert read(reader, file)
            except DataFormatError as error:  # pragma: no cover - shows which fixture broke
                raise AssertionError(str(error)) from error

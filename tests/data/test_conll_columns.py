import logging

import pytest
from allennlp.common.checks import ConfigurationError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.data.dataset_readers.conll_columns import ConllColumnsDatasetReader
from tests.data.helpers import fixture, read, read_error, write

GOOD = "EU\tB-ORG\nrejects\tO\nGerman\tB-MISC\ncall\tO\n\nPeter\tB-PER\nBlackburn\tI-PER\n"


def test_reads_words_and_bioul_tags(tmp_path):
    path = write(tmp_path, "a.conll", GOOD)
    assert read(ConllColumnsDatasetReader(), path) == [
        (["EU", "rejects", "German", "call"], ["U-ORG", "O", "U-MISC", "O"], f"{path}:1"),
        (["Peter", "Blackburn"], ["B-PER", "L-PER"], f"{path}:6"),
    ]
    assert read(ConllColumnsDatasetReader(coding_scheme="BIO"), path)[1][1] == ["B-PER", "I-PER"]


def test_conll2003_layout_with_docstart_and_spaces(tmp_path):
    text = (
        "-DOCSTART- -X- -X- O\n\n"
        "EU NNP B-NP I-ORG\nrejects VBZ B-VP O\nGerman JJ B-NP I-MISC\n\n"
        "-DOCSTART- -X- -X- O\n"
        "Peter NNP B-NP I-PER\nBlackburn NNP I-NP I-PER\n\n\n"
    )
    path = write(tmp_path, "eng.train", text)
    reader = ConllColumnsDatasetReader(input_scheme="IOB1")
    assert read(reader, path) == [
        (["EU", "rejects", "German"], ["U-ORG", "O", "U-MISC"], f"{path}:3"),
        (["Peter", "Blackburn"], ["B-PER", "L-PER"], f"{path}:8"),
    ]
    chunks = ConllColumnsDatasetReader(tag_column=2, input_scheme="IOB2", coding_scheme="BIO")
    assert read(chunks, path)[0][1] == ["B-NP", "B-VP", "B-NP"]


IOB1_HINT = ("; the sentence is valid IOB1, as in the original CoNLL-2003 release: read the file with "
             "input_scheme='IOB1' (config variable INPUT_SCHEME=IOB1)")
HAND_IOB1_BIOUL = [
    (["Frodo", "Baggins", "left", "the", "Shire", "."], ["B-PER", "L-PER", "O", "O", "U-LOC", "O"], 3),
    (["Sam", "Merry", "Pippin", "went", "home", "."], ["U-PER", "U-PER", "U-PER", "O", "O", "O"], 10),
    (["The", "Fellowship", "of", "the", "Ring", "reached", "Rivendell", "."],
     ["O", "B-ORG", "I-ORG", "I-ORG", "L-ORG", "O", "U-LOC", "O"], 19),
]


def test_hand_written_iob1_fixture():
    path = str(fixture("conll2003/hand_iob1.conll"))
    assert read(ConllColumnsDatasetReader(input_scheme="IOB1"), path) == [
        (words, tags, f"{path}:{line}") for words, tags, line in HAND_IOB1_BIOUL]
    bio = read(ConllColumnsDatasetReader(input_scheme="IOB1", coding_scheme="BIO"), path)
    assert [tags for _, tags, _ in bio] == [["B-PER", "I-PER", "O", "O", "B-LOC", "O"],
                                             ["B-PER", "B-PER", "B-PER", "O", "O", "O"],
                                             ["O", "B-ORG", "I-ORG", "I-ORG", "I-ORG", "O", "B-LOC", "O"]]


@pytest.mark.parametrize("scheme", ["IOB2", "BIO"])
def test_iob1_file_read_as_iob2_suggests_input_scheme_iob1(scheme):
    path = str(fixture("conll2003/hand_iob1.conll"))
    error = read_error(ConllColumnsDatasetReader(input_scheme=scheme), path)
    assert (error.path, error.line) == (path, 3)
    assert error.message == "'I-PER' does not continue a 'PER' span (at the start of the sentence)" + IOB1_HINT
    assert str(error).startswith(f"{path}, line 3: 'I-PER' ")


def test_iob1_hint_only_where_iob1_would_read_the_sentence(tmp_path):
    # Valid IOB1 after the bad tag too: hint; mid-sentence 'I-LOC' after 'B-PER' is IOB1 as well.
    path = write(tmp_path, "a.conll", "x\tO\n\nEU\tB-PER\nrejects\tI-LOC\n")
    error = read_error(ConllColumnsDatasetReader(), path)
    assert (error.line, error.message) == (4, "'I-LOC' does not continue a 'LOC' span (after 'B-PER')" + IOB1_HINT)
    # The sentence has a tag that IOB1 does not know either: no hint.
    path = write(tmp_path, "b.conll", "a\tI-PER\nb\tU-PER\n")
    error = read_error(ConllColumnsDatasetReader(), path)
    assert (error.line, error.message) == (1, "'I-PER' does not continue a 'PER' span (at the start of the sentence)")
    # Other input schemes never get it; an unknown tag does not either.
    path = write(tmp_path, "c.conll", "a\tI-PER\nb\tL-PER\n")
    error = read_error(ConllColumnsDatasetReader(input_scheme="BIOUL"), path)
    assert "IOB1" not in error.message
    path = write(tmp_path, "d.conll", "a\tB-PER\nb\tE-PER\n")
    assert "IOB1" not in read_error(ConllColumnsDatasetReader(), path).message


@pytest.mark.parametrize("scheme, tags", [
    ("IOB2", ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "O"]),
    ("BIO", ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "O"]),
    ("IOB1", ["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "O"]),
    ("BIOUL", ["B-PER", "L-PER", "O", "U-LOC", "U-LOC", "O"]),
    ("BIOES", ["B-PER", "E-PER", "O", "S-LOC", "S-LOC", "O"]),
])
def test_every_input_scheme_gives_the_same_bioul_tags(tmp_path, scheme, tags):
    words = ["Frodo", "Baggins", "saw", "Bree", "Rivendell", "."]
    path = write(tmp_path, "a.conll", "".join(f"{w} NNP {t}\n" for w, t in zip(words, tags)))
    assert read(ConllColumnsDatasetReader(input_scheme=scheme), path) == [
        (words, ["B-PER", "L-PER", "O", "U-LOC", "U-LOC", "O"], f"{path}:1")]


def test_btc_fixtures_read_strictly_as_iob2():
    """The BTC column samples (CC BY 4.0, `fixtures/data/conll2003/BTC_PROVENANCE.txt`) as `READER=conll_columns`
    reads them: hand-checked first sentences, every tag BIOUL over PER / ORG / LOC."""
    path = str(fixture("conll2003/btc_train.conll"))
    train = read(ConllColumnsDatasetReader(), path)
    assert len(train) == 60 and sum(len(words) for words, _, _ in train) == 1018
    assert train[0] == (["I", "hate", "the", "words", "chunder", ",", "vomit", "and", "puke", ".", "BUUH", "."],
                        ["O"] * 12, f"{path}:1")
    words, tags, source = train[4]
    assert source == f"{path}:80" and [(w, t) for w, t in zip(words, tags) if t != "O"] == [
        ("Gateshead", "U-LOC"), ("Shaw", "U-PER")]
    words, tags, source = train[19]
    assert source == f"{path}:330" and [(w, t) for w, t in zip(words, tags) if t != "O"] == [
        ("TD", "B-ORG"), ("Chargers", "L-ORG"), ("the", "B-ORG"), ("Chargers", "L-ORG")]
    dev = read(ConllColumnsDatasetReader(), str(fixture("conll2003/btc_dev.conll")))
    assert len(dev) == 25
    assert {tag for _, tags, _ in train + dev for tag in tags} <= {
        "O", *(f"{p}-{t}" for p in "BILU" for t in ("PER", "ORG", "LOC"))}


def test_bioul_input_and_token_column(tmp_path):
    path = write(tmp_path, "a.tsv", "U-PER\tAnn\nB-LOC\tNew\nL-LOC\tYork\n")
    reader = ConllColumnsDatasetReader(token_column=1, tag_column=0, input_scheme="BIOUL", coding_scheme="BIO")
    assert read(reader, path) == [(["Ann", "New", "York"], ["B-PER", "B-LOC", "I-LOC"], f"{path}:1")]


def test_crlf_and_bom_are_accepted(tmp_path):
    path = write(tmp_path, "a.conll", b"\xef\xbb\xbfEU\tB-ORG\r\nsays\tO\r\n\r\nHi\tO\r\n")
    assert read(ConllColumnsDatasetReader(), path) == [
        (["EU", "says"], ["U-ORG", "O"], f"{path}:1"),
        (["Hi"], ["O"], f"{path}:4"),
    ]


@pytest.mark.parametrize(
    "text, line, words",
    [
        ("a\tO\nb\tO\tX\n", 2, "row has 3 columns, the sentence's first row (line 1) has 2"),
        ("a\tO\n\nb\n", 3, "row has 1 column(s), expected at least 2"),
        ("a\tO\nb\tI-PER\n", 2, "'I-PER' does not continue a 'PER' span (after 'O')"),
        ("a\tB-LOC\nb\tI-PER\n", 2, "after 'B-LOC'"),
        ("a\tO\n\nb\tO\nc\tS-PER\n", 4, "unknown tag 'S-PER'"),
        ("a\tO\nb\tPER\n", 2, "unknown tag 'PER'"),
        ("a\tO\n\tO\n", 2, "token '' is empty"),
        ("a\tO\nb \tO\n", 2, "token 'b ' contains whitespace"),
        ("a\tO\nb c\tO\n", 2, "token 'b c' contains whitespace"),
        ("a\tO\nb\u00a0c\tO\n", 2, "contains whitespace"),
        (b"a\tO\n\nb\xff\tO\n", 3, "invalid UTF-8"),
    ],
)
def test_malformed_input_names_file_and_line(tmp_path, text, line, words):
    path = write(tmp_path, "bad.conll", text)
    error = read_error(ConllColumnsDatasetReader(), path)
    assert (error.path, error.line) == (path, line)
    assert words in error.message
    assert str(error) == f"{path}, line {line}: {error.message}"


def test_bioul_input_errors(tmp_path):
    path = write(tmp_path, "bad.conll", "a\tO\n\nb\tB-PER\nc\tO\n")
    error = read_error(ConllColumnsDatasetReader(input_scheme="BIOUL"), path)
    assert (error.line, "not closed by 'L-PER'" in error.message) == (4, True)


def test_whole_file_errors(tmp_path):
    missing = str(tmp_path / "missing.conll")
    error = read_error(ConllColumnsDatasetReader(), missing)
    assert (error.path, error.line, str(error)) == (missing, None, f"{missing}: file does not exist")
    for content in ["", "\n\n  \n", "-DOCSTART- -X- O\n\n"]:
        path = write(tmp_path, "empty.conll", content)
        error = read_error(ConllColumnsDatasetReader(), path)
        assert (error.path, error.line, error.message) == (path, None, "no sentences (the file is empty)")
    error = read_error(ConllColumnsDatasetReader(), str(tmp_path))
    assert error.line is None and "directory" in error.message


def test_repair_iob_warns_with_file_and_line(tmp_path, caplog):
    path = write(tmp_path, "a.conll", "a\tO\nb\tI-PER\nc\tI-PER\nd\tI-LOC\n")
    with caplog.at_level(logging.WARNING):
        result = read(ConllColumnsDatasetReader(repair_iob=True), path)
    assert result == [(["a", "b", "c", "d"], ["O", "B-PER", "L-PER", "U-LOC"], f"{path}:1")]
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert warnings == [f"{path}:2: 'I-PER' repaired to 'B-PER' (repair_iob=True)",
                        f"{path}:4: 'I-LOC' repaired to 'B-LOC' (repair_iob=True)"]


def test_token_policy_repair(tmp_path):
    text = "a \tO\n\tO\nb  c\tB-PER\n \tO\nd\tB-PER\n\n\tO\n \tO\n\nx\u2009y\tO\n"
    path = write(tmp_path, "a.conll", text)
    assert read(ConllColumnsDatasetReader(token_policy="repair", coding_scheme="BIO"), path) == [
        (["a", "b__c", "d"], ["O", "B-PER", "B-PER"], f"{path}:1"),
        (["x_y"], ["O"], f"{path}:10"),  # the sentence of empty tokens (line 7) is dropped
    ]
    # Tags are checked as written, before empty tokens are dropped.
    path = write(tmp_path, "b.conll", "a\tB-PER\n\tO\nb\tI-PER\n")
    error = read_error(ConllColumnsDatasetReader(token_policy="repair"), path)
    assert (error.line, error.message) == (3, "'I-PER' does not continue a 'PER' span (after 'O')" + IOB1_HINT)
    path = write(tmp_path, "c.conll", "a\tO\n \tB-PER\n")
    error = read_error(ConllColumnsDatasetReader(token_policy="repair"), path)
    assert (error.line, error.message) == (2, "empty token tagged 'U-PER' cannot be dropped")


def test_skip_invalid_keeps_the_sentences_around_a_bad_one(tmp_path, caplog):
    text = "a\tO\n\nb\tI-PER\n\nc\tB-LOC\n\nd\tO\ne\n\nf\tO\n"
    path = write(tmp_path, "a.conll", text)
    with caplog.at_level(logging.WARNING):
        result = read(ConllColumnsDatasetReader(skip_invalid=True), path)
    assert result == [(["a"], ["O"], f"{path}:1"), (["c"], ["U-LOC"], f"{path}:5"), (["f"], ["O"], f"{path}:10")]
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"Skipped 2 invalid sentence(s) reading {path} (skip_invalid=True): "
                                  f"{path}:3, {path}:8. First error: {path}, line 3: ")


def test_configuration_errors():
    with pytest.raises(ConfigurationError, match="input_scheme must be one of 'IOB2', 'BIO', 'IOB1', 'BIOUL', 'BIOES'"):
        ConllColumnsDatasetReader(input_scheme="IOE1")
    with pytest.raises(ConfigurationError):
        ConllColumnsDatasetReader(coding_scheme="IOB1")
    with pytest.raises(ConfigurationError):
        ConllColumnsDatasetReader(token_policy="lenient")
    with pytest.raises(ConfigurationError):
        ConllColumnsDatasetReader(token_column=1, tag_column=1)


def test_explicit_delimiter(tmp_path):
    path = write(tmp_path, "a.conll", "a b|O\nc|B-PER\n")
    assert read(ConllColumnsDatasetReader(delimiter="|", token_policy="repair"), path) == [
        (["a_b", "c"], ["O", "U-PER"], f"{path}:1")
    ]


# ------------------------------------------------------------------------------------ property-based

# Mostly well-formed, sometimes not: spaces, tabs, newlines, NBSP in words; bad tags.
WORDS = st.one_of(st.sampled_from(["a", "Bb", "#c", "-DOCSTART-"]), st.text(alphabet="ab \t\n-_\u00a0#", max_size=4))
TAGS = st.one_of(st.sampled_from(["O", "B-PER", "I-PER"]), st.sampled_from(["I-LOC", "B-LOC", "PER", "", "O O"]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.tuples(WORDS, TAGS), min_size=0, max_size=5), max_size=4),
       st.sampled_from(["strict", "repair"]), st.booleans())
def test_random_column_files_round_trip_or_raise_data_format_error(tmp_path, sentences, policy, skip):
    text = "\n".join("".join(f"{word}\t{tag}\n" for word, tag in sentence) for sentence in sentences)
    path = write(tmp_path, "random.conll", text)
    reader = ConllColumnsDatasetReader(token_policy=policy, skip_invalid=skip, coding_scheme="BIO")
    try:
        result = read(reader, path)
    except DataFormatError as error:
        assert error.path == path
        return
    # Written back as columns and re-read, the result is the same.
    again = write(tmp_path, "again.conll", "\n".join(
        "".join(f"{word}\t{tag}\n" for word, tag in zip(words, tags)) for words, tags, _ in result))
    if result:
        assert [(w, t) for w, t, _ in read(ConllColumnsDatasetReader(coding_scheme="BIO"), again)] == [
            (w, t) for w, t, _ in result]
    for words, tags, _ in result:
        assert words and all(word and not any(c.isspace() for c in word) for word in words)

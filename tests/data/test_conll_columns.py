import logging

import pytest
from allennlp.common.checks import ConfigurationError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bitcode_allennlp.common.errors import DataFormatError
from bitcode_allennlp.data.dataset_readers.conll_columns import ConllColumnsDatasetReader
from tests.data.helpers import read, read_error, write

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
    assert (error.line, error.message) == (3, "'I-PER' does not continue a 'PER' span (after 'O')")
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
    with pytest.raises(ConfigurationError):
        ConllColumnsDatasetReader(input_scheme="BIOES")
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

import logging

import pytest
from allennlp.common.checks import ConfigurationError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.data.dataset_readers.ontonotes import OntonotesHashDatasetReader
from tests.data.helpers import read, read_error, write


def row(doc: str, index: int, word: str, ne: str, predicates: int = 1, sep: str = "   ") -> str:
    srl = ["*"] * predicates
    return sep.join([doc, "0", str(index), word, "NNP", "*", "-", "-", "-", "-", ne, *srl, "-"]) + "\n"


def document(name: str, sentences, predicates: int = 1) -> str:
    """`sentences`: lists of (word, NE value)."""
    text = f"#begin document ({name}); part 000\n"
    for sentence in sentences:
        text += "".join(row(name, i, word, ne, predicates) for i, (word, ne) in enumerate(sentence)) + "\n"
    return text + "#end document\n"


FRODO = [("Frodo", "(PERSON*"), ("Baggins", "*)"), ("left", "*"), ("the", "*"), ("Shire", "(GPE)"), ("/.", "*")]
SAM = [("Sam", "(PERSON)"), ("said", "*"), ("/?", "*"), ("/-", "*"), ("a/-b", "*")]


def test_reads_words_and_bioul_tags(tmp_path):
    path = write(tmp_path, "a.gold_conll", document("nw/x/00/x_0001", [FRODO, SAM], predicates=2))
    assert read(OntonotesHashDatasetReader(), path) == [
        (["Frodo", "Baggins", "left", "the", "Shire", "."], ["B-PERSON", "L-PERSON", "O", "O", "U-GPE", "O"],
         f"{path}:2"),
        (["Sam", "said", "?", "-", "a/-b"], ["U-PERSON", "O", "O", "O", "O"], f"{path}:9"),
    ]
    assert read(OntonotesHashDatasetReader(coding_scheme="BIO"), path)[0][1] == [
        "B-PERSON", "I-PERSON", "O", "O", "B-GPE", "O"]


def test_rows_without_predicates_and_tab_separated_rows(tmp_path):
    text = "".join(row("bc/y/00/y", i, w, ne, predicates=0, sep="\t") for i, (w, ne) in enumerate(FRODO))
    path = write(tmp_path, "b.gold_conll", text)
    assert read(OntonotesHashDatasetReader(), path)[0][0][:2] == ["Frodo", "Baggins"]


def test_directory_tree_domain_filter_and_pt(tmp_path):
    base = tmp_path / "conll-2012" / "v4" / "data" / "train" / "data" / "english" / "annotations"
    write(base / "nw" / "wsj" / "00", "wsj_0001.v4_gold_conll", document("nw/wsj/00/wsj_0001", [FRODO]))
    write(base / "bc" / "cnn" / "00", "cnn_0001.v4_gold_conll", document("bc/cnn/00/cnn_0001", [SAM]))
    write(base / "pt" / "nt" / "40", "nt_4001.v4_gold_conll", document("pt/nt/40/nt_4001", [SAM]))
    write(base / "nw" / "wsj" / "00", "wsj_0001.v4_gold_skel", "not read\n")
    root = str(tmp_path / "conll-2012")
    everything = read(OntonotesHashDatasetReader(), root)
    assert [words[0] for words, _, _ in everything] == ["Sam", "Frodo"]  # bc before nw, pt left out
    assert everything[1][2] == f"{base}/nw/wsj/00/wsj_0001.v4_gold_conll:2"
    assert [w[0] for w, _, _ in read(OntonotesHashDatasetReader(domain_identifier="nw"), root)] == ["Frodo"]
    error = read_error(OntonotesHashDatasetReader(domain_identifier="tc"), root)
    assert (error.path, error.line) == (root, None)
    assert "no files ending in 'gold_conll' in domain 'tc'" in error.message
    empty = tmp_path / "empty"
    empty.mkdir()
    error = read_error(OntonotesHashDatasetReader(), str(empty))
    assert error.message == "no files ending in 'gold_conll' under this directory"
    with pytest.raises(ConfigurationError):
        OntonotesHashDatasetReader(domain_identifier="pt")


@pytest.mark.parametrize(
    "rows, line, words",
    [
        ("d 0 0 A NNP * - - - - (PER* - -\nd 0 1 B NNP * - -\n", 3, "CoNLL-2012 row has 8 columns, expected "
                                                                    "at least 12"),
        ("d 0 0 A NNP * - - - - (PER* * -\nd 0 1 B NNP * - - - - *) -\n", 3, "the sentence's first row (line 2)"),
        ("d 0 0 A NNP * - - - - (PER* -\nd 0 1 B NNP * - - - - * -\n", 2, "still open at the end of the sentence "
                                                                          "(line 3)"),
        ("d 0 0 A NNP * - - - - * -\nd 0 1 B NNP * - - - - *) -\n", 3, "closed ('*)') without being opened"),
        ("d 0 0 A NNP * - - - - (PER* -\nd 0 1 B NNP * - - - - (ORG) -\n", 3, "nested"),
        ("d 0 0 A NNP * - - - - PER -\n", 2, "bad NE column value 'PER'"),
        ("d 0 0 A NNP * - - - - * -\nd 0 2 B NNP * - - - - * -\n", 3, "word index '2', expected 1"),
        ("d\t0\t0\tA B\tNNP\t*\t-\t-\t-\t-\t*\t-\n", 2, "token 'A B' contains whitespace"),
        ("d\t0\t0\t\tNNP\t*\t-\t-\t-\t-\t*\t-\n", 2, "token '' is empty"),
    ],
)
def test_malformed_input_names_file_and_line(tmp_path, rows, line, words):
    good = "d 0 0 Fine NNP * - - - - * -\n\n"
    path = write(tmp_path, "bad.gold_conll", "#begin document (d); part 000\n" + rows + "\n" + good + "#end document\n")
    error = read_error(OntonotesHashDatasetReader(), path)
    assert (error.path, error.line) == (path, line)
    assert words in error.message, error.message
    skipped = read(OntonotesHashDatasetReader(skip_invalid=True), path)
    assert [words for words, _, _ in skipped] == [["Fine"]]


def test_whole_file_errors(tmp_path):
    missing = str(tmp_path / "nope.gold_conll")
    assert read_error(OntonotesHashDatasetReader(), missing).message == "file does not exist"
    path = write(tmp_path, "a.gold_conll", "#begin document (d); part 000\n#end document\n")
    error = read_error(OntonotesHashDatasetReader(), path)
    assert (error.line, error.message) == (None, "no sentences (the file is empty)")
    path = write(tmp_path, "b.gold_conll", b"\xef\xbb\xbfd 0 0 A NNP * - - - - * -\r\n\r\nd 0 0 \xc3( NNP * - - "
                                           b"- - * -\r\n")
    error = read_error(OntonotesHashDatasetReader(), path)
    assert (error.line, error.message[:12]) == (3, "invalid UTF-")
    assert read(OntonotesHashDatasetReader(skip_invalid=True), path) == [(["A"], ["O"], f"{path}:1")]


def test_token_policy_repair_drops_empty_words_outside_entities(tmp_path, caplog):
    rows = ["d\t0\t0\tA  B \tNNP\t*\t-\t-\t-\t-\t(PER*\t-\n", "d\t0\t1\t \tNNP\t*\t-\t-\t-\t-\t*)\t-\n",
            "\n", "d\t0\t0\t \tNNP\t*\t-\t-\t-\t-\t*\t-\n", "\n",
            "d\t0\t0\tx\tNNP\t*\t-\t-\t-\t-\t*\t-\n", "d\t0\t1\t\tNNP\t*\t-\t-\t-\t-\t*\t-\n"]
    path = write(tmp_path, "a.gold_conll", "".join(rows))
    error = read_error(OntonotesHashDatasetReader(token_policy="repair"), path)
    assert (error.line, error.message) == (2, "empty token tagged 'L-PER' cannot be dropped")
    with caplog.at_level(logging.WARNING):
        result = read(OntonotesHashDatasetReader(token_policy="repair", skip_invalid=True), path)
    assert result == [(["x"], ["O"], f"{path}:6")]
    messages = " ".join(record.getMessage() for record in caplog.records)
    assert f"{path}:4: sentence dropped, it has only empty tokens" in messages
    assert "Skipped 1 invalid sentence(s)" in messages


# ------------------------------------------------------------------------------------ property-based

NE_VALUES = st.one_of(st.sampled_from(["*", "*", "(PER*", "*)", "(ORG)"]), st.sampled_from(["(LOC*)", "(*", "X"]))
WORDS = st.one_of(st.sampled_from(["a", "/.", "b-c"]), st.text(alphabet="ab \t(", min_size=0, max_size=3))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.tuples(WORDS, NE_VALUES), min_size=1, max_size=5), min_size=1, max_size=3),
       st.integers(0, 2), st.booleans())
def test_random_documents_round_trip_or_raise_data_format_error(tmp_path, sentences, predicates, skip):
    path = write(tmp_path, "r.gold_conll", "".join(
        "".join(row("d", i, w, ne, predicates, sep="\t") for i, (w, ne) in enumerate(sentence)) + "\n"
        for sentence in sentences))
    try:
        result = read(OntonotesHashDatasetReader(skip_invalid=skip, coding_scheme="BIO"), path)
    except DataFormatError as error:
        assert error.path == path
        return
    for words, tags, source in result:
        # Written back with bracketed NEs (from the BIO tags) and re-read: the same words and tags.
        values = []
        for i, tag in enumerate(tags):
            starts, ends = tag.startswith("B-"), tag != "O" and (i + 1 == len(tags) or not tags[i + 1].startswith("I-"))
            values.append((f"({tag[2:]}" if starts else "") + ("*" if not (starts and ends) else "")
                          + (")" if ends else "") if tag != "O" else "*")
        again = write(tmp_path, "again.gold_conll", "".join(
            row("d", i, w, ne, 0) for i, (w, ne) in enumerate(zip(words, values))))
        assert read(OntonotesHashDatasetReader(coding_scheme="BIO"), again)[0][:2] == (words, tags)

import pytest
from allennlp.common.checks import ConfigurationError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.data.dataset_readers.conllu import ConlluPosDatasetReader
from tests.data.helpers import read, read_error, write


def row(word_id: str, form: str, upos: str = "NOUN", xpos: str = "NN") -> str:
    return "\t".join([word_id, form, form.lower(), upos, xpos, "_", "0", "root", "_", "_"]) + "\n"


SENTENCE = (
    "# sent_id = 1\n# text = I don't know.\n"
    + row("1", "I", "PRON", "PRP") + row("2-3", "don't", "_", "_") + row("2", "do", "AUX", "VBP")
    + row("3", "n't", "PART", "RB") + row("4", "know", "VERB", "VB") + row("4.1", "knows", "VERB", "VBZ")
    + row("5", ".", "PUNCT", ".") + "\n"
)


def test_skips_multiword_tokens_and_empty_nodes(tmp_path):
    path = write(tmp_path, "a.conllu", SENTENCE + "# sent_id = 2\n" + row("1", "Hi", "INTJ", "UH") + "\n# end\n")
    assert read(ConlluPosDatasetReader(), path) == [
        (["I", "do", "n't", "know", "."], ["PRP", "VBP", "RB", "VB", "."], f"{path}:1"),
        (["Hi"], ["UH"], f"{path}:11"),
    ]
    assert read(ConlluPosDatasetReader(tag="upos"), path)[0][1] == ["PRON", "AUX", "PART", "VERB", "PUNCT"]


@pytest.mark.parametrize(
    "rows, line, words",
    [
        (row("1", "a") + "2\tb\tb\tNOUN\tNN\n", 4, "CoNLL-U row has 5 TAB-separated columns, expected 10"),
        (row("1", "a") + row("3", "b"), 4, "word ID '3', expected 2"),
        (row("1", "a") + row("x", "b"), 4, "word ID 'x'"),
        (row("1", "a") + row("2", "b", xpos="_"), 4, "missing or malformed XPOS '_'"),
        (row("1", "a") + row("2", "b c"), 4, "token 'b c' contains whitespace"),
        (row("1", "a") + row("2", ""), 4, "token '' is empty"),
        ("# only a comment\n" + row("1-2", "ab", "_", "_"), 3, "sentence has no words"),
        (row("1", "a").encode() + b"2\tb\xe9\tb\tNOUN\tNN\t_\t0\troot\t_\t_\n", 4, "invalid UTF-8"),
    ],
)
def test_malformed_input_names_file_and_line(tmp_path, rows, line, words):
    before, after = row("1", "Before") + "\n", "\n" + row("1", "After")
    content = (before.encode() + rows + after.encode()) if isinstance(rows, bytes) else before + rows + after
    path = write(tmp_path, "bad.conllu", content)
    error = read_error(ConlluPosDatasetReader(), path)
    assert (error.path, error.line) == (path, line)
    assert words in error.message, error.message
    assert [w for w, _, _ in read(ConlluPosDatasetReader(skip_invalid=True), path)] == [["Before"], ["After"]]


def test_whole_file_errors_bom_crlf_and_options(tmp_path):
    path = write(tmp_path, "empty.conllu", "# only comments\n\n")
    assert read_error(ConlluPosDatasetReader(), path).message == "no sentences (the file is empty)"
    path = write(tmp_path, "crlf.conllu", b"\xef\xbb\xbf# c\r\n" + row("1", "A").encode().replace(b"\n", b"\r\n"))
    assert read(ConlluPosDatasetReader(), path) == [(["A"], ["NN"], f"{path}:1")]
    path = write(tmp_path, "space.conllu", row("1", "New York", "PROPN", "NNP"))
    assert read(ConlluPosDatasetReader(token_policy="repair"), path)[0][0] == ["New_York"]
    with pytest.raises(ConfigurationError):
        ConlluPosDatasetReader(tag="deprel")


FORMS = st.one_of(st.sampled_from(["a", "B", "-"]), st.text(alphabet="ab \t#_", max_size=3))
IDS = st.one_of(st.just(None), st.sampled_from(["1-2", "3.1", "x", "0"]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.tuples(IDS, FORMS, st.sampled_from(["NN", "VB", "_"])), min_size=1, max_size=4),
                min_size=1, max_size=3), st.booleans())
def test_random_files_round_trip_or_raise_data_format_error(tmp_path, sentences, skip):
    text = ""
    for sentence in sentences:
        number = 0
        for word_id, form, xpos in sentence:
            if word_id is None:
                number += 1
            text += row(word_id or str(number), form, "X", xpos)
        text += "\n"
    path = write(tmp_path, "r.conllu", text)
    try:
        result = read(ConlluPosDatasetReader(skip_invalid=skip), path)
    except DataFormatError as error:
        assert error.path == path
        return
    again = write(tmp_path, "again.conllu", "".join(
        "".join(row(str(i + 1), w, "X", t) for i, (w, t) in enumerate(zip(words, tags))) + "\n"
        for words, tags, _ in result))
    if result:
        assert [r[:2] for r in read(ConlluPosDatasetReader(), again)] == [r[:2] for r in result]

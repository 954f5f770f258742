import pytest
from allennlp.data.dataset_readers.dataset_utils import span_utils
from hypothesis import given, settings
from hypothesis import strategies as st

from bitcode_allennlp.data.dataset_readers.tag_coding import (
    TagSequenceError,
    convert_tags,
    spans_to_tags,
    tags_to_spans,
)


def test_bio_to_bioul_by_hand():
    bio = ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC", "I-LOC", "O", "B-ORG"]
    assert convert_tags(bio, "IOB2", "BIOUL") == [
        "B-PER", "L-PER", "O", "U-LOC", "B-LOC", "I-LOC", "L-LOC", "O", "U-ORG"
    ]
    assert tags_to_spans(bio, "IOB2") == ([("PER", 0, 1), ("LOC", 3, 3), ("LOC", 4, 6), ("ORG", 8, 8)], [])


def test_iob1_to_bioul_by_hand():
    iob1 = ["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG"]
    assert convert_tags(iob1, "IOB1", "BIOUL") == ["B-PER", "L-PER", "U-PER", "O", "U-LOC", "U-ORG"]
    assert convert_tags(iob1, "IOB1", "BIO") == ["B-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG"]


def test_bioul_input():
    bioul = ["U-PER", "B-LOC", "I-LOC", "L-LOC", "O"]
    assert convert_tags(bioul, "BIOUL", "BIO") == ["B-PER", "B-LOC", "I-LOC", "I-LOC", "O"]
    assert convert_tags(bioul, "BIOUL", "BIOUL") == bioul


def test_bioes_input_is_bioul_with_e_and_s():
    bioes = ["S-PER", "B-LOC", "I-LOC", "E-LOC", "O", "B-ORG", "E-ORG"]
    assert convert_tags(bioes, "BIOES", "BIOUL") == ["U-PER", "B-LOC", "I-LOC", "L-LOC", "O", "B-ORG", "L-ORG"]
    assert convert_tags(bioes, "BIOES", "BIO") == ["B-PER", "B-LOC", "I-LOC", "I-LOC", "O", "B-ORG", "I-ORG"]
    with pytest.raises(TagSequenceError, match="unknown tag 'U-PER'"):  # BIOUL letters are not BIOES
        tags_to_spans(["U-PER"], "BIOES")
    with pytest.raises(TagSequenceError, match="unknown tag 'S-PER'"):
        tags_to_spans(["S-PER"], "BIOUL")


@pytest.mark.parametrize(
    "tags, scheme, index, words",
    [
        (["O", "I-PER"], "IOB2", 1, "'I-PER' does not continue a 'PER' span (after 'O')"),
        (["I-PER"], "IOB2", 0, "at the start of the sentence"),
        (["B-LOC", "I-PER"], "IOB2", 1, "after 'B-LOC'"),
        (["O", "X-PER"], "IOB2", 1, "unknown tag 'X-PER'"),
        (["PER"], "IOB2", 0, "unknown tag 'PER'"),
        (["B-"], "IOB2", 0, "unknown tag 'B-'"),
        (["U-PER"], "IOB2", 0, "unknown tag 'U-PER'"),
        (["B-PER", "O"], "BIOUL", 1, "not closed by 'L-PER'"),
        (["O", "I-PER "], "IOB2", 1, "'I-PER ' does not continue a 'PER ' span"),  # invisible space shows
        (["O", "B-PER"], "BIOUL", 1, "before the end of the sentence"),
        (["L-PER"], "BIOUL", 0, "'L-PER' does not continue"),
        (["B-PER", "I-LOC", "L-LOC"], "BIOUL", 1, "'I-LOC' does not continue"),
        (["B-PER", "U-PER"], "BIOUL", 1, "not closed"),
        (["B-PER", "O"], "BIOES", 1, "'B-PER' at token 1 is not closed by 'E-PER' before 'O'"),
        (["B-PER"], "BIOES", 0, "not closed by 'E-PER' before the end of the sentence"),
        (["O", "E-PER"], "BIOES", 1, "'E-PER' does not continue a 'B-PER' span (after 'O')"),
        (["B-PER", "S-PER"], "BIOES", 1, "not closed by 'E-PER' before 'S-PER'"),
    ],
)
def test_malformed_sequences_name_the_token(tags, scheme, index, words):
    with pytest.raises(TagSequenceError) as info:
        tags_to_spans(tags, scheme)
    assert info.value.index == index
    assert words in info.value.message


def test_repair_turns_stray_inside_tags_into_beginnings():
    spans, repaired = tags_to_spans(["O", "I-PER", "I-PER", "I-LOC", "B-ORG", "I-ORG"], "IOB2", repair=True)
    assert spans == [("PER", 1, 2), ("LOC", 3, 3), ("ORG", 4, 5)]
    assert repaired == [1, 3]


def test_spans_to_tags_rejects_overlaps():
    with pytest.raises(ValueError):
        spans_to_tags(3, [("PER", 0, 1), ("LOC", 1, 2)])


TYPES = st.sampled_from(["PER", "LOC", "ORG", "MISC-X"])


@st.composite
def span_sets(draw):
    """Random non-overlapping spans over a random length."""
    length = draw(st.integers(0, 12))
    spans, position = [], 0
    while position < length:
        if draw(st.booleans()):
            end = draw(st.integers(position, length - 1))
            spans.append((draw(TYPES), position, end))
            position = end + 1
        else:
            position += 1
    return length, spans


@settings(max_examples=300, deadline=None)
@given(span_sets())
def test_bio_bioul_round_trip(case):
    length, spans = case
    bio = spans_to_tags(length, spans, "BIO")
    bioul = convert_tags(bio, "BIO", "BIOUL")
    assert convert_tags(bioul, "BIOUL", "BIO") == bio
    bioes = [{"L": "E", "U": "S"}.get(tag[0], tag[0]) + tag[1:] for tag in bioul]
    assert tags_to_spans(bioes, "BIOES")[0] == spans
    assert tags_to_spans(bio, "IOB2")[0] == spans
    assert tags_to_spans(bioul, "BIOUL")[0] == spans
    # AllenNLP's own implementation agrees (oracle).
    assert span_utils.to_bioul(bio, encoding="BIO") == bioul
    ours = {(label, (start, end)) for label, start, end in spans}
    assert set(span_utils.bio_tags_to_spans(bio)) == ours
    assert set(span_utils.bioul_tags_to_spans(bioul)) == ours


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["O", "B-PER", "I-PER", "I-LOC", "B-LOC", "L-PER", "U-LOC", "E-PER", "S-LOC",
                                  "X", "I-"]),
                max_size=8), st.sampled_from(["IOB2", "IOB1", "BIOUL", "BIOES"]), st.booleans())
def test_random_sequences_decode_or_raise_tag_sequence_error(tags, scheme, repair):
    try:
        spans, _ = tags_to_spans(tags, scheme, repair=repair)
    except TagSequenceError as error:
        assert 0 <= error.index < len(tags)
        return
    # Whatever decodes re-encodes to a sequence that decodes to the same spans.
    assert tags_to_spans(spans_to_tags(len(tags), spans, "BIOUL"), "BIOUL")[0] == spans
    if scheme == "IOB1" and not any(tag.startswith(("L-", "U-")) for tag in tags):
        assert sorted(spans, key=lambda span: span[1]) == spans
        oracle = {(label, (start, end)) for label, start, end in spans}
        assert set(span_utils.iob1_tags_to_spans(tags)) == oracle

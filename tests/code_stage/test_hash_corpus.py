"""`allennlp hash-corpus`: the codes are the model's predicted codes, the output round-trips through `binary_codes`,
and a killed run started again produces the same file."""
import json
from types import SimpleNamespace

import pytest
from allennlp.common.checks import ConfigurationError
from allennlp.data import Instance, Token, Vocabulary
from allennlp.data.fields import TextField
from allennlp.data.token_indexers import PretrainedTransformerMismatchedIndexer
from allennlp.models.archival import load_archive

from bitcode_allennlp.code_stage.binary_codes_reader import BinaryCodesDatasetReader
from bitcode_allennlp.code_stage.hash_corpus import cached_word_pieces, padded_batches, reannotate
from tests.conftest import FIXTURES, TINY_BERT, TINY_GPT2, run_cli

NER_DEV = FIXTURES / "data" / "conll2012" / "development"
PTB_DEV = FIXTURES / "data" / "ptb" / "craft_dev.tree"


def predicted_codes(archive, reader):
    model = archive.model.eval()
    instances = list(reader.read(NER_DEV if "tags" in next(iter(reader.read(NER_DEV))).fields else PTB_DEV))
    for instance in instances:
        reader.apply_token_indexers(instance)
    return instances, [output["code_hex"] for output in model.forward_on_instances(instances)]


def test_codes_are_the_models_predicted_codes_and_round_trip(ner_hash_archive, tmp_path):
    archive = load_archive(ner_hash_archive)
    reader = archive.validation_dataset_reader
    out = tmp_path / "dev.jsonl"
    counts = reannotate(archive.model, reader, str(NER_DEV), str(out), max_tokens=64, progress=False)
    instances = list(reader.read(NER_DEV))
    for instance in instances:
        reader.apply_token_indexers(instance)
    expected = [o["code_hex"] for o in archive.model.eval().forward_on_instances(instances)]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert counts == {"sentences": len(instances), "resumed": 0, "words": sum(len(c) for c in expected),
                      "input_sentences": len(instances)}
    assert [line["codes"] for line in lines] == expected
    coded = list(BinaryCodesDatasetReader(num_bits=24).read(out))
    for original, line, back in zip(instances, lines, coded):
        assert line["words"] == original["metadata"]["words"] == back["metadata"]["words"]
        assert line["tags"] == original["tags"].labels == back["tags"].labels
        assert line["source"] == original["metadata"]["source"] == back["metadata"]["source"]
        assert [t.text for t in back["tokens"]] == line["codes"]


def test_subtoken_budget_bounds_batches_and_keeps_codes(ner_hash_archive, tmp_path, monkeypatch):
    """Re-annotation batches by padded sub-tokens too; batching never changes a code (eval mode)."""
    archive = load_archive(ner_hash_archive)
    reader = archive.validation_dataset_reader
    shapes = []
    predict_codes = archive.model.predict_codes

    def counted(tokens):
        shapes.append(tuple(tokens["tokens"]["token_ids"].shape))  # (sentences, pieces)
        return predict_codes(tokens)

    monkeypatch.setattr(archive.model, "predict_codes", counted)
    reannotate(archive.model, reader, str(NER_DEV), str(tmp_path / "big.jsonl"), progress=False)
    big = [json.loads(line)["codes"] for line in (tmp_path / "big.jsonl").read_text().splitlines()]
    shapes.clear()
    reannotate(archive.model, reader, str(NER_DEV), str(tmp_path / "small.jsonl"), max_subtokens=40, progress=False)
    small = [json.loads(line)["codes"] for line in (tmp_path / "small.jsonl").read_text().splitlines()]
    assert small == big
    assert len(shapes) > 1 and all(rows == 1 or rows * pieces <= 40 for rows, pieces in shapes)  # (sentences, pieces)


def test_parser_corpus_carries_gold_trees(parse_hash_archive, tmp_path):
    archive = load_archive(parse_hash_archive)
    reader = archive.validation_dataset_reader
    out = tmp_path / "dev.jsonl"
    reannotate(archive.model, reader, str(PTB_DEV), str(out), progress=False)
    originals = list(reader.read(PTB_DEV))
    coded = list(BinaryCodesDatasetReader(num_bits=24).read(out))
    assert len(coded) == len(originals)
    for original, back in zip(originals, coded):
        assert back["metadata"]["gold_tree"] == original["metadata"]["gold_tree"]
        assert back["span_labels"].labels == original["span_labels"].labels


@pytest.mark.parametrize("kept_lines, chunk_size", [(0, 4), (5, 4), (8, 4), (19, 7), (20, 4)])
def test_restart_after_a_killed_run_gives_the_same_file(ner_hash_archive, tmp_path, kept_lines, chunk_size):
    archive = load_archive(ner_hash_archive)
    reader = archive.validation_dataset_reader
    full = tmp_path / "full.jsonl"
    reannotate(archive.model, reader, str(NER_DEV), str(full), chunk_size=chunk_size, progress=False)
    text = full.read_text()
    lines = text.splitlines(keepends=True)
    partial = tmp_path / "partial.jsonl"
    cut = "".join(lines[:kept_lines]) + (lines[kept_lines][:17] if kept_lines < len(lines) else "")
    partial.write_text(cut)  # what a kill leaves: complete lines, then half a line
    counts = reannotate(archive.model, reader, str(NER_DEV), str(partial), chunk_size=chunk_size, progress=False)
    assert partial.read_text() == text
    assert counts["resumed"] == kept_lines and counts["sentences"] == len(lines)


def test_restart_refuses_output_of_another_corpus(ner_hash_archive, tmp_path):
    archive = load_archive(ner_hash_archive)
    out = tmp_path / "codes.jsonl"
    out.write_text(json.dumps({"words": ["a"], "codes": ["000000"], "source": "other.conll:1"}) + "\n")
    with pytest.raises(ConfigurationError, match="cannot continue"):
        reannotate(archive.model, archive.validation_dataset_reader, str(NER_DEV), str(out), progress=False)
    out.write_text("not json\n")
    with pytest.raises(ConfigurationError, match="not hash-corpus output"):
        reannotate(archive.model, archive.validation_dataset_reader, str(NER_DEV), str(out), progress=False)


def test_padded_batches_cover_every_sentence_once():
    lengths = [5, 1, 30, 7, 7, 2, 64, 3]
    instances = [Instance({"tokens": TextField([Token("w")] * n)}) for n in lengths]
    groups = padded_batches(instances, 16)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    for group in groups:
        assert len(group) == 1 or len(group) * max(lengths[i] for i in group) <= 16


def test_cli(ner_hash_archive, tmp_path):
    out = tmp_path / "codes.jsonl"
    run_cli(["hash-corpus", ner_hash_archive, NER_DEV, "--output", out, "--batch-size", "128", "--max-instances",
             "7"], cwd=tmp_path)
    assert len(out.read_text().splitlines()) == 7
    result = run_cli(["hash-corpus", ner_hash_archive, NER_DEV, "--output", out, "--max-instances", "7"])
    assert "7 kept from an earlier run" in result.stderr + result.stdout


ODD_WORDS = ["Obama", "unbelievably", "@BBCNews", "#tbt", "naïve", "日本語", "\u200b", "\u0301", "🙂", "don't", "U.S.",
             "a" * 300, "Ⅻ", "\x7f", "Obama"]


@pytest.mark.parametrize("plm", [TINY_BERT, TINY_GPT2], ids=["word pieces (BERT)", "byte-level BPE (GPT-2)"])
def test_cached_word_pieces_index_exactly_as_allennlp(plm):
    """hash-corpus's memo of word pieces gives AllenNLP's pieces, ids, type ids, special tokens and offsets."""
    indexer = PretrainedTransformerMismatchedIndexer(str(plm))
    reader = SimpleNamespace(_token_indexers={"tokens": indexer})
    sentences = [ODD_WORDS, ODD_WORDS[::-1], ["\u200b"], ODD_WORDS[3:6]]
    tokens = [[Token(word) for word in sentence] for sentence in sentences]
    vocab = Vocabulary()
    expected = [indexer.tokens_to_indices(sentence, vocab) for sentence in tokens]
    with cached_word_pieces(reader):
        assert "intra_word_tokenize" in vars(indexer._allennlp_tokenizer)
        assert [indexer.tokens_to_indices(sentence, vocab) for sentence in tokens] == expected
        assert [indexer.tokens_to_indices(sentence, vocab) for sentence in tokens] == expected  # from the memo
    assert "intra_word_tokenize" not in vars(indexer._allennlp_tokenizer)  # AllenNLP's own again

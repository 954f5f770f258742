"""Word pieces per PLM family: how many words AllenNLP's per-word tokenization (`pretrained_transformer_mismatched`,
`intra_word_tokenize`) splits differently from the running text that the `plm_words` indexer gives the PLM, and the
indexing speed of both (sentences/s, interleaved rounds in one process, median).

    python benchmarks/word_pieces.py                          # every fixture family, on the fixture corpora
    python benchmarks/word_pieces.py --plm minilm --plm /path/to/roberta-base --rounds 5 --out runs/bench/wp.json

A word "differs" when its pieces (as strings) are not those it has inside the running text `" ".join(words)`. Words
with no piece either way are counted apart. Writes a table and JSON (default `runs/benchmarks/word_pieces.json`).
"""
import argparse
import os
import sys

import common

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def corpus_sentences(limit: int):
    """The words of the fixture corpora's sentences (NER, POS, trees), read by the package's readers."""
    from bitcode_allennlp.data.dataset_readers import ConlluPosDatasetReader, OntonotesHashDatasetReader
    from bitcode_allennlp.parsing.dataset_readers.ptb_spans import PtbSpansDatasetReader

    data = common.ROOT / "fixtures" / "data"
    sentences = []
    for reader, path in ((OntonotesHashDatasetReader(), data / "conll2012" / "train"),
                         (ConlluPosDatasetReader(), next((data / "conllu").glob("*train*"))),
                         (PtbSpansDatasetReader(), data / "ptb" / "craft_train.tree")):
        for instance in reader.read(str(path)):
            sentences.append([token.text for token in instance["tokens"].tokens])
    return sentences[:limit]


def measure(name: str, sentences, rounds: int):
    from allennlp.data.tokenizers import PretrainedTransformerTokenizer

    from bitcode_allennlp.data.token_indexers.plm_words import PlmWordsIndexer

    path = common.plm_path(name)
    indexer = PlmWordsIndexer(path)
    per_word = PretrainedTransformerTokenizer(path)
    tokenizer = indexer._tokenizer
    words = differ = empty = 0
    for sentence in sentences:
        ids, owners = indexer.word_pieces(sentence)
        old_pieces, offsets = per_word.intra_word_tokenize(sentence)
        for index, span in enumerate(offsets):
            new = [i for i, owner in zip(ids, owners) if owner == index]
            old = [] if span is None else [t.text_id for t in old_pieces[span[0]: span[1] + 1]]
            words += 1
            if not new and not old:
                empty += 1
            elif tokenizer.convert_ids_to_tokens(new) != tokenizer.convert_ids_to_tokens(old):
                differ += 1
    wall, _ = common.interleaved_times({
        "per_word": lambda: [per_word.intra_word_tokenize(s) for s in sentences],
        "running_text": lambda: [indexer.word_pieces(s) for s in sentences],
    }, rounds)
    times = common.medians(wall)
    return {"plm": name, "tokenizer": type(tokenizer).__name__, "words": words, "differ": differ,
            "no_piece": empty, "sentences": len(sentences),
            "per_word_sentences_per_s": len(sentences) / times["per_word"],
            "running_text_sentences_per_s": len(sentences) / times["running_text"],
            "speed_ratio": times["per_word"] / times["running_text"]}


def main(argv=None):
    from bitcode_allennlp.plm import FIXTURES

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plm", action="append", help="a PLM name (bitcode_allennlp.plm) or directory; repeatable "
                        "(default: every fixture family)")
    parser.add_argument("--sentences", type=int, default=100000, help="at most this many sentences")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=str(common.ROOT / "runs" / "benchmarks" / "word_pieces.json"))
    args = common.parse_args(parser, argv)
    sentences = corpus_sentences(args.sentences)
    results = [measure(name, sentences, args.rounds) for name in (args.plm or list(FIXTURES))]
    print(common.markdown_table(
        ["PLM", "tokenizer", "words", "pieces differ", "no piece", "per word, sent/s", "running text, sent/s",
         "speed-up"],
        [(r["plm"], r["tokenizer"], r["words"], f"{r['differ']} ({100 * r['differ'] / r['words']:.1f}%)",
          r["no_piece"], f"{r['per_word_sentences_per_s']:.0f}", f"{r['running_text_sentences_per_s']:.0f}",
          f"{r['speed_ratio']:.2f}×") for r in results], align="llrrrrrr"))
    common.write_json(args.out, {"machine": common.machine(), "command": common.command_line(), "results": results})
    print(f"written {args.out}")


if __name__ == "__main__":
    sys.exit(main())

"""Batch shapes of the `token_budget` sampler on a real corpus with MiniLM's word pieces: how many batches, and the
largest padded sub-token tensor (sentences × longest sentence in word pieces), for a word budget alone and with
each `max_subtokens` (no training; about a minute on EWT).

    python benchmarks/batch_shapes.py conllu_pos ../shared/data/pos/ud_english_ewt/en_ewt-ud-train.conllu
"""
import argparse

from allennlp.common import Params
from allennlp.data import DatasetReader, Vocabulary

import bitcode_allennlp.plugin  # noqa: F401
import common
from bitcode_allennlp.data.samplers.token_budget import TokenBudgetBatchSampler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reader", help="one of our readers, e.g. conllu_pos, ontonotes_hash, ptb_hash")
    parser.add_argument("corpus")
    parser.add_argument("--max-tokens", type=int, default=1024)
    parser.add_argument("--budgets", default="1024,1536,2048,3072", help="max_subtokens values to compare")
    args = common.parse_args(parser)
    plm = common.plm_path("minilm")
    reader = DatasetReader.from_params(Params({"type": args.reader, "token_policy": "repair", "token_indexers": {
        "tokens": {"type": "pretrained_transformer_mismatched", "model_name": plm, "max_length": 512}}}))
    instances = list(reader.read(args.corpus))
    vocab = Vocabulary.from_instances(instances)
    for instance in instances:
        instance.index_fields(vocab)
    words, pieces = TokenBudgetBatchSampler(max_subtokens=10 ** 9)._measure(instances)
    print(f"{len(instances):,} sentences, {sum(words):,} words, {sum(pieces):,} word pieces (with [CLS]/[SEP])")
    rows = []
    for budget in [None] + [int(b) for b in args.budgets.split(",")]:
        sampler = TokenBudgetBatchSampler(max_tokens=args.max_tokens, max_subtokens=budget, shuffle=False)
        batches = list(sampler.get_batch_indices(instances))
        largest = max(len(batch) * max(pieces[i] for i in batch) for batch in batches)
        rows.append([budget or "none", "words" if budget is None else "sub-tokens", len(batches),
                     f"{sum(words) / len(batches):.0f}", f"{largest:,}"])
    print(common.markdown_table(["max_subtokens", "sorted by", "batches", "mean words per batch",
                                 "largest padded sub-tokens"], rows, "llrrr"))


if __name__ == "__main__":
    main()

"""Structured prediction in pure torch (no AllenNLP): the tree CRF and CKY of the constituency parser, batched
Viterbi decoding of the linear-chain CRF of the taggers."""
from bitcode_allennlp.structs.tree_crf import (  # noqa: F401
    cky,
    gold_chart,
    inside,
    marginals,
    span_mask,
    spans_to_mask,
    stripe,
    tree_crf_loss,
    tree_score,
)
from bitcode_allennlp.structs.viterbi import crf_transitions, paths_to_lists, viterbi_decode, viterbi_tags  # noqa: F401

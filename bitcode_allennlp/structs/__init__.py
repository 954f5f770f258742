"""Structured prediction in pure torch (no AllenNLP): the tree CRF and CKY of the constituency parser."""
from bitcode_allennlp.structs.tree_crf import (  # noqa: F401
    cky,
    inside,
    marginals,
    span_mask,
    spans_to_mask,
    stripe,
    tree_crf_loss,
    tree_score,
)

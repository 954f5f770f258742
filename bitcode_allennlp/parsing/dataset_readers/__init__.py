"""Dataset readers of constituency parsing; importing this package registers them.

`ptb_spans` (PTB bracketed trees -> words and the labelled spans of the binarized tree). It raises
`bitcode_allennlp.host.errors.DataFormatError` on malformed input unless `skip_invalid` is set.
"""
from bitcode_allennlp.parsing.dataset_readers.ptb_spans import PtbSpansDatasetReader
from bitcode_allennlp.structs.tree_crf import gold_chart

__all__ = ["PtbSpansDatasetReader", "gold_chart"]

"""Dataset readers of the tagging stage; importing this package registers them.

`ptb_hash` (PTB trees, POS), `ontonotes_hash` (CoNLL-2012 `*_gold_conll`, NER), `conll_columns` (CoNLL-2003
columns, NER) and `conllu_pos` (CoNLL-U, POS). All raise `bitcode_allennlp.host.errors.DataFormatError` on
malformed input unless `skip_invalid` is set.
"""
from bitcode_allennlp.data.dataset_readers.conll_columns import ConllColumnsDatasetReader
from bitcode_allennlp.data.dataset_readers.conllu import ConlluPosDatasetReader
from bitcode_allennlp.data.dataset_readers.ontonotes import OntonotesHashDatasetReader
from bitcode_allennlp.data.dataset_readers.ptb_trees import PtbHashDatasetReader
from bitcode_allennlp.data.dataset_readers.tagging_reader import TaggingDatasetReader

__all__ = [
    "ConllColumnsDatasetReader",
    "ConlluPosDatasetReader",
    "OntonotesHashDatasetReader",
    "PtbHashDatasetReader",
    "TaggingDatasetReader",
]

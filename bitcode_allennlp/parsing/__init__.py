"""Constituency parsing: CRF span parser over binarized trees (Zhang et al., 2020), as in §3.2 of the paper.

`trees` (binarize / factorize / build, pure nltk), `dataset_readers` (`ptb_spans`), `metrics` (`evalb_f1`, EVALB
with COLLINS.prm in pure Python). Importing this package registers nothing; `bitcode_allennlp.plugin` imports the
submodules.
"""

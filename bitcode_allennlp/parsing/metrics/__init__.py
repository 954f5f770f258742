"""Metrics of constituency parsing; importing this package registers them.

`evalb_f1`: EVALB's labelled bracket scores (COLLINS.prm) in pure Python; `evalb_score` for whole files.
"""
from bitcode_allennlp.parsing.metrics.evalb import COLLINS, EvalbF1, EvalbParameters, evalb_score, read_parameters

__all__ = ["COLLINS", "EvalbF1", "EvalbParameters", "evalb_score", "read_parameters"]

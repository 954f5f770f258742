"""Imports every module of bitcode_allennlp so that all its components are registered with AllenNLP.

Named in ``.allennlp_plugins`` and imported by the ``allennlp`` command through the ``plugin`` patch
(``bitcode_allennlp.host.extensions``); ``--include-package bitcode_allennlp`` does the same thing.
"""
from allennlp.common.util import import_module_and_submodules

import_module_and_submodules("bitcode_allennlp", exclude={"bitcode_allennlp.plugin"})

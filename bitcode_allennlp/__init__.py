"""bitcode_allennlp: contrastive hashing of pre-trained language model states into K-bit codes per word.

Importing this package is cheap and registers nothing with AllenNLP. Components register when their modules
are imported: ``import bitcode_allennlp.plugin`` imports all of them (the ``allennlp`` command does this
for you, see ``bitcode_allennlp.host.compat``).
"""
from bitcode_allennlp.version import VERSION as __version__  # noqa: F401

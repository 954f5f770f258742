"""bitcode_allennlp: contrastive hashing of pre-trained language model states into K-bit codes per word.

    import bitcode_allennlp
    model = bitcode_allennlp.load("runs/demo/model/model.tar.gz")     # or an installed model package's name
    print(model.encode("Obama visits Berlin today").to_table())

Importing this package is cheap and registers nothing with AllenNLP: `load` (`bitcode_allennlp.api`) imports what
a model needs when called. ``import bitcode_allennlp.plugin`` registers every component (the ``allennlp`` command
does this for you, see ``bitcode_allennlp.host.compat``).
"""
from typing import Any

from bitcode_allennlp.version import VERSION as __version__  # noqa: F401


def load(path_or_name: Any, **options: Any) -> Any:
    """A trained model ready to `encode` sentences: `bitcode_allennlp.api.load` (its options: `device`, `threads`,
    `batch_size`, `overrides`)."""
    from bitcode_allennlp.api import load as load_model

    return load_model(path_or_name, **options)

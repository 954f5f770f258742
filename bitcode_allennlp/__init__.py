"""bitcode_allennlp: contrastive hashing of pre-trained language model states into K-bit codes per word.

    import bitcode_allennlp
    model = bitcode_allennlp.load("runs/demo/model/model.tar.gz")     # or an installed model package's name
    print(model.encode("Obama visits Berlin today").to_table())

Importing this package is cheap and registers nothing with AllenNLP: `load` (`bitcode_allennlp.api`) imports what
a model needs when called. ``import bitcode_allennlp.plugin`` registers every component (the ``allennlp`` command
does this for you, see ``bitcode_allennlp.host.compat``).
"""
import os
from typing import Any, Dict, Optional, Union

from bitcode_allennlp.version import VERSION as __version__  # noqa: F401


def load(path_or_name: Union[str, "os.PathLike[str]"], device: Union[str, int, None] = "cpu",
         threads: Optional[int] = None, batch_size: int = 32, overrides: Optional[Dict[str, Any]] = None) -> Any:
    """
    A trained model ready to `encode` sentences (`bitcode_allennlp.api.CodeModel`; `bitcode_allennlp.api.load`).

    # Parameters

    path_or_name : `str`
        A `model.tar.gz` (or serialization folder), or the name of an installed model package.
    device : `str` or `int`, optional (default = `"cpu"`)
        "cpu", "cuda", "cuda:N" or a GPU number.
    threads : `int`, optional (default = `None`)
        torch's intra-op threads; `None` leaves torch's default (all cores: on a shared machine give a number).
    batch_size : `int`, optional (default = `32`)
        Sentences per model call in `encode`.
    overrides : `Dict[str, Any]`, optional
        Config overrides for the archive (as `allennlp predict -o`).
    """
    from bitcode_allennlp.api import load as load_model

    return load_model(path_or_name, device=device, threads=threads, batch_size=batch_size, overrides=overrides)

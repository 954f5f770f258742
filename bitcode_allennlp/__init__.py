"""bitcode_allennlp: contrastive hashing of pre-trained language model states into K-bit codes per word.

    import bitcode_allennlp
    model = bitcode_allennlp.load("runs/demo/model/model.tar.gz")     # or an installed model package's name
    print(model.encode("Obama visits Berlin today").to_table())
    archive = bitcode_allennlp.train("ner_hash", "runs/ner", {"EPOCHS": 1})   # = allennlp train, from Python
    wheel = bitcode_allennlp.package(archive, "acme_ner", "0.1", "CC BY 4.0")  # = allennlp bits package

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


def train(config: Union[str, "os.PathLike[str]"], serialization_dir: Union[str, "os.PathLike[str]"],
          variables: Optional[Dict[str, Any]] = None, plm: Optional[str] = None, force: bool = False) -> str:
    """
    Trains a model (`allennlp train`) from Python and returns its `model.tar.gz` (`bitcode_allennlp.api.train`).

    # Parameters

    config : `str`
        A shipped config by name (`"ner_hash"`, `"pos_hash"`, `"parse_hash"`, `"ner_code"`, ...) or a config file.
    serialization_dir : `str`
        The run's folder.
    variables : `Dict[str, Any]`, optional
        Config variables (docs/configs.md), e.g. `{"EPOCHS": 3, "TRAIN_DATA": "train.conll", "CODE_HEAD": 2}`;
        those of the environment are not read.
    plm : `str`, optional
        `"minilm"`, `"tiny-bert"` or a PLM folder.
    force : `bool`, optional (default = `False`)
        Replace an existing serialization folder.
    """
    from bitcode_allennlp.api import train as train_model

    return train_model(config, serialization_dir, variables=variables, plm=plm, force=force)


def package(archive: Union[str, "os.PathLike[str]"], name: str, version: str, data_licence: str,
            output_dir: Union[str, "os.PathLike[str]"] = "dist", description: Optional[str] = None,
            training_command: Optional[str] = None) -> str:
    """A pip-installable wheel of a trained archive in `output_dir`, as `allennlp bits package` makes it (its checks,
    its model card; `bitcode_allennlp.bits.package`); returns its path. Once installed, `load(name)` finds it."""
    from bitcode_allennlp.bits.package import PackageSpec, build_wheel

    spec = PackageSpec(os.fspath(archive), name, version, data_licence, training_command=training_command,
                       description=description)
    return build_wheel(spec, os.fspath(output_dir))

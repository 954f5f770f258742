"""The old import path of `bitcode_allennlp.code_stage` (the validation stage, on codes), kept so that code written
against it still runs; no deprecation warning. Each submodule here (`bitcode_allennlp.validation.hash_corpus`, ...)
is the module of `code_stage` itself, not a copy: it replaces itself in `sys.modules` with that module (`alias`),
so the components register once and monkeypatching either name patches both. `python -m
bitcode_allennlp.validation.experiment ...` runs `bitcode_allennlp.code_stage.experiment`'s main.
"""
import importlib
import sys
from types import ModuleType

NEW = "bitcode_allennlp.code_stage"


def alias(old_name: str) -> ModuleType:
    """Makes `old_name` (`bitcode_allennlp.validation.X`) name the module `bitcode_allennlp.code_stage.X`."""
    module = importlib.import_module(NEW + old_name[len(__name__):])
    sys.modules[old_name] = module
    return module

"""`bitcode_allennlp.validation`, the old import path of `bitcode_allennlp.code_stage`, still works: each old
submodule is the new module itself (so its components register once), and `python -m
bitcode_allennlp.validation.experiment` still runs the experiment's command line."""
import importlib
import subprocess
import sys

import pytest

SUBMODULES = ["binary_code_embedder", "binary_code_indexer", "binary_codes_reader", "hash_corpus", "experiment"]


@pytest.mark.parametrize("name", SUBMODULES)
def test_an_old_submodule_is_the_new_module(name):
    old = importlib.import_module(f"bitcode_allennlp.validation.{name}")
    new = importlib.import_module(f"bitcode_allennlp.code_stage.{name}")
    assert old is new and sys.modules[f"bitcode_allennlp.validation.{name}"] is new
    assert getattr(importlib.import_module("bitcode_allennlp.validation"), name) is new


def test_old_from_imports_and_registered_names():
    from allennlp.data import DatasetReader, TokenIndexer
    from allennlp.modules.token_embedders import TokenEmbedder

    from bitcode_allennlp.code_stage import experiment
    from bitcode_allennlp.validation.binary_code_embedder import BinaryCodeEmbedder
    from bitcode_allennlp.validation.binary_code_indexer import BinaryCodeIndexer
    from bitcode_allennlp.validation.binary_codes_reader import BinaryCodesDatasetReader
    from bitcode_allennlp.validation.experiment import CONFIG_VARIABLES, main

    assert DatasetReader.by_name("binary_codes") is BinaryCodesDatasetReader
    assert TokenIndexer.by_name("binary_code") is BinaryCodeIndexer
    assert TokenEmbedder.by_name("binary_code") is BinaryCodeEmbedder
    assert BinaryCodesDatasetReader.__module__ == "bitcode_allennlp.code_stage.binary_codes_reader"
    assert main is experiment.main and CONFIG_VARIABLES is experiment.CONFIG_VARIABLES


def test_the_plugin_imports_both_paths_and_registers_once():
    # `import bitcode_allennlp.plugin` walks every subpackage, the old one too: a second execution of a module
    # would register its names again, which AllenNLP refuses.
    code = ("import bitcode_allennlp.validation.hash_corpus, bitcode_allennlp.plugin, sys; "
            "from allennlp.data import DatasetReader; "
            "assert sys.modules['bitcode_allennlp.validation.binary_codes_reader'] is "
            "sys.modules['bitcode_allennlp.code_stage.binary_codes_reader']; "
            "print(DatasetReader.by_name('binary_codes').__module__)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "bitcode_allennlp.code_stage.binary_codes_reader"


@pytest.mark.parametrize("package", ["validation", "code_stage"])
def test_python_m_experiment_help(package):
    result = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m",
                             f"bitcode_allennlp.{package}.experiment", "--help"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "hashing stage → re-annotation" in result.stdout and "--code-set" in result.stdout
    assert "Warning" not in result.stderr


def test_code_batch_old_path_is_common_batch_tensors():
    """The fast CPU path moved to `common/` (issue 18); `code_stage.code_batch` and `left_aligned`'s old home remain."""
    from bitcode_allennlp.code_stage import binary_code_indexer, code_batch
    from bitcode_allennlp.common import batch_tensors

    assert code_batch.code_batch_tensors is batch_tensors.batch_tensors
    assert code_batch.split_outputs is batch_tensors.split_outputs
    assert binary_code_indexer.left_aligned is batch_tensors.left_aligned

"""Every shim in bitcode_allennlp.compat, exercised (see the module docstring for what each one repairs)."""
import json
import logging
import os
import subprocess
import sys

import pytest
import torch

from tests.conftest import CONFIGS, ROOT, TINY_BERT


def python(code: str, env=None) -> str:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, **(env or {})}, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout.strip()


def test_startup_hook_is_installed_in_every_interpreter():
    code = ("import sys, bitcode_allennlp.compat as c; "
            "print(any(isinstance(f, c.AllennlpImportHook) for f in sys.meta_path))")
    assert python(code) == "True"
    assert python(code, env={"BITCODE_ALLENNLP_NO_HOOK": "1"}) == "False"


def test_startup_hook_does_not_import_allennlp():
    assert python("import sys; print('allennlp' in sys.modules, 'torch' in sys.modules)") == "False False"


def test_startup_hook_is_cheap():
    """Every Python process pays for the hook: it loads `bitcode_allennlp.compat` alone (os and sys); the fixes, and
    `logging` or `threading`, load with the first module named `allennlp*`."""
    code = ("import sys; print(sorted(m for m in sys.modules if m.startswith('bitcode_allennlp')), "
            "'logging' in sys.modules, 'threading' in sys.modules)")
    assert python(code) == "['bitcode_allennlp', 'bitcode_allennlp.compat', 'bitcode_allennlp.version'] False False"
    code = ("import importlib.util, sys; importlib.util.find_spec('allennlp_models'); "
            "print('bitcode_allennlp.compat_fixes' in sys.modules)")
    assert python(code) == "True"


def test_fixes_apply_when_our_modules_import_allennlp_first():
    """Importing `common.errors` first loads allennlp.common.params in the middle of it; the config-error fix
    (which imports our bad-input module) must still apply, with nothing printed."""
    code = ("import bitcode_allennlp.bits.stats, allennlp.common.params as p; "
            "print(getattr(p.evaluate_file, '_bitcode_compat', False))")
    assert python(code) == "True"


def test_import_allennlp_in_fresh_process_applies_fixes():
    out = python("import allennlp.commands, allennlp.common.cached_transformers, allennlp.training.optimizers; "
                 "import bitcode_allennlp.compat as c, json; print(json.dumps(c.report()))")
    applied = json.loads(out.splitlines()[-1])
    for name in ("tokenizer_kwargs", "spacy_offline", "plugin", "config_env", "adamw", "cli_errors", "config_errors",
                 "predict_input", "archive_errors", "unstarted_runs"):
        assert name in applied


def test_adamw_is_torch_adamw_under_the_old_name():
    import transformers
    from allennlp.common import Params
    from allennlp.training.optimizers import Optimizer

    assert issubclass(transformers.AdamW, torch.optim.AdamW)
    torch.manual_seed(0)
    weight = torch.nn.Parameter(torch.randn(3, 4))
    reference = torch.nn.Parameter(weight.detach().clone())
    ours = Optimizer.from_params(model_parameters=[("w", weight)],
                                 params=Params({"type": "huggingface_adamw", "lr": 0.1, "weight_decay": 0.01}))
    theirs = torch.optim.AdamW([reference], lr=0.1, weight_decay=0.01, eps=1e-8)
    for _ in range(3):
        for p, opt in ((weight, ours), (reference, theirs)):
            opt.zero_grad()
            (p ** 2).sum().backward()
            opt.step()
    assert torch.allclose(weight, reference)
    with pytest.raises(ValueError, match="correct_bias"):
        transformers.AdamW([reference], correct_bias=False)


def test_torchvision_placeholder_is_inert():
    code = (
        "import importlib.util, sys\n"
        "real = importlib.util.find_spec('torchvision') is not None\n"
        "import allennlp.data.image_loader, allennlp.modules.vision.region_detector\n"
        "import torchvision, transformers.utils as tu\n"
        "try:\n    torchvision.io\n    used = 'no error'\nexcept ImportError as e:\n    used = 'ImportError'\n"
        "print(real, type(torchvision).__name__, used, tu.is_torchvision_available())\n"
    )
    real, kind, used, available = python(code).splitlines()[-1].split()
    if real == "True" and kind != "_Placeholder":
        pytest.skip("a working torchvision is installed; the placeholder is not used")
    assert (kind, used, available) == ("_Placeholder", "ImportError", "False")


def test_allennlp_models_plugin_loads(caplog):
    # setuptools<82 keeps pkg_resources, which py-rouge (imported by allennlp-models) needs.
    import pkg_resources  # noqa: F401
    from allennlp.common.plugins import import_plugins
    from allennlp.models import Model

    with caplog.at_level(logging.ERROR):
        import_plugins()
    assert not [r for r in caplog.records if "could not be loaded" in r.getMessage()]
    assert "crf_tagger" in Model.list_available()  # allennlp-models
    assert "hash_crf_tagger" in Model.list_available()  # ours, through the plugin fix


def test_tokenizer_keeps_add_special_tokens_method():
    from allennlp.data.tokenizers import PretrainedTransformerTokenizer

    tokenizer = PretrainedTransformerTokenizer(str(TINY_BERT))
    tokens = [t.text for t in tokenizer.tokenize("the ring")]
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    assert callable(tokenizer.tokenizer.add_special_tokens)


def test_spacy_falls_back_to_blank_model_offline(caplog):
    from allennlp.data.tokenizers import SpacyTokenizer

    with caplog.at_level(logging.WARNING):
        tokenizer = SpacyTokenizer(language="en_core_web_sm")
    assert [t.text for t in tokenizer.tokenize("Frodo held the ring.")] == ["Frodo", "held", "the", "ring", "."]
    assert any("spacy.blank" in r.getMessage() for r in caplog.records)
    blank = SpacyTokenizer(language="blank:en")
    assert [t.text for t in blank.tokenize("Don't go.")] == ["Do", "n't", "go", "."]


def test_from_pretrained_module_reads_safetensors():
    from allennlp.modules.transformer import TransformerEmbeddings
    from transformers import AutoModel

    assert (TINY_BERT / "model.safetensors").exists() and not (TINY_BERT / "pytorch_model.bin").exists()
    ours = TransformerEmbeddings.from_pretrained_module(str(TINY_BERT))
    theirs = AutoModel.from_pretrained(str(TINY_BERT)).embeddings
    assert torch.equal(ours.embeddings.word_embeddings.weight, theirs.word_embeddings.weight)


def test_gradient_checkpointing_flag_is_honoured():
    from allennlp.modules.token_embedders import PretrainedTransformerEmbedder

    on = PretrainedTransformerEmbedder(str(TINY_BERT), gradient_checkpointing=True)
    off = PretrainedTransformerEmbedder(str(TINY_BERT))
    assert on.transformer_model.is_gradient_checkpointing
    assert not off.transformer_model.is_gradient_checkpointing


def test_config_variables_have_defaults_and_overrides(monkeypatch):
    from allennlp.common import Params

    monkeypatch.delenv("K", raising=False)
    default = Params.from_file(str(CONFIGS / "ner_hash.jsonnet")).as_dict()
    assert default["model"]["encoder"]["num_bits"] == 24
    assert os.path.isdir(default["model"]["text_field_embedder"]["token_embedders"]["tokens"]["model_name"])
    monkeypatch.setenv("K", "16")
    assert Params.from_file(str(CONFIGS / "ner_hash.jsonnet")).as_dict()["model"]["encoder"]["num_bits"] == 16


def test_install_is_idempotent_and_patches_loaded_modules():
    import allennlp.common.util as util
    from bitcode_allennlp import compat

    before = util.get_spacy_model
    compat.install()
    compat.install()
    assert util.get_spacy_model is before and getattr(before, "_bitcode_compat", False)


def test_nltk_download_is_a_no_op_while_narrativeqa_imports(monkeypatch):
    import nltk

    from bitcode_allennlp import compat

    calls = []
    monkeypatch.setattr(nltk, "download", lambda *args, **kwargs: calls.append(args))
    original = nltk.download
    compat.fix_nltk_offline()
    assert nltk.download("punkt") is False and calls == []
    compat.restore_nltk_download(None)
    assert nltk.download is original


def test_plugins_load_without_trying_to_download_nltk_data():
    code = ("import json, nltk, bitcode_allennlp.compat as c\n"
            "from allennlp.common.plugins import import_plugins\n"
            "import_plugins()  # as the allennlp command does at start: allennlp_models imports narrativeqa\n"
            "import allennlp_models.rc.tools.narrativeqa\n"
            "print(json.dumps(['nltk_offline' in c.report(), getattr(nltk.download, '_bitcode_compat', False)]))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "[nltk_data]" not in result.stderr + result.stdout
    assert json.loads(result.stdout.splitlines()[-1]) == [True, False]  # applied, then nltk.download put back


# ------------------------------------------------------------------------------------------- exact_recover


def toy_training(serialization_dir, save_every_num_batches=None, stop_at=None):
    """Trains a linear model with dropout on shuffled toy data (8 instances, batches of 2, 2 epochs) with a
    checkpointer; `stop_at=(epoch, batch)` raises after that batch (an interruption). Returns the final state."""
    import random

    import numpy
    from allennlp.data import Instance, Vocabulary
    from allennlp.data.data_loaders import SimpleDataLoader
    from allennlp.data.fields import LabelField, TensorField
    from allennlp.models import Model
    from allennlp.training import Checkpointer, GradientDescentTrainer
    from allennlp.training.callbacks import TrainerCallback

    class Toy(Model):
        def __init__(self, vocab):
            super().__init__(vocab)
            self.linear = torch.nn.Linear(4, 2)
            self.dropout = torch.nn.Dropout(0.5)

        def forward(self, x, y):
            return {"loss": torch.nn.functional.cross_entropy(self.linear(self.dropout(x)), y)}

    class Interrupt(TrainerCallback):
        def on_batch(self, trainer, batch_inputs, batch_outputs, batch_metrics, epoch, batch_number,
                     is_training, **kwargs):
            if (epoch, batch_number) == stop_at:
                raise KeyboardInterrupt

    random.seed(1), numpy.random.seed(1), torch.manual_seed(1)  # as prepare_environment does
    data = [Instance({"x": TensorField(torch.randn(4)), "y": LabelField(i % 2, skip_indexing=True)})
            for i in range(8)]
    vocab = Vocabulary()
    model = Toy(vocab)
    trainer = GradientDescentTrainer(
        model, torch.optim.SGD(model.parameters(), lr=0.5), SimpleDataLoader(data, 2, shuffle=True, vocab=vocab),
        num_epochs=2, serialization_dir=str(serialization_dir), callbacks=[Interrupt(str(serialization_dir))],
        checkpointer=Checkpointer(str(serialization_dir), save_every_num_batches=save_every_num_batches,
                                  keep_most_recent_by_count=None))
    trainer.train()
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("save_every_num_batches, stop_at", [(2, (0, 3)), (None, (1, 1))])
def test_recover_continues_the_interrupted_run_exactly(tmp_path, monkeypatch, save_every_num_batches, stop_at):
    from allennlp.training import GradientDescentTrainer

    def interrupted_then_resumed(directory):
        with pytest.raises(KeyboardInterrupt):
            toy_training(directory, save_every_num_batches, stop_at)
        return toy_training(directory, save_every_num_batches)  # recovers from the last checkpoint

    uninterrupted = toy_training(tmp_path / "a", save_every_num_batches)
    resumed = interrupted_then_resumed(tmp_path / "b")
    assert all(torch.equal(uninterrupted[k], resumed[k]) for k in uninterrupted)
    assert torch.load(next((tmp_path / "b").glob("training_state_*.th")))["rng_state"]["torch"].dtype == torch.uint8
    # The same interruption without the fix: dropout masks after the resume differ, and so do the weights.
    for name in ("get_checkpoint_state", "_maybe_restore_checkpoint"):
        monkeypatch.setattr(GradientDescentTrainer, name, getattr(GradientDescentTrainer, name).__wrapped__)
    drifted = interrupted_then_resumed(tmp_path / "c")
    assert not all(torch.equal(uninterrupted[k], drifted[k]) for k in uninterrupted)


def test_recover_keeps_the_checkpoint_cadence(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        toy_training(tmp_path, 3, stop_at=(0, 4))
    toy_training(tmp_path, 3)
    names = sorted(p.name for p in tmp_path.glob("model_state_*.th"))
    assert names == ["model_state_e0_b3.th", "model_state_e1_b0.th", "model_state_e1_b3.th", "model_state_e2_b0.th"]


# ---------------------------------------------------------------------------------- self_contained_archives


def archive_untrained(config, run, instances_from=None):
    """Writes a serialization directory for `config` (a `Params`) with an untrained model, archives it with
    AllenNLP's `archive_model` and returns the model and the archive path."""
    from allennlp.data import Vocabulary
    from allennlp.models import Model
    from allennlp.models.archival import archive_model

    run.mkdir()
    config.to_file(str(run / "config.json"))
    vocab = Vocabulary.from_instances(instances_from) if instances_from else Vocabulary(
        {"tokens": {"a": 1, "b": 1}, "labels": {"X": 1, "Y": 1}})
    vocab.save_to_files(str(run / "vocabulary"))
    model = Model.from_params(vocab=vocab, params=config.duplicate().pop("model"))
    torch.save(model.state_dict(), run / "best.th")
    return model.eval(), archive_model(str(run))


def test_archive_carries_the_plm_files_and_loads_from_them(tmp_path, monkeypatch):
    import shutil
    import tarfile

    import allennlp.commands.train
    from allennlp.common import Params
    from allennlp.data import DatasetReader
    from allennlp.models import archival

    import bitcode_allennlp.plugin  # noqa: F401

    assert allennlp.commands.train.archive_model is archival.archive_model  # `allennlp train` archives with it
    plm = tmp_path / "plm"
    shutil.copytree(TINY_BERT, plm)
    monkeypatch.setenv("PLM", str(plm))
    monkeypatch.setenv("MAX_INSTANCES", "4")
    config = Params.from_file(str(CONFIGS / "ner_hash.jsonnet"))
    reader = DatasetReader.from_params(config.duplicate().pop("dataset_reader"))
    model, path = archive_untrained(config, tmp_path / "run", list(reader.read(config["train_data_path"])))
    with tarfile.open(path) as tar:
        names = set(tar.getnames())
    assert {"transformers/index.json", "transformers/plm/config.json", "transformers/plm/vocab.txt"} <= names
    assert not any(name.endswith(".safetensors") for name in names)
    shutil.rmtree(plm)

    archive = archival.load_archive(path)
    words = [["Frodo", "held", "the", "ring", "."], ["RT", "@BBC", ":", "hello"]]
    outputs = []
    for m, r in ((model, reader), (archive.model.eval(), archive.dataset_reader)):
        instances = [r.text_to_instance(w) for w in words]
        for instance in instances:
            r.apply_token_indexers(instance)
        outputs.append([(list(o["tags"]), list(o["code_hex"])) for o in m.forward_on_instances(instances)])
    assert outputs[0] == outputs[1]
    embedder = archive.model.text_field_embedder.token_embedder_tokens._matched_embedder
    assert embedder.transformer_model.config.name_or_path.endswith("transformers/plm")  # the archive's copy


def test_archive_of_a_model_without_plm_is_unchanged(tmp_path):
    import tarfile

    from allennlp.common import Params
    from allennlp.models import archival

    config = Params({"dataset_reader": {"type": "sequence_tagging"}, "train_data_path": "unused",
                     "model": {"type": "simple_tagger", "encoder": {"type": "pass_through", "input_dim": 4},
                               "text_field_embedder": {"token_embedders": {"tokens": {"type": "embedding",
                                                                                      "embedding_dim": 4}}}}})
    model, path = archive_untrained(config, tmp_path / "run")
    with tarfile.open(path) as tar:
        names = tar.getnames()
    assert {"config.json", "weights.th", "vocabulary"} <= set(names)
    assert not any(name.startswith("transformers") for name in names)
    assert not (tmp_path / "run" / "transformers").exists()
    loaded = archival.load_archive(path).model.state_dict()
    assert all(torch.equal(value, loaded[key]) for key, value in model.state_dict().items())

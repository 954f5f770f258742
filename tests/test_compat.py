"""Every version fix in bitcode_allennlp.host.compat, exercised (see the module docstring for what each one repairs),
and the start-up hook that installs them (with our extensions, whose tests are next to their features')."""
import json
import logging
import os
import subprocess
import sys

import pytest
import torch

from tests.conftest import ROOT, TINY_BERT


def python(code: str, env=None) -> str:
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, **(env or {})}, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout.strip()


def test_startup_hook_is_installed_in_every_interpreter():
    code = ("import sys, bitcode_allennlp.host.compat as c; "
            "print(any(isinstance(f, c.AllennlpImportHook) for f in sys.meta_path))")
    assert python(code) == "True"
    assert python(code, env={"BITCODE_ALLENNLP_NO_HOOK": "1"}) == "False"


def test_startup_hook_does_not_import_allennlp():
    assert python("import sys; print('allennlp' in sys.modules, 'torch' in sys.modules)") == "False False"


def test_startup_hook_is_cheap():
    """Every Python process pays for the hook: it loads `bitcode_allennlp.host.compat` alone (os and sys); the fixes,
    and `logging` or `threading`, load with the first module named `allennlp*`."""
    code = ("import sys; print(sorted(m for m in sys.modules if m.startswith('bitcode_allennlp')), "
            "'logging' in sys.modules, 'threading' in sys.modules)")
    assert python(code) == ("['bitcode_allennlp', 'bitcode_allennlp.host', 'bitcode_allennlp.host.compat', "
                            "'bitcode_allennlp.version'] False False")
    code = ("import importlib.util, sys; importlib.util.find_spec('allennlp_models'); "
            "print('bitcode_allennlp.host.compat_fixes' in sys.modules)")
    assert python(code) == "True"


def test_fixes_apply_when_our_modules_import_allennlp_first():
    """Importing `host.errors` first loads allennlp.common.params in the middle of it; the config-error fix
    (which imports our bad-input module) must still apply, with nothing printed."""
    code = ("import bitcode_allennlp.bits.stats, allennlp.common.params as p; "
            "print(getattr(p.evaluate_file, '_bitcode_patch', None))")
    assert python(code) == "config_errors"


def test_import_allennlp_in_fresh_process_applies_fixes():
    out = python("import allennlp.commands, allennlp.common.cached_transformers, allennlp.training.optimizers; "
                 "import bitcode_allennlp.host.compat as c, json; print(json.dumps(c.report()))")
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


def test_install_is_idempotent_and_patches_loaded_modules():
    import allennlp.common.util as util
    from bitcode_allennlp.host import compat

    before = util.get_spacy_model
    compat.install()
    compat.install()
    assert util.get_spacy_model is before and getattr(before, "_bitcode_patch", False)


def test_install_again_rebinds_nothing():
    """A second `install()` in a process where AllenNLP is loaded leaves every patched attribute as it is (before the
    patch helper, it wrapped `_PredictManager.run` again and dropped quiet predict's progress bar)."""
    code = ("import allennlp.commands, allennlp.commands.predict, allennlp.commands.evaluate, "
            "allennlp.training.gradient_descent_trainer, allennlp.models.archival\n"
            "import sys, bitcode_allennlp.host.compat as c, bitcode_allennlp.host.patching as p\n"
            "def value(path):\n"
            "    module = max((m for m in sys.modules if path.startswith(m + '.')), key=len)\n"
            "    owner = sys.modules[module]\n"
            "    for name in path[len(module) + 1:].split('.'):\n"
            "        owner = vars(owner)[name] if isinstance(owner, type) else getattr(owner, name)\n"
            "    return owner\n"
            "paths = [path for paths in p.PATCHED.values() for path in paths]\n"
            "before = [value(path) for path in paths]\n"
            "c.install(); c.install()\n"
            "print(len(paths), [path for path, old in zip(paths, before) if value(path) is not old])")
    count, changed = python(code).splitlines()[-1].split(" ", 1)
    assert int(count) >= 20 and changed == "[]"


def test_nltk_download_is_a_no_op_while_narrativeqa_imports(monkeypatch):
    import nltk

    from bitcode_allennlp.host import compat_fixes

    calls = []
    monkeypatch.setattr(nltk, "download", lambda *args, **kwargs: calls.append(args))
    original = nltk.download
    compat_fixes.fix_nltk_offline()
    assert nltk.download("punkt") is False and calls == []
    compat_fixes.restore_nltk_download(None)
    assert nltk.download is original


def test_plugins_load_without_trying_to_download_nltk_data():
    code = ("import json, nltk, bitcode_allennlp.host.compat as c\n"
            "from allennlp.common.plugins import import_plugins\n"
            "import_plugins()  # as the allennlp command does at start: allennlp_models imports narrativeqa\n"
            "import allennlp_models.rc.tools.narrativeqa\n"
            "print(json.dumps(['nltk_offline' in c.report(), getattr(nltk.download, '_bitcode_patch', False)]))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "[nltk_data]" not in result.stderr + result.stdout
    assert json.loads(result.stdout.splitlines()[-1]) == [True, False]  # applied, then nltk.download put back

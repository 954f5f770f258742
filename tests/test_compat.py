"""Every version fix in bitcode_allennlp.host.compat, exercised (see the module docstring for what each one repairs),
and the start-up hook that installs them (with our extensions, whose tests are next to their features').

They run on both supported lines (constraints.txt: transformers 4.x with huggingface-hub < 1; constraints-newest.txt:
transformers 5.x with huggingface-hub 2.x): a fix that one line does not need is checked not to be applied there."""
import hashlib
import json
import logging
import os
import subprocess
import sys
import types
from importlib.metadata import version

import pytest
import torch

from tests.conftest import FAMILIES, ROOT, TINY_BERT, family_path

TRANSFORMERS_5 = int(version("transformers").split(".")[0]) >= 5
HUB_1 = int(version("huggingface-hub").split(".")[0]) >= 1


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
    assert ("hub_names" in applied) == HUB_1  # only where huggingface-hub lacks HfFolder and Repository
    assert ("tokenizer_methods" in applied) == TRANSFORMERS_5


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

    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        on = PretrainedTransformerEmbedder(str(TINY_BERT), gradient_checkpointing=True)
    off = PretrainedTransformerEmbedder(str(TINY_BERT))
    # transformers 5 renamed it activation checkpointing (the old names warn, and go in v6)
    name = "is_activation_checkpointing" if TRANSFORMERS_5 else "is_gradient_checkpointing"
    assert getattr(on.transformer_model, name) and not getattr(off.transformer_model, name)
    assert not [w for w in caught if "gradient_checkpointing" in str(w.message)]


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


# ---------------------------------------------------------------------------------------------- huggingface-hub >= 1


def test_hub_names_are_placeholders_only_while_push_to_hf_imports(monkeypatch):
    """On a hub without HfFolder and Repository (>= 1.0; a stand-in module here, so that this runs on both lines)
    AllenNLP's `from huggingface_hub import HfApi, HfFolder, Repository` works, using either name raises
    ImportError, and the hub has no such names again afterwards; a hub that has them keeps its own."""
    from bitcode_allennlp.host import compat_fixes, patching

    monkeypatch.setattr(patching, "APPLIED", dict(patching.APPLIED))
    hub = types.ModuleType("huggingface_hub")
    hub.HfApi = object
    monkeypatch.setitem(sys.modules, "huggingface_hub", hub)
    compat_fixes.fix_hub_names()
    from huggingface_hub import HfApi, HfFolder, Repository  # noqa: F401 (as allennlp/common/push_to_hf.py does)

    assert "hub_names" in patching.APPLIED
    with pytest.raises(ImportError, match=r"HfFolder\.get_token is not available: huggingface-hub 1\.0 removed"):
        HfFolder.get_token()  # the first thing allennlp.common.push_to_hf.push_to_hf does
    with pytest.raises(ImportError, match=r"push-to-hf.*needs huggingface-hub<1\.0"):
        Repository("folder", clone_from="https://huggingface.co/me/model")
    compat_fixes.restore_hub_names(None)
    assert not hasattr(hub, "HfFolder") and not hasattr(hub, "Repository")

    own = hub.HfFolder = hub.Repository = type("HfFolder", (), {})
    compat_fixes.fix_hub_names()
    compat_fixes.restore_hub_names(None)
    assert hub.HfFolder is own and hub.Repository is own


def test_allennlp_imports_with_the_installed_hub():
    code = ("import json, sys, huggingface_hub as hub, allennlp.commands, bitcode_allennlp.host.compat as c\n"
            "p = sys.modules['allennlp.common.push_to_hf']\n"
            "try:\n    p.HfFolder.get_token\n    used = 'works'\nexcept ImportError:\n    used = 'ImportError'\n"
            "print(json.dumps([hasattr(hub, 'HfFolder'), used, 'hub_names' in c.report()]))")
    has_name, used, applied = json.loads(python(code).splitlines()[-1])
    if HUB_1:
        assert (has_name, used, applied) == (False, "ImportError", True)
    else:
        assert (has_name, used, applied) == (True, "works", False)


def test_pip_keeps_the_installed_line():
    """Installing the toolkit into this environment (either line, e.g. transformers 5 with huggingface-hub 2) changes
    nothing else: pip, offline, would install only bitcode_allennlp. A requirement that the installed stack does not
    meet (cached-path's huggingface-hub<2 when it was a requirement) makes pip fail or replace a package here."""
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--no-build-isolation",
                             "--quiet", "--report", "-", "-e", str(ROOT)],
                            capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    installed = [(item["metadata"]["name"], item["metadata"]["version"])
                 for item in json.loads(result.stdout)["install"]]
    assert [name for name, _ in installed] == ["bitcode_allennlp"], installed


# ---------------------------------------------------------------------------------------------- transformers 5


def test_tokenizer_methods_are_thin_wrappers_over_call():
    """`encode_plus` and `batch_encode_plus` (ours on transformers 5, transformers' own on 4) give what `__call__`
    gives; on transformers 4 this also checks our wrappers against the originals."""
    from allennlp.data.tokenizers import PretrainedTransformerTokenizer  # noqa: F401 (its import applies the fix)
    from transformers import AutoTokenizer

    from bitcode_allennlp.host import compat_fixes

    tokenizer = AutoTokenizer.from_pretrained(str(TINY_BERT))
    options = dict(add_special_tokens=True, return_offsets_mapping=True, return_token_type_ids=True,
                   return_special_tokens_mask=True, return_attention_mask=False)
    expected = dict(tokenizer("Frodo held the ring", **options))
    assert dict(compat_fixes._encode_plus(tokenizer, "Frodo held the ring", **options)) == expected
    assert dict(tokenizer.encode_plus("Frodo held the ring", **options)) == expected
    assert dict(tokenizer.encode_plus("the ring", "of power", max_length=4, truncation=True)) == dict(
        tokenizer("the ring", "of power", max_length=4, truncation=True))
    words = ["Frodo", "held", "it"]
    assert dict(tokenizer.encode_plus(words, is_split_into_words=True)) == dict(
        tokenizer(words, is_split_into_words=True))

    pairs = [("the ring", "of power"), ("Frodo", "Sam")]
    expected = dict(tokenizer(["the ring", "Frodo"], ["of power", "Sam"], return_token_type_ids=True))
    ours = types.MethodType(compat_fixes._batch_encode_plus, tokenizer)
    for batch_encode_plus in (tokenizer.batch_encode_plus, ours):
        assert dict(batch_encode_plus(pairs, return_token_type_ids=True)) == expected
        assert dict(batch_encode_plus(["a ring", "Sam"], padding=True)) == dict(tokenizer(["a ring", "Sam"],
                                                                                          padding=True))
        assert dict(batch_encode_plus([words, ["Sam"]], is_split_into_words=True)) == dict(
            tokenizer([words, ["Sam"]], is_split_into_words=True))
        assert dict(batch_encode_plus([(words, ["Sam"])], is_split_into_words=True)) == dict(
            tokenizer([words], [["Sam"]], is_split_into_words=True))

    with pytest.raises(TypeError, match="one text"):
        compat_fixes._encode_plus(tokenizer, ["Frodo", "Sam"])  # __call__ would read it as a batch
    with pytest.raises(ValueError, match="both texts and pairs"):
        compat_fixes._batch_encode_plus(tokenizer, ["Frodo", ("the ring", "of power")])


SPECIAL_TOKENS = {
    # family -> build_inputs_with_special_tokens([7]) and ([7], [8]): the ids each tokenizer's template adds
    "tiny-bert": ([2, 7, 3], [2, 7, 3, 8, 3]),
    "tiny-distilbert": ([2, 7, 3], [2, 7, 3, 8, 3]),
    "tiny-electra": ([2, 7, 3], [2, 7, 3, 8, 3]),
    "tiny-roberta": ([0, 7, 2], [0, 7, 2, 2, 8, 2]),
    "tiny-xlmr": ([0, 7, 2], [0, 7, 2, 2, 8, 2]),
    "tiny-deberta-v3": ([1, 7, 2], [1, 7, 2, 8, 2]),
    "tiny-modernbert": ([996, 7, 997], [996, 7, 997, 8, 997]),
    "tiny-gpt2": ([7], [7, 8]),
    "tiny-gpt-neox": ([7], [7, 8]),
    "tiny-llama": ([1, 7], [1, 7, 1, 8]),
    "tiny-llama3": ([998, 7], [998, 7, 998, 8]),
    "tiny-qwen2": ([7], [7, 8]),
}
GENERIC_FAST = {"tiny-modernbert", "tiny-llama3"}
"""Their tokenizer is the generic PreTrainedTokenizerFast under transformers 4, whose build_inputs_with_special_tokens
adds nothing (AllenNLP's folding of long inputs then fails its own length assertion); transformers 5 has no such
class difference, and ours reads the template off the tokenizer."""


@pytest.mark.parametrize("family", FAMILIES)
def test_build_inputs_with_special_tokens_is_the_tokenizers_template(family):
    from allennlp.data.tokenizers import PretrainedTransformerTokenizer  # noqa: F401 (its import applies the fix)
    from transformers import AutoTokenizer

    from bitcode_allennlp.host import compat_fixes

    tokenizer = AutoTokenizer.from_pretrained(str(family_path(family)))
    single, pair = SPECIAL_TOKENS[family]
    assert compat_fixes._build_inputs_with_special_tokens(tokenizer, [7]) == single
    assert compat_fixes._build_inputs_with_special_tokens(tokenizer, [7], [8]) == pair
    if TRANSFORMERS_5 or family not in GENERIC_FAST:  # ours (5), or transformers' hand-written one (4): the same
        assert tokenizer.build_inputs_with_special_tokens([7]) == single
        assert tokenizer.build_inputs_with_special_tokens([7], [8]) == pair


def test_build_inputs_without_offsets_finds_the_texts_among_the_ids():
    """A tokenizer whose encodings cannot say which text a piece comes from (a Python tokenizer): the template is
    found by locating each text's own pieces in the encoded pair."""
    from bitcode_allennlp.host import compat_fixes

    class OneIdPerCharacter:
        def __call__(self, text, text_pair=None, add_special_tokens=True):
            ids = [ord(c) for c in text]
            if text_pair is not None:
                ids += [5] + [ord(c) for c in text_pair]
            return {"input_ids": [1] + ids + [2] if add_special_tokens else ids}

    tokenizer = OneIdPerCharacter()
    assert compat_fixes._build_inputs_with_special_tokens(tokenizer, [70, 71]) == [1, 70, 71, 2]
    assert compat_fixes._build_inputs_with_special_tokens(tokenizer, [70], [80, 81]) == [1, 70, 5, 80, 81, 2]


WORDS = ["Frodo", "visits", "Mordor", ",", "naïve", "[SEP]", "again", "."]
MISMATCHED = {
    # family -> AllenNLP's pretrained_transformer_mismatched on WORDS, the same under transformers 4.57 and 5.x:
    # token_ids; a digest of the whole indexer output, of AllenNLP's tokenizer's pieces for a text and of the special
    # tokens it reverse-engineers; a digest of the indexer output with max_length=5 (long inputs folded: uses
    # build_inputs_with_special_tokens; None: AllenNLP fails on it under transformers 4, see GENERIC_FAST); the
    # embedder's first 3 values for the first word and the sum of |values| over all words.
    "tiny-bert": ([2, 40, 440, 176, 187, 86, 402, 403, 191, 47, 428, 176, 428, 15, 1, 3, 865, 17, 3],
                  "fd7907fefcefeb83", "9338425b6efb655e", [-0.4257, 0.1756, -0.0157, 177.29]),
    "tiny-deberta-v3": ([1, 67, 25, 15, 11, 15, 4, 130, 145, 93, 5, 84, 97, 11, 97, 4, 9, 4, 382, 3, 92, 2, 260, 6, 2],
                        "ea63a5a5b0325018", "40df1b77ec29a4a4", [0.3575, -0.7271, -0.9815, 150.378]),
    "tiny-distilbert": ([2, 213, 352, 129, 60, 333, 334, 133, 232, 132, 118, 359, 15, 52, 115, 613, 3, 842, 17, 3],
                        "6dd0fd3ce28b8624", "3abdfec73bc709cd", [-0.214, -0.3431, 0.163, 150.808]),
    "tiny-electra": ([2, 213, 352, 129, 60, 333, 334, 133, 232, 132, 118, 359, 15, 52, 115, 613, 3, 842, 17, 3],
                     "6dd0fd3ce28b8624", "3abdfec73bc709cd", [-1.0918, -0.3281, -0.0353, 173.432]),
    "tiny-gpt-neox": ([39, 359, 69, 80, 87, 277, 289, 84, 46, 282, 69, 282, 13, 79, 66, 129, 109, 315, 60, 52, 38, 49,
                       62, 595, 431, 15], "48e00c7c8d15c020", "58ef5f46b265767f", [1.0303, -0.3493, 0.0854, 140.174]),
    "tiny-gpt2": ([393, 358, 68, 79, 514, 276, 288, 83, 362, 281, 68, 281, 270, 296, 65, 128, 108, 314, 599, 51, 37, 48,
                   61, 673, 263], "c296cec7b50bb8e4", "dfbfc079e92d856f", [0.7591, -0.0329, -0.5889, 143.666]),
    "tiny-llama": ([1, 493, 499, 322, 333, 664, 411, 424, 337, 475, 416, 322, 416, 405, 432, 319, 198, 178, 452, 720,
                    307, 293, 304, 317, 824, 398], "a0585befced25c41", "56888867d75c9644",
                   [-0.7455, -1.3454, -1.0128, 154.85]),
    "tiny-llama3": ([998, 37, 355, 67, 78, 85, 275, 287, 82, 44, 280, 67, 280, 11, 77, 64, 127, 107, 312, 58, 50, 36,
                     47, 60, 590, 428, 13], "ecdae5088cc4ebdb", None, [-0.3086, 0.6671, -0.1595, 139.611]),
    "tiny-modernbert": ([996, 37, 357, 67, 78, 85, 275, 287, 82, 44, 280, 67, 280, 11, 77, 64, 127, 107, 313, 997, 593,
                         429, 13, 997], "641c0894b784fcac", None, [0.4552, -0.1611, 0.687, 153.721]),
    "tiny-qwen2": ([37, 355, 67, 78, 85, 275, 287, 82, 44, 280, 67, 280, 11, 77, 64, 127, 107, 312, 58, 50, 36, 47, 60,
                    586, 427, 13], "0c62b2eed214384c", "4355c5610a232b10", [-0.286, -0.3328, 0.8688, 151.103]),
    "tiny-roberta": ([0, 42, 362, 72, 83, 90, 280, 292, 87, 49, 285, 72, 285, 16, 82, 69, 132, 112, 318, 63, 55, 41,
                      52, 65, 598, 434, 18, 2], "39d1c41b87c78d2c", "4cdd8374d1cc576e",
                     [-0.4396, -0.0799, 0.1435, 157.093]),
    "tiny-xlmr": ([0, 67, 25, 15, 11, 15, 4, 130, 145, 93, 5, 84, 97, 11, 97, 4, 9, 4, 382, 3, 92, 4, 197, 152, 177,
                   369, 198, 260, 6, 2], "1cce7cf3bf2a5143", "51e90de07d3129e5", [-0.0078, -0.5313, 0.2516, 160.082]),
}
FOLDED_TRANSFORMERS_5 = {"tiny-llama3": "63541552d7d71454", "tiny-modernbert": "eac352594d5d2385"}
"""The max_length=5 digests of GENERIC_FAST under transformers 5 (each segment inside the model's special tokens)."""


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


@pytest.mark.parametrize("family", FAMILIES)
def test_mismatched_indexer_and_embedder_are_the_same_on_both_lines(family):
    """AllenNLP's own pretrained_transformer_mismatched indexer and embedder (archives made before plm_words use
    them) give the same ids and vectors under transformers 4.57 and 5.x (MISMATCHED)."""
    from allennlp.data import Token, Vocabulary
    from allennlp.data.token_indexers import PretrainedTransformerMismatchedIndexer
    from allennlp.modules.token_embedders import PretrainedTransformerMismatchedEmbedder

    token_ids, digest, folded_digest, numbers = MISMATCHED[family]
    path = str(family_path(family))
    tokens = [Token(word) for word in WORDS]
    indexer = PretrainedTransformerMismatchedIndexer(path)
    indexed = indexer.tokens_to_indices(tokens, Vocabulary())
    tokenizer = indexer._allennlp_tokenizer
    pieces = [(t.text, t.text_id, t.type_id) for t in tokenizer.tokenize("Frodo visits Mordor, naïvely.")]
    special = [[(t.text, t.text_id, t.type_id) for t in side] for side in (
        tokenizer.single_sequence_start_tokens, tokenizer.single_sequence_end_tokens,
        tokenizer.sequence_pair_start_tokens, tokenizer.sequence_pair_mid_tokens, tokenizer.sequence_pair_end_tokens)]
    assert indexed["token_ids"] == token_ids
    assert _digest([indexed, pieces, special]) == digest, json.dumps([indexed, pieces, special])

    folding = PretrainedTransformerMismatchedIndexer(path, max_length=5)
    if folded_digest is None and not TRANSFORMERS_5:
        with pytest.raises(AssertionError):  # AllenNLP's own check (GENERIC_FAST)
            folding.tokens_to_indices(tokens, Vocabulary())
    else:
        folded = folding.tokens_to_indices(tokens, Vocabulary())
        assert _digest(folded) == (folded_digest or FOLDED_TRANSFORMERS_5[family]), json.dumps(folded)

    padded = indexer.as_padded_tensor_dict(indexed, indexer.get_padding_lengths(indexed))
    embedder = PretrainedTransformerMismatchedEmbedder(path).eval()
    with torch.no_grad():
        vectors = embedder(**{name: tensor.unsqueeze(0) for name, tensor in padded.items()})[0]  # (words, dim)
    found = [*vectors[0, :3].tolist(), float(vectors.abs().sum())]
    assert found == pytest.approx(numbers, abs=1e-3), found


def test_no_loading_bar_when_the_command_is_quiet():
    """transformers 5 draws a "Loading weights" bar on stderr for every model it loads; the quiet `allennlp` command
    (BITCODE_VERBOSE=0, host/console.py) does not show it, the verbose one does. transformers 4 has no such bar."""
    code = ("from allennlp.common import cached_transformers\n"
            f"cached_transformers.get({str(TINY_BERT)!r}, make_copy=False)\n"
            "import bitcode_allennlp.host.compat as c\nprint('loading_bar' in c.report())")
    for verbose in ("0", "1"):
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                                env={**os.environ, "BITCODE_VERBOSE": verbose}, timeout=300)
        assert result.returncode == 0, result.stderr[-4000:]
        assert result.stdout.split()[-1] == str(TRANSFORMERS_5)
        assert ("Loading weights" in result.stderr) == (TRANSFORMERS_5 and verbose == "1"), result.stderr[-2000:]

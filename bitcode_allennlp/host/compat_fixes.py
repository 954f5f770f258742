"""The code of the version fixes described in `bitcode_allennlp.host.compat` (read its docstring first).

Loaded by `bitcode_allennlp.host.compat` when a module whose name starts with ``allennlp`` is first looked up. Each fix
is registered to run just before (`before`) or just after (`after`) the code of the module it repairs, and rebinds what
it changes through `bitcode_allennlp.host.patching.patch` (the original kept as ``__wrapped__``, applied once, listed
in `report()`). Our extensions (features, not version fixes) are installed the same way from
`bitcode_allennlp.host.extensions`.
Kept cheap (no `typing`, no `importlib.abc`, no `logging` until a fix logs).
"""
import os
import sys
import types

from bitcode_allennlp.host.patching import after, before, patch, record, unpatch


def _logger():
    import logging

    return logging.getLogger("bitcode_allennlp.host.compat")


# ---------------------------------------------------------------------------------------------- early fixes


@before("allennlp.training.optimizers")
def fix_adamw() -> None:
    import transformers

    if _has_attr(transformers, "AdamW"):
        return  # transformers < 4.50 still has it, or the fix ran already
    adamw = _make_adamw()

    # `transformers` is a lazy module that some submodule imports re-execute, replacing the module object in
    # sys.modules and dropping attributes set on the old one. So AdamW is served by the lazy module class's
    # attribute lookup, which every `transformers` module object (old, current, future) shares.
    def serve_adamw(original_getattr):
        def __getattr__(self, name):
            if name == "AdamW" and self.__name__ == "transformers":
                return adamw
            return original_getattr(self, name)

        return __getattr__

    patch(type(sys.modules["transformers"]), "__getattr__", serve_adamw,
          mark="adamw", reason="transformers.AdamW -> subclass of torch.optim.AdamW")


def _make_adamw() -> type:
    import torch

    class AdamW(torch.optim.AdamW):
        """`torch.optim.AdamW` under the old `transformers.AdamW` name and signature (see compat docs)."""

        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0,
                     correct_bias=True, no_deprecation_warning=False):
            if not correct_bias:
                raise ValueError(
                    "correct_bias=False is not supported: transformers.AdamW was removed in transformers 4.50 "
                    "and bitcode_allennlp.host.compat maps it to torch.optim.AdamW, which always corrects bias."
                )
            super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)

    AdamW.__module__ = "transformers"
    return AdamW


def _has_attr(module, name: str) -> bool:
    try:
        getattr(module, name)
        return True
    except Exception:
        return False


class _Placeholder(types.ModuleType):
    """An inert stand-in for a package that is missing or cannot load; using it raises ImportError."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise ImportError(
            f"{self.__name__}.{name} is not available: torchvision is not installed or cannot load against "
            f"this torch build, and bitcode_allennlp.host.compat put a placeholder in its place. AllenNLP's vision "
            f"models need a working torchvision (pip install torchvision matching your torch)."
        )


@before("allennlp.data.image_loader", "allennlp.modules.vision.grid_embedder",
         "allennlp.modules.vision.region_detector")
def fix_torchvision() -> None:
    import importlib.machinery

    existing = sys.modules.get("torchvision")
    if existing is not None:
        return
    try:
        import torchvision  # noqa: F401

        return
    except Exception as error:  # ModuleNotFoundError, or a CUDA build that fails to load ("torchvision::nms")
        reason = f"{type(error).__name__}: {error}"
        for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[name]
    parent = None
    for name in ("torchvision", "torchvision.ops", "torchvision.ops.boxes"):
        module = _Placeholder(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        module.__path__ = []
        module.__file__ = None
        sys.modules[name] = module
        if parent is not None:
            setattr(parent, name.rsplit(".", 1)[1], module)
        parent = module
    record("torchvision", f"placeholder torchvision ({reason})")


# ---------------------------------------------------------------------------------------------- runtime fixes


@after("allennlp.common.cached_transformers")
def fix_tokenizer_kwargs(module: types.ModuleType) -> None:
    def drop_add_special_tokens(original):
        def get_tokenizer(model_name: str, **kwargs):
            kwargs.pop("add_special_tokens", None)
            return original(model_name, **kwargs)

        return get_tokenizer

    patch(module, "get_tokenizer", drop_add_special_tokens, everywhere=True,
          mark="tokenizer_kwargs", reason="get_tokenizer drops the add_special_tokens constructor keyword")


@after("allennlp.common.util")
def fix_spacy_offline(module: types.ModuleType) -> None:
    cache = module.LOADED_SPACY_MODELS

    def blank_when_missing(original):
        def get_spacy_model(spacy_model_name: str, pos_tags: bool = True, parse: bool = False, ner: bool = False):
            options = (spacy_model_name, pos_tags, parse, ner)
            if options in cache:
                return cache[options]
            import spacy

            if spacy_model_name.startswith("blank:"):
                cache[options] = spacy.blank(spacy_model_name.split(":", 1)[1])
                return cache[options]
            if spacy.util.is_package(spacy_model_name) or os.path.isdir(spacy_model_name):
                return original(spacy_model_name, pos_tags=pos_tags, parse=parse, ner=ner)
            lang = spacy_model_name.split("_", 1)[0]
            _logger().warning(
                "spaCy model %r is not installed and cannot be downloaded (offline); using spacy.blank(%r), "
                "which tokenizes but has no tagger, parser or NER.", spacy_model_name, lang,
            )
            cache[options] = spacy.blank(lang)
            return cache[options]

        return get_spacy_model

    patch(module, "get_spacy_model", blank_when_missing, everywhere=True,
          mark="spacy_offline", reason="get_spacy_model falls back to spacy.blank(lang) and accepts 'blank:<lang>'")


@after("allennlp.modules.transformer.transformer_module")
def fix_safetensors_weights(module: types.ModuleType) -> None:
    def read_safetensors(original):  # a classmethod
        original = original.__func__

        def _get_pretrained_state_dict(klass, model_name, weights_path=None, relevant_module=None, ignore=None):
            safe_path = os.path.join(str(model_name), "model.safetensors")
            if (weights_path is None and os.path.isfile(safe_path)
                    and not os.path.isfile(os.path.join(str(model_name), "pytorch_model.bin"))):
                weights_path = safe_path
            if weights_path is None or not str(weights_path).endswith(".safetensors"):
                return original(klass, model_name, weights_path, relevant_module, ignore)
            # allennlp's read_state_dict uses torch.load, which refuses safetensors: read it, then do what it does.
            import re

            from safetensors.torch import load_file

            patterns = ignore if ignore is not None else klass._pretrained_ignore
            state_dict = {key: value for key, value in load_file(str(weights_path)).items()
                          if not any(re.match(pattern, key) for pattern in patterns or [])}
            return klass._get_relevant_submodule_state(state_dict, relevant_module=relevant_module)

        return classmethod(_get_pretrained_state_dict)

    patch(module.TransformerModule, "_get_pretrained_state_dict", read_safetensors,
          mark="safetensors_weights", reason="TransformerModule reads model.safetensors when no pytorch_model.bin")


@after("allennlp.modules.token_embedders.pretrained_transformer_embedder")
def fix_gradient_checkpointing(module: types.ModuleType) -> None:
    import functools

    def enable_checkpointing(original):
        @functools.wraps(original)
        def __init__(self, *args, **kwargs):
            original(self, *args, **kwargs)
            if kwargs.get("gradient_checkpointing"):
                self.transformer_model.gradient_checkpointing_enable()

        return __init__

    patch(module.PretrainedTransformerEmbedder, "__init__", enable_checkpointing,
          mark="gradient_checkpointing", reason="gradient_checkpointing=True calls gradient_checkpointing_enable()")


@before("allennlp_models.rc.tools.narrativeqa")
def fix_nltk_offline() -> None:
    import nltk

    def no_download(original):
        def download(info_or_id=None, *args, **kwargs):
            _logger().debug("bitcode_allennlp.host.compat: not downloading nltk data %r (no network at run time)",
                            info_or_id)
            return False

        return download

    patch(nltk, "download", no_download,
          mark="nltk_offline", reason="nltk.download is a no-op while allennlp_models.rc.tools.narrativeqa is imported")


@after("allennlp_models.rc.tools.narrativeqa")
def restore_nltk_download(module: types.ModuleType) -> None:
    nltk = sys.modules.get("nltk")
    if nltk is not None:
        unpatch(nltk, "download", "nltk_offline")

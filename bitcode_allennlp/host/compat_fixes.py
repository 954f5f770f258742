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

from bitcode_allennlp.host.patching import MARK, PATCHED, after, before, patch, record, unpatch


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


HUB_NAMES = ("HfFolder", "Repository")
"""The names `allennlp/common/push_to_hf.py` imports from huggingface_hub that huggingface-hub 1.0 removed."""


class _RemovedFromHub(type):
    """The metaclass of the `hub_names` placeholders: calling the class or reading a public attribute (``get_token``)
    raises ImportError; a private one is just missing (AttributeError), for tools that probe classes."""

    def __call__(cls, *args, **kwargs):
        raise cls._error()

    def __getattr__(cls, name):
        if name.startswith("_"):
            raise AttributeError(name)
        raise cls._error(name)

    def _error(cls, attribute: str = ""):
        try:
            from importlib.metadata import version

            installed = f"huggingface-hub {version('huggingface-hub')} is installed"
        except Exception:
            installed = "the installed huggingface-hub has no such name"
        used = f"{cls.__name__}.{attribute}" if attribute else cls.__name__
        return ImportError(
            f"huggingface_hub.{used} is not available: huggingface-hub 1.0 removed HfFolder and Repository "
            f"({installed}), and bitcode_allennlp.host.compat put a placeholder in its place so that AllenNLP "
            f"imports. AllenNLP's push to the Hugging Face Hub (allennlp push-to-hf, "
            f"allennlp.common.push_to_hf) needs huggingface-hub<1.0 (and so transformers 4.x); upload a "
            f"model.tar.gz with huggingface_hub.upload_file instead."
        )


@before("allennlp.common.push_to_hf")
def fix_hub_names() -> None:
    hub = sys.modules.get("huggingface_hub")
    if hub is None:
        import huggingface_hub as hub
    missing = [name for name in HUB_NAMES if not _has_attr(hub, name)]
    if not missing:
        return  # huggingface-hub < 1.0 still has them
    for name in missing:
        setattr(hub, name, _RemovedFromHub(name, (), {"__module__": "huggingface_hub", "_bitcode_patch": "hub_names",
                                                      "__doc__": "A placeholder (bitcode_allennlp.host.compat)."}))
    record("hub_names", f"placeholders for huggingface_hub.{' and .'.join(missing)} (removed in huggingface-hub 1.0) "
                        "while allennlp.common.push_to_hf is imported")


@after("allennlp.common.push_to_hf")
def restore_hub_names(module: types.ModuleType) -> None:
    """Takes the placeholders off huggingface_hub again (push_to_hf keeps its own references): other libraries that
    test for these names must still see the hub as it is."""
    hub = sys.modules.get("huggingface_hub")
    for name in HUB_NAMES:
        if hub is not None and getattr(vars(hub).get(name), "_bitcode_patch", None) == "hub_names":
            delattr(hub, name)


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


@after("allennlp.data.tokenizers.pretrained_transformer_tokenizer")
def fix_tokenizer_methods(module: types.ModuleType) -> None:
    from transformers.tokenization_utils_base import PreTrainedTokenizerBase

    added = [name for name, method in (("encode_plus", _encode_plus), ("batch_encode_plus", _batch_encode_plus),
                                       ("build_inputs_with_special_tokens", _build_inputs_with_special_tokens))
             if _provide(PreTrainedTokenizerBase, name, method, mark="tokenizer_methods")]
    if added:
        record("tokenizer_methods", f"PreTrainedTokenizerBase.{', .'.join(added)} (removed in transformers 5) "
                                    "over __call__ and the tokenizer's own special-token template")


def _provide(owner: type, name: str, function, *, mark: str) -> bool:
    """Puts `function` on `owner` under `name` when no class has that attribute (a method transformers removed);
    whether it did. Marked and listed in `patching.PATCHED` as `patch` does; there is no original to wrap."""
    if hasattr(owner, name):
        return False  # transformers 4.x, or provided already
    function.__name__ = function.__qualname__ = name
    setattr(function, MARK, mark)
    setattr(owner, name, function)
    PATCHED.setdefault(mark, []).append(f"{owner.__module__}.{owner.__qualname__}.{name}")
    return True


def _encode_plus(self, text, text_pair=None, **kwargs):
    """One text (or pair): `tokenizer(text, text_pair, **kwargs)`, the method transformers 5 kept.

    transformers 4's ``encode_plus`` (removed in 5), as a thin wrapper (bitcode_allennlp.host.compat). A list of
    words needs ``is_split_into_words=True``; anything else that is not a string is refused rather than read as a
    batch, as ``__call__`` would."""
    if not isinstance(text, str) and not kwargs.get("is_split_into_words"):
        raise TypeError(f"encode_plus takes one text (a str, or a list of words with is_split_into_words=True), not "
                        f"{type(text).__name__}; transformers 5 removed encode_plus and bitcode_allennlp.host.compat "
                        f"provides it over __call__")
    return self(text, text_pair=text_pair, **kwargs)


def _batch_encode_plus(self, batch_text_or_text_pairs, **kwargs):
    """A batch of texts, or of (text, text_pair) tuples: `tokenizer(texts, text_pairs, **kwargs)`.

    transformers 4's ``batch_encode_plus`` (removed in 5), as a thin wrapper (bitcode_allennlp.host.compat)."""
    batch = list(batch_text_or_text_pairs)
    words = kwargs.get("is_split_into_words", False)

    def is_pair(item) -> bool:  # as the tokenizers library reads an item of encode_batch
        if words:
            return isinstance(item, tuple) or (isinstance(item, list) and len(item) == 2 and
                                               isinstance(item[0], (list, tuple)))
        return isinstance(item, (list, tuple))

    pairs = [is_pair(item) for item in batch]
    if batch and all(pairs):
        return self([a for a, _ in batch], text_pair=[b for _, b in batch], **kwargs)
    if any(pairs):
        raise ValueError("batch_encode_plus: a batch of both texts and pairs of texts; transformers 5 removed "
                         "batch_encode_plus and bitcode_allennlp.host.compat provides it over __call__, which takes "
                         "one or the other")
    return self(batch, **kwargs)


def _build_inputs_with_special_tokens(self, token_ids_0, token_ids_1=None):
    """`token_ids_0` (and `token_ids_1`) inside the special tokens that this tokenizer adds around a text (a pair).

    transformers 4's ``build_inputs_with_special_tokens``, which transformers 5 keeps only on Python (slow)
    tokenizers (bitcode_allennlp.host.compat). The template is read off the tokenizer itself: it encodes "a" (and
    "b") with special tokens and keeps what is not the text, so the ids are those that encoding a text would add."""
    ids = []
    for item in _special_tokens_template(self, token_ids_1 is not None):
        if isinstance(item, str):
            ids.extend(token_ids_0 if item == "a" else token_ids_1)
        else:
            ids.append(item)
    return ids


def _special_tokens_template(tokenizer, pair: bool) -> list:
    """The special-token ids that `tokenizer` puts around "a" (and "b"), with the markers "a" and "b" where those
    texts' pieces are: e.g. ``[101, "a", 102, "b", 102]``."""
    texts = ("a", "b") if pair else ("a",)
    encoding = tokenizer(*texts, add_special_tokens=True)
    full = list(encoding["input_ids"])
    try:
        owners = encoding.sequence_ids()  # fast tokenizers: which text each piece comes from (None: special)
    except (ValueError, AttributeError):  # no backend encodings: find the texts' own pieces among the ids
        owners = [None] * len(full)
        start = 0
        for index, text in enumerate(texts):
            pieces = list(tokenizer(text, add_special_tokens=False)["input_ids"])
            at = next((i for i in range(start, len(full) - len(pieces) + 1) if full[i:i + len(pieces)] == pieces),
                      None)
            if not pieces or at is None:
                raise NotImplementedError(f"build_inputs_with_special_tokens: cannot find the special tokens of "
                                          f"{type(tokenizer).__name__} (bitcode_allennlp.host.compat)")
            owners[at:at + len(pieces)] = [index] * len(pieces)
            start = at + len(pieces)
    template = []
    for token_id, owner in zip(full, owners):
        if owner is None:
            template.append(token_id)
        elif not template or template[-1] != texts[owner]:
            template.append(texts[owner])
    return template


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
                model = self.transformer_model
                # transformers >= 5.x deprecates gradient_checkpointing_enable (removed in v6) for this new name
                enable = getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable
                enable()

        return __init__

    patch(module.PretrainedTransformerEmbedder, "__init__", enable_checkpointing,
          mark="gradient_checkpointing", reason="gradient_checkpointing=True calls activation_checkpointing_enable() "
                                                "(gradient_checkpointing_enable() before transformers 5)")


@after("allennlp.common.cached_transformers")
def fix_loading_bar(module: types.ModuleType) -> None:
    import importlib.util

    if importlib.util.find_spec("transformers.core_model_loading") is None:
        return  # transformers 4.x: no bar for a model in one file
    import transformers.core_model_loading as loading

    if not _has_attr(loading, "tqdm"):
        return

    def quiet_when_quiet(original):
        def tqdm(*args, **kwargs):
            from bitcode_allennlp.host.console import quiet

            if quiet():
                kwargs["disable"] = True
            return original(*args, **kwargs)

        return tqdm

    patch(loading, "tqdm", quiet_when_quiet, mark="loading_bar",
          reason="no 'Loading weights' bar from transformers 5 when the allennlp command is quiet")


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

"""Every compatibility fix that lets AllenNLP 2.10.1 run on today's stack, in one place.

AllenNLP 2.10.1 (2022, archived) pins torch<1.13, transformers<4.21 and spacy<3.4. We install it with
``--no-deps`` next to current releases and repair the few places that break. Two lines of versions are tested
(``constraints.txt``: transformers 4.57 with huggingface-hub 0.36; ``constraints-newest.txt``: transformers 5.x with
huggingface-hub 1.x; huggingface-hub 2.x also runs). Every fix first checks what is installed and does nothing where
it is not needed (``report()`` lists only what was applied).

Where this module sits: the start-up hook ``bitcode_allennlp.pth`` (installed into site-packages with the
package) imports it in every Python process, so it is small and imports only ``os`` and ``sys`` (about 0.1 ms from
its .pyc). ``install()`` puts an import hook on ``sys.meta_path`` that ignores every module whose name does not
start with ``allennlp``; the first time one does, it loads the fixes (``bitcode_allennlp/host/compat_fixes.py``) and
our extensions (``bitcode_allennlp/host/extensions.py``) and applies each one around the AllenNLP module that needs it,
the first time that module is imported. Nothing else is loaded for programs that never import AllenNLP. Every fix
rebinds what it changes through one helper, ``bitcode_allennlp.host.patching.patch``: the original stays reachable as
``__wrapped__``, a second application is a no-op, and ``report()`` lists what was applied. ``install()`` is
idempotent, and when AllenNLP is already imported it patches the loaded modules directly. Set
``BITCODE_ALLENNLP_NO_HOOK=1`` to turn the start-up hook off.

The fixes (each has a test in ``tests/test_compat.py``):

``adamw``
    transformers >= 4.50 removed ``transformers.AdamW``; ``allennlp/training/optimizers.py`` subclasses it at
    import time (``huggingface_adamw``), so ``import allennlp`` fails. We provide ``transformers.AdamW`` as a
    subclass of ``torch.optim.AdamW`` that accepts the old ``correct_bias`` argument. Safe: the transformers
    class was deprecated in favour of ``torch.optim.AdamW``, which does the same decoupled weight decay with
    bias correction; ``correct_bias=False`` (which torch cannot do) raises instead of silently changing.
    Trap: importing some transformers submodules (``processing_utils``) re-executes the lazy ``transformers``
    module and drops attributes set on it, so the name is served by the lazy module class's ``__getattr__``.
``hub_names``
    huggingface-hub >= 1.0 (every transformers 5.x requires >= 1.3) removed ``HfFolder`` and ``Repository``;
    ``allennlp/common/push_to_hf.py`` imports both at module level and ``allennlp.common`` imports it, so every
    ``allennlp`` command and ``import allennlp`` fail with ``ImportError: cannot import name 'HfFolder'``. Only when
    the installed hub lacks them, and only while that one module is imported, placeholder classes stand in under those
    names; calling one or reading any attribute raises ``ImportError`` (hub version, what needs hub < 1.0). They are
    taken off ``huggingface_hub`` right after, so other libraries still see the hub as it is. Safe: only AllenNLP's
    push to the Hub (``allennlp push-to-hf``) uses them, and it cannot work with hub >= 1.0 anyway (``Repository``,
    a git clone, is gone); it now fails with that message instead of every command failing at import.
``torchvision``
    allennlp imports torchvision at module level in three vision-only modules. PyPI has no CPU torchvision
    build for torch 2.13, and a CUDA build does not load against the CPU torch wheel. When torchvision cannot
    be imported we register an inert placeholder package whose attributes raise ``ImportError`` on use.
    Safe: only AllenNLP's vision models use it; transformers still reports torchvision unavailable (the
    placeholder has no installed distribution). A working torchvision is always preferred.
``tokenizer_kwargs``
    transformers >= 4.44: ``cached_transformers.get_tokenizer(name, add_special_tokens=False)`` passes a
    constructor keyword that now shadows the tokenizer method ``add_special_tokens`` (and breaks it). We drop
    that keyword. Safe: AllenNLP passes ``add_special_tokens`` explicitly on every encode call.
``tokenizer_methods``
    transformers 5 removed ``encode_plus`` and ``batch_encode_plus`` from every tokenizer, and
    ``build_inputs_with_special_tokens`` from all but the Python ("slow") ones. AllenNLP's
    ``pretrained_transformer*`` tokenizer and indexers call them (and so its embedders, and archives made with
    them). When ``PreTrainedTokenizerBase`` lacks them we add ``encode_plus`` (one text or pair) and
    ``batch_encode_plus`` (texts, or (text, pair) tuples) as thin wrappers over ``__call__``, and
    ``build_inputs_with_special_tokens`` read off the tokenizer itself: it encodes "a" (and "b") with special tokens
    and puts the given ids where the texts' pieces were. Safe: for every fixture family the ids, AllenNLP's
    reverse-engineered special tokens and the mismatched embedder's vectors are those of transformers 4.57
    (``tests/test_compat.py``), and the template matches transformers 4's hand-written methods. One difference:
    transformers 4's generic ``PreTrainedTokenizerFast`` (the ModernBERT and Llama-3 fixtures) added no special
    tokens there, so AllenNLP's folding of long inputs (``max_length``) failed its own assertion; those now get the
    model's template. A list passed to ``encode_plus`` without ``is_split_into_words`` is refused, not read as a
    batch.
``spacy_offline``
    ``get_spacy_model`` runs ``spacy download`` when a model is missing; there is no network here and spaCy 3.8
    models are not on PyPI. We fall back to ``spacy.blank(lang)`` (with a warning) and accept names
    ``blank:<lang>``. Safe: only tokenization is used by our readers and predictors; a pipeline that really
    needs the tagger or parser still gets the installed model when it exists.
``safetensors_weights``
    ``TransformerModule.from_pretrained_module(<dir>)`` only looks for ``pytorch_model.bin`` and reads weights
    with ``torch.load``; transformers now saves ``model.safetensors``, which torch.load refuses. We read the
    safetensors file (with the same ``ignore`` patterns and sub-module selection) when it is the one present.
    Safe: the same tensors under the same names.
``gradient_checkpointing``
    ``PretrainedTransformerEmbedder(gradient_checkpointing=True)`` only writes a config key that transformers
    4.x ignores. We call ``gradient_checkpointing_enable()`` as the flag intends (transformers 5:
    ``activation_checkpointing_enable()``, its new name; the old one warns that it goes in v6). Safe: same outputs,
    less memory.
``loading_bar``
    transformers 5 draws a "Loading weights" progress bar on stderr for every model it loads (transformers 4 has
    none for a one-file checkpoint), so the quiet ``allennlp train`` printed one per PLM. When the command is quiet
    (``BITCODE_VERBOSE=0``, ``bitcode_allennlp/host/console.py``) that bar is created disabled (the ``tqdm`` that
    ``transformers.core_model_loading`` uses passes ``disable=True``); with ``--verbose``, and in Python programs, it
    shows as transformers draws it. Safe: only that bar, only display; download bars and other output are untouched.
``nltk_offline``
    allennlp-models' ``rc/tools/narrativeqa.py``, imported at every ``allennlp`` start through the plugin, calls
    ``nltk.download("punkt")`` and ``nltk.download("wordnet")`` when punkt is not installed: a network attempt
    that prints ``[nltk_data] Error loading punkt: <urlopen error ...>`` offline. ``nltk.download`` is a no-op
    (returns False, as a failed download does) while that one module is imported, and is put back after. Safe:
    only NarrativeQA's reading-comprehension metric uses that data; ``python -m nltk.downloader punkt wordnet``
    installs it where needed.

Our extensions (features, not version fixes) are installed by the same hook: ``plugin``, ``config_env``,
``exact_recover``, ``self_contained_archives``, the bad-input errors and the quiet ``allennlp`` command. Each lives
next to its feature; ``bitcode_allennlp/host/extensions.py`` lists them and where.

Not a code fix but part of the same layer: ``setuptools<82`` is pinned because py-rouge (used by
allennlp-models) imports ``pkg_resources``, removed in setuptools 82; without it allennlp only logs "Plugin
allennlp_models could not be loaded". Not fixed, by design: ``allennlp push-to-hf`` with huggingface-hub >= 1.0
(``hub_names``).
"""

import os
import sys

_patching = None  # the module bitcode_allennlp.host.patching, once an AllenNLP module has been looked up


def _load_fixes():
    """Loads the version fixes and our extensions (each registers itself); returns `bitcode_allennlp.host.patching`."""
    global _patching
    if _patching is None:
        from bitcode_allennlp.host import compat_fixes, extensions, patching  # noqa: F401 (they register their fixes)

        _patching = patching
    return _patching


class AllennlpImportHook:
    """`sys.meta_path` finder: ignores every module whose name does not start with ``allennlp``; for the others it
    loads the fixes, which wrap the loader of each AllenNLP module that has one (`patching.find_spec`)."""

    def find_spec(self, fullname, path, target=None):
        if not fullname.startswith("allennlp"):
            return None
        return _load_fixes().find_spec(self, fullname, path, target)


def install() -> None:
    """Installs the import hook, and applies fixes to AllenNLP modules already imported. Idempotent."""
    if not any(isinstance(f, AllennlpImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, AllennlpImportHook())
    if any(name.startswith("allennlp") for name in list(sys.modules)):
        _load_fixes().apply_to_loaded()


def install_from_startup() -> None:
    """Called by ``bitcode_allennlp.pth`` at interpreter start-up."""
    if os.environ.get("BITCODE_ALLENNLP_NO_HOOK"):
        return
    install()


def report() -> "dict[str, str]":
    """The patches applied in this process so far, version fixes and extensions (name -> what was done)."""
    return {} if _patching is None else dict(_patching.APPLIED)


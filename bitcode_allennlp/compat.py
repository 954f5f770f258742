"""Every compatibility fix that lets AllenNLP 2.10.1 run on today's stack, in one place.

AllenNLP 2.10.1 (2022, archived) pins torch<1.13, transformers<4.21 and spacy<3.4. We install it with
``--no-deps`` next to current releases (see ``constraints.txt``) and repair the few places that break.

Where this module sits: the start-up hook ``bitcode_allennlp.pth`` (installed into site-packages with the
package) imports it in every Python process, so it is small and imports only ``os`` and ``sys`` (about 0.1 ms from
its .pyc). ``install()`` puts an import hook on ``sys.meta_path`` that ignores every module whose name does not
start with ``allennlp``; the first time one does, it loads the fixes (``bitcode_allennlp/compat_fixes.py``) and
applies each one around the AllenNLP module that needs it, the first time that module is imported. Nothing else is
loaded for programs that never import AllenNLP. ``install()`` is idempotent, and when AllenNLP is already imported
it patches the loaded modules directly. Set ``BITCODE_ALLENNLP_NO_HOOK=1`` to turn the start-up hook off.

The fixes (each has a test in ``tests/test_compat.py``):

``adamw``
    transformers >= 4.50 removed ``transformers.AdamW``; ``allennlp/training/optimizers.py`` subclasses it at
    import time (``huggingface_adamw``), so ``import allennlp`` fails. We provide ``transformers.AdamW`` as a
    subclass of ``torch.optim.AdamW`` that accepts the old ``correct_bias`` argument. Safe: the transformers
    class was deprecated in favour of ``torch.optim.AdamW``, which does the same decoupled weight decay with
    bias correction; ``correct_bias=False`` (which torch cannot do) raises instead of silently changing.
    Trap: importing some transformers submodules (``processing_utils``) re-executes the lazy ``transformers``
    module and drops attributes set on it, so the name is served by the lazy module class's ``__getattr__``.
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
    4.x ignores. We call ``gradient_checkpointing_enable()`` as the flag intends. Safe: same outputs, less memory.
``plugin``
    The ``allennlp`` command imports allennlp-models and ``.allennlp_plugins`` entries before it reads
    ``--include-package``. We add ``bitcode_allennlp.plugin`` to ``import_plugins`` so our names are known to
    ``train``/``evaluate``/``predict`` without the flag. The flag still works and is harmless.
``nltk_offline``
    allennlp-models' ``rc/tools/narrativeqa.py``, imported at every ``allennlp`` start through the plugin, calls
    ``nltk.download("punkt")`` and ``nltk.download("wordnet")`` when punkt is not installed: a network attempt
    that prints ``[nltk_data] Error loading punkt: <urlopen error ...>`` offline. ``nltk.download`` is a no-op
    (returns False, as a failed download does) while that one module is imported, and is put back after. Safe:
    only NarrativeQA's reading-comprehension metric uses that data; ``python -m nltk.downloader punkt wordnet``
    installs it where needed.
``exact_recover``
    An AllenNLP bug (any torch): ``allennlp train --recover`` from a mid-epoch checkpoint (``checkpointer:
    {save_every_num_batches: N}``) does not continue the interrupted run. The checkpoint holds the weights, the
    optimizer, the learning-rate scheduler and the metric tracker, and the trainer replays the data loader up to
    the saved batch (so the data order is right), but no random generator state is saved: after the resume,
    dropout draws from the generator as left by model construction, and the run drifts (ner_hash on the
    fixtures, killed at batch 5 of 7: after 2 epochs the weights differ by up to 2e-4, validation accuracy is
    0.4263 instead of 0.4295). We save the Python, NumPy and torch (and CUDA) generator states in the training
    state, and put them back at the same point of the replayed data: when the trainer asks for the first batch
    after the checkpoint (for an end-of-epoch checkpoint, before the next epoch draws its batches;
    ``bitcode_allennlp/training/recover.py``). The checkpointer also keeps its every-N-batches cadence across the
    resume. Result: the same final weights, optimizer state and metrics as an uninterrupted run
    (``tests/reliability/test_recover.py``). Safe: one more key in the training state (checkpoints without it
    resume as before). Limits: single-process training only (under DDP only the primary's training state is
    saved, so DDP resumes as before); the ``training_*`` metrics of the interrupted epoch itself count only the
    batches trained after the resume (AllenNLP keeps no running sums in checkpoints; its ``training_loss``
    divides their loss by all the epoch's batches); every later epoch and every validation metric is exact.

``config_env`` (an extension, not a fix)
    jsonnet cannot give a missing ``std.extVar`` a default; AllenNLP passes the environment as ext vars, and we
    add ``BITCODE_ENV`` (the environment as a JSON string) so ``training_configs/env.libsonnet`` can.
``self_contained_archives`` (an extension, not a fix)
    An archive names its PLM by path (``model_name`` of the ``pretrained_transformer*`` indexers and embedders)
    and loading rebuilds the tokenizer and the transformer from there, so it breaks once that directory is
    moved or deleted (or offline, for a hub name). ``archive_model`` also stores the PLM's files except its
    weights (config, tokenizer; the weights are in the state dict) under ``transformers/``, and
    ``load_archive`` points ``model_name`` at that copy with ``load_weights: false``
    (``bitcode_allennlp/common/archival.py``). Safe: archives without a PLM, and older archives, are made and
    loaded as before; the weights are the archive's either way.

``cli_errors``, ``config_errors``, ``predict_input``, ``archive_errors``, ``unstarted_runs`` (extensions, not fixes;
all in ``bitcode_allennlp/common/bad_input.py``, tested in ``tests/test_bad_input.py``)
    One clear error for every bad input. ``allennlp.commands.main`` prints a ``ConfigurationError`` (our
    ``DataFormatError`` and ``ArchiveError`` included) or a missing file as ``allennlp <command>: error: <message>``
    plus a hint line, exit status 1; ``BITCODE_DEBUG=1`` (or ``ALLENNLP_DEBUG=1``) shows the traceback instead.
    jsonnet's ``evaluate_file`` / ``evaluate_snippet`` raise ``ConfigurationError`` ``<config>: <message>``.
    ``allennlp predict`` reads its input lines through the predictor's ``check_input``: a bad line is
    ``<input>, line <n>: <what>``, found before the first prediction; ``--skip-bad-lines`` logs and skips it.
    ``extracted_archive`` raises ``ArchiveError`` for an empty, truncated or foreign ``model.tar.gz`` and removes
    its temporary folder (AllenNLP's ``load_archive`` leaked it). ``create_serialization_dir`` removes a folder that
    holds only what a run writes before its first checkpoint (``config.json``, ``meta.json``, ``vocabulary/``,
    ``*.log``) instead of asking for ``--recover``, and otherwise says what ``--recover`` and ``--force`` do.

``quiet_cli``, ``verbose_flag``, ``quiet_training``, ``quiet_predict``, ``evaluate_metrics`` (extensions, not fixes;
``bitcode_allennlp/common/console.py``, tested in ``tests/test_quiet_cli.py``)
    The ``allennlp`` command is quiet by default: results on stdout (``predict``: one JSON line per prediction;
    ``evaluate``: its final metrics as JSON, also without ``--output-file``; ``train``: the epoch lines, the metrics
    table and the final metrics), progress bars and WARNING/ERROR log lines on stderr, no INFO log flood (``train``
    still writes every line to ``out.log``), and three known library warnings ignored, each by message, category
    and module (``console.NOISE_WARNINGS``). ``--verbose`` (in every parser), ``BITCODE_VERBOSE=1``, or
    ``ALLENNLP_LOG_LEVEL`` / ``ALLENNLP_DEBUG`` give AllenNLP's output as before. Set up before AllenNLP is imported
    (a fix run before the ``allennlp`` package's own code, when ``sys.argv`` is the ``allennlp`` command).
``light_bits`` (an extension, not a fix; ``bitcode_allennlp/common/light_cli.py``)
    ``allennlp bits stats | heatmap | index | search | precision | probe`` and ``bits diff --codes`` run at that
    same point without importing AllenNLP, torch or transformers (about 1 s instead of 7-9 s), with the same
    parser, output, errors and exit status; in that process ``ConfigurationError`` and ``Subcommand`` are
    stand-ins. ``bits diff ARCHIVE`` and other commands go through AllenNLP as before.

Not a code fix but part of the same layer: ``setuptools<82`` is pinned because py-rouge (used by
allennlp-models) imports ``pkg_resources``, removed in setuptools 82; without it allennlp only logs "Plugin
allennlp_models could not be loaded". transformers 5.x is not supported (``constraints.txt`` pins <5).
"""

import os
import sys

_fixes = None  # the module bitcode_allennlp.compat_fixes, once an AllenNLP module has been looked up


def _load_fixes():
    global _fixes
    if _fixes is None:
        from bitcode_allennlp import compat_fixes

        _fixes = compat_fixes
    return _fixes


class AllennlpImportHook:
    """`sys.meta_path` finder: ignores every module whose name does not start with ``allennlp``; for the others it
    loads the fixes, which wrap the loader of each AllenNLP module that has one (`compat_fixes.find_spec`)."""

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
    """The fixes applied in this process so far (name -> what was done)."""
    return {} if _fixes is None else dict(_fixes.APPLIED)


def __getattr__(name: str):
    # The fixes themselves (`compat.fix_adamw`, `compat.APPLIED`, ...) live in compat_fixes, loaded when first asked.
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_load_fixes(), name)

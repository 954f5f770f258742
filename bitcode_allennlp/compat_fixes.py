"""The code of every fix and extension described in `bitcode_allennlp.compat` (read its docstring first).

`bitcode_allennlp.compat`, imported at every Python start, loads this module when a module whose name starts with
``allennlp`` is first looked up; `find_spec` then wraps the loader of each AllenNLP module named in `_BEFORE` /
`_AFTER` so that its fixes run just before / just after the module's code.
"""
import _thread
import os
import sys
import types

# Loaded by `bitcode_allennlp.compat` when the first AllenNLP module is looked up; kept cheap all the same (no
# `typing`, no `importlib.abc`, no `logging` until a fix logs).


def _logger():
    import logging

    return logging.getLogger("bitcode_allennlp.compat")


# Module name -> fixes run just before / just after that module's code executes.
_BEFORE: "dict[str, list]" = {}  # fixes taking no argument
_AFTER: "dict[str, list]" = {}  # fixes taking the module
APPLIED: "dict[str, str]" = {}  # fix name -> what was done; read by tests and `bitcode_allennlp.compat.report()`


def _before(*module_names: str):
    def register(fix):
        for name in module_names:
            _BEFORE.setdefault(name, []).append(fix)
        return fix

    return register


def _after(*module_names: str):
    def register(fix):
        for name in module_names:
            _AFTER.setdefault(name, []).append(fix)
        return fix

    return register


# ---------------------------------------------------------------------------------------------- early fixes


@_before("allennlp.training.optimizers")
def fix_adamw() -> None:
    import transformers

    if _has_attr(transformers, "AdamW"):
        return  # transformers < 4.50 still has it, or the fix ran already
    adamw = _make_adamw()
    # `transformers` is a lazy module that some submodule imports re-execute, replacing the module object in
    # sys.modules and dropping attributes set on the old one. So AdamW is served by the lazy module class's
    # attribute lookup, which every `transformers` module object (old, current, future) shares.
    lazy_module_class = type(sys.modules["transformers"])
    original_getattr = lazy_module_class.__getattr__

    def __getattr__(self, name):
        if name == "AdamW" and self.__name__ == "transformers":
            return adamw
        return original_getattr(self, name)

    lazy_module_class.__getattr__ = __getattr__
    APPLIED["adamw"] = "transformers.AdamW -> subclass of torch.optim.AdamW"


def _make_adamw() -> type:
    import torch

    class AdamW(torch.optim.AdamW):
        """`torch.optim.AdamW` under the old `transformers.AdamW` name and signature (see compat docs)."""

        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0,
                     correct_bias=True, no_deprecation_warning=False):
            if not correct_bias:
                raise ValueError(
                    "correct_bias=False is not supported: transformers.AdamW was removed in transformers 4.50 "
                    "and bitcode_allennlp.compat maps it to torch.optim.AdamW, which always corrects bias."
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
            f"this torch build, and bitcode_allennlp.compat put a placeholder in its place. AllenNLP's vision "
            f"models need a working torchvision (pip install torchvision matching your torch)."
        )


@_before("allennlp.data.image_loader", "allennlp.modules.vision.grid_embedder",
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
    APPLIED["torchvision"] = f"placeholder torchvision ({reason})"


# ---------------------------------------------------------------------------------------------- runtime fixes


@_after("allennlp.common.cached_transformers")
def fix_tokenizer_kwargs(module: types.ModuleType) -> None:
    original = module.get_tokenizer
    if getattr(original, "_bitcode_compat", False):
        return

    def get_tokenizer(model_name: str, **kwargs):
        kwargs.pop("add_special_tokens", None)
        return original(model_name, **kwargs)

    get_tokenizer.__doc__ = original.__doc__
    get_tokenizer._bitcode_compat = True
    get_tokenizer.__wrapped__ = original
    _replace_everywhere(original, get_tokenizer)
    APPLIED["tokenizer_kwargs"] = "get_tokenizer drops the add_special_tokens constructor keyword"


@_after("allennlp.common.util")
def fix_spacy_offline(module: types.ModuleType) -> None:
    original = module.get_spacy_model
    if getattr(original, "_bitcode_compat", False):
        return
    cache = module.LOADED_SPACY_MODELS

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

    get_spacy_model.__doc__ = original.__doc__
    get_spacy_model._bitcode_compat = True
    get_spacy_model.__wrapped__ = original
    _replace_everywhere(original, get_spacy_model)
    APPLIED["spacy_offline"] = "get_spacy_model falls back to spacy.blank(lang) and accepts 'blank:<lang>'"


@_after("allennlp.modules.transformer.transformer_module")
def fix_safetensors_weights(module: types.ModuleType) -> None:
    cls = module.TransformerModule
    original = cls.__dict__["_get_pretrained_state_dict"].__func__
    if getattr(original, "_bitcode_compat", False):
        return

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

    _get_pretrained_state_dict._bitcode_compat = True
    cls._get_pretrained_state_dict = classmethod(_get_pretrained_state_dict)
    APPLIED["safetensors_weights"] = "TransformerModule reads model.safetensors when no pytorch_model.bin"


@_after("allennlp.modules.token_embedders.pretrained_transformer_embedder")
def fix_gradient_checkpointing(module: types.ModuleType) -> None:
    import functools

    cls = module.PretrainedTransformerEmbedder
    original = cls.__init__
    if getattr(original, "_bitcode_compat", False):
        return

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if kwargs.get("gradient_checkpointing"):
            self.transformer_model.gradient_checkpointing_enable()

    __init__._bitcode_compat = True
    cls.__init__ = __init__
    APPLIED["gradient_checkpointing"] = "gradient_checkpointing=True calls gradient_checkpointing_enable()"


@_after("allennlp.common.plugins")
def fix_plugin(module: types.ModuleType) -> None:
    original = module.import_plugins
    if getattr(original, "_bitcode_compat", False):
        return

    def import_plugins() -> None:
        original()
        try:
            import bitcode_allennlp.plugin  # noqa: F401

            module.logger.info("Plugin bitcode_allennlp available")
        except ModuleNotFoundError as error:
            module.logger.error(f"Plugin bitcode_allennlp could not be loaded: {error}")

    import_plugins.__doc__ = original.__doc__
    import_plugins._bitcode_compat = True
    import_plugins.__wrapped__ = original
    _replace_everywhere(original, import_plugins)
    APPLIED["plugin"] = "allennlp's import_plugins() also imports bitcode_allennlp.plugin"


@_after("allennlp.common.params")
def extend_config_env(module: types.ModuleType) -> None:
    """Not a fix but an extension of the same kind: jsonnet has no default for a missing `std.extVar`, so
    `_environment_variables()` (what AllenNLP passes to jsonnet) also carries `BITCODE_ENV`, the whole
    environment as one JSON string. `training_configs/env.libsonnet` reads it to give variables defaults."""
    original = module._environment_variables
    if getattr(original, "_bitcode_compat", False):
        return

    def _environment_variables():
        import json

        variables = original()
        variables["BITCODE_ENV"] = json.dumps(variables)
        return variables

    _environment_variables._bitcode_compat = True
    _environment_variables.__wrapped__ = original
    _replace_everywhere(original, _environment_variables)
    APPLIED["config_env"] = "jsonnet configs see the environment as BITCODE_ENV (defaults for std.extVar)"


@_before("allennlp_models.rc.tools.narrativeqa")
def fix_nltk_offline() -> None:
    import nltk

    if getattr(nltk.download, "_bitcode_compat", False):
        return

    def download(info_or_id=None, *args, **kwargs):
        _logger().debug("bitcode_allennlp.compat: not downloading nltk data %r (no network at run time)", info_or_id)
        return False

    download._bitcode_compat = True
    download.__wrapped__ = nltk.download
    nltk.download = download
    APPLIED["nltk_offline"] = "nltk.download is a no-op while allennlp_models.rc.tools.narrativeqa is imported"


@_after("allennlp_models.rc.tools.narrativeqa")
def restore_nltk_download(module: types.ModuleType) -> None:
    nltk = sys.modules.get("nltk")
    if nltk is not None and getattr(nltk.download, "_bitcode_compat", False):
        nltk.download = nltk.download.__wrapped__


@_after("allennlp.training.gradient_descent_trainer")
def fix_exact_recover(module: types.ModuleType) -> None:
    cls = module.GradientDescentTrainer
    original_state = cls.get_checkpoint_state
    original_restore = cls._maybe_restore_checkpoint
    if getattr(original_state, "_bitcode_compat", False):
        return

    def get_checkpoint_state(self):
        from bitcode_allennlp.training.recover import rng_state

        checkpoint = original_state(self)
        if checkpoint is not None and not self._distributed:
            checkpoint.trainer_state["rng_state"] = rng_state()
        return checkpoint

    def _maybe_restore_checkpoint(self) -> None:
        checkpointer, loaded = self._checkpointer, []
        if checkpointer is not None:  # keep what the original loads (it keeps nothing but its effects)
            load = checkpointer.load_checkpoint
            checkpointer.load_checkpoint = lambda: loaded.append(load()) or loaded[-1]
        try:
            original_restore(self)
        finally:
            if checkpointer is not None:
                del checkpointer.load_checkpoint
        if not loaded or loaded[0] is None:
            return
        epochs, batches = self._start_after_epochs_completed, self._start_after_batches_in_epoch_completed
        if hasattr(checkpointer, "_last_save_num_batches_in_epoch_completed"):  # continue the save cadence
            checkpointer._last_save_num_epochs_completed = epochs
            checkpointer._last_save_num_batches_in_epoch_completed = batches
        state = loaded[0].trainer_state.get("rng_state")
        if state is not None and not self._distributed:
            from bitcode_allennlp.training.recover import ResumingDataLoader

            self.data_loader = ResumingDataLoader(
                self, epochs, batches * self._num_gradient_accumulation_steps, state)

    get_checkpoint_state._bitcode_compat = True
    get_checkpoint_state.__wrapped__ = original_state
    _maybe_restore_checkpoint.__wrapped__ = original_restore
    cls.get_checkpoint_state = get_checkpoint_state
    cls._maybe_restore_checkpoint = _maybe_restore_checkpoint
    APPLIED["exact_recover"] = "checkpoints keep the random generator states; --recover puts them back in place"


@_after("allennlp.models.archival")
def extend_self_contained_archives(module: types.ModuleType) -> None:
    original_archive = module.archive_model
    if getattr(original_archive, "_bitcode_compat", False):
        return
    original_readers, original_model = module._load_dataset_readers, module._load_model

    def archive_model(serialization_dir, weights=module._DEFAULT_WEIGHTS, archive_path=None,
                      include_in_archive=None):
        from bitcode_allennlp.common.archival import add_transformer_files

        include = list(include_in_archive or [])
        try:
            include += [path for path in add_transformer_files(serialization_dir) if path not in include]
        except Exception:  # the archive must still be written after a long training; it just needs the PLM
            _logger().exception("Could not add the PLM's files to the archive; it will need the PLM to load")
        return original_archive(serialization_dir, weights, archive_path, include or None)

    def _load_dataset_readers(config, serialization_dir):
        from bitcode_allennlp.common.archival import use_archived_transformers

        use_archived_transformers(config, serialization_dir)
        return original_readers(config, serialization_dir)

    def _load_model(config, weights_path, serialization_dir, cuda_device):
        from bitcode_allennlp.common.archival import use_archived_transformers

        use_archived_transformers(config, serialization_dir)
        return original_model(config, weights_path, serialization_dir, cuda_device)

    archive_model.__doc__ = original_archive.__doc__
    archive_model._bitcode_compat = True
    archive_model.__wrapped__ = original_archive
    _replace_everywhere(original_archive, archive_model)  # also `allennlp.commands.train`'s imported name
    module._load_dataset_readers, module._load_model = _load_dataset_readers, _load_model
    APPLIED["self_contained_archives"] = "archives carry the PLM's config and tokenizer and load from them"


@_after("allennlp.commands")
def extend_cli_errors(module: types.ModuleType) -> None:
    """One error line (and exit status 1) instead of a traceback for a user's error (`common/bad_input.py`)."""
    if getattr(module.main, "_bitcode_compat", False):
        return
    from bitcode_allennlp.common.bad_input import wrap_main

    main = wrap_main(module.main)
    main._bitcode_compat = True
    module.main = main
    APPLIED["cli_errors"] = "allennlp's main prints a user error as one line (BITCODE_DEBUG=1: the traceback)"


@_after("allennlp.common.params")
def extend_config_errors(module: types.ModuleType) -> None:
    """A jsonnet error as `ConfigurationError` `<config>: <message>` (`common/bad_input.py`)."""
    if getattr(module.evaluate_file, "_bitcode_compat", False):
        return
    from bitcode_allennlp.common.bad_input import wrap_evaluate

    original_file, original_snippet = module.evaluate_file, module.evaluate_snippet
    _replace_everywhere(original_file, wrap_evaluate(original_file))
    _replace_everywhere(original_snippet, wrap_evaluate(original_snippet, snippet=True))
    APPLIED["config_errors"] = "jsonnet errors are ConfigurationError '<config>: <message>'"


@_after("allennlp.commands.predict")
def extend_predict_input(module: types.ModuleType) -> None:
    """`allennlp predict` checks every input line and names the bad one; `--skip-bad-lines`."""
    manager = module._PredictManager
    if getattr(manager._get_json_data, "_bitcode_compat", False):
        return
    from bitcode_allennlp.common.bad_input import add_predict_arguments, get_json_data, wrap_predict_run

    get_json_data._bitcode_compat = True
    manager._get_json_data = get_json_data
    manager.run = wrap_predict_run(manager.run)
    module.Predict.add_subparser = add_predict_arguments(module.Predict.add_subparser)
    APPLIED["predict_input"] = "allennlp predict names bad input lines (file, line, field); --skip-bad-lines"


@_after("allennlp.models.archival")
def extend_archive_errors(module: types.ModuleType) -> None:
    """A bad `model.tar.gz` raises `ArchiveError` naming it and leaves no temporary folder."""
    if getattr(module.extracted_archive, "_bitcode_compat", False):
        return
    from bitcode_allennlp.common.bad_input import extracted_archive

    module.extracted_archive = extracted_archive
    APPLIED["archive_errors"] = "an empty, truncated or foreign model.tar.gz raises ArchiveError naming the file"


@_after("allennlp.training.util")
def extend_unstarted_runs(module: types.ModuleType) -> None:
    """`allennlp train` again into the folder of a run that never reached a checkpoint starts over."""
    original = module.create_serialization_dir
    if getattr(original, "_bitcode_compat", False):
        return
    from bitcode_allennlp.common.bad_input import wrap_create_serialization_dir

    _replace_everywhere(original, wrap_create_serialization_dir(original))
    APPLIED["unstarted_runs"] = "a serialization dir with no checkpoint, left by a failed run, is started over"


def _replace_everywhere(original, replacement) -> None:
    """Rebinds every module-level name in allennlp* modules that points at `original` (covers
    `from x import f` copies made before the fix ran)."""
    for name, mod in list(sys.modules.items()):
        if mod is None or not name.startswith("allennlp"):
            continue
        for attr, value in list(vars(mod).items()):
            if value is original:
                setattr(mod, attr, replacement)


# ---------------------------------------------------------------------------------------------- the command line


@_before("allennlp")
def start_cli() -> None:
    """When this process is the `allennlp` command: quiet or verbose set-up before AllenNLP is imported (`quiet_cli`),
    and a light `bits` command run at once, without AllenNLP (`light_bits`; exits with its status)."""
    from bitcode_allennlp.common import console

    args = console.cli_arguments()
    if args is None or APPLIED.get("quiet_cli") is not None:
        return
    verbose = console.start(args)
    APPLIED["quiet_cli"] = ("verbose: AllenNLP's logs" if verbose
                            else "quiet: results on stdout, no INFO logs on the console, noise warnings ignored")
    from bitcode_allennlp.common import light_cli

    if light_cli.is_light(args):
        APPLIED["light_bits"] = "allennlp bits runs without importing AllenNLP"
        raise SystemExit(light_cli.run_bits(args))


@_after("allennlp.commands")
def extend_verbose_flag(module: types.ModuleType) -> None:
    """`--verbose` in every parser of the `allennlp` command (it is read from the command line in `start_cli`)."""
    base = module.ArgumentParserWithDefaults
    if getattr(base, "_bitcode_compat", False):
        return
    from bitcode_allennlp.common.console import add_verbose_argument

    class ArgumentParserWithDefaults(base):
        __doc__ = base.__doc__
        _bitcode_compat = True

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            add_verbose_argument(self)

    module.ArgumentParserWithDefaults = ArgumentParserWithDefaults
    APPLIED["verbose_flag"] = "every allennlp parser accepts --verbose"


@_after("allennlp.common.logging")
def extend_quiet_training(module: types.ModuleType) -> None:
    """`prepare_global_logging` (`allennlp train`, each worker) puts new console handlers on the root logger: when
    quiet, they print only what `console.keep_record` keeps; `out.log` keeps every line."""
    original = module.prepare_global_logging
    if getattr(original, "_bitcode_compat", False):
        return

    def prepare_global_logging(*args, **kwargs) -> None:
        original(*args, **kwargs)
        from bitcode_allennlp.common import console

        if console.quiet():
            console.ignore_noise_warnings()
            console.quiet_console_handlers(training=True)

    prepare_global_logging.__doc__ = original.__doc__
    prepare_global_logging._bitcode_compat = True
    prepare_global_logging.__wrapped__ = original
    _replace_everywhere(original, prepare_global_logging)
    APPLIED["quiet_training"] = "quiet allennlp train: epoch lines and metrics on the console, everything in out.log"


@_after("allennlp.commands.predict")
def extend_quiet_predict(module: types.ModuleType) -> None:
    """When quiet, `allennlp predict` prints each prediction as one JSON line, without AllenNLP's `input N:` and
    `prediction:` prefixes and blank lines, and counts the inputs in a progress bar on stderr when that is a terminal
    (and the predictions do not go to the same terminal: `console.show_progress`)."""
    manager = module._PredictManager
    original = manager._maybe_print_to_console_and_file
    if getattr(original, "_bitcode_compat", False):
        return

    def _maybe_print_to_console_and_file(self, index: int, prediction: str, model_input: str = None) -> None:
        from bitcode_allennlp.common.console import quiet

        if not quiet():
            return original(self, index, prediction, model_input)
        if self._print_to_console:
            sys.stdout.write(prediction if prediction.endswith("\n") else prediction + "\n")
        if self._output_file is not None:
            self._output_file.write(prediction)

    def with_progress(read):
        def read_inputs(self):
            from bitcode_allennlp.common.console import quiet, show_progress

            inputs = read(self)
            if quiet() and show_progress(self._print_to_console):
                from allennlp.common.tqdm import Tqdm

                inputs = Tqdm.tqdm(inputs, desc="predict", unit=" inputs")
            return inputs

        read_inputs.__wrapped__ = read
        return read_inputs

    _maybe_print_to_console_and_file._bitcode_compat = True
    _maybe_print_to_console_and_file.__wrapped__ = original
    manager._maybe_print_to_console_and_file = _maybe_print_to_console_and_file
    manager._get_json_data = with_progress(manager._get_json_data)
    manager._get_instance_data = with_progress(manager._get_instance_data)
    APPLIED["quiet_predict"] = ("quiet allennlp predict prints one JSON line per prediction (and a progress bar "
                                "on a terminal's stderr)")


@_after("allennlp.commands.evaluate")
def extend_evaluate_metrics(module: types.ModuleType) -> None:
    """`allennlp evaluate` prints its final metrics as JSON on stdout (with or without `--output-file`)."""
    command = module.Evaluate
    original = command.add_subparser
    if getattr(original, "_bitcode_compat", False):
        return

    def add_subparser(self, parser):
        subparser = original(self, parser)
        evaluate = subparser.get_default("func")

        def func(args):
            import json

            from allennlp.common.util import sanitize

            metrics = evaluate(args)
            print(json.dumps(sanitize(metrics), indent=2))
            return metrics

        subparser.set_defaults(func=func)
        return subparser

    add_subparser._bitcode_compat = True
    add_subparser.__wrapped__ = original
    command.add_subparser = add_subparser
    APPLIED["evaluate_metrics"] = "allennlp evaluate prints its metrics as JSON on stdout"


# ---------------------------------------------------------------------------------------------- the hook


class _FixingLoader:
    """Wraps a module's real loader and runs the fixes registered for it around `exec_module`."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        name = module.__name__
        for fix in _BEFORE.get(name, ()):
            _run(fix)
        self._loader.exec_module(module)
        for fix in _AFTER.get(name, ()):
            _run(fix, module)

    def __getattr__(self, name):  # get_source, is_package, get_resource_reader, ...
        return getattr(self._loader, name)


def _run(fix, *args) -> None:
    try:
        fix(*args)
    except Exception:  # a fix must never make an import fail that would otherwise work
        _logger().exception("bitcode_allennlp.compat: fix %s failed", fix.__name__)


_BUSY = set()  # threads inside `find_spec` (it asks the other finders, which must not come back to it)


def find_spec(hook, fullname, path, target=None):
    """`AllennlpImportHook.find_spec` for the AllenNLP modules named in `_BEFORE` / `_AFTER`: the spec of the
    finders after `hook`, its loader wrapped in a `_FixingLoader`."""
    if fullname not in _BEFORE and fullname not in _AFTER:
        return None
    thread = _thread.get_ident()
    if thread in _BUSY:
        return None
    _BUSY.add(thread)
    try:
        for finder in sys.meta_path:
            if finder is hook or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
    finally:
        _BUSY.discard(thread)
    if spec.loader is None or not hasattr(spec.loader, "exec_module"):
        return spec
    spec.loader = _FixingLoader(spec.loader)
    return spec


def apply_to_loaded() -> None:
    """Runs the fixes of the AllenNLP modules already imported (`install()` after AllenNLP was loaded)."""
    for name in set(_BEFORE) | set(_AFTER):
        module = sys.modules.get(name)
        if module is not None:
            for fix in _AFTER.get(name, ()):
                _run(fix, module)

"""How bitcode_allennlp changes code it does not own: one `patch` helper, a registry, and the import hook's plumbing.

Every change to AllenNLP (or transformers, nltk) goes through `patch(owner, name, make_replacement, mark=, reason=)`:
it rebinds ``owner.<name>`` to ``make_replacement(original)`` and

* keeps the original on the replacement as ``__wrapped__`` (`inspect.unwrap` and tests reach it) and marks the
  replacement with ``_bitcode_patch = mark``;
* is idempotent by construction: when the mark is anywhere on the current value's ``__wrapped__`` chain (the patch
  is in place, maybe under a later patch of the same attribute), it does nothing. Applying a fix twice in one
  process (``compat.install()`` again, a test that re-runs it) cannot wrap twice;
* records the patch: `APPLIED` (mark -> one-line reason, what `bitcode_allennlp.host.compat.report()` returns) and
  `PATCHED` (mark -> the ``owner.name`` it rebinds).

Who calls it: the version fixes (`bitcode_allennlp.host.compat_fixes`) and our extensions
(`bitcode_allennlp.host.extensions` lists them; their code lives next to each feature). Both register, per AllenNLP
module, a function that runs just before or just after that module's code (`before`, `after`; an extension by
``"module:function"`` name, imported only then). `bitcode_allennlp.host.compat`'s import hook calls `find_spec` here,
which wraps the loader of each registered module. Loaded when the first module named ``allennlp*`` is looked up, so it
imports only `_thread`, `sys` and `types`.
"""
import _thread
import sys
import types

MARK = "_bitcode_patch"
"""The attribute that names the patch on a replacement (on its function, for a classmethod or staticmethod)."""

APPLIED: "dict[str, str]" = {}
"""Patch name -> what it does, in the order applied; `bitcode_allennlp.host.compat.report()` returns a copy."""

PATCHED: "dict[str, list]" = {}
"""Patch name -> the ``owner.name`` attributes it rebinds (a patch without attributes, such as a placeholder
module, is only in `APPLIED`)."""


def _logger():
    import logging

    return logging.getLogger("bitcode_allennlp.host.compat")


# ---------------------------------------------------------------------------------------------- the helper


def patch(owner, name: str, make_replacement, *, mark: str, reason: str, everywhere: bool = False):
    """Rebinds ``owner.<name>`` to ``make_replacement(original)``, once (see the module docstring).

    # Parameters

    owner : `module` or `type`
        Where the attribute lives (a class attribute is read from the class's own ``__dict__`` when it is there, so
        ``make_replacement`` gets a classmethod or staticmethod as such).
    name : `str`
        The attribute.
    make_replacement : `Callable[[Any], Any]`
        Given the original, returns a new object (a wrapper, a subclass; `replacing(function)` to put an existing
        function in place): ``__wrapped__`` and the mark are set on it.
    mark : `str`
        The patch's name (`APPLIED`, `report()`); several attributes may share one.
    reason : `str`
        One line: what the patch does.
    everywhere : `bool`, optional (default = `False`)
        Also rebind every module-level name in ``allennlp*`` modules that points at the original (the
        ``from x import f`` copies made before the patch ran).

    # Returns

    The replacement now in place (the existing one when the patch was already applied).
    """
    original = _get(owner, name)
    if is_patched(original, mark):
        return original
    replacement = make_replacement(original)
    target = _function(replacement)
    if isinstance(target, types.FunctionType) and target.__doc__ is None:
        target.__doc__ = getattr(_function(original), "__doc__", None)
    setattr(target, "__wrapped__", original)
    setattr(target, MARK, mark)
    setattr(owner, name, replacement)
    if everywhere:
        replace_everywhere(original, replacement)
    record(mark, reason)
    PATCHED.setdefault(mark, []).append(f"{_qualified_name(owner)}.{name}")
    return replacement


def unpatch(owner, name: str, mark: str) -> None:
    """Puts back what `patch` replaced, when the patch `mark` is the one on top (a temporary patch)."""
    current = _function(_get(owner, name))
    if _safe_getattr(current, MARK) == mark:
        setattr(owner, name, current.__wrapped__)


def is_patched(value, mark: str) -> bool:
    """Whether the patch `mark` is on `value` or on anything it wraps (its ``__wrapped__`` chain)."""
    seen = set()
    while value is not None and id(value) not in seen and len(seen) < 100:
        seen.add(id(value))
        value = _function(value)
        if _safe_getattr(value, MARK) == mark:
            return True
        value = _safe_getattr(value, "__wrapped__")
    return False


def record(mark: str, reason: str) -> None:
    """Records a patch that rebinds no attribute (`patch` calls it too)."""
    APPLIED[mark] = reason


def replacing(function):
    """A ``make_replacement`` for `patch` that puts `function` in place of the original, through a new forwarding
    function (so that `function` itself, which other code may use, gets no ``__wrapped__`` or mark)."""
    import functools

    def make_replacement(original):
        @functools.wraps(function)
        def replacement(*args, **kwargs):
            return function(*args, **kwargs)

        return replacement

    return make_replacement


def replace_everywhere(original, replacement) -> None:
    """Rebinds every module-level name in ``allennlp*`` modules that points at `original`."""
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith("allennlp"):
            continue
        for attribute, value in list(vars(module).items()):
            if value is original:
                setattr(module, attribute, replacement)


def _get(owner, name: str):
    if isinstance(owner, type) and name in vars(owner):
        return vars(owner)[name]
    return getattr(owner, name)


def _function(value):
    """The function inside a classmethod or staticmethod (which do not take a ``__wrapped__`` of their own)."""
    return value.__func__ if isinstance(value, (classmethod, staticmethod)) else value


def _safe_getattr(value, name: str):
    try:
        return getattr(value, name, None)
    except Exception:  # a placeholder module raises ImportError for any attribute
        return None


def _qualified_name(owner) -> str:
    if isinstance(owner, type):
        return f"{owner.__module__}.{owner.__qualname__}"
    return getattr(owner, "__name__", type(owner).__name__)


# ---------------------------------------------------------------------------------------------- when patches run

# Module name -> what runs just before / just after that module's code executes: a function, or the
# "package.module:function" name of one (imported then). Before: no argument; after: the module.
_BEFORE: "dict[str, list]" = {}
_AFTER: "dict[str, list]" = {}


def before(*module_names: str):
    """Decorator (or, called with a ``"module:function"`` name, a registration): run it just before each module."""

    def register(fix):
        for module_name in module_names:
            _BEFORE.setdefault(module_name, []).append(fix)
        return fix

    return register


def after(*module_names: str):
    """Decorator (or, called with a ``"module:function"`` name, a registration): run it, given the module, just
    after each module's code."""

    def register(fix):
        for module_name in module_names:
            _AFTER.setdefault(module_name, []).append(fix)
        return fix

    return register


class _FixingLoader:
    """Wraps a module's real loader and runs what is registered for the module around `exec_module`."""

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
        if isinstance(fix, str):
            import importlib

            module_name, function_name = fix.split(":")
            fix = getattr(importlib.import_module(module_name), function_name)
        fix(*args)
    except Exception:  # a patch must never make an import fail that would otherwise work
        _logger().exception("bitcode_allennlp.host.compat: fix %s failed", getattr(fix, "__name__", fix))


_BUSY = set()  # threads inside `find_spec` (it asks the other finders, which must not come back to it)


def find_spec(hook, fullname, path, target=None):
    """`AllennlpImportHook.find_spec` for the modules named in `_BEFORE` / `_AFTER`: the spec of the finders after
    `hook`, its loader wrapped in a `_FixingLoader`."""
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
    """Runs the after-import patches of the registered modules already imported (`compat.install()` after
    AllenNLP was loaded); `patch` makes a second run a no-op."""
    for name in set(_BEFORE) | set(_AFTER):
        module = sys.modules.get(name)
        if module is not None:
            for fix in _AFTER.get(name, ()):
                _run(fix, module)

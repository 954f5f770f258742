"""The patch helper every compatibility fix and extension goes through (`bitcode_allennlp.host.patching`)."""
import inspect
import types

import pytest

from bitcode_allennlp.host import patching


@pytest.fixture
def registry(monkeypatch):
    """A clean registry for the test; the process's real one is put back after."""
    monkeypatch.setattr(patching, "APPLIED", {})
    monkeypatch.setattr(patching, "PATCHED", {})
    return patching


def owner_module():
    module = types.ModuleType("allennlp_test_owner")

    def greet(name):
        """Says hello."""
        return f"hello {name}"

    module.greet = greet
    return module


def shout(original):
    def greet(name):
        return original(name).upper()

    return greet


def test_applying_twice_wraps_once(registry):
    module = owner_module()
    original = module.greet
    first = registry.patch(module, "greet", shout, mark="shout", reason="greets loudly")
    second = registry.patch(module, "greet", shout, mark="shout", reason="greets loudly")
    assert second is first and module.greet is first
    assert module.greet.__wrapped__ is original and inspect.unwrap(module.greet) is original  # one layer
    assert module.greet("you") == "HELLO YOU"
    assert module.greet.__doc__ == "Says hello."  # the original's docstring
    assert registry.APPLIED == {"shout": "greets loudly"}
    assert registry.PATCHED == {"shout": ["allennlp_test_owner.greet"]}


def test_a_patch_under_a_later_one_is_still_applied(registry):
    """Two patches of one attribute: re-applying the first must not replace the second (the double wrapping that
    once added `--skip-bad-lines` twice to `allennlp predict`)."""
    module = owner_module()
    calls = []

    def count(original):
        def greet(name):
            calls.append(name)
            return original(name)

        return greet

    registry.patch(module, "greet", count, mark="count", reason="counts")
    registry.patch(module, "greet", shout, mark="shout", reason="shouts")
    on_top = module.greet
    registry.patch(module, "greet", count, mark="count", reason="counts")
    assert module.greet is on_top and registry.is_patched(on_top, "count") and registry.is_patched(on_top, "shout")
    assert module.greet("you") == "HELLO YOU" and calls == ["you"]
    assert list(registry.APPLIED) == ["count", "shout"]


def test_class_attributes_classmethods_and_classes(registry):
    class Base:
        def size(self):
            return 1

        @classmethod
        def make(cls):
            return cls()

    module = types.ModuleType("allennlp_test_classes")
    module.Base = Base
    make = vars(Base)["make"]

    def bigger(original):
        return lambda self: original(self) + 1

    def counted(original):  # a classmethod
        return classmethod(lambda cls: ("made", original.__func__(cls)))

    def subclass(base):
        class Sub(base):
            pass

        return Sub

    for _ in range(2):
        registry.patch(Base, "size", bigger, mark="bigger", reason="one more")
        registry.patch(Base, "make", counted, mark="counted", reason="says so")
        registry.patch(module, "Base", subclass, mark="sub", reason="a subclass")
    assert Base().size() == 2
    assert Base.make()[0] == "made" and isinstance(Base.make()[1], Base)
    assert vars(Base)["make"].__func__.__wrapped__ is make  # on the function: a classmethod's is read-only
    assert module.Base.__wrapped__ is Base and module.Base.__mro__[1] is Base
    assert registry.PATCHED["counted"] == [f"{__name__}.{Base.__qualname__}.make"]


def test_everywhere_rebinds_the_copies_in_allennlp_modules(registry, monkeypatch):
    module, copy = owner_module(), types.ModuleType("allennlp_test_copy")
    copy.greet = module.greet  # `from owner import greet`, made before the patch
    monkeypatch.setitem(__import__("sys").modules, "allennlp_test_copy", copy)
    registry.patch(module, "greet", shout, mark="shout", reason="shouts", everywhere=True)
    assert copy.greet is module.greet and copy.greet("x") == "HELLO X"


def test_unpatch_and_replacing(registry):
    module = owner_module()
    original = module.greet

    def polite(name):
        return f"good day {name}"

    registry.patch(module, "greet", registry.replacing(polite), mark="polite", reason="politer")
    assert module.greet("you") == "good day you" and module.greet.__wrapped__ is original
    assert not hasattr(polite, "__wrapped__") and not hasattr(polite, patching.MARK)  # not marked itself
    registry.unpatch(module, "greet", "other")  # not the patch on top: nothing
    assert module.greet is not original
    registry.unpatch(module, "greet", "polite")
    assert module.greet is original and "polite" in registry.APPLIED


def test_registry_lists_the_fixes_of_this_process():
    import allennlp.common.util  # noqa: F401 (loads the fixes)

    from bitcode_allennlp.host import compat

    assert compat.report()["spacy_offline"] == patching.APPLIED["spacy_offline"]
    assert patching.PATCHED["spacy_offline"] == ["allennlp.common.util.get_spacy_model"]
    assert patching.is_patched(allennlp.common.util.get_spacy_model, "spacy_offline")

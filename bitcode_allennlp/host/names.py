"""AllenNLP's `ConfigurationError` and `Subcommand`, or stand-ins with the same interface in the light `allennlp bits`
process (`bitcode_allennlp.bits.light`), which runs without importing AllenNLP (7-9 s saved).

`from bitcode_allennlp.host.names import ConfigurationError, Subcommand` gives AllenNLP's own classes, except in that
process, and only there (`LIGHT`, set by `bits.light.run_bits` before it imports the `bits` modules). The base of
`host.errors.DataFormatError` and the registration of the `bits` sub-command come from here. Standard library only.
"""
from typing import Any, Optional

LIGHT = False
"""True in the light `allennlp bits` process (set by `bits.light.run_bits` before it imports the `bits` modules)."""


class LightConfigurationError(Exception):
    """AllenNLP's `ConfigurationError` (`allennlp.common.checks`) in the light process: same constructor,
    `message`, `str` and pickling.

    # Parameters

    message : `str`
        What is wrong.
    """

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> Any:
        return type(self), (self.message,)


class LightSubcommand:
    """AllenNLP's `Subcommand` in the light process: `register(name)` records the name (no registry), `name` gives
    it back, `add_subparser` is the sub-command's."""

    requires_plugins: bool = True
    _names: "dict" = {}

    @classmethod
    def register(cls, name: str, constructor: Optional[str] = None, exist_ok: bool = False):
        def register_subclass(subclass):
            LightSubcommand._names[subclass] = name
            return subclass

        return register_subclass

    @property
    def name(self) -> str:
        return LightSubcommand._names[type(self)]

    def add_subparser(self, parser: Any) -> Any:
        raise NotImplementedError


def __getattr__(name: str) -> Any:
    # The AllenNLP class, or in the light process its stand-in; looked up when imported (`from ... import`).
    if name == "ConfigurationError":
        if LIGHT:
            return LightConfigurationError
        from allennlp.common.checks import ConfigurationError

        return ConfigurationError
    if name == "Subcommand":
        if LIGHT:
            return LightSubcommand
        from allennlp.commands.subcommand import Subcommand

        return Subcommand
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

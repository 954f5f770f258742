"""Argument checks for constructors and commands, with one message format: ``<name> must be <what>, got <value>``.

Where this sits: models, modules, readers, samplers, schedulers and the spaCy component check their arguments here
before storing them, so that a bad config value fails when the object is built, with the argument's name. The
error type is AllenNLP's `ConfigurationError` by default (a config value is wrong); code outside AllenNLP's
`FromParams` world (the spaCy component) passes ``error=ValueError``; AllenNLP is imported only when a check fails
with the default error, so importing this module costs nothing (the spaCy component loads without AllenNLP).
"""
from typing import Any, Optional, Sequence, Type


def _error(error: Optional[Type[Exception]]) -> Type[Exception]:
    if error is not None:
        return error
    # AllenNLP's ConfigurationError, or its stand-in in the light `allennlp bits` process (see host/names.py)
    from bitcode_allennlp.host.names import ConfigurationError

    return ConfigurationError


def check_choice(name: str, value: Any, choices: Sequence[Any], error: Optional[Type[Exception]] = None) -> None:
    """`error` (default `ConfigurationError`) unless `value` is one of `choices`."""
    if value not in choices:
        raise _error(error)(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")


def check_range(
    name: str,
    value: Any,
    low: Optional[float] = None,
    high: Optional[float] = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
    optional: bool = False,
    error: Optional[Type[Exception]] = None,
) -> None:
    """
    `error` (default `ConfigurationError`) unless `value` is a number (not a bool) within the bounds.

    # Parameters

    low, high : `Optional[float]`
        Bounds; `None` leaves that side open-ended.
    low_open, high_open : `bool`
        Exclude the bound itself (``> low``, ``< high``) instead of including it (``>=``, ``<=``).
    optional : `bool`
        `None` is also accepted (an argument whose `None` means "no limit" or "automatic").
    """
    if optional and value is None:
        return
    bounds = []
    if low is not None:
        bounds.append(f"{'>' if low_open else '>='} {low}")
    if high is not None:
        bounds.append(f"{'<' if high_open else '<='} {high}")
    what = " and ".join(bounds) or "a number"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _error(error)(f"{name} must be a number {what}, got {value!r}")
    if low is not None and (value <= low if low_open else value < low):
        raise _error(error)(f"{name} must be {what}, got {value!r}")
    if high is not None and (value >= high if high_open else value > high):
        raise _error(error)(f"{name} must be {what}, got {value!r}")

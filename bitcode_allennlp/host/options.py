"""Numeric command-line options: the `argparse` ``type=`` functions of every numeric option of our commands.

`allennlp hash-corpus`, `allennlp bits ...` and AllenNLP's own `predict` and `evaluate` (their `--batch-size` and
`--cuda-device`, set in `bitcode_allennlp.host.bad_input`) read their numbers with these, so a bad value stops the
command while its arguments are parsed, before anything loads, with argparse's usage line and
``allennlp predict: error: argument --batch-size: must be a positive integer, got 0`` (exit status 2); the wording
follows `bitcode_allennlp.common.checks` (``<name> must be <what>, got <value>``, argparse adds the name).

Standard library only (the light `allennlp bits` process imports it).
"""
import argparse
import math
from typing import Callable, Optional


def _shown(text: str) -> str:
    """The value in a message: a number as written, anything else quoted (an invisible space shows)."""
    try:
        float(text)
    except (TypeError, ValueError):
        return repr(text)
    return text.strip() if text.strip() == text else repr(text)


def int_range(low: Optional[int] = None, high: Optional[int] = None, what: Optional[str] = None,
              name: str = "integer") -> Callable[[str], int]:
    """
    An argparse type: an integer (decimal, optional sign) with `low <= value <= high` (`None`: no bound), else
    ``must be <what>, got <value>``.

    # Parameters

    what : `str`, optional
        The message's description of a valid value (default: "an integer", with the bounds).
    name : `str`
        The function's `__name__` (argparse shows it in its own messages, e.g. for `choices`).
    """
    if what is None:
        bounds = ([f">= {low}"] if low is not None else []) + ([f"<= {high}"] if high is not None else [])
        what = "an integer" + (" " + " and ".join(bounds) if bounds else "")

    def parse(text: str) -> int:
        try:
            value = int(str(text), 10)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"must be {what}, got {_shown(text)}") from None
        if (low is not None and value < low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be {what}, got {_shown(text)}")
        return value

    parse.__name__ = name
    parse.__doc__ = f"argparse type: {what}"
    return parse


positive_int = int_range(1, what="a positive integer", name="positive_int")
"""1, 2, ...: sizes, counts, limits (`--batch-size`, `--max-instances`, `--k`, `--epochs`, 1-based line numbers)."""

non_negative_int = int_range(0, what="an integer >= 0", name="non_negative_int")
"""0, 1, ...: indices (0-based), distances, `--threads` (0: every core)."""

cuda_device = int_range(-1, what="a GPU id >= 0, or -1 for the CPU", name="cuda_device")
"""`--cuda-device`: -1 (CPU) or a GPU id."""

seed = int_range(0, 2 ** 64 - 1, what="an integer in 0..2**64 - 1", name="seed")
"""A random seed (what `torch.manual_seed` takes)."""


def positive_float(text: str) -> float:
    """An argparse type: a finite number > 0, else ``must be a positive number, got <value>``."""
    try:
        value = float(str(text))
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {_shown(text)}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {_shown(text)}")
    return value

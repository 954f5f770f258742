"""Counts as people write them: `counted(1, "word")` is "1 word", `counted(1310, "word")` "1,310 words". Pure
Python (the light `allennlp bits` process prints with it)."""


def counted(number: int, noun: str, plural: str = "") -> str:
    """`number` with thousands separators and `noun`, or `plural` (default `noun` + "s") unless it is 1."""
    return f"{number:,} {noun if number == 1 else (plural or noun + 's')}"

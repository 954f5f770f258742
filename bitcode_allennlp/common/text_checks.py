"""The input boundary's text policy, one for `allennlp predict`, the spaCy components and the readers.

* **Unicode**: text must be encodable as UTF-8. A lone surrogate (``"\\ud800"``, which a JSON escape can produce)
  is refused with its position (`unicode_problem`); files are decoded strictly as UTF-8 by the readers, so only
  JSON strings can carry one.
* **Words with no word piece** (``"\\u200b"``, a lone combining mark, a control character that a tokenizer's
  normalizer removes) are accepted: the `plm_words` embedder gives them a learned vector, so they get a code like
  any other word. Empty or whitespace-only tokens are the readers' token policy (refused, or dropped with
  ``token_policy="repair"``) and refused by `predict`.
* **Length**: a sentence of more than `max_words` words (the reader's; `DEFAULT_MAX_WORDS` by default) is refused
  before any tensor is built: the hash layer's scores grow with the square of the sentence, the parser's chart with
  its square and its time with its cube (2,000 words: one CPU training step of the tiny parser took 85 s and
  +4.6 GiB, evaluation 14.5 s and +1.2 GiB; tests/reliability/test_long_sentences.py). A raw sentence for `predict`
  is refused over `MAX_SENTENCE_CHARACTERS` characters, before it is split into words.

Standard library only.
"""
import re
from typing import Optional

DEFAULT_MAX_WORDS = 2000
"""Words per sentence the readers take by default (the hash layer's (K, words, words) scores: ~0.4 GB at 2,000 and
K = 24; the parser's chart and CKY: see above)."""
MAX_SENTENCE_CHARACTERS = 1_000_000
"""Characters of a raw `{"sentence": ...}` (spaCy's own default `nlp.max_length`)."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def unicode_problem(text: str) -> Optional[str]:
    """What makes `text` not valid Unicode text (a lone surrogate, with its position), or `None`."""
    found = _SURROGATE.search(text)
    if found is None:
        return None
    return f"is not valid Unicode: a lone surrogate \\u{ord(found.group()):04x} at character {found.start()}"


def length_problem(num_words: int, max_words: Optional[int]) -> Optional[str]:
    """What is wrong with a sentence of `num_words` words for a limit of `max_words` (`None`: no limit), or `None`."""
    if max_words is None or num_words <= max_words:
        return None
    return (f"a sentence of {num_words:,} words is over the limit of {max_words:,} (the reader's max_words; split "
            "it into sentences, or raise max_words if the memory allows)")

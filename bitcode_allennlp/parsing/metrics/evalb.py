"""EVALB (Sekine & Collins, 1997) in pure Python: bracket scores of predicted trees, and the `evalb_f1` metric.

Where this sits: the constituency parser's validation metric, on the trees `build` returns and the reader's gold
trees. `evalb_score` gives the numbers the `evalb` program prints when run with a parameter file (default
COLLINS.prm, the standard for the PTB): per sentence, what EVALB reads from one line of text (a bracket after an
opening `(` and a word before a `)` is a part of speech), deleting part-of-speech nodes with labels in
DELETE_LABEL (the word goes too), brackets left empty, and brackets with such labels; cutting phrase labels at
the first `-` or `=`; matching each gold bracket to the first unmatched predicted one with the same words and an
equal label (EQ_LABEL); and EVALB's status (0 scored, 1 error: words differ, 2 skipped: no predicted words
left). Tested equal to the compiled C program, per sentence and in the summary.

Not reproduced: EVALB's fixed buffers (a line of at most 4999 bytes, 200 words, 200 brackets, labels of 29 and
words of 99 bytes; beyond them it misreads or crashes), QUOTE_LABEL, and MAX_ERROR. Text it cannot read raises
`ValueError`. F1 is 0 where EVALB prints `nan` (no matched brackets).
"""
import logging
import re
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple, Union

import torch
import torch.distributed as dist
from allennlp.common.util import is_distributed
from allennlp.nn.util import distributed_device
from allennlp.training.metrics.metric import Metric
from nltk import Tree

from bitcode_allennlp.structs.trees import tree_to_string

logger = logging.getLogger(__name__)

# EVALB splits on the C locale's isspace and brackets.
_TOKEN = re.compile(r"[()]|[^ \t\n\x0b\x0c\r()]+")
_SPACE = " \t\n\x0b\x0c\r"
_FUNCTION_TAG = re.compile(r"[-=]")
_PARAMETER = re.compile(r"([^ \t\n\x0b\x0c\r]*)[ \t\n\x0b\x0c\r]*(.*)", re.DOTALL)

SCORED, ERROR, SKIPPED = 0, 1, 2


class EvalbParameters(NamedTuple):
    """The settings of an EVALB parameter file that change scores."""

    delete_labels: Tuple[str, ...] = ()
    delete_labels_for_length: Tuple[str, ...] = ()
    equal_labels: Tuple[Tuple[str, str], ...] = ()
    equal_words: Tuple[Tuple[str, str], ...] = ()
    labeled: bool = True
    cutoff_length: int = 40


# EVALB's COLLINS.prm.
COLLINS = EvalbParameters(
    delete_labels=("TOP", "-NONE-", ",", ":", "``", "''", "."),
    delete_labels_for_length=("-NONE-",),
    equal_labels=(("ADVP", "PRT"),),
)


def read_parameters(path: str) -> EvalbParameters:
    """An EVALB parameter file, read as `evalb -p` reads it. Raises `ValueError` for QUOTE_LABEL."""
    values: Dict[str, list] = {"DELETE_LABEL": [], "DELETE_LABEL_FOR_LENGTH": [], "EQ_LABEL": [], "EQ_WORD": []}
    labeled, cutoff = True, 40
    with open(path, encoding="latin-1") as file:
        for number, line in enumerate(file, 1):
            line = line[:1] + line[1:].rstrip(_SPACE)
            if line.startswith("#") or len(line) < 3:
                continue
            key, value = _PARAMETER.match(line).groups()  # type: ignore[union-attr]
            if key in ("DEBUG", "MAX_ERROR"):
                continue
            if key == "CUTOFF_LEN":
                cutoff = _atoi(value)
            elif key == "LABELED":
                labeled = _atoi(value) != 0
            elif key in ("DELETE_LABEL", "DELETE_LABEL_FOR_LENGTH"):
                values[key].append(value)
            elif key in ("EQ_LABEL", "EQ_WORD"):
                pair = value.split()
                if len(pair) == 2:
                    values[key].append(tuple(pair))
                else:
                    logger.warning("%s, line %d: %s requires two values", path, number, key)
            elif key == "QUOTE_LABEL":
                raise ValueError(f"{path}, line {number}: QUOTE_LABEL is not supported")
            else:
                logger.warning("%s, line %d: unknown keyword %r", path, number, key)
    return EvalbParameters(
        tuple(values["DELETE_LABEL"]), tuple(values["DELETE_LABEL_FOR_LENGTH"]), tuple(values["EQ_LABEL"]),
        tuple(values["EQ_WORD"]), labeled, cutoff,
    )


def _atoi(text: str) -> int:
    match = re.match(r"[ \t\n\x0b\x0c\r]*([+-]?\d+)", text)
    return int(match.group(1)) if match else 0


class SentenceScore(NamedTuple):
    """One row of EVALB's per-sentence table; `error` says why a sentence has status 1."""

    length: int  # gold words, not counting DELETE_LABEL_FOR_LENGTH
    status: int  # 0 scored, 1 error, 2 skipped
    matched: int
    gold: int  # gold brackets
    test: int  # predicted brackets
    crossing: int
    words: int
    correct_tags: int
    error: Optional[str] = None


class _Read(NamedTuple):
    words: List[Tuple[str, str]]  # (word, tag), deleted parts of speech left out
    length: int
    brackets: List[List]  # [start, end, label], in the order of their "("


def _read(text: str, parameters: EvalbParameters) -> _Read:
    """What EVALB's `read_line` gathers from one tree."""
    tokens = list(_TOKEN.finditer(text))
    words: List[Tuple[str, str]] = []
    brackets: List[List] = []
    stack: List[List] = []
    length = 0
    index = 0

    def token(at: int) -> Optional[str]:
        return tokens[at].group() if at < len(tokens) else None

    while index < len(tokens):
        current = tokens[index].group()
        if current == ")":
            if not stack:
                raise ValueError(f"unbalanced brackets (a ')' closes nothing) in {text!r}")
            stack.pop()[1] = len(words)
            index += 1
            continue
        if current != "(":
            raise ValueError(f"word {current!r} outside a part-of-speech bracket in {text!r}")
        label, end = "", tokens[index].end()
        if token(index + 1) not in (None, "(", ")") and tokens[index + 1].start() == end:
            index += 1
            label, end = tokens[index].group(), tokens[index].end()
        index += 1
        if end < len(text) and text[end] in _SPACE and token(index) != "(":
            # A part of speech: label, space, word (possibly none), ")".
            word = ""
            if token(index) not in (None, ")"):
                word = token(index)
                index += 1
            if token(index) != ")":
                raise ValueError(f"bracket ({label} {word} ... has more than a word in {text!r}")
            index += 1
            if label not in parameters.delete_labels_for_length:
                length += 1
            if label not in parameters.delete_labels:
                words.append((word, label))
            continue
        bracket = [len(words), None, label]
        brackets.append(bracket)
        stack.append(bracket)
    if stack:
        raise ValueError(f"unbalanced brackets (a '(' is never closed) in {text!r}")
    return _Read(words, length, brackets)


def _equal(first: str, second: str, pairs: Sequence[Tuple[str, str]]) -> bool:
    return first == second or any((first, second) in (pair, pair[::-1]) for pair in pairs)


def _text(tree: Union[Tree, str]) -> str:
    return tree if isinstance(tree, str) else tree_to_string(tree)


def score_sentence(
    gold: Union[Tree, str], predicted: Union[Tree, str], parameters: EvalbParameters = COLLINS
) -> SentenceScore:
    """EVALB's row for one sentence. Trees are `nltk.Tree`s or one-line bracketed text, as EVALB reads it."""
    gold_read, test_read = _read(_text(gold), parameters), _read(_text(predicted), parameters)
    length = gold_read.length
    if not test_read.words:
        return SentenceScore(length, SKIPPED, 0, 0, 0, 0, 0, 0)
    if len(gold_read.words) != len(test_read.words):
        message = f"Length unmatch ({len(gold_read.words)}|{len(test_read.words)})"
        return SentenceScore(length, ERROR, 0, 0, 0, 0, 0, 0, message)
    for (gold_word, _), (test_word, _) in zip(gold_read.words, test_read.words):
        if not _equal(gold_word, test_word, parameters.equal_words):
            return SentenceScore(length, ERROR, 0, 0, 0, 0, 0, 0, f"Words unmatch ({gold_word}|{test_word})")

    def kept(brackets: List[List]) -> List[Tuple[int, int, str]]:
        result = []
        for start, end, label in brackets:
            if start == end:
                continue
            label = _FUNCTION_TAG.split(label, 1)[0]
            if not any(_equal(label, deleted, parameters.equal_labels) for deleted in parameters.delete_labels):
                result.append((start, end, label))
        return result

    gold_brackets, test_brackets = kept(gold_read.brackets), kept(test_read.brackets)
    unmatched: Dict[Tuple[int, int], List[str]] = {}
    for start, end, label in test_brackets:
        unmatched.setdefault((start, end), []).append(label)
    matched = 0
    for start, end, label in gold_brackets:
        candidates = unmatched.get((start, end))
        for position, candidate in enumerate(candidates or ()):
            if not parameters.labeled or _equal(label, candidate, parameters.equal_labels):
                del candidates[position]  # type: ignore[union-attr]
                matched += 1
                break
    crossing = sum(
        any(
            gold_start < start < gold_end < end or start < gold_start < end < gold_end
            for gold_start, gold_end, _ in gold_brackets
        )
        for start, end, _ in test_brackets
    )
    correct_tags = sum(
        _equal(gold_tag, test_tag, parameters.equal_labels)
        for (_, gold_tag), (_, test_tag) in zip(gold_read.words, test_read.words)
    )
    return SentenceScore(length, SCORED, matched, len(gold_brackets), len(test_brackets), crossing,
                         len(gold_read.words), correct_tags)


def summarize(scores: Iterable[SentenceScore], max_length: Optional[int] = None) -> Dict[str, float]:
    """
    EVALB's summary of sentence scores, over all of them or those with `length <= max_length`: counts, and in
    percent `recall`, `precision`, `f1`, `exact` (complete match), `no_crossing`, `two_or_less_crossing`,
    `tagging_accuracy`, plus `average_crossing`. Brackets, words and tags are counted over scored sentences only.
    """
    selected = [score for score in scores if max_length is None or score.length <= max_length]
    valid = [score for score in selected if score.status == SCORED]
    total = {name: sum(getattr(score, name) for score in valid)
             for name in ("matched", "gold", "test", "crossing", "words", "correct_tags")}
    recall = 100.0 * total["matched"] / total["gold"] if total["gold"] > 0 else 0.0
    precision = 100.0 * total["matched"] / total["test"] if total["test"] > 0 else 0.0
    count = len(valid)

    def percent(number: int, of: int) -> float:
        return 100.0 * number / of if of > 0 else 0.0

    complete = sum(score.gold == score.test == score.matched for score in valid)
    no_crossing = sum(score.crossing == 0 for score in valid)
    two_or_less = sum(score.crossing <= 2 for score in valid)
    return {
        "recall": recall,
        "precision": precision,
        "f1": 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0,
        "exact": percent(complete, count),
        "average_crossing": 1.0 * total["crossing"] / count if count > 0 else 0.0,
        "no_crossing": percent(no_crossing, count),
        "two_or_less_crossing": percent(two_or_less, count),
        "tagging_accuracy": percent(total["correct_tags"], total["words"]),
        "sentences": len(selected),
        "error_sentences": sum(score.status == ERROR for score in selected),
        "skipped_sentences": sum(score.status == SKIPPED for score in selected),
        "valid_sentences": count,
        "matched_brackets": total["matched"],
        "gold_brackets": total["gold"],
        "test_brackets": total["test"],
        "complete_matches": complete,
        "crossing_brackets": total["crossing"],
        "words": total["words"],
        "correct_tags": total["correct_tags"],
    }


def evalb_score(
    gold_trees: Sequence[Union[Tree, str]],
    predicted_trees: Sequence[Union[Tree, str]],
    parameters: EvalbParameters = COLLINS,
    max_length: Optional[int] = None,
) -> Dict[str, float]:
    """
    The summary `evalb -p COLLINS.prm gold predicted` prints (see `summarize`; `max_length=40` gives its second
    part, "len<=40"). Percentages are computed as EVALB computes them: `"%.2f" % value` is its text.
    """
    if len(gold_trees) != len(predicted_trees):
        raise ValueError(f"{len(gold_trees)} gold trees but {len(predicted_trees)} predicted trees")
    scores = [score_sentence(gold, predicted, parameters) for gold, predicted in zip(gold_trees, predicted_trees)]
    return summarize(scores, max_length)


@Metric.register("evalb_f1")
class EvalbF1(Metric):
    """
    Labelled bracket recall, precision and F1, and exact (complete) match, of predicted trees against gold trees,
    exactly as EVALB with COLLINS.prm (or `parameter_file`) computes them, but without the EVALB program, temporary
    files or a compiler: a drop-in for AllenNLP's `evalb` metric (`EvalbBracketingScorer`), also called with
    `(predicted_trees, gold_trees)`.

    Keys of `get_metric`: `evalb_recall`, `evalb_precision`, `evalb_f1`, `evalb_exact`, fractions in [0, 1]
    (EVALB's percentages / 100). Sentences EVALB skips (no predicted word left after deletion, e.g. only
    punctuation) do not count; a sentence whose predicted words differ from the gold ones (EVALB's "error"
    sentences) raises `ValueError`, since `build` keeps the words.

    Distributed: the integer counts are summed over all workers with one `all_reduce` in `get_metric`, which is
    then a collective call (every worker must make it; the trainer does). The local counts are not changed.

    Registered as a `Metric` with name "evalb_f1".

    # Parameters

    parameter_file : `str`, optional (default = `None`)
        An EVALB parameter file; `None` means COLLINS.prm's settings.
    """

    supports_distributed = True

    def __init__(self, parameter_file: Optional[str] = None) -> None:
        self._parameters = COLLINS if parameter_file is None else read_parameters(parameter_file)
        self.reset()

    def __call__(  # type: ignore[override]
        self, predicted_trees: Sequence[Union[Tree, str]], gold_trees: Sequence[Union[Tree, str]]
    ) -> None:
        """
        # Parameters

        predicted_trees : `Sequence[Union[Tree, str]]`
            `nltk.Tree`s (e.g. from `build`) or one-line bracketed text.
        gold_trees : `Sequence[Union[Tree, str]]`
            The same, e.g. the reader's `metadata["gold_tree"]`.
        """
        if len(predicted_trees) != len(gold_trees):
            raise ValueError(f"{len(predicted_trees)} predicted trees but {len(gold_trees)} gold trees")
        for predicted, gold in zip(predicted_trees, gold_trees):
            score = score_sentence(gold, predicted, self._parameters)
            if score.status == ERROR:
                raise ValueError(f"EVALB cannot compare {_text(predicted)!r} with gold {_text(gold)!r}: "
                                 f"{score.error}")
            if score.status == SCORED:
                complete = score.gold == score.test == score.matched
                for index, count in enumerate((score.matched, score.gold, score.test, int(complete), 1)):
                    self._counts[index] += count

    def get_metric(self, reset: bool = False) -> Dict[str, float]:
        counts = self._counts
        if is_distributed():
            summed = torch.tensor(counts, dtype=torch.long, device=distributed_device())
            dist.all_reduce(summed, op=dist.ReduceOp.SUM)
            counts = summed.tolist()
        matched, gold, test, complete, sentences = counts
        recall = matched / gold if gold > 0 else 0.0
        precision = matched / test if test > 0 else 0.0
        metrics = {
            "evalb_recall": recall,
            "evalb_precision": precision,
            "evalb_f1": 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0,
            "evalb_exact": complete / sentences if sentences > 0 else 0.0,
        }
        if reset:
            self.reset()
        return metrics

    def reset(self) -> None:
        # matched, gold and predicted brackets, complete matches, scored sentences
        self._counts = [0, 0, 0, 0, 0]

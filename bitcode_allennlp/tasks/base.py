"""What a task is (`Task`), the gold field of a codes line (`Gold`), and the registry that every layer reads.

A task (part-of-speech tagging, NER, constituency parsing, ...) is one `Task` object registered once
(`register`, `bitcode_allennlp/tasks/__init__.py`: one line per task). It owns its names (`name`, the prefix of its
configs `NAME_hash.jsonnet` / `NAME_code.jsonnet` and of `experiment NAME`; `component`, the name of its spaCy
component `bitcode_COMPONENT` and of `CodeModel.task`), the model and dataset readers of its hashing stage, its
fixture corpora, its metric, its predictor's JSON fields (which are also the `api.Encoded` fields it fills), the gold
field of its codes lines (a `Gold`: how `allennlp hash-corpus` writes it from an instance, how a reader of codes
files checks it), and how its spaCy component annotates a doc. The stages and tools (`code_stage/experiment.py`,
`code_stage/hash_corpus.py`, `common/codes_line.py`, `api.py`, `spacy_components/component.py`,
`bits/explore.py`, `recipes.py`) switch on nothing: they ask the registry.

Layer 1: pure Python at import (no AllenNLP, spaCy, nltk or torch; a task imports them inside its methods), so
the light `allennlp bits` process and `common/codes_line.py` can read the registry.
"""
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from bitcode_allennlp import resources

CONFIGS = resources.path("training_configs", check=False)
"""The repository's configs (or their copy in an installed package): the built-in tasks' configs."""
FIXTURES = resources.path("fixtures", "data", check=False)
"""The fixture corpora (`fixtures/data`)."""


class Gold:
    """
    A gold field of a codes line (one JSON object per sentence, `common/codes_line.py`): its `key` in the line,
    the `CodesLine` attribute it fills (`attribute`), what it is (`what`, in messages), the short key the explorer
    page stores it under (`page_key`) and the explorer's mode for a corpus that has it (`explorer`; `None`: the
    labels decide).
    """

    key: str = ""
    attribute: str = ""
    what: str = ""
    page_key: str = ""
    explorer: Optional[str] = None

    def from_instance(self, instance: Any) -> Optional[Any]:
        """
        The value `allennlp hash-corpus` writes for an instance of the task's readers, or `None` (no gold).

        # Parameters

        instance : `allennlp.data.Instance`
        """
        raise NotImplementedError

    def check(self, value: Any, words: List[str]) -> Any:
        """
        The line's `value` of `key`, checked against its `words`: what `CodesLine.<attribute>` holds.

        # Raises

        `ValueError` saying what is wrong.
        """
        raise NotImplementedError


class Task:
    """
    One task, registered once (`register`): the module docstring lists what it owns. Subclasses set the class
    attributes and, where the task differs, override the methods.
    """

    name: str = ""
    component: str = ""
    model_class: str = ""
    model_type: str = ""
    readers: Tuple[str, ...] = ()
    metric: str = ""
    fixtures: Tuple[Path, Path] = (FIXTURES, FIXTURES)
    configs: Path = CONFIGS
    predictor: str = ""
    predictor_fields: Tuple[str, ...] = ()
    gold: Gold = Gold()
    spacy_assigns: Tuple[str, ...] = ()

    def config(self, stage: str) -> Path:
        """
        The task's config of a stage: `configs/NAME_hash.jsonnet` or `configs/NAME_code.jsonnet`.

        # Parameters

        stage : `str`
            "hash" or "code".
        """
        return self.configs / f"{self.name}_{stage}.jsonnet"

    def fits(self, model: Any) -> bool:
        """Whether `model` (a loaded AllenNLP `Model`) is one of this task's models."""
        return type(model).__name__ == self.model_class

    def claims(self, model: Any, config: Optional[Dict[str, Any]]) -> int:
        """
        How surely an archive is this task's: 0 not, 1 its model (`fits`), 2 its model read by one of its readers.

        # Parameters

        model : `Any`
            The archive's model.
        config : `Optional[Dict[str, Any]]`
            The archive's training config.
        """
        if not self.fits(model):
            return 0
        reader = ((config or {}).get("dataset_reader") or {}).get("type")
        return 2 if reader in self.readers else 1

    def spacy_input(self, doc: Any, words: List[int]) -> Dict[str, Any]:
        """
        The predictor's JSON input for one sentence of a spaCy `doc` (`words`: its token indices).

        # Parameters

        doc : `spacy.tokens.Doc`
        words : `List[int]`
        """
        return {"tokens": [doc[i].text for i in words]}

    def annotate(self, doc: Any, words: List[int], output: Any, pending: Dict[str, Any], who: str) -> None:
        """
        Writes one sentence's `output` (an `api.Encoded`) on `doc`, or keeps what must be set once per doc in
        `pending` (`finish` sets it).

        # Parameters

        doc : `spacy.tokens.Doc`
        words : `List[int]`
            The sentence's token indices in `doc`.
        output : `Encoded`
        pending : `Dict[str, Any]`
            This doc's state between sentences (empty at first).
        who : `str`
            "<component>: <archive>", for messages.
        """
        raise NotImplementedError

    def finish(self, doc: Any, pending: Dict[str, Any]) -> None:
        """Sets on `doc` what `annotate` kept in `pending` (nothing by default)."""


TASKS: Dict[str, Task] = {}
"""The registered tasks by `name`, in registration order."""


def register(task: Task) -> Task:
    """
    Registers `task` under its `name` (a task of the same name is replaced) and returns it.

    # Parameters

    task : `Task`
    """
    if not task.name or not task.component:
        raise ValueError(f"{type(task).__name__}: a task needs a name and a component name")
    taken = [other.name for other in TASKS.values() if other.component == task.component and other.name != task.name]
    if taken:
        raise ValueError(f"{task.name}: component name {task.component!r} is task {taken[0]!r}'s")
    TASKS[task.name] = task
    return task


def named(name: str) -> Task:
    """
    The task called `name`: its `name` ("ner", "pos", "parse") or its `component` ("ner", "tagger", "parser").

    # Raises

    `KeyError` naming the registered tasks.
    """
    if name in TASKS:
        return TASKS[name]
    for task in TASKS.values():
        if task.component == name:
            return task
    raise KeyError(f"no task {name!r}; registered: {', '.join(TASKS)}")


def components() -> Tuple[str, ...]:
    """The registered tasks' component names, in registration order."""
    return tuple(task.component for task in TASKS.values())


def task_of(model: Any, config: Optional[Dict[str, Any]] = None) -> Optional[Task]:
    """
    The registered task of a model (and its training config): the one that claims it most surely
    (`Task.claims`), the first registered on a tie; `None` when none does.

    # Parameters

    model : `Any`
    config : `Optional[Dict[str, Any]]`, optional (default = `None`)
    """
    best, best_claim = None, 0
    for task in TASKS.values():
        claim = task.claims(model, config)
        if claim > best_claim:
            best, best_claim = task, claim
    return best


def gold_fields() -> List[Gold]:
    """The gold fields of the registered tasks, one per key, in registration order (tags, then trees)."""
    found: Dict[str, Gold] = {}
    for task in TASKS.values():
        found.setdefault(task.gold.key, task.gold)
    return list(found.values())


def prediction_fields() -> List[str]:
    """The task fields of the registered predictors' JSON, in registration order (tags, entities, tree, ...)."""
    return list(dict.fromkeys(key for task in TASKS.values() for key in task.predictor_fields))

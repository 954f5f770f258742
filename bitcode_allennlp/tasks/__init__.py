"""The tasks, one plug-in each (`base.Task`), and their registry: one `register` line per task. A new task is a
module with its `Task` subclass (its configs beside it, `Task.configs`) and one line calling `register`; the stages
and tools read the registry (`bitcode_allennlp/tasks/base.py`)."""
from bitcode_allennlp.tasks.base import (TASKS, Gold, Task, components, gold_fields, named, prediction_fields,
                                         register, task_of)
from bitcode_allennlp.tasks.ner import NerTask
from bitcode_allennlp.tasks.parsing import ParseTask
from bitcode_allennlp.tasks.tagging import PosTask

register(PosTask())
register(NerTask())
register(ParseTask())

__all__ = ["TASKS", "Gold", "Task", "components", "gold_fields", "named", "prediction_fields", "register", "task_of"]

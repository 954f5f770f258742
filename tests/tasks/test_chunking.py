"""A fourth task added as a plug-in (issue #49): the toy chunking task of `tests/tasks/chunking/` (its module, its
configs, its fixture corpora) and ONE registry line, `register(TASK)`. With nothing else changed, the whole
experiment runs it (hashing stage 1 epoch on the tiny fixture PLM → hash-corpus → validation stage → both scored),
the codes files read back through the codes-line registry, and the Python API and a spaCy component take its
archive."""
import json
from pathlib import Path

import pytest
import spacy
from spacy.language import Language

import bitcode_allennlp
import bitcode_allennlp.plugin  # noqa: F401  (registers the readers and models)
from bitcode_allennlp import tasks
from bitcode_allennlp.code_stage.binary_codes_reader import BinaryCodesDatasetReader
from bitcode_allennlp.code_stage.experiment import TASKS as EXPERIMENT_TASKS, main
from bitcode_allennlp.common.codes_line import read_codes_line
from bitcode_allennlp.spacy_components.component import spacy_factory
from tests.conftest import TINY_BERT
from tests.tasks.chunking import FOLDER, TASK, Conll2000ChunksReader


@pytest.fixture
def chunking():
    """The one registry line; taken back afterwards, so the other tests see the three built-in tasks."""
    assert "chunk" not in tasks.TASKS and list(tasks.TASKS) == ["pos", "ner", "parse"]
    tasks.register(TASK)
    yield TASK
    del tasks.TASKS["chunk"]


def test_the_built_in_tasks_are_registered_under_their_names():
    assert [(t.name, t.component, t.metric, t.gold.key) for t in tasks.TASKS.values()] == [
        ("pos", "tagger", "accuracy", "tags"), ("ner", "ner", "f1-measure-overall", "tags"),
        ("parse", "parser", "evalb_f1", "tree")]
    assert tasks.named("parser") is tasks.named("parse") and tasks.components() == ("tagger", "ner", "parser")
    assert [gold.key for gold in tasks.gold_fields()] == ["tags", "tree"]
    assert tasks.prediction_fields() == ["tags", "entities", "tree", "tree_json"]
    with pytest.raises(KeyError, match="no task 'chunk'"):
        tasks.named("chunk")
    with pytest.raises(ValueError, match="is task 'ner'"):
        tasks.register(type("Other", (tasks.Task,), {"name": "other", "component": "ner"})())


def test_a_fourth_task_needs_only_its_folder_and_one_registry_line(chunking, tmp_path):
    assert "chunk" in EXPERIMENT_TASKS and chunking.config("hash").parent == FOLDER  # its configs, in its folder
    out = tmp_path / "exp"
    # no --plm: a config's default paths (the tiny fixture PLM) resolve against the repository root wherever the
    # config is (`config_variables.config_root`), here in the task's own folder
    row = main(["chunk", "--out", str(out), "--in-process", "--no-probe",
                "--set", "EPOCHS=1", "--code-set", "EPOCHS=1"])
    assert row["task"] == "chunk" and row["metric"] == "f1-measure-overall"
    assert any(f"{FOLDER / 'chunk_hash.jsonnet'}" in command for command in row["commands"])
    for stage in ("hashing", "validation"):
        assert 0.0 <= row[stage]["scores"]["dev"] <= 1.0
    # the codes files: the gold field of the task's lines read back through the registry (common/codes_line.py)
    reader = Conll2000ChunksReader()
    for split, corpus in (("train", chunking.fixtures[0]), ("dev", chunking.fixtures[1])):
        lines = (out / "codes" / f"{split}.jsonl").read_text().splitlines()
        gold = [instance["tags"].labels for instance in reader.read(corpus)]
        assert len(lines) == len(gold) == (12 if split == "train" else 4)
        for number, (text, tags) in enumerate(zip(lines, gold), 1):
            line = read_codes_line(split, number, text, row["num_bits"], fixed=True)
            assert line.tags == list(tags) and line.tree is None and len(line.codes) == len(line.words)
            assert json.loads(text)["num_bits"] == row["num_bits"]
    assert len(list(BinaryCodesDatasetReader(num_bits=row["num_bits"]).read(str(out / "codes" / "dev.jsonl")))) == 4
    # the Python API and a spaCy component take the archive: the task is found through the registry
    archive = Path(row["hashing_archive"])
    model = bitcode_allennlp.load(archive)
    assert model.task == "chunker" and model.plm.endswith("tiny-bert")
    assert str(TINY_BERT) in (archive.parent / "config.json").read_text()  # the config's default PLM, found
    encoded = model.encode([["The", "cat", "sat", "on", "the", "mat"]])[0]
    assert len(encoded.codes) == 6 and len(encoded.tags) == 6 and encoded.entities is not None
    assert set(encoded.to_dict()) == {"words", "codes", "bits", "tags", "entities"}
    if not Language.has_factory("bitcode_chunker"):
        spacy_factory("chunker")
    nlp = spacy.blank("en")
    nlp.add_pipe("bitcode_chunker", config={"model": str(archive)})
    doc = nlp("The cat sat on the mat")
    assert all(token._.bitcode for token in doc)
    assert [(span.start, span.end, span.label_) for span in doc.ents] == [
        (e["start"], e["end"], e["label"]) for e in encoded.entities]

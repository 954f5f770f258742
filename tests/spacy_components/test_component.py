"""The `bitcode_tagger` / `bitcode_ner` / `bitcode_parser` spaCy components on archives trained on the fixtures:
they write what the predictor returns, `nlp.pipe` equals per-doc calls, saved pipelines are self-contained."""
import filecmp
import shutil
import subprocess
import sys

import spacy
from nltk import Tree

from bitcode_allennlp.spacy_components import BitcodeComponent
from tests.conftest import ROOT

TEXTS = ["Frodo held the ring in London.\nThen he left (quietly)!\n", "", "Hi", "  ",
         "RT @BBCNews: Obama visits Berlin today", "The ring was held by Frodo. Frodo left. Sam stayed in Bree."]


def annotations(doc):
    """Everything the components write, in doc token offsets."""
    sentences = [(s.start, s.end, s._.parse_string, s._.labels) for s in doc.sents] \
        if doc.has_extension("bitcode_constituents") and doc._.bitcode_constituents is not None and len(doc) else None
    return ([(t.text, t.tag_, t._.bitcode, t._.bits, t.is_sent_start) for t in doc],
            [(e.start, e.end, e.label_) for e in doc.ents], doc._.bitcode_constituents, sentences)


def pipeline(*components, batch_size=32, **config):
    nlp = spacy.blank("en")
    for factory, archive in components:
        nlp.add_pipe(factory, config={"archive": str(archive), "batch_size": batch_size, **config})
    return nlp


def test_ner_writes_the_predictors_entities_and_codes(ner_archive, ner_predictor):
    nlp = pipeline(("bitcode_ner", ner_archive))
    assert isinstance(nlp.get_pipe("bitcode_ner"), BitcodeComponent)
    doc = nlp(TEXTS[0])
    sentences = list(doc.sents)
    assert [s.text for s in sentences] == ["Frodo held the ring in London.\n", "Then he left (quietly)!\n"]
    assert doc.ents  # (rule-based sentence boundaries were added; whitespace joins the sentence before it)
    for sentence in sentences:
        tokens = [t for t in sentence if not t.is_space]
        expected = ner_predictor.predict_json({"tokens": [t.text for t in tokens]})
        assert [t._.bitcode for t in tokens] == expected["codes"] and [t._.bits for t in tokens] == expected["bits"]
        got = [(e.start - sentence.start, e.end - sentence.start, e.label_) for e in doc.ents
               if sentence.start <= e.start < sentence.end]
        assert got == [(e["start"], e["end"], e["label"]) for e in expected["entities"]]
    assert doc[-1].is_space and doc[-1]._.bitcode is None and doc[-1]._.bits is None
    assert [t.ent_iob_ for t in doc if not t.is_space] != [""] * (len(doc) - 1)


def test_pipe_batches_across_docs_and_equals_per_doc_calls(ner_archive, parser_archive):
    nlp = pipeline(("bitcode_ner", ner_archive), ("bitcode_parser", parser_archive), batch_size=3)
    one_by_one = [annotations(nlp(text)) for text in TEXTS]
    calls = []
    component = nlp.get_pipe("bitcode_parser")
    original = component.predictor.predict_batch_json
    component.predictor.predict_batch_json = lambda inputs: calls.append(len(inputs)) or original(inputs)
    piped = [annotations(doc) for doc in nlp.pipe(TEXTS * 2, batch_size=6)]
    assert piped == one_by_one * 2
    assert calls == [3, 3, 1] * 2  # groups of 6 docs (7 sentences), 3 sentences per model call


def test_saved_pipeline_is_self_contained(ner_archive, parser_archive, tmp_path):
    copies = []
    for archive in (ner_archive, parser_archive):
        copies.append(tmp_path / f"{len(copies)}.tar.gz")
        shutil.copyfile(archive, copies[-1])
    nlp = pipeline(("bitcode_ner", copies[0]), ("bitcode_parser", copies[1]), batch_size=4)
    before = [annotations(doc) for doc in nlp.pipe(TEXTS)]
    nlp.to_disk(tmp_path / "saved")
    for copy in copies:
        copy.unlink()  # the saved pipeline must not need the original archives
    assert (tmp_path / "saved" / "bitcode_ner" / "model.tar.gz").is_file()
    loaded = spacy.load(tmp_path / "saved")
    assert loaded.pipe_names == ["bitcode_ner", "bitcode_parser"]
    assert loaded.get_pipe("bitcode_parser").batch_size == 4
    assert [annotations(doc) for doc in loaded.pipe(TEXTS)] == before
    loaded.to_disk(tmp_path / "again")  # and saving it again copies its own archives
    for name in ("bitcode_ner", "bitcode_parser"):
        assert filecmp.cmp(tmp_path / "saved" / name / "model.tar.gz", tmp_path / "again" / name / "model.tar.gz",
                           shallow=False)


def test_one_word_empty_and_whitespace_docs(ner_archive, parser_archive):
    nlp = pipeline(("bitcode_ner", ner_archive), ("bitcode_parser", parser_archive))
    doc = nlp("Hi")
    assert len(doc[0]._.bitcode) == 6 and len(doc[0]._.bits) == 24
    assert Tree.fromstring(f"(TOP {doc[0:1]._.parse_string})").pos() == [("Hi", "XX")]
    assert [c.text for c in doc[0:1]._.constituents] == ["Hi"] and doc[0]._.parent is None
    for text in ("", "   "):
        doc = nlp(text)
        assert [t._.bitcode for t in doc] == [None] * len(doc) and list(doc.ents) == []
        assert doc._.bitcode_constituents == {"starts": [], "ends": [], "labels": []}


def test_sentence_longer_than_the_plm_window_gets_a_code_per_word(ner_archive):
    window = {"dataset_reader.token_indexers.tokens.max_length": 16,
              "model.text_field_embedder.token_embedders.tokens.max_length": 16}
    nlp = pipeline(("bitcode_ner", ner_archive), overrides=window)
    text = " ".join(f"word{i}" for i in range(60))  # no sentence end: one sentence, well over 16 word pieces
    doc = nlp(text)
    predictor = nlp.get_pipe("bitcode_ner").predictor
    embedder = predictor._model.text_field_embedder._token_embedders["tokens"]
    instance = predictor._dataset_reader.text_to_instance(text.split())
    predictor._dataset_reader.apply_token_indexers(instance)
    instance.index_fields(predictor._model.vocab)
    indexed = instance["tokens"]._indexed_tokens["tokens"]
    assert embedder._window == 16 and len(indexed["token_ids"]) > 16  # several windows
    assert len(list(doc.sents)) == 1 and all(len(t._.bitcode) == 6 for t in doc)


def reference_constituents(tree):
    """(start, end, labels) of a predicted tree, derived independently from nltk: unary chains grouped by span."""
    spans = {}
    leaves = tree.treepositions("leaves")
    for position in tree.treepositions():
        node = tree[position]
        if not isinstance(node, Tree) or position == () or (len(node) == 1 and isinstance(node[0], str)):
            continue
        covered = [i for i, leaf in enumerate(leaves) if leaf[: len(position)] == position]
        spans.setdefault((covered[0], covered[-1] + 1), []).append(node.label())
    spans.setdefault((0, len(leaves)), [])
    for i in range(len(leaves)):
        spans.setdefault((i, i + 1), [])
    return sorted(((s, e, tuple(labels)) for (s, e), labels in spans.items()), key=lambda c: (c[0], -c[1]))


def test_parser_extensions_agree_with_the_predictors_tree(ner_archive, parser_archive, parser_predictor,
                                                          ner_predictor):
    nlp = pipeline(("bitcode_tagger", ner_archive), ("bitcode_parser", parser_archive))
    doc = nlp(TEXTS[-1] + " He (Frodo) left.")
    assert any(c._.labels for s in doc.sents for c in list(s._.constituents)[1:] if len(c) > 1)  # trees have phrases
    for sentence in doc.sents:
        words, tags = [t.text for t in sentence], [t.tag_ for t in sentence]
        assert tags == ner_predictor.predict_json({"tokens": words})["tags"]  # the tagger component's tags
        row = parser_predictor.predict_json({"tokens": words, "pos_tags": tags})  # which the parser was given
        assert [t._.bitcode for t in sentence] == row["codes"]  # the last component's codes
        tree = Tree.fromstring(row["tree"])
        expected = row["tree"][len("(TOP "):-1]
        assert sentence._.parse_string == expected and Tree.fromstring(f"(TOP {expected})") == tree
        constituents = [(c.start - sentence.start, c.end - sentence.start, c._.labels) for c in sentence._.constituents]
        assert constituents == reference_constituents(tree)
        assert sentence._.labels == constituents[0][2] and sentence._.parent is None
        for span in sentence._.constituents:
            enclosing = [c for c in sentence._.constituents if c.start <= span.start and span.end <= c.end
                         and (c.start, c.end) != (span.start, span.end)]
            parent = min(enclosing, key=len) if enclosing else None
            assert span._.parent == parent
            assert [c.text for c in span._.children] == [c.text for c in sentence._.constituents if c._.parent == span]


def test_entry_points_and_extensions_only_when_missing():
    script = """
import sys, spacy
from spacy.tokens import Span
Span.set_extension("labels", getter=lambda span: "someone else's")
nlp = spacy.blank("en")
nlp.add_pipe("bitcode_parser", config={"archive": "never/loaded.tar.gz"})  # found through the entry point
assert "bitcode_allennlp.spacy_components.component" in sys.modules and "allennlp" not in sys.modules
doc = nlp.make_doc("a b")
assert doc[0:2]._.labels == "someone else's" and Span.has_extension("parse_string")
try:
    nlp("a b")
except FileNotFoundError as error:
    assert "never/loaded.tar.gz" in str(error)
else:
    raise AssertionError("a missing archive must raise on first use")
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


def test_spacys_pipeline_checks_do_not_load_the_model(tmp_path):
    """spaCy probes a component's attributes while it builds a pipeline (`isinstance(component,
    ListenedToComponent)` calls `hasattr(component, "model")`, in an order that depends on string hashing), before
    `from_disk` points it at its saved archive: nothing there may load (or look for) the archive."""
    from spacy import ty

    nlp = spacy.blank("en")
    component = nlp.add_pipe("bitcode_ner", config={"model": str(tmp_path / "gone.tar.gz")})
    assert not isinstance(component, ty.ListenedToComponent) and not hasattr(component, "model")
    assert component._model is None  # nothing loaded


def test_every_registered_task_has_its_entry_point():
    """setup.py's `spacy_factories` name one factory per registered task (`spacy.load` finds it after `pip install`),
    and each points at a factory of the component module."""
    import re

    from bitcode_allennlp import tasks
    from bitcode_allennlp.spacy_components import component

    text = (ROOT / "setup.py").read_text(encoding="utf-8")
    listed = set(re.search(r'for task in \(([^)]*)\)', text).group(1).replace('"', "").replace(" ", "").split(","))
    assert listed - {""} == {task.component for task in tasks.TASKS.values()}
    assert all(callable(getattr(component, f"make_bitcode_{name}")) for name in listed - {""})

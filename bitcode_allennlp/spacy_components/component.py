"""spaCy pipeline components that run a bitcode_allennlp archive: `bitcode_tagger`, `bitcode_ner`, `bitcode_parser`.

    nlp = spacy.blank("en")
    nlp.add_pipe("bitcode_ner", config={"model": "runs/ner/model.tar.gz"})   # a path, or a model package's name
    doc = nlp("Obama visits Berlin today")
    doc.ents, [token._.bitcode for token in doc]

Where this sits: the component hands each sentence's words (the pipeline's own tokens, whitespace tokens left out) to
the model of the Python API (`bitcode_allennlp.load`: the archive's default predictor, `hash_tagger` / `hash_parser`,
with `{"tokens": ...}`) and writes back the `Encoded` sentences it returns. Every component sets `Token._.bitcode` (hex)
and `Token._.bits` (K 0/1 ints); `bitcode_tagger` sets `token.tag_`, `bitcode_ner` `doc.ents`, `bitcode_parser`
benepar's span extensions (`host/extensions.py`; the tags already on the tokens, e.g. from a spaCy tagger, go into its
trees).

Docs are split into sentences: the pipeline's own boundaries, else a rule-based `Sentencizer` sets them (whitespace
tokens never start a sentence then). A sentence
longer than the PLM's window is folded by the model's embedder (`max_length`) and still gets one code per word.
`nlp.pipe` groups `batch_size` docs (spaCy's argument) and runs their sentences through the model `batch_size`
sentences at a time (the component's setting). The archive is loaded on first use; `to_disk` copies it into the
component's directory and `from_disk` reads it from there, so a saved pipeline is self-contained.
Registered through the `spacy_factories` entry points in setup.py (no import needed).
"""
import copy
import shutil
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from spacy.language import Language
from spacy.pipeline import Sentencizer
from spacy.tokens import Doc
from spacy.util import minibatch

from bitcode_allennlp.common.checks import check_choice, check_range
from bitcode_allennlp.spacy_components.extensions import install_extensions
from bitcode_allennlp.tasks import components, named

ARCHIVE_FILE = "model.tar.gz"  # in the component's directory after to_disk (a serialization directory: "model")
ARCHIVE_DIRECTORY = "model"
TASKS = components()
"""The built-in tasks' component names ("tagger", "ner", "parser"); a component accepts any registered task's
(`bitcode_allennlp.tasks`)."""
DEFAULT_CONFIG = {"model": None, "archive": None, "batch_size": 32, "cuda_device": -1, "overrides": {}}

Sentence = Tuple[int, List[int]]  # (index of the doc in the batch, doc token indices of the sentence's words)


class BitcodeComponent:
    """
    Runs a bitcode_allennlp archive over the sentences of docs (see the module docstring).

    # Parameters

    nlp : `Language`
    name : `str`
    archive : `str`
        A `model.tar.gz` (or serialization directory) of a `hash_crf_tagger` (tagger, ner) or `hash_span_parser`, or
        the name of an installed model package (`allennlp bits package`); `model` says the same and wins.
    task : `str`
        A registered task's component name (`bitcode_allennlp.tasks`): "tagger" (`token.tag_`), "ner" (`doc.ents`;
        the tagger needs a `label_encoding`) or "parser" (trees); the task writes its annotations
        (`Task.annotate`).
    batch_size : `int`, optional (default = `32`)
        Sentences per model call.
    cuda_device : `int`, optional (default = `-1`)
    overrides : `Dict[str, Any]`, optional (default = `None`)
        Config overrides for `load_archive`, e.g.
        `{"model.text_field_embedder.token_embedders.tokens.max_length": 256}`.
    model : `str`, optional (default = `None`)
        As `archive` (the name the Python API uses: `bitcode_allennlp.load(model)`).
    """

    def __init__(self, nlp: Language, name: str, archive: Optional[str], task: str, batch_size: int = 32,
                 cuda_device: int = -1, overrides: Optional[Dict[str, Any]] = None, model: Optional[str] = None
                 ) -> None:
        check_choice("task", task, components(), error=ValueError)
        check_range("batch_size", batch_size, 1, error=ValueError)
        self.name = name
        self.task = task
        self.plugin = named(task)
        self.archive = model or archive
        self.batch_size = batch_size
        self.cuda_device = cuda_device
        self.overrides = dict(overrides or {})
        self._model = None
        self._sentencizer: Optional[Sentencizer] = None
        install_extensions()

    @property
    def code_model(self):
        """The `bitcode_allennlp.api.CodeModel` of the archive, loaded on first use. (Not `model`: spaCy reads a
        component's `model` while it builds a pipeline, e.g. `isinstance(component, ListenedToComponent)` calls
        `hasattr(component, "model")`, before `from_disk` points the component at its saved archive.)"""
        if self._model is None:
            from bitcode_allennlp.api import archive_of, load

            if not self.archive:
                raise ValueError(f"{self.name}: no model; add_pipe(..., config={{'model': 'model.tar.gz'}}) (a path "
                                 "or an installed model package)")
            try:
                self.archive = archive_of(self.archive)
            except FileNotFoundError as error:
                raise FileNotFoundError(f"{self.name}: {error}") from None
            self._model = load(self.archive, device=self.cuda_device, batch_size=self.batch_size,
                               overrides=self.overrides)
        return self._model

    @property
    def predictor(self):
        """The archive's default predictor, inside `model`."""
        return self.code_model.predictor

    def __call__(self, doc: Doc) -> Doc:
        self.set_annotations([doc], *self.predict([doc]))
        return doc

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        for docs in minibatch(stream, size=batch_size):
            self.set_annotations(docs, *self.predict(docs))
            yield from docs

    def predict(self, docs: List[Doc]) -> Tuple[List[Sentence], List[Any]]:
        """The sentences of `docs` (sentence boundaries set where missing) and the model's `Encoded` for each."""
        sentences: List[Sentence] = []
        for index, doc in enumerate(docs):
            if len(doc) == 0:
                continue
            if not doc.has_annotation("SENT_START"):
                if self._sentencizer is None:
                    self._sentencizer = Sentencizer()
                self._sentencizer(doc)
                for token in doc[1:]:
                    if token.is_space and token.is_sent_start:  # whitespace joins the sentence before it
                        token.is_sent_start = False
                        if token.i + 1 < len(doc):
                            doc[token.i + 1].is_sent_start = True
            for sentence in doc.sents:
                words = [token.i for token in sentence if not token.is_space]
                if words:
                    sentences.append((index, words))
        inputs = [self._input(docs[index], words) for index, words in sentences]
        return sentences, self.code_model.encode_json(inputs) if inputs else []

    def _input(self, doc: Doc, words: List[int]) -> Dict[str, Any]:
        return self.plugin.spacy_input(doc, words)

    def set_annotations(self, docs: List[Doc], sentences: List[Sentence], outputs: List[Any]) -> None:
        pending: List[Dict[str, Any]] = [{} for _ in docs]  # per doc, what the task sets once (`Task.finish`)
        for (index, words), output in zip(sentences, outputs):
            doc = docs[index]
            if len(output.words) != len(words):
                raise ValueError(f"{self.name}: the model returned {len(output.words)} words for {len(words)} tokens")
            for i, code, bits in zip(words, output.codes, output.bits.tolist()):
                extensions = doc[i]._
                extensions.bitcode, extensions.bits = code, bits
            self.plugin.annotate(doc, words, output, pending[index], f"{self.name}: {self.archive}")
        for doc, doc_pending in zip(docs, pending):
            self.plugin.finish(doc, doc_pending)

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> None:
        """Copies the archive into `path` (the component's directory of a saved pipeline)."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        if not self.archive:
            raise ValueError(f"{self.name}: no archive to save")
        from bitcode_allennlp.api import archive_of

        source = Path(archive_of(self.archive))
        target = path / (ARCHIVE_DIRECTORY if source.is_dir() else ARCHIVE_FILE)
        if target.exists() and source.resolve() == target.resolve():
            return
        if source.is_dir():
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(source, target)
        else:
            shutil.copyfile(source, target)

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> "BitcodeComponent":
        """Uses the archive that `to_disk` left in `path` (loaded on first use)."""
        path = Path(path)
        for name in (ARCHIVE_FILE, ARCHIVE_DIRECTORY):
            if (path / name).exists():
                self.archive = str(path / name)
                self._model = None
                return self
        raise FileNotFoundError(f"{self.name}: no {ARCHIVE_FILE} or {ARCHIVE_DIRECTORY}/ in {path}")


def _factory(task: str, assigns: List[str]):
    def make(nlp: Language, name: str, model: Optional[str], archive: Optional[str], batch_size: int,
             cuda_device: int, overrides: Dict[str, Any]) -> BitcodeComponent:
        return BitcodeComponent(nlp, name, archive, task, batch_size, cuda_device, overrides, model)

    make.__name__ = f"make_bitcode_{task}"
    make.__doc__ = f"Factory of the `bitcode_{task}` component (`BitcodeComponent` with task {task!r})."
    return Language.factory(f"bitcode_{task}", default_config=copy.deepcopy(DEFAULT_CONFIG),
                            assigns=assigns + ["token._.bitcode", "token._.bits"])(make)


def spacy_factory(component: str) -> Callable[..., BitcodeComponent]:
    """
    Registers the spaCy factory `bitcode_COMPONENT` of a registered task (its `spacy_assigns`) and returns it;
    the built-in tasks' are registered below (and named in setup.py's `spacy_factories` entry points).

    # Parameters

    component : `str`
        The task's component name (`Task.component`).
    """
    return _factory(component, list(named(component).spacy_assigns))


make_bitcode_tagger = spacy_factory("tagger")
make_bitcode_ner = spacy_factory("ner")
make_bitcode_parser = spacy_factory("parser")

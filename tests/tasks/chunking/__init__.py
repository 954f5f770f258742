"""A toy fourth task, chunking (CoNLL-2000 columns `word POS chunk`, BIO chunk tags, a blank line between
sentences), brought as a folder: this module (the `Task` and a reader name), its configs (`chunk_hash.jsonnet`,
`chunk_code.jsonnet`: the hashing-stage tagger `hash_crf_tagger` and the validation-stage tagger, with existing
config variables only) and its fixture corpora (`train.txt`, `dev.txt`, hand-written). `register(TASK)` is the one
line that adds it (`tests/tasks/test_chunking.py` does it, and takes it back after the test)."""
from pathlib import Path

from allennlp.data import DatasetReader

from bitcode_allennlp.data.dataset_readers.conll_columns import ConllColumnsDatasetReader
from bitcode_allennlp.tasks.ner import SpanTaggingTask

FOLDER = Path(__file__).parent


@DatasetReader.register("conll2000_chunks")
class Conll2000ChunksReader(ConllColumnsDatasetReader):
    """CoNLL-2000 chunking columns: `conll_columns` reads them as they are (token column 0, tag column -1, the
    chunk tags IOB2 = BIO); under its own name so that an archive says it is a chunker (`Task.claims`), not NER."""


class ChunkTask(SpanTaggingTask):
    """Chunking: a span tagger like NER (BIOUL tags, `"entities"` = chunks, `doc.ents` in spaCy), its own configs,
    reader and fixtures."""

    name = "chunk"
    component = "chunker"
    readers = ("conll2000_chunks",)
    fixtures = (FOLDER / "train.txt", FOLDER / "dev.txt")
    configs = FOLDER


TASK = ChunkTask()

"""`allennlp bits explore CODES.jsonl --out DIR`: a static code explorer for the browser (HTML, JS, data shards).

Where this sits: it reads a codes corpus (`allennlp hash-corpus` output, `bits/corpus.py`) and writes a folder that
opens from `file://` with no server, no network and no third-party JS (`bits/explorer/`: `index.html`, `explorer.js`,
`explorer.css`, copied as they are). The data goes in shards the page loads on demand with `<script>` tags (a
browser does not `fetch` from `file://`), each calling `BitcodeData.put(name, value)`:

* `data/meta.js` -- K, sizes, label views and their (gold) label names and counts, and per view the count of words of
  each label with bit i = 1 (the bit view and the paper's Figure 4: P(bit i = 1 | label) = ones / count; a label of
  fewer than `few_words` words, `heatmap.FEW_WORDS`, is drawn faded and hatched, as in `allennlp bits heatmap`);
* `data/sentences/N.js` -- sentences `N * shard_size ...`: words, hex codes, tags or tree, source;
* `data/entries.js` -- one entry per word in corpus order, as base64 little-endian columns: the code's high and low
  32 bits, the word id (into `vocabulary`), each view's label id, and each sentence's first entry. The page scans
  these for filters, a word's occurrences, a code's words and the Hamming neighbours of a code, which are the
  top k entries by (distance, entry index): the same as `allennlp bits search` (its flat index) on this corpus.

`--serve` (`serve`) serves the folder on localhost and answers `POST /api/encode` (sentences through the archive by
`bitcode_allennlp.load`, the code path of `allennlp predict`) and `POST /api/diff` (`bits.diff.diff_codes`), so a
typed sentence gets its codes and predicted labels, and two typed sentences their diff (docs/reading_codes.md
documents the requests). The page's diff aligns words itself (`align` in `explorer.js`): only equal words pair, and
in two variants of one sentence a one-word substitution between equal words; `allennlp bits diff` also pairs
longer replaced stretches.
"""
import base64
import json
import shutil
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from bitcode_allennlp.bits.corpus import CodesCorpus, distinct_strings, read_codes_corpus
from bitcode_allennlp.bits.heatmap import FEW_WORDS
from bitcode_allennlp.common.code_format import num_hex_digits
from bitcode_allennlp.host.console import shown_path
from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.host.outputs import replaced_folder
from bitcode_allennlp.tasks import gold_fields

ASSETS = Path(__file__).with_name("explorer")
ASSET_FILES = ("index.html", "explorer.js", "explorer.css")
EXPLORER_FILES = (*ASSET_FILES, "data/meta.js", "data/entries.js", "data/sentences/*.js")
"""What the explorer writes into its folder: an existing `--out` holding anything else is refused (not replaced)."""
SHARD_SENTENCES = 200
"""Sentences per `data/sentences/N.js` shard (a corpus page shows at most this many)."""


def _b64(array: np.ndarray, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(array, dtype=np.dtype(dtype).newbyteorder("<")).tobytes()).decode()


def _script(name: str, value: Any) -> str:
    return f"BitcodeData.put({json.dumps(name)}, {json.dumps(value, ensure_ascii=False, separators=(',', ':'))});\n"


def _records(corpus: CodesCorpus) -> List[Dict[str, Any]]:
    """Each sentence of the corpus as the page shows it, from the lines `read_codes_corpus` kept (and checked)."""
    records = []
    for sentence in corpus.sentences:
        line = sentence["record"]
        record = {"w": line.get("words", line["codes"]), "c": line["codes"], "n": sentence["line"]}
        for gold in gold_fields():  # the registered tasks' gold fields (`bitcode_allennlp.tasks`): "t", "tree"
            if gold.key in line:
                record[gold.page_key] = line[gold.key]
        if "source" in line:
            record["s"] = line["source"]
        records.append(record)
    return records


def label_bit_counts(corpus: CodesCorpus, bits: np.ndarray) -> Dict[str, Dict[str, Any]]:
    """Per label view: label names, words per label, and words per label with bit i = 1 (labels, K)."""
    views = {}
    for view, column in corpus.labels.items():
        ids = np.asarray(column.ids, dtype=np.int64)  # (n,)
        counts = np.bincount(ids, minlength=len(column.names))  # (labels,)
        ones = np.zeros((len(column.names), corpus.num_bits), dtype=np.int64)  # (labels, K)
        np.add.at(ones, ids, bits)
        views[view] = {"labels": column.names, "counts": counts.tolist(), "ones": ones.tolist()}
    return views


def build_explorer(codes_path: str, out: str, archive: Optional[str] = None,
                   max_sentences: Optional[int] = None, index_dir: Optional[str] = None) -> Dict[str, Any]:
    """Writes the explorer of `codes_path` into the folder `out` (see the module docstring) and returns its `meta`:
    built whole in a sibling folder and renamed into place (`outputs.replaced_folder`), so an explorer written
    before stays whole until the new one is complete, and a failure or Ctrl-C leaves it unchanged. With `index_dir`,
    first checks that the index holds this corpus (`check_index`). The caller checks `out` first (`check_output`
    with `EXPLORER_FILES`: an existing folder that is not an explorer, or holds an input, is refused)."""
    corpus = read_codes_corpus(codes_path, max_sentences=max_sentences, keep_records=True)
    if index_dir is not None:
        check_index(index_dir, {"words": len(corpus), "num_bits": corpus.num_bits})
    with replaced_folder(out) as staging:
        return _write_explorer(corpus, Path(staging), codes_path, archive)


def _write_explorer(corpus: CodesCorpus, out_dir: Path, codes_path: str, archive: Optional[str]) -> Dict[str, Any]:
    data = out_dir / "data"
    (data / "sentences").mkdir(parents=True)
    for name in ASSET_FILES:
        shutil.copyfile(ASSETS / name, out_dir / name)
    bits = corpus.code_value.bits_as(np.uint8)  # (n, K) uint8
    words = [corpus.word(i) for i in range(len(corpus))]
    vocabulary, word_ids = distinct_strings(words)  # (V,), (n,): words kept exactly ("Paris\x00" is not "Paris")
    records = _records(corpus)
    lengths = np.array([len(sentence["words"]) for sentence in corpus.sentences], dtype=np.int64)  # (sentences,)
    starts = np.concatenate([[0], np.cumsum(lengths)])  # (sentences + 1,)
    shards = (len(records) + SHARD_SENTENCES - 1) // SHARD_SENTENCES
    for shard in range(shards):
        chunk = records[shard * SHARD_SENTENCES:(shard + 1) * SHARD_SENTENCES]
        (data / "sentences" / f"{shard}.js").write_text(_script(f"sentences/{shard}", chunk), encoding="utf-8")
    high, low = corpus.code_value.halves()  # (n,), (n,) uint32
    entries = {
        "hi": _b64(high, "u4"),  # (n,)
        "lo": _b64(low, "u4"),  # (n,)
        "word": _b64(word_ids.astype(np.uint32), "u4"),  # (n,)
        "labels": {view: _b64(np.asarray(column.ids, dtype=np.uint16), "u2") for view, column in corpus.labels.items()},
        "starts": _b64(starts.astype(np.uint32), "u4"),  # (sentences + 1,)
        "vocabulary": [str(word) for word in vocabulary],
    }
    (data / "entries.js").write_text(_script("entries", entries), encoding="utf-8")
    modes = [gold.explorer for gold in gold_fields()
             if gold.explorer and any(gold.page_key in record for record in records)]  # e.g. "parser": trees
    meta = {
        "corpus": shown_path(codes_path), "archive": archive and shown_path(archive), "num_bits": corpus.num_bits,
        "hex_digits": num_hex_digits(corpus.num_bits), "sentences": len(records), "words": len(corpus),
        "distinct_codes": int(np.unique(corpus.codes).shape[0]), "vocabulary": int(len(vocabulary)),
        "shard_sentences": SHARD_SENTENCES, "shards": shards,
        "task": modes[0] if modes else ("tags" if corpus.labels else "codes"),
        "views": label_bit_counts(corpus, bits), "bit_ones": bits.sum(axis=0).tolist(), "few_words": FEW_WORDS,
    }
    (data / "meta.js").write_text(_script("meta", meta), encoding="utf-8")
    return meta


def check_index(index_dir: str, meta: Dict[str, Any]) -> None:
    """`--index`: the index must hold this corpus (same entries and K), so the page's neighbours are its answers."""
    from bitcode_allennlp.bits.index import HammingIndex

    index = HammingIndex.load(index_dir)
    if len(index) != meta["words"] or index.num_bits != meta["num_bits"]:
        raise DataFormatError(index_dir, None, f"the index holds {len(index):,} entries of K = {index.num_bits}, the "
                              f"codes corpus {meta['words']:,} of K = {meta['num_bits']}: not the index of this corpus")

"""`allennlp hash-corpus`: re-annotate a corpus into codes with a trained hashing model (Algorithm 1 `reannotate`).

    allennlp hash-corpus runs/ner/model.tar.gz train.conll --output codes/train.jsonl [--batch-size 1024]
    allennlp hash-corpus runs/ner/model.tar.gz train.conll -o codes/train.$I.jsonl --num-shards 16 --shard-index $I
    allennlp hash-corpus-merge codes/train.*.jsonl -o codes/train.jsonl

Reads INPUT with the archive's dataset reader (any format our readers read), runs the hash layer only (no task
head; each distinct word split into word pieces once, `cached_word_pieces`) in token-budget batches, and appends
one JSON line per sentence (`binary_codes_reader` documents the format): words, one hex code per word (bit i = sign
of head i), the gold tags or tree, and the source line. The corpus is streamed in chunks, never held in memory; a
killed run started again continues after the last complete line of OUTPUT (`--force` starts over).

Beside OUTPUT, `OUTPUT.meta.json` records which model wrote it: `archive` (absolute path), `archive_sha256`,
`num_bits`, `input`. Continuing OUTPUT with another archive (another SHA-256) or another K is refused, as is an
OUTPUT whose last line has another `num_bits` (files written before the record existed). Before any work (before
the model loads) the command checks that INPUT exists and that OUTPUT and its record can be written
(`bitcode_allennlp.host.outputs.check_output`: not INPUT or the archive, also through a symlink, whatever
`--force` says; not a folder; its folder is created if needed), and locks OUTPUT for the run (`OUTPUT.lock`): a
second run on the same OUTPUT stops at once instead of writing its sentences a second time.

**Shards.** The input is read in chunks of `--chunk-size` sentences (default 512), and each chunk is batched and
written on its own. `--num-shards N --shard-index i` (0-based) re-annotates only the chunks whose number is i
modulo N: sentence k (0-based, in the order the reader yields them, after `--max-instances`) belongs to shard
`(k // chunk_size) % N`. So N jobs (a job array, several GPUs) can each write one shard, every shard reads the
whole input but codes only its sentences, and each chunk is coded in exactly the batches an unsharded run with
the same chunk size and budgets forms for it: the same computation, hence the same codes bit for bit. The record
then also holds `num_shards`, `shard_index`, `chunk_size`, the input's fingerprint (`input_fingerprint`: SHA-256
and bytes of the file, or of every file of a release folder), the reader settings, and, once the run has finished,
`complete: true` with `sentences` (lines in OUTPUT) and `input_sentences` (sentences in INPUT). A shard is
continued after a kill like any OUTPUT; continuing it as another shard (or with another chunk size), with another
archive or K, or from another input is refused. An unsharded run is shard 0 of 1 and records the same fields.

`allennlp hash-corpus-merge SHARD... -o OUTPUT` checks that the shards come from the same archive (SHA-256), K,
input (path and fingerprint), reader settings, number of shards and chunk size, that every shard index 0..N-1 is
given once, that each shard is complete and has exactly the lines its chunks hold (`shard_size`), and writes
OUTPUT in input order (chunk c from shard c % N): byte for byte the file an unsharded run writes, with the same
record plus `merged_from`. OUTPUT is locked and written to a temporary file renamed at the end (`outputs`), so a
failed merge leaves no OUTPUT (or the old one).
"""
import argparse
import hashlib
import json
import logging
import os
from contextlib import contextmanager
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

import torch
from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError
from allennlp.common.tqdm import Tqdm
from allennlp.data import Batch, DatasetReader, Instance, Token
from allennlp.data.tokenizers import PretrainedTransformerTokenizer
from allennlp.models.archival import load_archive
from allennlp.nn import util as nn_util

from bitcode_allennlp.common.code_format import ints_to_hex
from bitcode_allennlp.host import options
from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.model.hashing_model import HashingModel
from bitcode_allennlp.host.outputs import Input, atomic_file, check_output, output_lock
from bitcode_allennlp.data.samplers.token_budget import TokenBudgetBatchSampler

logger = logging.getLogger(__name__)

META_SUFFIX = ".meta.json"
"""`OUTPUT + META_SUFFIX` records the archive and K that wrote OUTPUT."""

SHARDING = "(index // chunk_size) % num_shards == shard_index"
"""Which input sentences (0-based index in reading order) a shard codes: whole chunks, dealt out in turn."""


def meta_path(output_path: str) -> str:
    return str(output_path) + META_SUFFIX


def file_sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_meta(output_path: str) -> Optional[Dict[str, Any]]:
    """The record beside OUTPUT, or None when there is none."""
    path = meta_path(output_path)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as file:
            meta = json.load(file)
    except (ValueError, OSError) as error:
        raise ConfigurationError(f"{path}: not a hash-corpus record ({error}); delete it and {output_path}, or "
                                 "pass --force") from None
    if not isinstance(meta, dict):
        raise ConfigurationError(f"{path}: not a hash-corpus record; delete it and {output_path}, or pass --force")
    return meta


def check_output_path(output_path: str, input_path: Optional[str] = None, archive_path: Optional[str] = None) -> None:
    """Before any work: OUTPUT and its record can be written and are not INPUT or the archive (`check_output`: not
    a folder, its folder created if missing; `--force` does not override this)."""
    inputs = [Input(input_path, "the input corpus"), Input(archive_path, "the model archive")]
    check_output(output_path, inputs, option="--output", what="the codes file", has_force=True)
    check_output(meta_path(output_path), inputs, option="--output", what="the codes file's record", has_force=True)


def check_same_model(output_path: str, archive_sha256: Optional[str], num_bits: Optional[int],
                     archive_path: Optional[str] = None, num_shards: int = 1, shard_index: int = 0,
                     fingerprint: Optional[Dict[str, Any]] = None, chunk_size: int = 512) -> None:
    """Refuses to continue OUTPUT if its record names another archive (SHA-256), another K, another shard or chunk
    size (a record without shard numbers is shard 0 of 1), or an input with another fingerprint."""
    if not os.path.exists(output_path) or os.path.getsize(output_path) == 0:
        return
    meta = read_meta(output_path)
    if meta is None:
        return
    other_archive = archive_sha256 is not None and meta.get("archive_sha256") not in (None, archive_sha256)
    other_bits = num_bits is not None and meta.get("num_bits") not in (None, num_bits)
    if other_archive or other_bits:
        now = f"{archive_path or 'this archive'}" + (f" (K = {num_bits})" if num_bits is not None else "")
        raise ConfigurationError(
            f"cannot continue {output_path}: it was written by {meta.get('archive')!r} (K = {meta.get('num_bits')}),"
            f" not by {now}; delete it or pass --force")
    their_shard = (meta.get("num_shards", 1), meta.get("shard_index", 0), meta.get("chunk_size", 512))
    if shard_name(*their_shard) != shard_name(num_shards, shard_index, chunk_size):
        raise ConfigurationError(
            f"cannot continue {output_path}: it is {shard_name(*their_shard)}, not "
            f"{shard_name(num_shards, shard_index, chunk_size)}; check --num-shards, --shard-index and --chunk-size, "
            "or delete it or pass --force")
    theirs = meta.get("input_fingerprint")
    if fingerprint is not None and theirs is not None and theirs != fingerprint:
        raise ConfigurationError(
            f"cannot continue {output_path}: it was made from {meta.get('input')!r} with another content "
            f"(sha256 {str(theirs.get('sha256'))[:12]}..., {theirs.get('bytes')} bytes; now "
            f"{str(fingerprint.get('sha256'))[:12]}..., {fingerprint.get('bytes')} bytes); delete it or pass --force")


def shard_name(num_shards: int, shard_index: int, chunk_size: int = 512) -> str:
    if num_shards == 1:
        return "an unsharded run (shard 0 of 1)"  # the chunk size does not change which sentences it codes
    return f"shard {shard_index} of {num_shards} (chunks of {chunk_size} sentences)"


def shard_of(index: int, num_shards: int, chunk_size: int) -> int:
    """The shard of input sentence `index` (`SHARDING`)."""
    return (index // chunk_size) % num_shards


def shard_size(input_sentences: int, num_shards: int, shard_index: int, chunk_size: int = 512) -> int:
    """Sentences of shard `shard_index` of `num_shards` of an input of `input_sentences` sentences (`SHARDING`)."""
    full, rest = divmod(input_sentences, chunk_size)
    return len(range(shard_index, full, num_shards)) * chunk_size + (rest if full % num_shards == shard_index else 0)


def check_shard(num_shards: int, shard_index: int, chunk_size: int = 512) -> None:
    if chunk_size < 1:
        raise ConfigurationError(f"--chunk-size must be positive, got {chunk_size}")
    if num_shards < 1:
        raise ConfigurationError(f"--num-shards must be positive, got {num_shards}")
    if not 0 <= shard_index < num_shards:
        raise ConfigurationError(f"--shard-index must be in 0..{num_shards - 1} for --num-shards {num_shards}, "
                                 f"got {shard_index}")


def input_fingerprint(input_path: str) -> Optional[Dict[str, Any]]:
    """
    What identifies INPUT's content: `{"sha256", "bytes"}` of a file, or for a folder (an OntoNotes release)
    `{"sha256", "bytes", "files"}` over every file below it (relative path, size and SHA-256 of each, in sorted
    order). None for a URL or a path that does not exist.
    """
    if "://" in str(input_path) or not os.path.exists(input_path):
        return None
    if os.path.isfile(input_path):
        return {"sha256": file_sha256(input_path), "bytes": os.path.getsize(input_path)}
    digest, total, count = hashlib.sha256(), 0, 0
    for folder, folders, names in os.walk(input_path):
        folders.sort()
        for name in sorted(names):
            path = os.path.join(folder, name)
            if not os.path.isfile(path):
                continue
            size = os.path.getsize(path)
            relative = os.path.relpath(path, input_path).replace(os.sep, "/")
            digest.update(f"{relative}\0{size}\0{file_sha256(path)}\n".encode("utf-8"))
            total, count = total + size, count + 1
    return {"sha256": digest.hexdigest(), "bytes": total, "files": count}


def write_meta(output_path: str, archive_path: Optional[str], archive_sha256: Optional[str], num_bits: int,
               input_path: str, fingerprint: Optional[Dict[str, Any]] = None,
               reader_settings: Optional[Dict[str, Any]] = None, num_shards: int = 1, shard_index: int = 0,
               chunk_size: int = 512, sentences: Optional[int] = None, input_sentences: Optional[int] = None
               ) -> None:
    """The record beside OUTPUT; `complete` (and the counts) once `sentences` and `input_sentences` are given."""
    complete = sentences is not None and input_sentences is not None
    meta = {"written_by": "allennlp hash-corpus", "archive": os.path.abspath(archive_path) if archive_path else None,
            "archive_sha256": archive_sha256, "num_bits": num_bits, "input": input_path,
            "input_fingerprint": fingerprint, "reader": reader_settings, "num_shards": num_shards,
            "shard_index": shard_index, "chunk_size": chunk_size, "sharding": SHARDING, "complete": complete,
            "sentences": sentences, "input_sentences": input_sentences}
    _write_json(meta_path(output_path), meta)


def _write_json(path: str, value: Dict[str, Any]) -> None:
    with atomic_file(path) as file:  # a kill never leaves half a record
        json.dump(value, file, indent=1)
        file.write("\n")


def completed_lines(path: str) -> Tuple[int, Optional[Dict[str, Any]], int]:
    """Complete JSON lines at the start of `path`: their count, the last one, and the byte offset after it."""
    count, last, offset = 0, None, 0
    with open(path, "rb") as file:
        for raw in file:
            if not raw.endswith(b"\n"):
                break  # a line cut short by a killed run: written again
            try:
                last = json.loads(raw)
            except json.JSONDecodeError:
                raise ConfigurationError(f"{path}:{count + 1}: not a JSON line, so {path} is not hash-corpus output; "
                                         "delete it or pass --force") from None
            count, offset = count + 1, offset + len(raw)
    return count, last, offset


def padded_batches(instances: List[Instance], max_tokens: int, max_subtokens: Optional[int] = None
                   ) -> List[List[int]]:
    """Indices of `instances` in deterministic `token_budget` batches of at most `max_tokens` padded words and, for
    indexed PLM inputs, at most `max_subtokens` padded sub-tokens (the PLM's tensor; see `TokenBudgetBatchSampler`)."""
    sampler = TokenBudgetBatchSampler(max_tokens=max_tokens, max_subtokens=max_subtokens, count="padded",
                                      shuffle=False)
    return list(sampler.get_batch_indices(instances))


def _chunks(items: Iterable[Instance], size: int) -> Iterator[List[Instance]]:
    chunk: List[Instance] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


WORD_PIECE_CACHE = 1 << 18
"""Distinct words whose word pieces `cached_word_pieces` keeps (the memo starts over when full)."""


@contextmanager
def cached_word_pieces(reader: DatasetReader) -> Iterator[None]:
    """
    While in the block, the reader's PLM tokenizers split each distinct word into word pieces once: AllenNLP's
    `PretrainedTransformerTokenizer.intra_word_tokenize` calls the tokenizer once per word of every sentence and
    copies every piece to set its type id; here the words not seen yet are encoded in one call per sentence (each
    word on its own, as AllenNLP does) and remembered. The indexed sentence is identical (same pieces, ids, type
    ids, special tokens and offsets; `tests/code_stage/test_hash_corpus_shards.py`); indexing is about 3x faster,
    which is what bounds re-annotation when the model runs on a GPU.
    """
    tokenizers = []
    for indexer in getattr(reader, "_token_indexers", {}).values():
        tokenizer = getattr(indexer, "_allennlp_tokenizer", None)
        if isinstance(tokenizer, PretrainedTransformerTokenizer) and "intra_word_tokenize" not in vars(tokenizer):
            tokenizers.append(tokenizer)
    for tokenizer in tokenizers:
        tokenizer.intra_word_tokenize = _memo_intra_word_tokenize(tokenizer)  # type: ignore[assignment]
    try:
        yield
    finally:
        for tokenizer in tokenizers:
            del tokenizer.intra_word_tokenize


def _memo_intra_word_tokenize(tokenizer: PretrainedTransformerTokenizer):
    pieces: Dict[str, Tuple[Tuple[int, str], ...]] = {}
    model_tokenizer = tokenizer.tokenizer
    start, end = tokenizer.single_sequence_start_tokens, tokenizer.single_sequence_end_tokens
    type_id = tokenizer.single_sequence_token_type_id

    def intra_word_tokenize(words: List[str]) -> Tuple[List[Token], List[Optional[Tuple[int, int]]]]:
        new = [word for word in dict.fromkeys(words) if word not in pieces]
        if new:
            if len(pieces) + len(new) > WORD_PIECE_CACHE:
                pieces.clear()
            encoded = model_tokenizer(new, add_special_tokens=False, return_attention_mask=False,
                                      return_token_type_ids=False)["input_ids"]
            for word, ids in zip(new, encoded):
                pieces[word] = tuple(zip(ids, model_tokenizer.convert_ids_to_tokens(ids)))
        tokens: List[Token] = list(start)
        offsets: List[Optional[Tuple[int, int]]] = []
        for word in words:
            word_pieces = pieces[word]
            if word_pieces:
                offsets.append((len(tokens), len(tokens) + len(word_pieces) - 1))
                tokens.extend(Token(text=text, text_id=piece, type_id=type_id) for piece, text in word_pieces)
            else:
                offsets.append(None)
        return tokens + list(end), offsets

    return intra_word_tokenize


def gold_record(instance: Instance) -> Dict[str, Any]:
    """The gold annotation of an instance of our readers: `{"tags": [...]}`, `{"tree": "(TOP ...)"}` or `{}`."""
    if "tags" in instance.fields:
        return {"tags": list(instance["tags"].labels)}  # type: ignore[attr-defined]
    gold_tree = instance["metadata"].metadata.get("gold_tree")  # type: ignore[attr-defined]
    return {"tree": gold_tree} if gold_tree is not None else {}


def reannotate(
    model: HashingModel,
    reader: DatasetReader,
    input_path: str,
    output_path: str,
    max_tokens: int = 1024,
    max_subtokens: Optional[int] = 1536,
    cuda_device: int = -1,
    force: bool = False,
    chunk_size: int = 512,
    progress: bool = True,
    archive_path: Optional[str] = None,
    archive_sha256: Optional[str] = None,
    num_shards: int = 1,
    shard_index: int = 0,
    fingerprint: Optional[Dict[str, Any]] = None,
    reader_settings: Optional[Dict[str, Any]] = None,
) -> Dict[str, int]:
    """
    Writes the codes corpus of `input_path` to `output_path` (see the module docstring) and returns counts:
    `sentences` (in the output), `resumed` (lines kept from an earlier run), `words` (coded in this run),
    `input_sentences` (sentences of the input, all shards).
    `archive_path` and `archive_sha256` (computed from `archive_path` when not given) go to the record
    `output_path + ".meta.json"`; continuing a file written by another archive or K raises `ConfigurationError`,
    as does an `output_path` that is the input or the archive (`check_output_path`, whatever `force` says) or that
    another run is writing (`output_lock`).
    With `num_shards` > 1 only the chunks of `chunk_size` sentences whose number is `shard_index` modulo
    `num_shards` are coded (`SHARDING`; an unsharded run with the same chunk size codes each chunk in the same
    batches). `fingerprint` (of the input, computed when None) and `reader_settings` (recorded; `max_instances`
    added) let the merge check that the shards read the same input the same way.
    """
    if model.num_bits is None:
        raise ConfigurationError("this model has no hash layer: re-annotate with a hashing-stage archive")
    check_shard(num_shards, shard_index, chunk_size)
    check_output_path(output_path, input_path, archive_path)
    if archive_sha256 is None and archive_path is not None and os.path.isfile(archive_path):
        archive_sha256 = file_sha256(archive_path)
    if fingerprint is None:
        fingerprint = input_fingerprint(input_path)
    settings = {**(reader_settings or {}), "max_instances": reader.max_instances}
    record = dict(archive_path=archive_path, archive_sha256=archive_sha256, num_bits=model.num_bits,
                  input_path=input_path, fingerprint=fingerprint, reader_settings=settings, num_shards=num_shards,
                  shard_index=shard_index, chunk_size=chunk_size)
    with output_lock(output_path):  # held until the record says complete: a second run stops at once
        done, last, offset = (0, None, 0)
        if os.path.exists(output_path) and not force:
            check_same_model(output_path, archive_sha256, model.num_bits, archive_path, num_shards, shard_index,
                             fingerprint, chunk_size)
            done, last, offset = completed_lines(output_path)
            if last is not None and last.get("num_bits") != model.num_bits:
                raise ConfigurationError(f"cannot continue {output_path}: its codes have {last.get('num_bits')!r} "
                                         f"bits, this model's K is {model.num_bits}; delete it or pass --force")
            os.truncate(output_path, offset)
            if done:
                logger.info("%s has %d complete lines: continuing after them", output_path, done)
        model.eval()
        words = 0
        sentences = 0
        read = [0]  # sentences of the input read so far, all shards

        def shard_instances() -> Iterator[Instance]:
            for index, instance in enumerate(reader.read(input_path)):
                read[0] = index + 1
                if shard_of(index, num_shards, chunk_size) == shard_index:
                    yield instance  # whole chunks in input order: `_chunks` below gives back exactly those chunks

        out = None  # opened on the first chunk to write, so a bad input leaves no empty output behind
        bar = Tqdm.tqdm(desc="hash-corpus" if num_shards == 1 else f"hash-corpus {shard_index}/{num_shards}",
                        unit=" sentences", disable=not progress)
        try:
            with torch.no_grad(), cached_word_pieces(reader):
                for chunk in _chunks(shard_instances(), chunk_size):
                    if sentences + len(chunk) <= done:
                        sentences += len(chunk)
                        if sentences == done:
                            _check_resume_point(chunk[-1], last, output_path)
                        continue
                    if sentences < done:  # the chunk straddles the resume point
                        _check_resume_point(chunk[done - sentences - 1], last, output_path)
                        chunk = chunk[done - sentences :]
                        sentences = done
                    lines = _code_chunk(model, reader, chunk, max_tokens, cuda_device, max_subtokens)
                    if out is None:
                        write_meta(output_path, **record)  # not complete until the end
                        out = open(output_path, "a" if offset else "w", encoding="utf-8")
                    out.write("".join(lines))
                    out.flush()
                    sentences += len(chunk)
                    words += sum(len(instance["tokens"]) for instance in chunk)  # type: ignore[arg-type]
                    bar.update(len(chunk))
        finally:
            bar.close()
            if out is not None:
                out.close()
        if sentences < done:
            raise ConfigurationError(f"{output_path} has {done} lines but {input_path} has only {sentences} "
                                     f"sentences{' in this shard' if num_shards > 1 else ''}: it was made from "
                                     "another corpus; delete it or pass --force")
        if out is None and offset == 0:
            open(output_path, "w", encoding="utf-8").close()  # a shard with no sentences (or --force on a full one)
        write_meta(output_path, **record, sentences=sentences, input_sentences=read[0])
        return {"sentences": sentences, "resumed": done, "words": words, "input_sentences": read[0]}


def _check_resume_point(instance: Instance, last: Optional[Dict[str, Any]], output_path: str) -> None:
    source = instance["metadata"].metadata.get("source")  # type: ignore[attr-defined]
    if last is None or last.get("source") != source:
        raise ConfigurationError(
            f"cannot continue {output_path}: its last line comes from {None if last is None else last.get('source')}"
            f" but that sentence of the input is {source}; delete it or pass --force")


def _code_chunk(model: HashingModel, reader: DatasetReader, chunk: List[Instance], max_tokens: int,
                cuda_device: int, max_subtokens: Optional[int] = None) -> List[str]:
    lengths = [len(instance["tokens"]) for instance in chunk]  # type: ignore[arg-type]
    codes: List[Optional[List[str]]] = [None] * len(chunk)
    inputs = []
    for instance in chunk:
        reader.apply_token_indexers(instance)
        words_only = Instance({"tokens": instance["tokens"]})  # the words only: gold labels may be unseen
        words_only.index_fields(model.vocab)  # indexed before batching: the sub-token budget reads word pieces
        inputs.append(words_only)
    for group in padded_batches(inputs, max_tokens, max_subtokens):
        batch = Batch([inputs[index] for index in group])
        tensors = nn_util.move_to_device(batch.as_tensor_dict(), cuda_device)
        ints, mask = model.predict_codes(tensors["tokens"])  # (batch, words), (batch, words)
        for row, index in enumerate(group):
            codes[index] = ints_to_hex(ints[row, : lengths[index]].cpu(), model.num_bits)  # type: ignore[arg-type]
    lines = []
    for instance, hex_codes in zip(chunk, codes):
        metadata = instance["metadata"].metadata  # type: ignore[attr-defined]
        record = {"words": metadata["words"], "codes": hex_codes, "num_bits": model.num_bits,
                  **gold_record(instance), "source": metadata.get("source")}
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    return lines


def merge_shards(shard_paths: List[str], output_path: str, force: bool = False) -> Dict[str, int]:
    """
    Merges the shards of a sharded run into `output_path`, in input order (chunk c from shard c % N), after checking
    that they come from one archive, K, input, reader and chunk size, that shards 0..N-1 are each given once and
    complete, and
    that each has the lines its record says; then writes the record (the shards' record as an unsharded run's, plus
    `merged_from`). Any problem raises `ConfigurationError` naming the file; OUTPUT is written to a temporary file
    first, so a failed merge leaves no OUTPUT. Returns `{"sentences", "shards"}`.
    """
    if not shard_paths:
        raise ConfigurationError("no shards to merge")
    inputs = [Input(path, "one of the shards") for path in shard_paths]
    inputs += [Input(meta_path(path), "the record of a shard") for path in shard_paths]
    check_output(output_path, inputs, option="--output", what="the merged file", has_force=True)
    check_output(meta_path(output_path), inputs, option="--output", what="the merged file's record", has_force=True)
    with output_lock(output_path):
        return _merge_shards(shard_paths, output_path, force)


def _merge_shards(shard_paths: List[str], output_path: str, force: bool) -> Dict[str, int]:
    metas = []
    for path in shard_paths:
        path = str(path)
        if path.endswith(META_SUFFIX):
            raise ConfigurationError(f"{path}: is a hash-corpus record; give the codes file beside it "
                                     f"({path[: -len(META_SUFFIX)]})")
        if not os.path.isfile(path):
            raise ConfigurationError(f"{path}: {'is a folder' if os.path.isdir(path) else 'no such file'}; "
                                     "expected a codes file written by hash-corpus --num-shards")
        meta = read_meta(path)
        if meta is None:
            raise ConfigurationError(f"{path}: no record {meta_path(path)} beside it, so it is not hash-corpus output")
        metas.append((path, meta))
    first, reference = metas[0]
    for path, meta in metas[1:]:
        if (meta.get("archive_sha256"), meta.get("num_bits")) != (reference.get("archive_sha256"),
                                                                   reference.get("num_bits")):
            raise ConfigurationError(
                f"{path}: written by {_model_name(meta)}, but {first} by {_model_name(reference)}; every shard must "
                "come from the same archive and K")
        for key, what in (("input", "input path"), ("input_fingerprint", "input content"),
                          ("reader", "reader settings"), ("num_shards", "number of shards"),
                          ("chunk_size", "chunk size")):
            if meta.get(key) != reference.get(key):
                raise ConfigurationError(f"{path}: {what} {meta.get(key)!r}, but {first} has {reference.get(key)!r}; "
                                         "every shard must come from the same command with another --shard-index")
    num_shards, chunk_size = reference.get("num_shards", 1), reference.get("chunk_size", 512)
    by_index: Dict[int, str] = {}
    for path, meta in metas:
        index = meta.get("shard_index", 0)
        if not isinstance(index, int) or not 0 <= index < num_shards:
            raise ConfigurationError(f"{path}: shard index {index!r} is not in 0..{num_shards - 1}")
        if index in by_index:
            raise ConfigurationError(f"{by_index[index]} and {path} are both shard {index} of {num_shards}; "
                                     "give each shard once")
        by_index[index] = path
    missing = [index for index in range(num_shards) if index not in by_index]
    if missing:
        names = ", ".join(map(str, missing[:20])) + (", ..." if len(missing) > 20 else "")
        raise ConfigurationError(f"{first}: {len(missing)} of its {num_shards} shards not given (shard index "
                                 f"{names}); give every shard of the run")
    paths = [by_index[index] for index in range(num_shards)]
    meta_of = dict(metas)
    for index, path in enumerate(paths):
        meta = meta_of[path]
        if meta.get("complete") is not True:
            raise ConfigurationError(f"{path}: shard {index} of {num_shards} is incomplete (its hash-corpus run has "
                                     "not finished); run its command again to finish it")
    total = meta_of[paths[0]].get("input_sentences")
    for index, path in enumerate(paths):
        meta = meta_of[path]
        if meta.get("input_sentences") != total:
            raise ConfigurationError(f"{path}: read {meta.get('input_sentences')} input sentences, but {paths[0]} "
                                     f"read {total}; every shard must read the same input")
        expected = shard_size(total, num_shards, index, chunk_size) if isinstance(total, int) else None
        if meta.get("sentences") != expected:
            raise ConfigurationError(f"{path}: its record says {meta.get('sentences')} sentences, but shard {index} "
                                     f"of {num_shards} (chunks of {chunk_size}) of {total} sentences has {expected}")
    if os.path.exists(output_path) and not force:
        raise ConfigurationError(f"{output_path}: exists; pass --force to replace it")
    files = [open(path, "rb") for path in paths]
    try:
        read = [0] * num_shards
        with atomic_file(output_path, "wb") as out:  # a failed merge leaves no OUTPUT (or the old one)
            for sentence in range(total):
                index = shard_of(sentence, num_shards, chunk_size)
                line = files[index].readline()
                if not line.endswith(b"\n"):
                    raise ConfigurationError(
                        f"{paths[index]}: ends after {read[index]} complete lines, but its record says "
                        f"{meta_of[paths[index]]['sentences']}: the file was changed after its run finished; run its "
                        "command again to finish it")
                out.write(line)
                read[index] += 1
            for index, file in enumerate(files):
                if file.read(1):
                    raise ConfigurationError(
                        f"{paths[index]}: has more lines than the {meta_of[paths[index]]['sentences']} its record says;"
                        " the file was changed after its run finished; run its command with --force")
    finally:
        for file in files:
            file.close()
    merged = {**reference, "num_shards": 1, "shard_index": 0, "complete": True, "sentences": total,
              "input_sentences": total, "merged_from": [os.path.abspath(path) for path in paths]}
    _write_json(meta_path(output_path), merged)
    return {"sentences": total, "shards": num_shards}


def _model_name(meta: Dict[str, Any]) -> str:
    return (f"{meta.get('archive')!r} (sha256 {str(meta.get('archive_sha256'))[:12]}..., "
            f"K = {meta.get('num_bits')})")


@Subcommand.register("hash-corpus")
class HashCorpus(Subcommand):
    """`allennlp hash-corpus ARCHIVE INPUT --output CODES.jsonl`: the re-annotation step of the validation stage."""

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = ("Re-annotate a corpus with a trained hashing model: one JSON line per sentence with its "
                       "words, one hex code per word and the gold annotation (input of the 'binary_codes' reader).")
        subparser = parser.add_parser(self.name, description=description, help="Re-annotate a corpus into codes.")
        subparser.add_argument("archive_file", help="a trained hashing-stage model (model.tar.gz)")
        subparser.add_argument("input_file", help="the corpus, in the format of the archive's dataset reader")
        subparser.add_argument("-o", "--output", required=True, help="the codes corpus to write (JSON lines)")
        subparser.add_argument("--batch-size", type=options.positive_int, default=1024,
                               help="words per batch (padded size; token-budget batches, default 1024)")
        subparser.add_argument("--max-subtokens", type=options.positive_int, default=1536,
                               help="padded sub-tokens per batch (batch size × longest sentence in word pieces: what "
                                    "the PLM's memory follows; default 1536)")
        subparser.add_argument("--cuda-device", type=options.cuda_device, default=-1,
                               help="GPU id, or -1 for CPU (default)")
        subparser.add_argument("--dataset-reader-choice", choices=["train", "validation"], default="validation",
                               help="which of the archive's dataset readers reads INPUT (default validation)")
        subparser.add_argument("--max-instances", type=options.positive_int, default=None,
                               help="stop after this many sentences of INPUT, counted before sharding (the "
                                    "archive's own cap is not applied)")
        subparser.add_argument("--overrides", default="",
                               help="a JSON(NET) structure overriding the archive's config, e.g. another reader")
        subparser.add_argument("--num-shards", type=options.positive_int, default=1,
                               help="split INPUT into this many shards (1: the whole input)")
        subparser.add_argument("--shard-index", type=options.non_negative_int, default=0,
                               help="0-based shard to write: the chunks of INPUT whose 0-based number is "
                                    "shard-index modulo num-shards (merge with allennlp hash-corpus-merge)")
        subparser.add_argument("--chunk-size", type=options.positive_int, default=512,
                               help="sentences read, batched and written at a time, and the unit of sharding "
                                    "(the same for every shard)")
        subparser.add_argument("--force", action="store_true",
                               help="start OUTPUT over instead of continuing it (never when OUTPUT is INPUT)")
        subparser.add_argument("--silent", action="store_true", help="no progress bar")
        subparser.set_defaults(func=hash_corpus_from_args)
        return subparser


def hash_corpus_from_args(args: argparse.Namespace) -> Dict[str, int]:
    # the numbers were checked by argparse (`bitcode_allennlp.host.options`)
    check_shard(args.num_shards, args.shard_index, args.chunk_size)
    if "://" not in str(args.input_file) and not os.path.exists(args.input_file):
        raise DataFormatError(args.input_file, None, "file does not exist")
    check_output_path(args.output, args.input_file, args.archive_file)
    with output_lock(args.output):  # before the model loads: a second run on OUTPUT stops at once
        return _hash_corpus(args)


def _hash_corpus(args: argparse.Namespace) -> Dict[str, int]:
    archive_sha256 = file_sha256(args.archive_file) if os.path.isfile(args.archive_file) else None
    fingerprint = input_fingerprint(args.input_file)
    if not args.force:  # before loading the model
        check_same_model(args.output, archive_sha256, None, args.archive_file, args.num_shards, args.shard_index,
                         fingerprint, args.chunk_size)
    archive = load_archive(args.archive_file, cuda_device=args.cuda_device, overrides=args.overrides)
    model = archive.model
    if not isinstance(model, HashingModel):
        raise ConfigurationError(f"{args.archive_file} holds a {type(model).__name__}, not a bitcode_allennlp model")
    reader = archive.validation_dataset_reader if args.dataset_reader_choice == "validation" else archive.dataset_reader
    reader.max_instances = args.max_instances
    settings = {"dataset_reader_choice": args.dataset_reader_choice, "overrides": args.overrides or ""}
    counts = reannotate(model, reader, args.input_file, args.output, max_tokens=args.batch_size,
                        max_subtokens=args.max_subtokens, cuda_device=args.cuda_device, force=args.force,
                        chunk_size=args.chunk_size, progress=not args.silent, archive_path=args.archive_file,
                        archive_sha256=archive_sha256,
                        num_shards=args.num_shards, shard_index=args.shard_index, fingerprint=fingerprint,
                        reader_settings=settings)
    shard = f" (shard {args.shard_index} of {args.num_shards}: {counts['input_sentences']} input sentences)"
    logger.info("%s: %d sentences%s (%d kept from an earlier run, %d words coded now)", args.output,
                counts["sentences"], shard if args.num_shards > 1 else "", counts["resumed"], counts["words"])
    return counts


@Subcommand.register("hash-corpus-merge")
class HashCorpusMerge(Subcommand):
    """`allennlp hash-corpus-merge SHARD... --output CODES.jsonl`: the shards of `hash-corpus --num-shards` as one
    file, in input order, checked (see `merge_shards`)."""

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = ("Merge the shards written by 'allennlp hash-corpus --num-shards N --shard-index i' into one "
                       "codes corpus in input order (byte for byte what one unsharded run writes), after checking "
                       "that they come from the same archive, K and input and cover every sentence once.")
        subparser = parser.add_parser(self.name, description=description, help="Merge hash-corpus shards.")
        subparser.add_argument("shards", nargs="+", help="the shard files, in any order (each with its .meta.json)")
        subparser.add_argument("-o", "--output", required=True, help="the merged codes corpus to write")
        subparser.add_argument("--force", action="store_true", help="replace OUTPUT if it exists")
        subparser.set_defaults(func=merge_from_args)
        return subparser


def merge_from_args(args: argparse.Namespace) -> Dict[str, int]:
    counts = merge_shards(args.shards, args.output, force=args.force)
    logger.info("%s: %d sentences from %d shards", args.output, counts["sentences"], counts["shards"])
    return counts

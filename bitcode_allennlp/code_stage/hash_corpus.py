"""`allennlp hash-corpus`: re-annotate a corpus into codes with a trained hashing model (Algorithm 1 `reannotate`),
the step between the hashing stage and the validation stage; the record, the sharding and the merge are in `shards`.

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
import json
import logging
import os
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

import torch
from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError
from allennlp.common.tqdm import Tqdm
from allennlp.data import Batch, DatasetReader, Instance, Token
from allennlp.data.tokenizers import PretrainedTransformerTokenizer
from allennlp.models.archival import load_archive
from allennlp.nn import util as nn_util

from bitcode_allennlp.code_stage.shards import (CodesRecord, check_same_model, check_shard, file_sha256,
                                                input_fingerprint, merge_shards, meta_path, shard_of, write_meta)
from bitcode_allennlp.common.code_value import Codes
from bitcode_allennlp.host import options
from bitcode_allennlp.host.errors import DataFormatError
from bitcode_allennlp.model.hashing_model import HashingModel
from bitcode_allennlp.tasks import gold_fields
from bitcode_allennlp.host.outputs import Input, check_output, model_archive, output_lock
from bitcode_allennlp.data.samplers.token_budget import TokenBudgetBatchSampler

logger = logging.getLogger(__name__)


def check_output_path(output_path: str, input_path: Optional[str] = None, archive_path: Optional[str] = None) -> None:
    """Before any work: OUTPUT and its record can be written and are not INPUT or the archive (`check_output`: not
    a folder, its folder created if missing; `--force` does not override this)."""
    inputs = [Input(input_path, "the input corpus"), model_archive(archive_path)]
    check_output(output_path, inputs, option="--output", what="the codes file", has_force=True)
    check_output(meta_path(output_path), inputs, option="--output", what="the codes file's record", has_force=True)


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
    ids, special tokens and offsets; `tests/code_stage/test_hash_corpus_shards.py`), in less time (docs/results.md,
    "Cost of the hashing step").
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
    """The gold annotation of an instance of our readers: `{"tags": [...]}`, `{"tree": "(TOP ...)"}` or `{}`: the
    first of the registered tasks' gold fields that the instance has (`bitcode_allennlp.tasks.Gold`)."""
    for gold in gold_fields():
        value = gold.from_instance(instance)
        if value is not None:
            return {gold.key: value}
    return {}


@dataclass(frozen=True)
class ReannotateOptions:
    """
    How `reannotate` batches, resumes and records a run (the options of `allennlp hash-corpus`).

    # Parameters

    max_tokens : `int`, optional (default = `1024`)
        Padded words per batch (`--batch-size`).
    max_subtokens : `Optional[int]`, optional (default = `1536`)
        Padded sub-tokens per batch (`--max-subtokens`); None: no bound.
    cuda_device : `int`, optional (default = `-1`)
        GPU id, or -1 for CPU.
    force : `bool`, optional (default = `False`)
        Start OUTPUT over instead of continuing it.
    chunk_size : `int`, optional (default = `512`)
        Sentences read, batched and written at a time; the unit of sharding.
    progress : `bool`, optional (default = `True`)
        Show a progress bar.
    archive_path : `Optional[str]`, optional (default = `None`)
        The model archive, recorded.
    archive_sha256 : `Optional[str]`, optional (default = `None`)
        Its SHA-256, recorded (computed from `archive_path` when None).
    num_shards : `int`, optional (default = `1`)
    shard_index : `int`, optional (default = `0`)
        Code only the chunks whose number is `shard_index` modulo `num_shards` (`SHARDING`).
    fingerprint : `Optional[Dict[str, Any]]`, optional (default = `None`)
        The input's content, recorded (computed when None: `input_fingerprint`).
    reader_settings : `Optional[Dict[str, Any]]`, optional (default = `None`)
        How the reader was chosen, recorded (`max_instances` added).
    """

    max_tokens: int = 1024
    max_subtokens: Optional[int] = 1536
    cuda_device: int = -1
    force: bool = False
    chunk_size: int = 512
    progress: bool = True
    archive_path: Optional[str] = None
    archive_sha256: Optional[str] = None
    num_shards: int = 1
    shard_index: int = 0
    fingerprint: Optional[Dict[str, Any]] = None
    reader_settings: Optional[Dict[str, Any]] = None


Resume = Tuple[int, Optional[Dict[str, Any]], int]
"""Where OUTPUT is continued (`completed_lines`): its complete lines, the last one, and the byte offset after it."""


def reannotate(model: HashingModel, reader: DatasetReader, input_path: str, output_path: str,
               options: Optional[ReannotateOptions] = None, **knobs: Any) -> Dict[str, int]:
    """
    Writes the codes corpus of `input_path` to `output_path` (see the module docstring) and returns counts:
    `sentences` (in the output), `resumed` (lines kept from an earlier run), `words` (coded in this run),
    `input_sentences` (sentences of the input, all shards).
    `options` (default `ReannotateOptions()`), with any of its fields given as a keyword (`knobs`, e.g.
    `chunk_size=4`) in its place. `archive_path` and `archive_sha256` (computed from `archive_path` when not given)
    go to the record `output_path + ".meta.json"`; continuing a file written by another archive or K raises
    `ConfigurationError`, as does an `output_path` that is the input or the archive (`check_output_path`, whatever
    `force` says) or that another run is writing (`output_lock`).
    With `num_shards` > 1 only the chunks of `chunk_size` sentences whose number is `shard_index` modulo
    `num_shards` are coded (`SHARDING`; an unsharded run with the same chunk size codes each chunk in the same
    batches). `fingerprint` (of the input, computed when None) and `reader_settings` (recorded; `max_instances`
    added) let the merge check that the shards read the same input the same way.
    """
    options = replace(options or ReannotateOptions(), **knobs)
    if model.num_bits is None:
        raise ConfigurationError("this model has no hash layer: re-annotate with a hashing-stage archive")
    check_shard(options.num_shards, options.shard_index, options.chunk_size)
    check_output_path(output_path, input_path, options.archive_path)
    record = _record(model, reader, input_path, options)
    with output_lock(output_path):  # held until the record says complete: a second run stops at once
        resume: Resume = (0, None, 0) if options.force else _resume_point(output_path, record)
        model.eval()
        counts = _write_codes(model, reader, input_path, output_path, record, options, resume)
        done = resume[0]
        if counts.sentences < done:
            raise ConfigurationError(f"{output_path} has {done} lines but {input_path} has only {counts.sentences} "
                                     f"sentences{' in this shard' if options.num_shards > 1 else ''}: it was made "
                                     "from another corpus; delete it or pass --force")
        write_meta(output_path, record, sentences=counts.sentences, input_sentences=counts.read)
        return {"sentences": counts.sentences, "resumed": done, "words": counts.words, "input_sentences": counts.read}


@dataclass
class _Counts:
    """What a run has read and written so far."""

    sentences: int = 0  # lines of OUTPUT: kept from an earlier run, then coded by this one
    words: int = 0  # coded by this run
    read: int = 0  # sentences of the input read, all shards


def _record(model: HashingModel, reader: DatasetReader, input_path: str, options: ReannotateOptions
            ) -> CodesRecord:
    """The run's record; the archive's SHA-256 and the input's fingerprint computed when `options` has none."""
    archive_path, archive_sha256, fingerprint = options.archive_path, options.archive_sha256, options.fingerprint
    if archive_sha256 is None and archive_path is not None and os.path.isfile(archive_path):
        archive_sha256 = file_sha256(archive_path)
    if fingerprint is None:
        fingerprint = input_fingerprint(input_path)
    settings = {**(options.reader_settings or {}), "max_instances": reader.max_instances}
    return CodesRecord(archive_path, archive_sha256, model.num_bits, input_path, fingerprint, settings,
                       options.num_shards, options.shard_index, options.chunk_size)


def _resume_point(output_path: str, record: CodesRecord) -> Resume:
    """OUTPUT's complete lines, once checked to be this run's, with what follows them cut off."""
    if not os.path.exists(output_path):
        return 0, None, 0
    check_same_model(output_path, record)
    done, last, offset = completed_lines(output_path)
    if last is not None and last.get("num_bits") != record.num_bits:
        raise ConfigurationError(f"cannot continue {output_path}: its codes have {last.get('num_bits')!r} "
                                 f"bits, this model's K is {record.num_bits}; delete it or pass --force")
    os.truncate(output_path, offset)
    if done:
        logger.info("%s has %d complete lines: continuing after them", output_path, done)
    return done, last, offset


def _write_codes(model: HashingModel, reader: DatasetReader, input_path: str, output_path: str,
                 record: CodesRecord, options: ReannotateOptions, resume: Resume) -> _Counts:
    """Codes the shard's chunks after the `resume` point and appends their lines to OUTPUT (the record first)."""
    counts = _Counts()
    offset = resume[2]
    out = None  # opened on the first chunk to write, so a bad input leaves no empty output behind
    num_shards, shard_index = options.num_shards, options.shard_index
    bar = Tqdm.tqdm(desc="hash-corpus" if num_shards == 1 else f"hash-corpus {shard_index}/{num_shards}",
                    unit=" sentences", disable=not options.progress)
    try:
        with torch.no_grad(), cached_word_pieces(reader):
            chunks = _chunks(_shard_instances(reader, input_path, options, counts), options.chunk_size)
            for chunk in _after_resume_point(chunks, resume, output_path, counts):
                lines = _code_chunk(model, reader, chunk, options.max_tokens, options.cuda_device,
                                    options.max_subtokens)
                if out is None:
                    write_meta(output_path, record)  # not complete until the end
                    out = open(output_path, "a" if offset else "w", encoding="utf-8")
                out.write("".join(lines))
                out.flush()
                counts.sentences += len(chunk)
                counts.words += sum(len(instance["tokens"]) for instance in chunk)  # type: ignore[arg-type]
                bar.update(len(chunk))
    finally:
        bar.close()
        if out is not None:
            out.close()
    if out is None and offset == 0:  # (offset 0: nothing to continue, so no count to check first)
        open(output_path, "w", encoding="utf-8").close()  # a shard with no sentences (or --force on a full one)
    return counts


def _shard_instances(reader: DatasetReader, input_path: str, options: ReannotateOptions, counts: _Counts
                     ) -> Iterator[Instance]:
    """The shard's sentences of the input; `counts.read` counts every sentence read, all shards."""
    for index, instance in enumerate(reader.read(input_path)):
        counts.read = index + 1
        if shard_of(index, options.num_shards, options.chunk_size) == options.shard_index:
            yield instance  # whole chunks in input order: `_chunks` gives back exactly those chunks


def _after_resume_point(chunks: Iterable[List[Instance]], resume: Resume, output_path: str, counts: _Counts
                        ) -> Iterator[List[Instance]]:
    """The chunks less the sentences of OUTPUT's complete lines (counted in `counts.sentences`), once the last of
    those is checked to be the sentence of OUTPUT's last line."""
    done, last, _ = resume
    for chunk in chunks:
        if counts.sentences + len(chunk) <= done:
            counts.sentences += len(chunk)
            if counts.sentences == done:
                _check_resume_point(chunk[-1], last, output_path)
            continue
        if counts.sentences < done:  # the chunk straddles the resume point
            _check_resume_point(chunk[done - counts.sentences - 1], last, output_path)
            chunk = chunk[done - counts.sentences :]
            counts.sentences = done
        yield chunk


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
        batch_codes = Codes(ints.cpu(), model.num_bits)  # type: ignore[arg-type]  # (batch, words)
        for row, index in enumerate(group):
            codes[index] = batch_codes[row, : lengths[index]].hex
    lines = []
    for instance, hex_codes in zip(chunk, codes):
        metadata = instance["metadata"].metadata  # type: ignore[attr-defined]
        record = {"words": metadata["words"], "codes": hex_codes, "num_bits": model.num_bits,
                  **gold_record(instance), "source": metadata.get("source")}
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    return lines


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
        check_same_model(args.output, CodesRecord(args.archive_file, archive_sha256, None, args.input_file,
                                                  fingerprint, num_shards=args.num_shards,
                                                  shard_index=args.shard_index, chunk_size=args.chunk_size))
    archive = load_archive(args.archive_file, cuda_device=args.cuda_device, overrides=args.overrides)
    model = archive.model
    if not isinstance(model, HashingModel):
        raise ConfigurationError(f"{args.archive_file} holds a {type(model).__name__}, not a bitcode_allennlp model")
    reader = archive.validation_dataset_reader if args.dataset_reader_choice == "validation" else archive.dataset_reader
    reader.max_instances = args.max_instances
    settings = {"dataset_reader_choice": args.dataset_reader_choice, "overrides": args.overrides or ""}
    run_options = ReannotateOptions(max_tokens=args.batch_size, max_subtokens=args.max_subtokens,
                                    cuda_device=args.cuda_device, force=args.force, chunk_size=args.chunk_size,
                                    progress=not args.silent, archive_path=args.archive_file,
                                    archive_sha256=archive_sha256, num_shards=args.num_shards,
                                    shard_index=args.shard_index, fingerprint=fingerprint, reader_settings=settings)
    counts = reannotate(model, reader, args.input_file, args.output, run_options)
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

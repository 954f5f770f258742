"""`allennlp hash-corpus`: re-annotate a corpus into codes with a trained hashing model (Algorithm 1 `reannotate`).

    allennlp hash-corpus runs/ner/model.tar.gz train.conll --output codes/train.jsonl [--batch-size 1024]

Reads INPUT with the archive's dataset reader (any format our readers read), runs the hash layer only (no task
head) in token-budget batches, and appends one JSON line per sentence (`binary_codes_reader` documents the
format): words, one hex code per word (bit i = sign of head i), the gold tags or tree, and the source line. The
corpus is streamed in chunks, never held in memory; a killed run started again continues after the last
complete line of OUTPUT (`--force` starts over).

Beside OUTPUT, `OUTPUT.meta.json` records which model wrote it: `archive` (absolute path), `archive_sha256`,
`num_bits`, `input`. Continuing OUTPUT with another archive (another SHA-256) or another K is refused, as is an
OUTPUT whose last line has another `num_bits` (files written before the record existed). Before any work the
command checks that INPUT exists and that OUTPUT is not a folder, and creates OUTPUT's folder if needed.
"""
import argparse
import hashlib
import json
import logging
import os
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

import torch
from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError
from allennlp.common.tqdm import Tqdm
from allennlp.data import Batch, DatasetReader, Instance
from allennlp.models.archival import load_archive
from allennlp.nn import util as nn_util

from bitcode_allennlp.codes import ints_to_hex
from bitcode_allennlp.common.errors import DataFormatError
from bitcode_allennlp.common.hashing_model import HashingModel
from bitcode_allennlp.data.samplers.token_budget import TokenBudgetBatchSampler

logger = logging.getLogger(__name__)

META_SUFFIX = ".meta.json"
"""`OUTPUT + META_SUFFIX` records the archive and K that wrote OUTPUT."""


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


def check_output_path(output_path: str) -> None:
    """Before any work: OUTPUT is not a folder, and its folder exists (created if missing) and is writable."""
    if os.path.isdir(output_path):
        raise ConfigurationError(f"{output_path}: is a folder; --output is the codes file to write")
    parent = os.path.dirname(os.path.abspath(output_path))
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as error:
        raise ConfigurationError(f"{output_path}: cannot create its folder {parent} ({error.strerror})") from None
    if not os.access(parent, os.W_OK):
        raise ConfigurationError(f"{output_path}: cannot write into its folder {parent}")


def check_same_model(output_path: str, archive_sha256: Optional[str], num_bits: Optional[int],
                     archive_path: Optional[str] = None) -> None:
    """Refuses to continue OUTPUT if its record names another archive (SHA-256) or another K."""
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


def write_meta(output_path: str, archive_path: Optional[str], archive_sha256: Optional[str], num_bits: int,
               input_path: str) -> None:
    meta = {"written_by": "allennlp hash-corpus", "archive": os.path.abspath(archive_path) if archive_path else None,
            "archive_sha256": archive_sha256, "num_bits": num_bits, "input": input_path}
    with open(meta_path(output_path), "w", encoding="utf-8") as file:
        json.dump(meta, file, indent=1)
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
) -> Dict[str, int]:
    """
    Writes the codes corpus of `input_path` to `output_path` (see the module docstring) and returns counts:
    `sentences` (in the output), `resumed` (lines kept from an earlier run), `words` (coded in this run).
    `archive_path` and `archive_sha256` (computed from `archive_path` when not given) go to the record
    `output_path + ".meta.json"`; continuing a file written by another archive or K raises `ConfigurationError`.
    """
    if model.num_bits is None:
        raise ConfigurationError("this model has no hash layer: re-annotate with a hashing-stage archive")
    if archive_sha256 is None and archive_path is not None and os.path.isfile(archive_path):
        archive_sha256 = file_sha256(archive_path)
    done, last, offset = (0, None, 0)
    if os.path.exists(output_path) and not force:
        check_same_model(output_path, archive_sha256, model.num_bits, archive_path)
        done, last, offset = completed_lines(output_path)
        if last is not None and last.get("num_bits") != model.num_bits:
            raise ConfigurationError(f"cannot continue {output_path}: its codes have {last.get('num_bits')!r} bits, "
                                     f"this model's K is {model.num_bits}; delete it or pass --force")
        os.truncate(output_path, offset)
        if done:
            logger.info("%s has %d complete lines: continuing after them", output_path, done)
    model.eval()
    words = 0
    sentences = 0
    out = None  # opened on the first chunk to write, so a bad input leaves no empty output behind
    bar = Tqdm.tqdm(desc="hash-corpus", unit=" sentences", disable=not progress)
    try:
        with torch.no_grad():
            for chunk in _chunks(reader.read(input_path), chunk_size):
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
                    write_meta(output_path, archive_path, archive_sha256, model.num_bits, input_path)
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
                                 "sentences: it was made from another corpus; delete it or pass --force")
    return {"sentences": sentences, "resumed": done, "words": words}


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
        subparser.add_argument("--batch-size", type=int, default=1024,
                               help="words per batch (padded size; token-budget batches, default 1024)")
        subparser.add_argument("--max-subtokens", type=int, default=1536,
                               help="padded sub-tokens per batch (batch size × longest sentence in word pieces: what "
                                    "the PLM's memory follows; default 1536)")
        subparser.add_argument("--cuda-device", type=int, default=-1, help="GPU id, or -1 for CPU (default)")
        subparser.add_argument("--dataset-reader-choice", choices=["train", "validation"], default="validation",
                               help="which of the archive's dataset readers reads INPUT (default validation)")
        subparser.add_argument("--max-instances", type=int, default=None,
                               help="stop after this many sentences (the archive's own cap is not applied)")
        subparser.add_argument("--overrides", default="",
                               help="a JSON(NET) structure overriding the archive's config, e.g. another reader")
        subparser.add_argument("--force", action="store_true", help="start OUTPUT over instead of continuing it")
        subparser.add_argument("--silent", action="store_true", help="no progress bar")
        subparser.set_defaults(func=hash_corpus_from_args)
        return subparser


def hash_corpus_from_args(args: argparse.Namespace) -> Dict[str, int]:
    if args.batch_size < 1:
        raise ConfigurationError(f"--batch-size must be positive, got {args.batch_size}")
    if args.max_subtokens < 1:
        raise ConfigurationError(f"--max-subtokens must be positive, got {args.max_subtokens}")
    if "://" not in str(args.input_file) and not os.path.exists(args.input_file):
        raise DataFormatError(args.input_file, None, "file does not exist")
    check_output_path(args.output)
    archive_sha256 = file_sha256(args.archive_file) if os.path.isfile(args.archive_file) else None
    if not args.force:
        check_same_model(args.output, archive_sha256, None, args.archive_file)  # before loading the model
    archive = load_archive(args.archive_file, cuda_device=args.cuda_device, overrides=args.overrides)
    model = archive.model
    if not isinstance(model, HashingModel):
        raise ConfigurationError(f"{args.archive_file} holds a {type(model).__name__}, not a bitcode_allennlp model")
    reader = archive.validation_dataset_reader if args.dataset_reader_choice == "validation" else archive.dataset_reader
    reader.max_instances = args.max_instances
    counts = reannotate(model, reader, args.input_file, args.output, max_tokens=args.batch_size,
                        max_subtokens=args.max_subtokens, cuda_device=args.cuda_device, force=args.force, progress=not args.silent,
                        archive_path=args.archive_file, archive_sha256=archive_sha256)
    logger.info("%s: %d sentences (%d kept from an earlier run, %d words coded now)", args.output,
                counts["sentences"], counts["resumed"], counts["words"])
    return counts

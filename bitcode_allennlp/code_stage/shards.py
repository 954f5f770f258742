"""The record beside a codes file, the sharding of the input, and the merge of shards: the bookkeeping of the
re-annotation step (Algorithm 1, `hash_corpus.reannotate`) between the hashing stage and the validation stage.

`OUTPUT.meta.json` (`CodesRecord`, `write_meta`, `read_meta`) says which archive, K, input and shard wrote OUTPUT;
`check_same_model` refuses to continue OUTPUT as another run; `shard_of` and `shard_size` deal chunks of sentences
out to shards (`SHARDING`); `merge_shards` (`allennlp hash-corpus-merge`) checks the shards and writes them as one
file in input order. The commands and the formats are described in `hash_corpus`.
"""
import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from allennlp.common.checks import ConfigurationError

from bitcode_allennlp.host.outputs import Input, atomic_file, check_output, output_lock

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


@dataclass(frozen=True)
class CodesRecord:
    """
    Which model wrote a codes file, from which input, as which shard: what `OUTPUT.meta.json` records
    (`write_meta`), and what a run that continues OUTPUT must match (`check_same_model`).

    # Parameters

    archive_path : `Optional[str]`
        The model archive (recorded as an absolute path).
    archive_sha256 : `Optional[str]`
        Its SHA-256 (`file_sha256`); None: not checked.
    num_bits : `Optional[int]`
        K, the bits of a code; None: not checked (before the model loads).
    input_path : `str`
        The input corpus.
    fingerprint : `Optional[Dict[str, Any]]`, optional (default = `None`)
        The input's content (`input_fingerprint`).
    reader_settings : `Optional[Dict[str, Any]]`, optional (default = `None`)
        How the input was read (reader choice, overrides, `max_instances`).
    num_shards : `int`, optional (default = `1`)
    shard_index : `int`, optional (default = `0`)
    chunk_size : `int`, optional (default = `512`)
        Sentences per chunk, the unit of sharding (`SHARDING`).
    """

    archive_path: Optional[str]
    archive_sha256: Optional[str]
    num_bits: Optional[int]
    input_path: str
    fingerprint: Optional[Dict[str, Any]] = None
    reader_settings: Optional[Dict[str, Any]] = None
    num_shards: int = 1
    shard_index: int = 0
    chunk_size: int = 512


def write_meta(output_path: str, record: CodesRecord, sentences: Optional[int] = None,
               input_sentences: Optional[int] = None) -> None:
    """The record beside OUTPUT; `complete` (and the counts) once `sentences` and `input_sentences` are given."""
    complete = sentences is not None and input_sentences is not None
    archive_path = record.archive_path
    meta = {"written_by": "allennlp hash-corpus", "archive": os.path.abspath(archive_path) if archive_path else None,
            "archive_sha256": record.archive_sha256, "num_bits": record.num_bits, "input": record.input_path,
            "input_fingerprint": record.fingerprint, "reader": record.reader_settings,
            "num_shards": record.num_shards, "shard_index": record.shard_index, "chunk_size": record.chunk_size,
            "sharding": SHARDING, "complete": complete, "sentences": sentences, "input_sentences": input_sentences}
    _write_json(meta_path(output_path), meta)


def _write_json(path: str, value: Dict[str, Any]) -> None:
    with atomic_file(path) as file:  # a kill never leaves half a record
        json.dump(value, file, indent=1)
        file.write("\n")


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


def check_same_model(output_path: str, record: CodesRecord) -> None:
    """Refuses to continue OUTPUT if its record names another archive (SHA-256), another K, another shard or chunk
    size (a record without shard numbers is shard 0 of 1), or an input with another fingerprint (`record`'s None
    SHA-256, K or fingerprint: not checked)."""
    if not os.path.exists(output_path) or os.path.getsize(output_path) == 0:
        return
    meta = read_meta(output_path)
    if meta is None:
        return
    archive_sha256, num_bits, fingerprint = record.archive_sha256, record.num_bits, record.fingerprint
    num_shards, shard_index, chunk_size = record.num_shards, record.shard_index, record.chunk_size
    other_archive = archive_sha256 is not None and meta.get("archive_sha256") not in (None, archive_sha256)
    other_bits = num_bits is not None and meta.get("num_bits") not in (None, num_bits)
    if other_archive or other_bits:
        same_path = record.archive_path is not None and meta.get("archive") == os.path.abspath(record.archive_path)
        now = "the archive now at that path" if same_path else f"{record.archive_path or 'this archive'}"
        now += f" ({model_summary(num_bits, archive_sha256)})" if (num_bits, archive_sha256) != (None, None) else ""
        raise ConfigurationError(
            f"cannot continue {output_path}: it was written by {meta.get('archive')!r} "
            f"({model_summary(meta.get('num_bits'), meta.get('archive_sha256'))}), not by {now}; delete it or pass "
            "--force")
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


def model_summary(num_bits: Optional[int], archive_sha256: Optional[str]) -> str:
    """`K = 24, sha256 45c54ebb59b5...`: what tells two archives apart in a refusal."""
    return f"K = {num_bits}" + (f", sha256 {archive_sha256[:12]}..." if archive_sha256 else "")


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
    metas = [(str(path), _shard_meta(str(path))) for path in shard_paths]
    reference = _same_run(metas)
    num_shards, chunk_size = reference.get("num_shards", 1), reference.get("chunk_size", 512)
    paths = _in_shard_order(metas, num_shards)
    meta_of = dict(metas)
    total = _input_sentences(paths, meta_of, chunk_size)
    if os.path.exists(output_path) and not force:
        raise ConfigurationError(f"{output_path}: exists; pass --force to replace it")
    _concatenate(paths, meta_of, output_path, total, chunk_size)
    merged = {**reference, "num_shards": 1, "shard_index": 0, "complete": True, "sentences": total,
              "input_sentences": total, "merged_from": [os.path.abspath(path) for path in paths]}
    _write_json(meta_path(output_path), merged)
    return {"sentences": total, "shards": num_shards}


def _shard_meta(path: str) -> Dict[str, Any]:
    """The record of shard `path`, which must be a codes file with its record."""
    if path.endswith(META_SUFFIX):
        raise ConfigurationError(f"{path}: is a hash-corpus record; give the codes file beside it "
                                 f"({path[: -len(META_SUFFIX)]})")
    if not os.path.isfile(path):
        raise ConfigurationError(f"{path}: {'is a folder' if os.path.isdir(path) else 'no such file'}; "
                                 "expected a codes file written by hash-corpus --num-shards")
    meta = read_meta(path)
    if meta is None:
        raise ConfigurationError(f"{path}: no record {meta_path(path)} beside it, so it is not hash-corpus output")
    return meta


def _same_run(metas: List[Tuple[str, Dict[str, Any]]]) -> Dict[str, Any]:
    """The first shard's record, once every shard is from the same archive, K, input, reader and sharding."""
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
    return reference


def _in_shard_order(metas: List[Tuple[str, Dict[str, Any]]], num_shards: int) -> List[str]:
    """The shards' paths by shard index, once each of 0..N-1 is given once."""
    first = metas[0][0]
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
    return [by_index[index] for index in range(num_shards)]


def _input_sentences(paths: List[str], meta_of: Dict[str, Dict[str, Any]], chunk_size: int) -> int:
    """The input's sentences, once every shard (`paths` in shard order) is complete with the lines it must hold."""
    num_shards = len(paths)
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
    return total


def _concatenate(paths: List[str], meta_of: Dict[str, Dict[str, Any]], output_path: str, total: int,
                 chunk_size: int) -> None:
    """Writes the lines of the shards (`paths` in shard order) to `output_path` in input order."""
    num_shards = len(paths)
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


def _model_name(meta: Dict[str, Any]) -> str:
    return (f"{meta.get('archive')!r} (sha256 {str(meta.get('archive_sha256'))[:12]}..., "
            f"K = {meta.get('num_bits')})")


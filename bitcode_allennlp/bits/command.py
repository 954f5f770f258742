"""`allennlp bits ...`: read the codes of a codes corpus (`allennlp hash-corpus` output).

    allennlp bits stats CODES.jsonl [--json OUT] [--bits 3 7]        bit balance, entropy, correlation, MI, agreement,
                                                                      what each bit means (labels it is 1 / 0 on)
    allennlp bits heatmap CODES.jsonl --out fig.png [--by prefix,type] P(bit i = 1 | label), paper Figure 4
    allennlp bits diff ARCHIVE "sentence A" "sentence B" [--html OUT]  differing bits, paper Figure 3
    allennlp bits diff --codes CODES.jsonl --lines 3 17 [--words 0 2]
    allennlp bits index CODES.jsonl --out DIR [--index-type flat]     Hamming index on disk (FAISS binary index)
    allennlp bits search DIR --code a3f00c [--k 10 | --radius 2]       nearest words (or --word W)
    allennlp bits precision --database train.jsonl --queries dev.jsonl [--k 100]   DHIM precision@k by label
    allennlp bits probe --train train.jsonl --dev dev.jsonl [--json OUT]  do the codes carry the task? (dev accuracy)
    allennlp bits explore CODES.jsonl --out DIR [--archive A --serve]   the code explorer in the browser
    allennlp bits table PREDICTIONS.jsonl                            `allennlp predict` output: words, tags, codes
    allennlp bits package model.tar.gz --name NAME --version V --data-licence L -o dist/   a pip-installable model

Numbers are checked by argparse (`bitcode_allennlp.host.options`); every output (`--json`, `--out`, `--html`, the
index folder) is checked, locked and written atomically (`bitcode_allennlp.host.outputs`) before the corpus is read.
"""
import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any, Dict

from bitcode_allennlp.bits.corpus import read_codes_corpus
from bitcode_allennlp.bits.diff import codes_from_archive, codes_from_corpus, diff_codes, render_html, render_text
from bitcode_allennlp.bits.explain import check_request
from bitcode_allennlp.bits.faiss_index import FAISS_CLASSES, PARAMETERS
from bitcode_allennlp.bits.heatmap import write_heatmap
from bitcode_allennlp.bits.index import HammingIndex, format_hits, index_corpus, index_size_bytes, precision_at_k
from bitcode_allennlp.bits.index_files import INDEX_FILES, INDEX_TYPES
from bitcode_allennlp.bits.package import PackageSpec, build_wheel
from bitcode_allennlp.bits.precision import format_precision
from bitcode_allennlp.bits.probe import format_probe, probe_codes
from bitcode_allennlp.bits.stats import code_statistics, format_statistics
from bitcode_allennlp.bits.table import prediction_tables
from bitcode_allennlp.common.counts import counted
from bitcode_allennlp.common.code_value import Codes
from bitcode_allennlp.host import options
from bitcode_allennlp.host.outputs import Input, atomic_file, guarded_outputs, model_archive, write_text
# AllenNLP's classes, or stand-ins in the light `allennlp bits` process that runs without AllenNLP (see host/names.py)
from bitcode_allennlp.host.names import ConfigurationError, Subcommand

logger = logging.getLogger(__name__)
THREADS_HELP = ("FAISS threads (default 1, as the numpy scan; 0: every core). On a machine whose cores are busy, "
                "FAISS's waiting threads can make many small searches far slower than one thread")


def _write_json(path: str, value: Any) -> None:
    with atomic_file(path) as file:
        file.write(json.dumps(value, indent=1, ensure_ascii=False))


def _json_output(args: argparse.Namespace, *inputs: Input):
    """`--json` checked against the inputs and locked for the command (`guarded_outputs`)."""
    return guarded_outputs([(args.json, "--json", "the JSON file")], inputs)


def stats_from_args(args: argparse.Namespace) -> Dict[str, Any]:
    with _json_output(args, Input(args.codes_file, "the codes corpus")):
        stats = code_statistics(read_codes_corpus(args.codes_file, max_sentences=args.max_sentences))
        try:
            check_request(stats, args.label_view, args.bits)
        except ValueError as error:
            raise ConfigurationError(str(error)) from None
        print(format_statistics(stats, args.label_view, args.bits))
        if args.json:
            _write_json(args.json, stats)
    return stats


def heatmap_from_args(args: argparse.Namespace) -> Dict[str, Any]:
    numbers = Path(args.out).with_suffix(".json")
    if numbers == Path(args.out):
        raise ConfigurationError(f"{args.out}: --out is the PNG to write (its numbers go to OUT with the suffix "
                                 ".json); give a name that does not end in .json")
    with guarded_outputs([(args.out, "--out", "the PNG"), (numbers, "--out", "the heatmap's numbers")],
                         [Input(args.codes_file, "the codes corpus")]):
        stats = code_statistics(read_codes_corpus(args.codes_file, max_sentences=args.max_sentences))
        views = [view.strip() for view in args.by.split(",") if view.strip()] if args.by else None
        try:
            data = write_heatmap(stats, args.out, views=views, max_labels=args.max_labels, cell=args.cell,
                                 dpi=args.dpi)
        except ValueError as error:
            raise ConfigurationError(str(error)) from None
    print(f"{args.out} ({data['size'][0]} x {data['size'][1]} pixels; panels: "
          f"{', '.join(panel['view'] for panel in data['panels'])}), numbers in {Path(args.out).with_suffix('.json')}")
    return data


def diff_from_args(args: argparse.Namespace) -> str:
    if args.codes:
        if args.inputs or not args.lines:
            raise ConfigurationError("with --codes give --lines A B (1-based line numbers), and no archive")
    elif len(args.inputs) != 3:
        raise ConfigurationError('give ARCHIVE "sentence A" "sentence B", or --codes CODES.jsonl --lines A B')
    source = Input(args.codes, "the codes corpus") if args.codes else model_archive(args.inputs[0])
    with guarded_outputs([(args.html, "--html", "the HTML page")], [source]):
        return _diff(args)


def _diff(args: argparse.Namespace) -> str:
    if args.codes:
        try:
            num_bits, sentences = codes_from_corpus(args.codes, args.lines)
        except ValueError as error:
            raise ConfigurationError(str(error)) from None
    else:
        num_bits, sentences = codes_from_archive(args.inputs[0], args.inputs[1:], cuda_device=args.cuda_device,
                                                 whitespace=args.whitespace)
    a, b = sentences
    try:
        diff = diff_codes(a["words"], a["codes"], b["words"], b["codes"], num_bits, labels=(a["tags"], b["tags"]),
                          pair=tuple(args.words) if args.words else None, names=(a["name"], b["name"]))
    except ValueError as error:
        raise ConfigurationError(str(error)) from None
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    text = render_text(diff, color=color)
    print(text)
    if args.html:
        write_text(args.html, render_html(diff))
    return text


def _index_params(args: argparse.Namespace) -> Dict[str, Any]:
    """The FAISS build parameters given on the command line (`PARAMETERS`), `None` for those not given."""
    return {name: getattr(args, name) for names in PARAMETERS.values() for name in names}


def _describe(index: HammingIndex) -> str:
    if index.search_index is None:
        return "index type numpy (numpy scan of the packed codes, exact)"
    params = ", ".join(f"{name} {value}" for name, value in index.search_index.params.items())
    return (f"index type {index.index_type} (FAISS {FAISS_CLASSES[index.index_type]}"
            + (f", {params}" if params else "") + (", exact)" if index.exact else ", APPROXIMATE)"))


def _load(directory: str, numpy_scan: bool, threads: int) -> HammingIndex:
    try:
        index = HammingIndex.load(directory, numpy_scan=numpy_scan, threads=threads)
    except (FileNotFoundError, ValueError, ImportError) as error:
        raise ConfigurationError(str(error)) from None
    if index.version == 1 and not numpy_scan:
        print(f"note: {directory} was written before FAISS indexes (index format version 1): searched with the "
              f"numpy scan; 'allennlp bits index CODES.jsonl --out {directory}' rebuilds it", file=sys.stderr)
    return index


def index_from_args(args: argparse.Namespace) -> HammingIndex:
    with guarded_outputs([(args.out, "--out", "the index folder")], [Input(args.codes_file, "the codes corpus")],
                         folder=True, members=INDEX_FILES):
        try:
            index = index_corpus(args.codes_file, args.out, args.index_type, threads=args.threads,
                                 **_index_params(args))
        except (ValueError, ImportError) as error:
            raise ConfigurationError(str(error)) from None
    print(f"{args.out}: {counted(len(index), 'word')} of {counted(len(index.sentences), 'sentence')}, "
          f"K = {index.num_bits}, "
          f"label views: {', '.join(index.labels) or 'none'}; {_describe(index)}; "
          f"{index_size_bytes(args.out):,} bytes on disk")
    return index


def search_from_args(args: argparse.Namespace) -> Dict[str, Any]:
    with _json_output(args, Input(args.index_dir, "the index", INDEX_FILES)):
        return _search(args)


def _search(args: argparse.Namespace) -> Dict[str, Any]:
    index = _load(args.index_dir, args.numpy_scan, args.threads)
    if (args.code is None) == (args.word is None):
        raise ConfigurationError("give exactly one of --code HEX and --word WORD")
    if args.code is not None:
        try:
            code = index.parse_code(args.code)
        except ValueError as error:
            raise ConfigurationError(f"--code: {error}") from None
        query = f"code {args.code}"
    else:
        try:
            code, occurrences, distinct, count = index.word_code(args.word)
        except KeyError as error:
            raise ConfigurationError(str(error.args[0])) from None
        query = (f"word {args.word!r}: {occurrences} occurrences with {distinct} distinct codes; querying its most "
                 f"frequent code {Codes(code, index.num_bits).hex[0]} ({count} of the {occurrences})")
    try:
        if args.radius is not None:
            indices, distances = index.radius(code, args.radius)
            found = len(indices)
            indices, distances = indices[: args.limit], distances[: args.limit]
            header = (f"{query}; {found:,} entries within radius {args.radius}"
                      + (f", the first {args.limit} shown" if found > args.limit else ""))
        else:
            top, dist = index.search(code, args.k)
            indices, distances = top[0], dist[0]
            header = f"{query}; top {len(indices)} of {len(index):,} entries by (distance, corpus order)"
    except ValueError as error:
        raise ConfigurationError(str(error)) from None
    hits = index.hits(indices, distances)
    print(f"{header}; {_describe(index)}\n\n" + format_hits(hits))
    result = {"query": query, "code": code, "index_type": index.index_type, "hits": hits}
    if args.json:
        _write_json(args.json, result)
    return result


def precision_from_args(args: argparse.Namespace) -> Dict[str, Any]:
    with _json_output(args, Input(args.database, "the database", INDEX_FILES), Input(args.queries, "the queries")):
        return _precision(args)


def _precision(args: argparse.Namespace) -> Dict[str, Any]:
    database = Path(args.database)
    if database.is_dir():
        if args.index_type is not None:
            raise ConfigurationError(f"--index-type applies to a codes corpus; {database} is an index directory "
                                     "with its own index type (--numpy-scan scans it with numpy instead)")
        index = _load(str(database), args.numpy_scan, args.threads)
    else:
        if args.numpy_scan and args.index_type not in (None, "numpy"):
            raise ConfigurationError(f"give --index-type {args.index_type} or --numpy-scan, not both")
        try:
            index = HammingIndex.from_file(str(database), "numpy" if args.numpy_scan else args.index_type or "flat",
                                           threads=args.threads)
        except (ValueError, ImportError) as error:
            raise ConfigurationError(str(error)) from None
    queries = read_codes_corpus(args.queries)
    try:
        result = precision_at_k(index, queries, k=args.k, views=args.label or None, ties=args.ties)
    except ValueError as error:
        raise ConfigurationError(str(error)) from None
    print(format_precision(result, per_label=args.per_label))
    if args.json:
        _write_json(args.json, result)
    return result


def probe_from_args(args: argparse.Namespace) -> Dict[str, Any]:
    with _json_output(args, Input(args.train, "the train corpus"), Input(args.dev, "the dev corpus")):
        return _probe(args)


def _probe(args: argparse.Namespace) -> Dict[str, Any]:
    train = read_codes_corpus(args.train, max_sentences=args.max_sentences)
    dev = read_codes_corpus(args.dev, max_sentences=args.max_sentences)
    try:
        result = probe_codes(train, dev, view=args.label_view, seed=args.seed, epochs=args.epochs)
    except ValueError as error:
        raise ConfigurationError(str(error)) from None
    print(format_probe(result))
    if args.json:
        _write_json(args.json, result)
    return result


def _scan_options(parser: argparse.ArgumentParser, scanned: str) -> None:
    """`--numpy-scan` and `--threads`, the options of the commands that search an index (`search`, `precision`)."""
    parser.add_argument("--numpy-scan", action="store_true",
                        help=f"scan {scanned} with numpy instead of a FAISS index (the reference)")
    parser.add_argument("--threads", type=options.non_negative_int, default=1, help=THREADS_HELP)


def _include_package(parser: argparse.ArgumentParser) -> None:
    # AllenNLP adds --include-package to `bits` itself; accept it after the sub-command too. Its help is set after
    # add_argument: AllenNLP's parser appends "(default = ==SUPPRESS==)" to a help given there.
    parser.add_argument("--include-package", type=str, action="append", default=argparse.SUPPRESS)
    parser._option_string_actions["--include-package"].help = "additional packages to include"


def _stats_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """`allennlp bits stats`: bit and label statistics of a codes corpus."""
    stats = commands.add_parser("stats", help="bit balance, entropy, correlation, MI with labels, agreement, "
                                "what each bit means", description="Per-bit balance and entropy, bit correlation, "
                                "distinct codes, I(code; label), I(bit; label), pair agreement, ceil(log2 L), each "
                                "table with what it means and a takeaway; then the bits ranked by I(bit; label) "
                                "with the labels each bit is 1 on and 0 on (definitions in "
                                "bitcode_allennlp/bits/stats.py and explain.py).")
    stats.add_argument("codes_file", help="a codes corpus (allennlp hash-corpus output)")
    stats.add_argument("--label-view", default=None, choices=["tag", "type", "prefix"],
                       help="the labels the last table explains the bits by (default: type for BIO-style NER tags, "
                       "else tag; for trees the POS tags)")
    stats.add_argument("--bits", type=options.non_negative_int, nargs="+", default=None, metavar="BIT",
                       help="explain only these bits (0-based; default: all, ranked)")
    stats.add_argument("--json", help="also write the statistics as JSON here")
    stats.add_argument("--max-sentences", type=options.positive_int, default=None,
                       help="read at most this many sentences")
    stats.set_defaults(func=stats_from_args)
    return stats


def _heatmap_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """`allennlp bits heatmap`: P(bit i = 1 | label) as a PNG."""
    heatmap = commands.add_parser("heatmap", help="P(bit i = 1 | label) as a PNG (paper Figure 4)",
                                  description="One panel per label view, one row per label, one column per "
                                  "bit; the numbers also go to OUT with the suffix .json.")
    heatmap.add_argument("codes_file", help="a codes corpus with gold tags or trees")
    heatmap.add_argument("--out", required=True, help="the PNG to write")
    heatmap.add_argument("--by", default=None, help="label views, comma-separated, one panel each: tag, prefix, "
                         "type (default: prefix,type for BIO-style NER tags, else tag)")
    heatmap.add_argument("--max-labels", type=options.positive_int, default=None,
                         help="show only the most frequent labels")
    heatmap.add_argument("--cell", type=options.positive_float, default=0.36, help="cell side in inches")
    heatmap.add_argument("--dpi", type=options.positive_int, default=100, help="pixels per inch")
    heatmap.add_argument("--max-sentences", type=options.positive_int, default=None,
                         help="read at most this many sentences")
    heatmap.set_defaults(func=heatmap_from_args)
    return heatmap


def _diff_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """`allennlp bits diff`: two sentences' codes with the differing bits marked."""
    diff = commands.add_parser("diff", help="two sentences' codes with the differing bits marked (Figure 3)",
                               description='Either ARCHIVE "sentence A" "sentence B" (codes from a hashing-stage '
                               "model) or --codes CODES.jsonl --lines A B (two lines of a codes corpus).")
    diff.add_argument("inputs", nargs="*", metavar="ARCHIVE SENTENCE_A SENTENCE_B",
                      help="a hashing-stage model.tar.gz and two sentences")
    diff.add_argument("--codes", help="a codes corpus to take both sentences from")
    diff.add_argument("--lines", type=options.positive_int, nargs=2, metavar=("A", "B"),
                      help="1-based line numbers in --codes")
    diff.add_argument("--words", type=options.non_negative_int, nargs=2, metavar=("I", "J"),
                      help="compare only word I of A with word J of B (0-based), the sentences as context")
    diff.add_argument("--html", help="also write the diff as an HTML page here")
    diff.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                      help="ANSI colours (auto: when stdout is a terminal)")
    diff.add_argument("--whitespace", action="store_true",
                      help="split the sentences at whitespace instead of with the predictor's spaCy tokenizer")
    diff.add_argument("--cuda-device", type=options.cuda_device, default=-1, help="GPU id, or -1 for CPU")
    diff.set_defaults(func=diff_from_args)
    return diff


def _index_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """`allennlp bits index`: a Hamming index of a codes corpus on disk, with the FAISS build parameters."""
    index = commands.add_parser("index", help="build a Hamming index of a codes corpus on disk",
                                description="Packs every word's code into a uint64 and saves .npy arrays "
                                "(memory-mapped when searched) with the words and labels beside them, and a "
                                "FAISS binary index of the codes (faiss.index; codes padded with zero bits to "
                                "32 or 64 bits, which leaves Hamming distances unchanged).")
    index.add_argument("codes_file", help="a codes corpus")
    index.add_argument("--out", required=True, help="the index directory to write")
    index.add_argument("--index-type", choices=INDEX_TYPES, default="flat",
                       help="flat: IndexBinaryFlat, exhaustive and exact (default); multihash: "
                       "IndexBinaryMultiHash, exact, fast radius search; hnsw, ivf: IndexBinaryHNSW, "
                       "IndexBinaryIVF, APPROXIMATE (may miss neighbours), for corpora too large to scan; "
                       "numpy: no FAISS index, the numpy scan")
    index.add_argument("--hash-tables", type=options.positive_int, default=None,
                       help="multihash: hash tables H (default floor(K / B))")
    index.add_argument("--hash-bits", type=options.positive_int, default=None,
                       help="multihash: bits B per key (default min(K, 24))")
    index.add_argument("--hnsw-m", type=options.positive_int, default=None,
                       help="hnsw: neighbours per node (default 32)")
    index.add_argument("--ef-search", type=options.positive_int, default=None,
                       help="hnsw: candidate list size of a query (default 64; at least k)")
    index.add_argument("--nlist", type=options.positive_int, default=None,
                       help="ivf: cells (default min(4 sqrt(n), n / 39, 65536))")
    index.add_argument("--nprobe", type=options.positive_int, default=None,
                       help="ivf: cells searched per query (default 16)")
    index.add_argument("--threads", type=options.non_negative_int, default=1, help=THREADS_HELP)
    index.set_defaults(func=index_from_args)
    return index


def _search_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """`allennlp bits search`: the nearest words of a code or a word."""
    search = commands.add_parser("search", help="nearest words of a code or a word in Hamming space",
                                 description="Top-k (ties: corpus order) or every entry within a radius, from "
                                 "the index's FAISS index (exact for flat and multihash, equal to the numpy "
                                 "scan; approximate for hnsw and ivf).")
    search.add_argument("index_dir", help="a directory written by 'allennlp bits index'")
    search.add_argument("--code", help="the query code in hex")
    search.add_argument("--word", help="query with the most frequent code of this word in the index")
    search.add_argument("--k", type=options.positive_int, default=10, help="neighbours to return")
    search.add_argument("--radius", type=options.non_negative_int, default=None,
                        help="return every entry within this distance (instead of the top --k)")
    search.add_argument("--limit", type=options.positive_int, default=100,
                        help="show at most this many entries of --radius")
    _scan_options(search, "the packed codes")
    search.add_argument("--json", help="also write the hits as JSON here")
    search.set_defaults(func=search_from_args)
    return search


def _precision_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """`allennlp bits precision`: precision@k of query words against a database by label."""
    precision = commands.add_parser("precision", help="precision@k of query words against a database by label",
                                    description="DHIM's retrieval precision adapted to words: the share of each "
                                    "query word's k nearest database words with its label, averaged.")
    precision.add_argument("--database", required=True, help="train codes corpus, or an index directory")
    precision.add_argument("--queries", required=True, help="dev codes corpus")
    precision.add_argument("--k", type=options.positive_int, default=100, help="neighbours per query")
    precision.add_argument("--label", action="append", default=None,
                           help="label view (tag, prefix, type); repeat for several (default: all shared)")
    precision.add_argument("--ties", choices=["index", "average"], default="index",
                           help="at the k-th distance take entries in corpus order, or average over ties")
    precision.add_argument("--index-type", choices=INDEX_TYPES, default=None,
                           help="index type built for a codes-corpus --database (default flat; see "
                           "'allennlp bits index')")
    _scan_options(precision, "the database codes")
    precision.add_argument("--per-label", action="store_true", help="also print each query label's precision")
    precision.add_argument("--json", help="also write the result as JSON here")
    precision.set_defaults(func=precision_from_args)
    return precision


def _probe_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """`allennlp bits probe`: probes of the train codes scored on dev."""
    probe = commands.add_parser("probe", help="do the codes carry the task? probes of the train codes on dev",
                                description="Dev accuracy of predictors that read only the codes (exact-code "
                                "majority, Hamming k-NN votes, linear and MLP probes on the bits of the word "
                                "and of 3 words) beside the word-majority baseline; same-word vs random-pair "
                                "Hamming distance, eta^2 of each bit by the label, counts (definitions in "
                                "bitcode_allennlp/bits/probe.py).")
    probe.add_argument("--train", required=True, help="train codes corpus (the probes' training data)")
    probe.add_argument("--dev", required=True, help="dev codes corpus (scored)")
    probe.add_argument("--label-view", default="tag", choices=["tag", "type", "prefix"],
                       help="labels: tags (for trees the POS tags), or for BIO-style NER tags the entity type "
                       "or the prefix")
    probe.add_argument("--seed", type=options.seed, default=0, help="the probes' torch seed")
    probe.add_argument("--epochs", type=options.positive_int, default=8,
                       help="passes over the train words per probe")
    probe.add_argument("--max-sentences", type=options.positive_int, default=None,
                       help="read at most this many sentences of each corpus")
    probe.add_argument("--json", help="also write the result as JSON here")
    probe.set_defaults(func=probe_from_args)
    return probe


def explore_from_args(args: argparse.Namespace) -> Dict[str, Any]:
    from bitcode_allennlp.bits.explore import EXPLORER_FILES, build_explorer

    if args.serve and not args.archive:
        raise ConfigurationError("--serve needs --archive: the model that encodes what is typed into the page")
    inputs = [Input(args.codes_file, "the codes corpus"), Input(args.index, "the index", INDEX_FILES),
              model_archive(args.archive)]
    with guarded_outputs([(args.out, "--out", "the explorer's folder")], inputs, folder=True, members=EXPLORER_FILES):
        meta = build_explorer(args.codes_file, args.out, archive=args.archive, max_sentences=args.max_sentences,
                              index_dir=args.index)
    page = Path(args.out) / "index.html"
    print(f"the explorer of {args.codes_file} ({counted(meta['sentences'], 'sentence')}, "
          f"{counted(meta['words'], 'word')}, K = {meta['num_bits']}): {args.out}/; open {page} in a browser" +
          ("" if args.serve else ", or add --archive model.tar.gz --serve to type sentences into it"))
    if args.serve:
        import errno

        from bitcode_allennlp.bits.explore_server import serve

        try:
            serve(args.out, args.archive, args.port, args.threads)
        except OSError as error:  # binding 127.0.0.1:PORT (it comes before the archive loads)
            if error.errno == errno.EADDRINUSE:
                raise ConfigurationError(f"--port {args.port}: already in use; choose another port or --port 0 for "
                                         "any free one") from None
            if error.errno == errno.EACCES:
                raise ConfigurationError(f"--port {args.port}: not allowed to listen there ({error.strerror}); "
                                         "choose a port above 1023 or --port 0 for any free one") from None
            raise
    return meta


def _explore_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """`allennlp bits explore`: the code explorer for the browser."""
    explore = commands.add_parser("explore", help="a code explorer in the browser (corpus, word, bit, code, diff, "
                                  "tree views)", description="Writes a self-contained explorer of a codes corpus "
                                  "(HTML, JS and data shards; opens from file://, no network); --serve also serves "
                                  "it on localhost with the archive behind it, so typed sentences get their codes.")
    explore.add_argument("codes_file", help="a codes corpus (allennlp hash-corpus output)")
    explore.add_argument("--out", required=True, help="the explorer's folder: a new or empty one, or an explorer "
                         "written before (replaced whole, once the new one is complete)")
    explore.add_argument("--index", default=None, help="the 'allennlp bits index' folder of the same corpus (checked "
                         "to hold it: the page's neighbours are that index's exact answers)")
    explore.add_argument("--archive", default=None, help="the model.tar.gz that made the codes (for --serve)")
    explore.add_argument("--serve", action="store_true", help="serve the explorer on localhost with the archive")
    explore.add_argument("--port", type=options.int_range(0, 65535, what="a port number in 0..65535", name="port"),
                         default=8000, help="--serve's port on 127.0.0.1 (0: any free one)")
    explore.add_argument("--threads", type=options.positive_int, default=None, help="torch threads for --serve")
    explore.add_argument("--max-sentences", type=options.positive_int, default=None,
                         help="read at most this many sentences")
    explore.set_defaults(func=explore_from_args)
    return explore


def table_from_args(args: argparse.Namespace) -> str:
    text = "\n\n".join(prediction_tables(args.predictions))
    print(text)
    return text


def _table_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """`allennlp bits table`: the aligned table of each sentence of `allennlp predict` output."""
    table = commands.add_parser("table", help="aligned words, tags, entities and codes of 'allennlp predict' output",
                                description="One aligned table per sentence (word, tag, entity, code, bits), as "
                                "the Python API's Encoded.to_table() prints it.")
    table.add_argument("predictions", help="the --output-file of 'allennlp predict', or what it printed; - reads "
                       "standard input")
    table.set_defaults(func=table_from_args)
    return table


def package_from_args(args: argparse.Namespace) -> str:
    import shlex  # standard library; only this command quotes a path

    spec = PackageSpec(archive=args.archive, name=args.name, version=args.version, data_licence=args.data_licence,
                       training_command=args.training_command, description=args.description)
    path = build_wheel(spec, args.output_dir)
    print(f"{path}\n  pip install {shlex.quote(path)}\n  python -c \"import bitcode_allennlp; "
          f"print(bitcode_allennlp.load('{spec.name}'))\"")
    return path


def _package_parser(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """`allennlp bits package`: a trained archive as a pip-installable wheel, loadable by name."""
    package = commands.add_parser("package", help="a trained model as a pip-installable wheel, loadable by name",
                                  description="Builds OUTPUT_DIR/NAME-VERSION-py3-none-any.whl: the archive, its "
                                  "model card (task, K, labels, PLM, dev scores, training command, data licence) "
                                  "and an entry point, so that after `pip install` bitcode_allennlp.load(NAME) and "
                                  "the spaCy components (config model=NAME) find it (docs/python_api.md). The "
                                  "name, version, texts, archive (read whole: not truncated, no links or names "
                                  "outside it) and metrics.json are checked first; a refusal is one line.")
    package.add_argument("archive", help="the trained model.tar.gz (its metrics.json beside it gives the dev scores)")
    package.add_argument("--name", required=True, help="the package's name: lower-case letters, digits and _, at "
                         "most 64 characters, your own (not a standard-library module nor a known or installed "
                         "package, which pip would replace), e.g. <lab>_<model> such as acme_ner_btc")
    package.add_argument("--version", required=True, help="its version, PEP 440 in its normal form, e.g. 1.0, "
                         "0.2.1, 1.0rc1 (no leading v, no local +...)")
    package.add_argument("--data-licence", required=True, help="the licence of the training data, for the card "
                         "(one printable line)")
    package.add_argument("--training-command", default=None, help="the command that trained it, for the card (one "
                         "printable line)")
    package.add_argument("--description", default=None, help="one printable line (at most 512 characters) for the "
                         "card and the wheel's summary")
    package.add_argument("-o", "--output-dir", default="dist", help="where to write the wheel")
    package.set_defaults(func=package_from_args)
    return package


@Subcommand.register("bits")
class Bits(Subcommand):
    """`allennlp bits {stats,heatmap,diff,index,search,precision,probe,explore,table,package}`: statistics, pictures,
    Hamming-space search and probes over the codes of a codes corpus, and model packages (see the module
    docstring)."""

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = ("Read binary codes: per-bit and per-label statistics, the bit heatmap (paper Figure 4), "
                       "the differing bits of two sentences (Figure 3), and Hamming-space search.")
        subparser = parser.add_parser(self.name, description=description, help="Statistics, pictures and Hamming "
                                      "search of binary codes.")
        commands = subparser.add_subparsers(title="bits commands", metavar="COMMAND")
        subparser.set_defaults(func=lambda args: subparser.print_help())

        for add in (_stats_parser, _heatmap_parser, _diff_parser, _index_parser, _search_parser, _precision_parser,
                    _probe_parser, _explore_parser, _table_parser, _package_parser):
            _include_package(add(commands))
        return subparser

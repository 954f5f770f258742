"""Words per second of the spaCy component (`nlp.pipe`) against the predictor's batch API on the same sentences.

    python benchmarks/spacy_pipe.py                          # trains a fixture NER archive first (~35 s)
    python benchmarks/spacy_pipe.py --archive runs/real_data/ner_beta0.005/model.tar.gz --max-sentences 300

Both paths start from raw sentence strings and use one loaded model (the component's predictor):
`predictor.predict_batch_json([{"sentence": s}, ...])` in batches of `--batch-size` (what `allennlp predict
--batch-size` does, without file I/O), and `nlp.pipe(sentences, batch_size=...)` on `spacy.blank(lang)` with the
`bitcode_ner` / `bitcode_tagger` / `bitcode_parser` component (the archive's kind), whose model batches have the
same size. The sentences are the dev data its training named (`--data` to change), words joined by spaces
and cut by spaCy's rule-based sentencizer first, so that each string is one sentence on both paths. Rounds
alternate which path goes first; medians of wall and process CPU time; ratio = spaCy words/s ÷ predictor
words/s (target >= 0.9). Prints a markdown table; writes `runs/benchmarks/spacy_pipe.json` (one entry per
`--name`, default `fixture` or the archive's directory name).
"""
import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

import common

OUT = common.RESULTS / "spacy_pipe.json"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archive", help="default: train training_configs/ner_hash.jsonnet on the fixtures")
    parser.add_argument("--data", help="default: the dev data its serialization folder's config.json names")
    parser.add_argument("--max-sentences", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--lang", default="en")
    parser.add_argument("--name", help="key of this run in the JSON")
    parser.add_argument("--out", default=str(OUT))
    return common.parse_args(parser)


def component_of(config: dict) -> str:
    model = config["model"]
    if model["type"] == "hash_span_parser":
        return "bitcode_parser"
    return "bitcode_ner" if model.get("label_encoding") else "bitcode_tagger"


def dev_sentences(reader, data: str, lang: str, max_sentences) -> List[str]:
    """The sentences of `data`: words joined by spaces, cut by spaCy's rule-based sentencizer."""
    import spacy

    texts = [" ".join(instance["metadata"]["words"]) for instance in reader.read(data)]
    splitter = spacy.blank(lang)
    splitter.add_pipe("sentencizer")
    sentences = [s.text for doc in splitter.pipe(texts) for s in doc.sents if any(not t.is_space for t in s)]
    return sentences[:max_sentences]


def same_outputs(docs, rows, factory: str) -> bool:
    """The component's docs agree with the predictor's rows: one sentence each, codes, and tags or entities."""
    return len(docs) == len(rows) and all(
        len(list(doc.sents)) == 1 and [t._.bitcode for t in doc if not t.is_space] == row.get("codes")
        and ([t.tag_ for t in doc if not t.is_space] == row["tags"] if factory == "bitcode_tagger" else True)
        and ([(e.start, e.end, e.label_) for e in doc.ents] == [(e["start"], e["end"], e["label"])
                                                                for e in row["entities"]]
             if factory == "bitcode_ner" else True)
        for doc, row in zip(docs, rows))


def report(result: Dict[str, Any], archive: str, name: str) -> str:
    r, median, median_cpu = result, result["median_wall_s"], result["median_cpu_s"]
    labels = {"predictor": "`predictor.predict_batch_json`", "spacy": f"`nlp.pipe` (`{r['component']}`)"}
    rows = [[labels[key], f"{median[key]:.2f}", f"{r['words'] / median[key]:.0f}", f"{median_cpu[key]:.2f}"]
            for key in median]
    return "\n".join([
        f"archive {archive} ({name}); {r['sentences']} sentences, {r['words']} words; batch size {r['batch_size']}; "
        f"{r['rounds']} rounds; {r['threads']} torch thread(s); identical outputs: {r['identical_outputs']}\n",
        common.markdown_table(["path", "median wall (s)", "words/s", "median CPU (s)"], rows, "lrrr"),
        f"\nspaCy ÷ predictor, words/s: {r['ratio_spacy_over_predictor']:.3f} (wall), {r['ratio_cpu']:.3f} (CPU); "
        f"target >= 0.9: {'met' if r['ratio_spacy_over_predictor'] >= 0.9 else 'NOT met'}"])


def main() -> None:
    args = parse_args()
    import spacy
    import torch

    from bitcode_allennlp.host.archival import read_archive_config

    torch.set_num_threads(args.threads)
    temporary = None
    archive = args.archive
    if archive is None:
        temporary = tempfile.TemporaryDirectory()
        archive = common.train_fixture_archive(temporary.name)
    config = read_archive_config(archive)
    name = args.name or ("fixture" if args.archive is None else Path(archive).resolve().parent.name)
    factory = component_of(config)

    nlp = spacy.blank(args.lang)
    nlp.add_pipe(factory, config={"archive": archive, "batch_size": args.batch_size})
    predictor = nlp.get_pipe(factory).predictor  # loads the archive; both paths use this model
    data = common.dev_data(archive, args.data)
    sentences = dev_sentences(predictor._dataset_reader, data, args.lang, args.max_sentences)

    def run_predictor():
        rows = []
        for start in range(0, len(sentences), args.batch_size):
            batch = sentences[start:start + args.batch_size]
            rows.extend(predictor.predict_batch_json([{"sentence": s} for s in batch]))
        return rows

    def run_spacy():
        return list(nlp.pipe(sentences, batch_size=args.batch_size))

    rows, docs = run_predictor(), run_spacy()  # warm-up, and the outputs to compare
    words = sum(len(row["words"]) for row in rows)
    wall, cpu = common.interleaved_times({"predictor": run_predictor, "spacy": run_spacy}, args.rounds)
    median, median_cpu = common.medians(wall), common.medians(cpu)
    result = {
        "archive": archive if args.archive else "fixture NER archive (ner_hash.jsonnet, EPOCHS=1)",
        "plm": config["model"]["text_field_embedder"]["token_embedders"]["tokens"].get("model_name"),
        "component": factory, "data": data, "sentences": len(sentences), "words": words,
        "batch_size": args.batch_size, "rounds": args.rounds, "threads": args.threads,
        "identical_outputs": same_outputs(docs, rows, factory),
        "wall_s": wall, "cpu_s": cpu, "median_wall_s": median, "median_cpu_s": median_cpu,
        "words_per_s": {key: words / median[key] for key in median},
        "ratio_spacy_over_predictor": median["predictor"] / median["spacy"],
        "ratio_cpu": median_cpu["predictor"] / median_cpu["spacy"],
        "machine": common.machine(torch_info=True, spacy=spacy.__version__),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": " ".join(sys.argv),
    }
    print(report(result, archive, name))
    common.write_named_result(args.out, name, result)
    if temporary is not None:
        temporary.cleanup()


if __name__ == "__main__":
    main()

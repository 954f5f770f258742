"""Parses a treebank's dev file with a trained `hash_span_parser` archive and scores it twice: with our
EVALB-compatible scorer (`bitcode_allennlp.parsing.metrics.evalb`) and with the real EVALB program (compiled
from AllenNLP's evalb.c with gcc, COLLINS.prm), printing both summaries side by side and writing JSON.

    python benchmarks/parse_real_data.py runs/parse_craft/model.tar.gz ../shared/data/const/craft/craft-dev.tree

Predicted trees carry the gold part-of-speech tags (the parser does not predict them; EVALB deletes punctuation
by tag). Sentences longer than EVALB's 200-word buffer are left out of both scores (counted in the JSON).
"""
import argparse
import tempfile
from pathlib import Path

import common


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("archive")
    parser.add_argument("data")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-sentences", type=int, default=None)
    parser.add_argument("--out", default=str(common.RESULTS / "parse_real_data.json"))
    args = common.parse_args(parser)

    import bitcode_allennlp.plugin  # noqa: F401
    from allennlp.models.archival import load_archive

    from bitcode_allennlp.parsing.metrics.evalb import evalb_score

    evalb_program = common.harness("evalb_program")  # the real EVALB (tests/harness/evalb_program.py)

    archive = load_archive(args.archive)
    model, reader = archive.model.eval(), archive.dataset_reader
    instances = list(reader.read(args.data))[: args.max_sentences]
    gold, predicted = [], []
    for start in range(0, len(instances), args.batch_size):
        batch = instances[start:start + args.batch_size]
        for instance in batch:
            reader.apply_token_indexers(instance)
        for instance, output in zip(batch, model.forward_on_instances(batch)):
            gold.append(instance["metadata"]["gold_tree"])
            predicted.append(output["trees"])
    kept = [(g, p) for g, p in zip(gold, predicted) if evalb_program.within_evalb_limits(g, p)]
    gold_kept, predicted_kept = [g for g, _ in kept], [p for _, p in kept]
    ours = evalb_score(gold_kept, predicted_kept)
    result = {"archive": args.archive, "data": args.data, "sentences": len(gold), "scored": len(kept),
              "ours": {k: ours[k] for k in ("recall", "precision", "f1", "exact", "valid_sentences")}}
    with tempfile.TemporaryDirectory() as tmp:
        binary, reason = evalb_program.compile_evalb(Path(tmp))
        if binary is None:
            result["evalb_program"] = f"not run: {reason}"
        else:
            summary = evalb_program.run_evalb(binary, gold_kept, predicted_kept, Path(tmp)).summaries["All"]
            result["evalb_program"] = {k: summary[name] for k, name in (
                ("recall", "Bracketing Recall"), ("precision", "Bracketing Precision"),
                ("f1", "Bracketing FMeasure"), ("exact", "Complete match"),
                ("valid_sentences", "Number of Valid sentence"))}
    print("| scorer | sentences | recall | precision | F1 | exact match |\n|---|---|---|---|---|---|")
    print(f"| bitcode_allennlp evalb_score | {ours['valid_sentences']} | {ours['recall']:.2f} | "
          f"{ours['precision']:.2f} | {ours['f1']:.2f} | {ours['exact']:.2f} |")
    program = result["evalb_program"]
    if isinstance(program, dict):
        print(f"| EVALB program (COLLINS.prm) | {program['valid_sentences']} | {program['recall']} | "
              f"{program['precision']} | {program['f1']} | {program['exact']} |")
    else:
        print(program)
    common.write_json(args.out, result)


if __name__ == "__main__":
    main()

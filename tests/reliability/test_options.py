"""Numbers on the command line (issue 29): every numeric option of `allennlp hash-corpus`, `hash-corpus-merge`,
`bits ...` and AllenNLP's `predict` and `evaluate` is read by one of the argparse types of
`bitcode_allennlp.host.options`, so a 0 or a negative value where it means nothing stops the command while its
arguments are parsed (before anything loads) with argparse's usage and
``allennlp predict: error: argument --batch-size: must be a positive integer, got 0`` (exit status 2), instead of an
empty output (`predict --batch-size 0`) or a raw `islice` traceback (`--max-instances -5`). Commands run in this
process through AllenNLP's parser; the light `allennlp bits` launcher in a fresh process."""
import argparse
import subprocess
import sys

import pytest

import bitcode_allennlp.plugin  # noqa: F401
from bitcode_allennlp.host import options
from tests.conftest import FIXTURES, ROOT

CODES = FIXTURES / "data" / "codes" / "ner.train.jsonl"
NER_DEV = FIXTURES / "data" / "conll2012" / "development"

REFUSED = {  # name: (argv, the error line)
    "predict --batch-size 0": (["predict", "model.tar.gz", "in.jsonl", "--batch-size", "0"],
                               "allennlp predict: error: argument --batch-size: must be a positive integer, got 0"),
    "predict --batch-size -3": (["predict", "model.tar.gz", "in.jsonl", "--batch-size", "-3"],
                                "allennlp predict: error: argument --batch-size: must be a positive integer, got -3"),
    "predict --cuda-device -2": (["predict", "model.tar.gz", "in.jsonl", "--cuda-device", "-2"],
                                 "allennlp predict: error: argument --cuda-device: must be a GPU id >= 0, or -1 for "
                                 "the CPU, got -2"),
    "evaluate --batch-size 0": (["evaluate", "model.tar.gz", NER_DEV, "--batch-size", "0"],
                                "allennlp evaluate: error: argument --batch-size: must be a positive integer, got 0"),
    "evaluate --batch-size two": (["evaluate", "model.tar.gz", NER_DEV, "--batch-size", "two"],
                                  "allennlp evaluate: error: argument --batch-size: must be a positive integer, got "
                                  "'two'"),
    "hash-corpus --max-instances -5": (["hash-corpus", "model.tar.gz", NER_DEV, "-o", "x", "--max-instances", "-5"],
                                       "allennlp hash-corpus: error: argument --max-instances: must be a positive "
                                       "integer, got -5"),
    "hash-corpus --max-instances 0": (["hash-corpus", "model.tar.gz", NER_DEV, "-o", "x", "--max-instances", "0"],
                                      "allennlp hash-corpus: error: argument --max-instances: must be a positive "
                                      "integer, got 0"),
    "hash-corpus --chunk-size 0": (["hash-corpus", "model.tar.gz", NER_DEV, "-o", "x", "--chunk-size", "0"],
                                   "allennlp hash-corpus: error: argument --chunk-size: must be a positive integer, "
                                   "got 0"),
    "hash-corpus --shard-index -1": (["hash-corpus", "model.tar.gz", NER_DEV, "-o", "x", "--shard-index", "-1"],
                                     "allennlp hash-corpus: error: argument --shard-index: must be an integer >= 0, "
                                     "got -1"),
    "bits search --k 0": (["bits", "search", "index", "--code", "a3f00c", "--k", "0"],
                          "allennlp bits search: error: argument --k: must be a positive integer, got 0"),
    "bits diff --lines 0 2": (["bits", "diff", "--codes", CODES, "--lines", "0", "2"],
                              "allennlp bits diff: error: argument --lines: must be a positive integer, got 0"),
    "bits index --threads -1": (["bits", "index", CODES, "--out", "index", "--threads", "-1"],
                                "allennlp bits index: error: argument --threads: must be an integer >= 0, got -1"),
    "bits heatmap --cell 0": (["bits", "heatmap", CODES, "--out", "x.png", "--cell", "0"],
                              "allennlp bits heatmap: error: argument --cell: must be a positive number, got 0"),
    "bits probe --epochs 0": (["bits", "probe", "--train", CODES, "--dev", CODES, "--epochs", "0"],
                              "allennlp bits probe: error: argument --epochs: must be a positive integer, got 0"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_a_bad_number_is_refused_by_the_parser(name, monkeypatch, capsys):
    import allennlp.commands

    argv, expected = REFUSED[name]
    monkeypatch.setattr(sys, "argv", ["allennlp", *map(str, argv)])
    with pytest.raises(SystemExit) as exit:
        allennlp.commands.main(prog="allennlp")
    err = capsys.readouterr().err
    assert exit.value.code == 2 and err.splitlines()[-1] == expected, err
    assert err.splitlines()[0].startswith("usage: allennlp ")


def test_the_light_bits_launcher_refuses_the_same_way():
    result = subprocess.run([sys.executable, "-m", "allennlp", "bits", "search", "index", "--code", "a3f00c", "--k",
                             "0"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines()[-1] == "allennlp bits search: error: argument --k: must be a positive " \
                                             "integer, got 0"


def numeric_actions(parser: argparse.ArgumentParser, path: str):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                yield from numeric_actions(subparser, f"{path} {name}")
        elif action.type in (int, float):
            yield f"{path} {'/'.join(action.option_strings) or action.dest}"


def test_every_numeric_option_is_checked():
    """No numeric option of these commands is read with a bare `int` or `float` (which takes 0 and -3)."""
    from allennlp.commands.subcommand import Subcommand

    unchecked, checked = [], 0
    for name in ("predict", "evaluate", "hash-corpus", "hash-corpus-merge", "bits"):
        subparsers = argparse.ArgumentParser(prog="allennlp").add_subparsers()
        parser = Subcommand.by_name(name)().add_subparser(subparsers)
        unchecked += list(numeric_actions(parser, name))
        checked += sum(1 for action in parser._actions if getattr(action.type, "__module__", "") == options.__name__)
    assert unchecked == [] and checked >= 9


def test_the_types():
    assert options.positive_int("3") == 3 and options.non_negative_int("0") == 0 and options.cuda_device("-1") == -1
    assert options.positive_float("0.25") == 0.25 and options.seed(str(2 ** 64 - 1)) == 2 ** 64 - 1
    for parse, text, message in [(options.positive_int, "0", "must be a positive integer, got 0"),
                                 (options.positive_int, "1.5", "must be a positive integer, got 1.5"),
                                 (options.positive_int, "", "must be a positive integer, got ''"),
                                 (options.non_negative_int, "-1", "must be an integer >= 0, got -1"),
                                 (options.positive_float, "nan", "must be a positive number, got nan"),
                                 (options.positive_float, "-0.5", "must be a positive number, got -0.5"),
                                 (options.int_range(1, 63), "64", "must be an integer >= 1 and <= 63, got 64"),
                                 (options.seed, "-1", "must be an integer in 0..2**64 - 1, got -1")]:
        with pytest.raises(argparse.ArgumentTypeError) as error:
            parse(text)
        assert str(error.value) == message

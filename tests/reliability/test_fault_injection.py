"""Fault injection, one row per class of bad input (issue 29), through the entry point where users meet it: each row
must end in a clear one-line error naming the file, line, option or variable (or a documented behaviour), and lose
nothing. The classes' own modules test each mechanism in depth (test_outputs, test_options, test_input_policy,
test_config_variables, test_artefacts, test_strict_codes); this table keeps one case per class in one place, plus a
real SIGKILL of `allennlp hash-corpus` and its resumption."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, NamedTuple

import pytest

from tests.conftest import CONFIGS, FIXTURES, ROOT, allennlp_in_process

NER_FILE = next((FIXTURES / "data" / "conll2012" / "development").rglob("*gold_conll"))
CODES = FIXTURES / "data" / "codes" / "ner.train.jsonl"


def write_lines(path: Path, lines) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def predict(archive, tmp_path, lines, *options):
    source = write_lines(tmp_path / "input.jsonl", lines)
    allennlp_in_process("predict", archive, source, "--output-file", tmp_path / "out.jsonl", "--silent", *options)
    return [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]


# Each case: (archive, tmp_path) -> the message a user sees (or raises AssertionError for a wrong behaviour).
def class1_output_is_its_input(archive, tmp_path):
    corpus = tmp_path / "dev_gold_conll"
    shutil.copy(NER_FILE, corpus)
    before = corpus.read_bytes()
    with pytest.raises(Exception) as caught:
        allennlp_in_process("hash-corpus", archive, corpus, "-o", corpus, "--force", "--silent")
    assert corpus.read_bytes() == before  # nothing lost
    return str(caught.value)


def class2_batch_size_zero(archive, tmp_path):
    source = write_lines(tmp_path / "input.jsonl", [{"tokens": ["a"]}])
    with pytest.raises(SystemExit) as caught:
        allennlp_in_process("predict", archive, source, "--batch-size", "0", "--output-file", tmp_path / "o.jsonl")
    assert caught.value.code == 2 and not (tmp_path / "o.jsonl").exists()
    return "argparse: exit 2"


def class3_words_without_pieces(archive, tmp_path):
    outputs = predict(archive, tmp_path, [{"tokens": ["\u200b", "\u200d", "\u0007"]}])
    assert len(outputs[0]["codes"]) == 3
    return "three codes"


def class4_lone_surrogate(archive, tmp_path):
    with pytest.raises(Exception) as caught:
        predict(archive, tmp_path, [{"tokens": ["ok"]}, {"tokens": ["\ud800"]}])
    return str(caught.value)


def class5_sentence_too_long(archive, tmp_path):
    with pytest.raises(Exception) as caught:
        predict(archive, tmp_path, [{"tokens": ["w"] * 100_000}])
    return str(caught.value)


def class6_unseen_tag(archive, tmp_path):
    dev = tmp_path / "dev.gold_conll"
    dev.write_text(NER_FILE.read_text(encoding="utf-8").replace("(ORG)", "(XYZ)", 1), encoding="utf-8")
    with pytest.raises(Exception) as caught:
        allennlp_in_process("evaluate", archive, dev, "--output-file", tmp_path / "metrics.json")
    return str(caught.value)


def class7_light_bits_error(archive, tmp_path):
    result = subprocess.run([sys.executable, "-m", "allennlp", "bits", "diff", "--codes", str(CODES), "--lines", "3",
                             "999"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 1, result.stderr
    return result.stderr.splitlines()[0]


def class8_config_variable(archive, tmp_path):
    with pytest.raises(Exception) as caught:
        allennlp_in_process("train", CONFIGS / "ner_hash.jsonnet", "-s", tmp_path / "run", EPOCHS="-1")
    assert not (tmp_path / "run").exists()  # refused before anything is written
    return str(caught.value)


def class9_junk_archive(archive, tmp_path):
    folder = tmp_path / "junk"
    folder.mkdir()
    (folder / "config.json").write_text("[1, 2]")
    source = write_lines(tmp_path / "input.jsonl", [{"tokens": ["a"]}])
    with pytest.raises(Exception) as caught:
        allennlp_in_process("predict", folder, source, "--output-file", tmp_path / "o.jsonl", "--silent")
    return str(caught.value)


def class10_python_codes(archive, tmp_path):
    from bitcode_allennlp.common.code_format import uint64_to_hex

    with pytest.raises(ValueError) as caught:
        uint64_to_hex([1 << 30], 24)
    return str(caught.value)


class Case(NamedTuple):
    run: Callable
    expected: str  # a fragment of what the user sees


CASES = {
    "1 hash-corpus -o INPUT --force": Case(class1_output_is_its_input, "would overwrite its own input"),
    "2 predict --batch-size 0": Case(class2_batch_size_zero, "exit 2"),
    "3 words with no piece": Case(class3_words_without_pieces, "three codes"),
    "4 a lone surrogate": Case(class4_lone_surrogate, 'input.jsonl, line 2: "tokens"[0] is not valid Unicode'),
    "5 100,000 words": Case(class5_sentence_too_long, "a sentence of 100,000 words is over the limit of 2,000"),
    "6 an unseen tag at evaluate": Case(class6_unseen_tag, "tags 'U-XYZ' is not a label of the model"),
    "7 bits diff --lines 3 999": Case(class7_light_bits_error, "so no line 999"),
    "8 EPOCHS=-1": Case(class8_config_variable, 'environment variable EPOCHS="-1" must be an integer >= 1'),
    "9 a junk config.json": Case(class9_junk_archive, "not a model archive"),
    "10 uint64_to_hex([1 << 30], 24)": Case(class10_python_codes, "has bits set above its K = 24 bits"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_fault(name, ner_hash_archive, tmp_path):
    case = CASES[name]
    seen = case.run(ner_hash_archive, tmp_path)
    assert case.expected in seen and "Traceback" not in seen, seen


def test_hash_corpus_killed_with_sigkill_resumes_to_the_file_of_a_clean_run(ner_hash_archive, tmp_path):
    """A real `allennlp hash-corpus` process killed (SIGKILL) after its first chunks, then run again: the file is
    byte-identical to an uninterrupted run's, and the killed run's lock file does not block."""
    corpus = tmp_path / "big_gold_conll"
    corpus.write_text(NER_FILE.read_text(encoding="utf-8") * 40, encoding="utf-8")  # 800 sentences
    clean, killed = tmp_path / "clean.jsonl", tmp_path / "killed.jsonl"
    allennlp_in_process("hash-corpus", ner_hash_archive, corpus, "-o", clean, "--chunk-size", "8", "--silent")
    process = subprocess.Popen([sys.executable, "-m", "allennlp", "hash-corpus", str(ner_hash_archive), str(corpus),
                                "-o", str(killed), "--chunk-size", "8", "--silent"], cwd=ROOT,
                               env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and process.poll() is None:
        if killed.exists() and killed.stat().st_size > 0:
            break
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait()
    written = killed.read_bytes() if killed.exists() else b""
    assert process.returncode == -signal.SIGKILL and 0 < len(written) < clean.stat().st_size, "not killed mid-way"
    allennlp_in_process("hash-corpus", ner_hash_archive, corpus, "-o", killed, "--chunk-size", "8", "--silent")
    assert killed.read_bytes() == clean.read_bytes()
    assert not Path(str(killed) + ".lock").exists()


def test_every_class_has_a_case():
    assert sorted(int(name.split()[0]) for name in CASES) == list(range(1, 11))

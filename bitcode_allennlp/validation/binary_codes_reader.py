"""Old import path of `bitcode_allennlp.code_stage.binary_codes_reader` (the same module; `bitcode_allennlp.validation`)."""
from bitcode_allennlp.validation import alias

alias(__name__)

"""Old import path of `bitcode_allennlp.code_stage.experiment` (the same module; `bitcode_allennlp.validation`):
`python -m bitcode_allennlp.validation.experiment ...` still runs the experiment."""
from bitcode_allennlp.validation import alias

if __name__ == "__main__":
    alias("bitcode_allennlp.validation.experiment").main()
else:
    alias(__name__)

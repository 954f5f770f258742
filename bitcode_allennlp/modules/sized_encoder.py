"""`SizedSeq2SeqEncoder`: the base of the package's `Seq2SeqEncoder`s (`hash_transformer`, `window_feedforward`).

AllenNLP's `Seq2SeqEncoder` interface asks every encoder for `get_input_dim`, `get_output_dim` and
`is_bidirectional`. The package's encoders know all three when they are built; they pass them to this base once
instead of each writing the three methods. Not registered itself (it has no `forward`).
"""
from allennlp.modules.seq2seq_encoders import Seq2SeqEncoder


class SizedSeq2SeqEncoder(Seq2SeqEncoder):
    """
    A `Seq2SeqEncoder` whose sizes and direction are fixed at construction.

    # Parameters

    input_dim : `int`
        Size of the input vectors.
    output_dim : `int`
        Size of the output vectors.
    bidirectional : `bool`
        Whether an output reads words on both sides (AllenNLP's `is_bidirectional`: e.g. a span parser's boundary
        representation depends on it).
    """

    def __init__(self, input_dim: int, output_dim: int, bidirectional: bool) -> None:
        super().__init__()
        self._input_dim = input_dim
        self._output_dim = output_dim
        self._bidirectional = bidirectional

    def get_input_dim(self) -> int:
        return self._input_dim

    def get_output_dim(self) -> int:
        return self._output_dim

    def is_bidirectional(self) -> bool:
        return self._bidirectional

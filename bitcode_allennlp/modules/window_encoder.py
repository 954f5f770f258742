"""`window_feedforward` Seq2SeqEncoder: each word's output reads the word and `window` words on each side, through
one convolution (kernel 2·window + 1) and an activation. Beyond the paper: a cheaper encoder than its one-layer
transformer for the validation stage (config `CODE_ENCODER=window`, `code_model.libsonnet`), for reading codes at
corpus scale. Pure torch; used only by validation-stage configs.
"""
from typing import Optional

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.modules.seq2seq_encoders import Seq2SeqEncoder
from allennlp.nn import Activation

from bitcode_allennlp.modules.sized_encoder import SizedSeq2SeqEncoder


@Seq2SeqEncoder.register("window_feedforward")
class WindowFeedForwardEncoder(SizedSeq2SeqEncoder):
    """
    out_i = act(W [x_{i-w}; …; x_i; …; x_{i+w}] + b), with zeros for positions outside the sentence (masked words
    and padding), then zeros at masked positions. One `Conv1d` over the words; `num_layers` stacks them (the
    receptive field grows by `window` on each side per layer).

    Registered as a `Seq2SeqEncoder` with name "window_feedforward".

    # Parameters

    input_dim : `int`
        Size of the input vectors (the `binary_code` embedder's d).
    hidden_dim : `int`
        Output size of every layer.
    window : `int`, optional (default = `1`)
        Words read on each side of a word, per layer.
    num_layers : `int`, optional (default = `1`)
    activation : `Activation`, optional (default = `gelu`)
    dropout : `float`, optional (default = `0.0`)
        Dropout on each layer's output.
    """

    def __init__(
        self,
        input_dim: int,
        hidden_dim: int,
        window: int = 1,
        num_layers: int = 1,
        activation: Optional[Activation] = None,
        dropout: float = 0.0,
    ) -> None:
        super().__init__(input_dim, hidden_dim, bidirectional=False)
        if window < 0 or num_layers < 1 or hidden_dim < 1 or input_dim < 1:
            raise ConfigurationError(f"window_feedforward needs window >= 0, num_layers >= 1 and positive sizes; got "
                                     f"window={window}, num_layers={num_layers}, input_dim={input_dim}, "
                                     f"hidden_dim={hidden_dim}")
        self.window = window
        self.layers = torch.nn.ModuleList(
            torch.nn.Conv1d(input_dim if i == 0 else hidden_dim, hidden_dim, 2 * window + 1, padding=window)
            for i in range(num_layers))
        self.activation = activation or Activation.by_name("gelu")()
        self.dropout = torch.nn.Dropout(dropout)

    def forward(self, inputs: torch.Tensor, mask: torch.BoolTensor) -> torch.Tensor:  # type: ignore
        """`inputs` (batch, words, input_dim), `mask` (batch, words) → (batch, words, hidden_dim)."""
        keep = mask.unsqueeze(1).to(inputs.dtype)  # (batch, 1, words)
        hidden = inputs.transpose(1, 2) * keep  # (batch, input_dim, words): masked words read as zeros
        for layer in self.layers:
            hidden = self.dropout(self.activation(layer(hidden))) * keep  # (batch, hidden_dim, words)
        return hidden.transpose(1, 2)  # (batch, words, hidden_dim)

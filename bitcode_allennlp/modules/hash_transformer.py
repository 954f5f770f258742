"""The transformer hash layer (paper §3.1): one transformer layer with K heads whose ego-attention is the code.

Hashing stage: PLM → per-word average → **HashTransformerEncoder** → task head, and the ego-attention scores
s_ii ∈ R^K (the diagonal of each head's pre-softmax attention matrix, Eq. 5) go to the contrastive hash loss.
After training, ``sign(s_ii)`` is the word's K-bit code. Touches nothing outside this module.
"""
import math
from typing import Optional, Tuple

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.modules.seq2seq_encoders import Seq2SeqEncoder
from allennlp.nn import Activation

from bitcode_allennlp.common.checks import check_range
from bitcode_allennlp.common.code_format import check_num_bits
from bitcode_allennlp.modules.sized_encoder import SizedSeq2SeqEncoder


@Seq2SeqEncoder.register("hash_transformer")
class HashTransformerEncoder(SizedSeq2SeqEncoder):
    """
    One post-norm transformer layer (attention + feed-forward, residuals, LayerNorm) whose number of heads is the
    number of bits K. The head size `head_dim` is independent of the model size (d need not equal K · d_h).

    `forward` returns the output vectors like any `Seq2SeqEncoder`; `forward_with_scores` also returns the
    ego-attention scores s_ii (batch, words, K), read off the same attention matrix that produced the outputs.

    Registered as a `Seq2SeqEncoder` with name "hash_transformer".

    # Parameters

    input_dim : `int`
        d, the size of the word vectors coming in (the PLM's hidden size); outputs have the same size.
    num_bits : `int`, optional (default = `24`)
        K, the number of attention heads = bits per code (paper: 16, 24, 32).
    head_dim : `int`, optional (default = `64`)
        d_h, the size of each head's queries, keys and values.
    feedforward_hidden_dim : `int`, optional (default = `None`)
        Inner size of the feed-forward block; `None` means 4 · input_dim.
    dropout : `float`, optional (default = `0.1`)
        Dropout on attention probabilities, and on the attention and feed-forward outputs before each residual.
        It is one of the two sources of the independent "views" in training (SimCSE-style).
    activation : `Activation`, optional (default = `gelu`)
        Activation of the feed-forward block.
    causal : `bool`, optional (default = `False`)
        Mask attention to later words, so a word's code depends only on itself and the words to its left
        (incremental parsing; use with a causal PLM).
    residual : `bool`, optional (default = `True`)
        Keep the residual connection around the attention block (a standard post-norm layer). `False` is the
        literal Eq. 8 of the paper, o_i = W_o[z_i^1..z_i^H], h_i = FFN(o_i): the task head then sees the input only
        through the attention whose diagonal makes the codes. Measured (EWT POS, MiniLM): it helps the codes of a
        frozen PLM and hurts those of a fine-tuned one, and costs task accuracy in both.
    qk_only : `bool`, optional (default = `False`)
        Keep only the query and key projections (the authors' later paper, Wang & Utiyama 2024): the layer gives the
        ego-attention scores, and its outputs are its inputs (padding zeroed), so the task head reads the PLM's
        vectors; no value, attention output, feed-forward or LayerNorm (`feedforward_hidden_dim`, `activation`,
        `residual` and the attention dropout are unused; `dropout` applies to the inputs of q and k, so the two
        views still differ).
    """

    def __init__(
        self,
        input_dim: int,
        num_bits: int = 24,
        head_dim: int = 64,
        feedforward_hidden_dim: Optional[int] = None,
        dropout: float = 0.1,
        activation: Optional[Activation] = None,
        causal: bool = False,
        residual: bool = True,
        qk_only: bool = False,
    ) -> None:
        super().__init__(input_dim, input_dim, bidirectional=not causal)
        self.num_bits = check_num_bits(num_bits, name="num_bits (K)", error=ConfigurationError)
        check_range("head_dim", head_dim, 1)
        self.head_dim = head_dim
        self.causal = causal
        self.residual = residual
        self.qk_only = qk_only
        inner = num_bits * head_dim
        self.query = torch.nn.Linear(input_dim, inner)
        self.key = torch.nn.Linear(input_dim, inner)
        self.dropout = torch.nn.Dropout(dropout)
        if qk_only:
            return
        self.value = torch.nn.Linear(input_dim, inner)
        self.attention_output = torch.nn.Linear(inner, input_dim)
        self.attention_norm = torch.nn.LayerNorm(input_dim)
        hidden = feedforward_hidden_dim or 4 * input_dim
        self.feedforward = torch.nn.Sequential(
            torch.nn.Linear(input_dim, hidden),
            activation or Activation.by_name("gelu")(),
            torch.nn.Dropout(dropout),
            torch.nn.Linear(hidden, input_dim),
        )
        self.feedforward_norm = torch.nn.LayerNorm(input_dim)
        self.attention_dropout = torch.nn.Dropout(dropout)

    def forward(self, inputs: torch.Tensor, mask: torch.BoolTensor) -> torch.Tensor:
        return self.forward_with_scores(inputs, mask)[0]

    def ego_scores(self, inputs: torch.Tensor) -> torch.Tensor:
        """
        The ego-attention scores alone, s_ii^h = (W_q^h x_i)·(W_k^h x_i) / √d_h, from `inputs` (batch, words,
        input_dim) → (batch, words, K): equal to `forward_with_scores`'s for the same inputs (with `qk_only`, whose
        q and k read the inputs through dropout, each call draws its own mask). Padded positions are meaningless.
        """
        batch, words, _ = inputs.shape
        dropped = self.dropout(inputs) if self.qk_only else inputs  # (batch, words, d)
        q = self.query(dropped).view(batch, words, self.num_bits, self.head_dim)  # (batch, words, K, d_h)
        k = self.key(dropped).view(batch, words, self.num_bits, self.head_dim)  # (batch, words, K, d_h)
        return (q * k).sum(dim=-1) / math.sqrt(self.head_dim)  # (batch, words, K): only the diagonal

    def forward_with_scores(
        self, inputs: torch.Tensor, mask: torch.BoolTensor
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """
        # Parameters
        inputs : `(batch, words, input_dim)`; mask : `(batch, words)`, True for real words.

        # Returns
        outputs : `(batch, words, input_dim)`, and ego-attention scores : `(batch, words, num_bits)`,
        s_ii^h = (W_q^h x_i)·(W_k^h x_i) / √d_h (Eq. 5). Scores at padded positions are meaningless.
        """
        batch, words, _ = inputs.shape
        heads, head_dim = self.num_bits, self.head_dim
        if self.qk_only:
            return inputs * mask[..., None], self.ego_scores(inputs)  # (batch, words, d), (batch, words, K)
        q = self.query(inputs).view(batch, words, heads, head_dim).transpose(1, 2)  # (batch, K, words, d_h)
        k = self.key(inputs).view(batch, words, heads, head_dim).transpose(1, 2)  # (batch, K, words, d_h)
        v = self.value(inputs).view(batch, words, heads, head_dim).transpose(1, 2)  # (batch, K, words, d_h)
        scores = q @ k.transpose(-1, -2) / math.sqrt(head_dim)  # (batch, K, words, words)
        ego = scores.diagonal(dim1=-2, dim2=-1).transpose(1, 2)  # (batch, words, K)

        allowed = mask[:, None, None, :]  # (batch, 1, 1, words)
        if self.causal:
            later = torch.ones(words, words, dtype=torch.bool, device=inputs.device).triu(1)  # (words, words)
            allowed = allowed & ~later  # (batch, 1, words, words)
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)  # (batch, K, words, words)
        probs = self.attention_dropout(scores.softmax(dim=-1))  # (batch, K, words, words)
        z = (probs @ v).transpose(1, 2).reshape(batch, words, heads * head_dim)  # (batch, words, K·d_h)
        attended = self.dropout(self.attention_output(z))  # (batch, words, d)
        o = self.attention_norm(inputs + attended if self.residual else attended)  # (batch, words, d)
        h = self.feedforward_norm(o + self.dropout(self.feedforward(o)))  # (batch, words, d)
        return h * mask[..., None], ego

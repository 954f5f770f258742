"""The span parser's layers, shared by the parser (`hash_span_parser.py`) and its span code-reading head
(`span_code_head.py`): the biaffine scorer, the MLP before it, and fencepost (boundary) vectors from word vectors."""
from typing import Optional

import torch


class Biaffine(torch.nn.Module):
    """s[b, o, i, j] = [x_i; 1]ᵀ W_o [y_j; 1] (bias terms optional), as in supar."""

    def __init__(self, input_dim: int, output_dim: int = 1, bias_x: bool = True, bias_y: bool = True) -> None:
        super().__init__()
        self.bias_x, self.bias_y = bias_x, bias_y
        self.weight = torch.nn.Parameter(torch.zeros(output_dim, input_dim + bias_x, input_dim + bias_y))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.bias_x:
            x = torch.cat([x, x.new_ones(x.shape[:-1] + (1,))], dim=-1)  # (batch, n, m+1)
        if self.bias_y:
            y = torch.cat([y, y.new_ones(y.shape[:-1] + (1,))], dim=-1)  # (batch, n, m+1)
        return torch.einsum("bxi,oij,byj->boxy", x, self.weight, y)  # (batch, out, n, n)


class MLP(torch.nn.Sequential):
    def __init__(self, input_dim: int, output_dim: int, dropout: float) -> None:
        super().__init__(torch.nn.Linear(input_dim, output_dim), torch.nn.LeakyReLU(0.1), torch.nn.Dropout(dropout))


def fenceposts(encoded: torch.Tensor, mask: torch.BoolTensor, boundary: str, bos: torch.Tensor,
               eos: Optional[torch.Tensor]) -> torch.Tensor:
    """
    Fencepost vectors (batch, n+1, d) from word vectors `encoded` (batch, n, d), with the learned boundary vectors
    `bos` and `eos` (d,) at the ends: fencepost k (0 ≤ k ≤ n) lies between word k−1 and word k. `boundary` "left":
    word k−1 (BOS for k = 0; `eos` unused, may be None); "split": the first half of word k−1 and the second half of
    word k, EOS after each sentence's end (`mask` (batch, n) gives the lengths).
    """
    batch, n, dim = encoded.shape
    if boundary == "left":
        return torch.cat([bos.expand(batch, 1, dim), encoded], dim=1)  # (batch, n+1, d): k ↦ word k-1
    lengths = mask.sum(dim=-1)  # (batch,)
    padded = torch.cat([bos.expand(batch, 1, dim), encoded, encoded.new_zeros(batch, 1, dim)],
                       dim=1)  # (batch, n+2, d)
    after = torch.arange(n + 2, device=encoded.device)[None, :] == (lengths + 1)[:, None]  # (batch, n+2)
    padded = torch.where(after[..., None], eos.expand(batch, n + 2, dim), padded)  # (batch, n+2, d)
    half = dim // 2
    return torch.cat([padded[:, :-1, :half], padded[:, 1:, half:]], dim=-1)  # (batch, n+1, d)

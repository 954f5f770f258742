"""Contrastive hashing loss (paper §2, Eq. 3–4, Algorithm 1 `compute_hash_loss`), its Table 2 ablations and
the later paper's `max_pos`.

Hashing stage: the model flattens the ego-attention scores of the two dropout views to (words, K), drops padding,
and calls ``ContrastiveHashLoss.symmetric(s1, s2, word_ids)``. Touches nothing else; vectorized over words.

Negatives stay within the batch of the process that computes the loss (one worker in distributed training):
a batch is the paper's unit of ~1024 words, and gathering across workers would change the number of negatives
with the number of workers.
"""
import torch
import torch.nn.functional as F
from allennlp.common import Registrable

from bitcode_allennlp.common.checks import check_choice, check_range

SIMILARITIES = ("cos_sign", "cos")
OBJECTIVES = ("hash", "self", "sup", "max_pos")


class ContrastiveHashLoss(Registrable):
    """
    InfoNCE over the words of a batch, between the scores `x` of one view and the scores `y` of the other.

    Similarity (Eq. 1 / Eq. 3), divided by the temperature τ:

    - `"cos_sign"`: s(x_i, y_j) = cos(x_i, sign(y_j)) (Hoe et al. 2021; the paper's choice; gradient flows
      through x only, so use `symmetric`);
    - `"cos"`: s(x_i, y_j) = cos(x_i, y_j).

    Objective, for word i with its other view j = i as the positive:

    - `"hash"` (Eq. 4): other occurrences of the same word (same `word_ids`) are removed from numerator and
      denominator; every other word is a negative;
    - `"self"` (L_self, SimCSE): the other view is the only positive; every other word, including other
      occurrences of the same word, is a negative;
    - `"sup"` (L_sup, Khosla et al. 2020): every occurrence of the same word (its other view included) is a
      positive; the loss averages −log p over positives; the denominator has all words;
    - `"max_pos"` (beyond the 24-bit paper: Wang & Utiyama, ACL 2024, *To be Continuous, or to be Discrete,
      Those are Bits of Questions*): the positives of word i are every occurrence j of the same word (j = i
      included); loss_i = logsumexp_j s(x_i, y_j) over all words j − max over positives j of s(x_i, y_j).
      Equals `"self"` when no word repeats.

    Registered as `ContrastiveHashLoss` "contrastive_hash" (the default implementation).

    # Parameters

    temperature : `float`, optional (default = `0.1`)
        τ (paper Table 5/6).
    similarity : `str`, optional (default = `"cos_sign"`)
        One of "cos_sign", "cos".
    objective : `str`, optional (default = `"hash"`)
        One of "hash", "self", "sup", "max_pos".
    """

    default_implementation = "contrastive_hash"

    def __init__(self, temperature: float = 0.1, similarity: str = "cos_sign", objective: str = "hash") -> None:
        check_range("temperature", temperature, 0, low_open=True)
        check_choice("similarity", similarity, SIMILARITIES)
        check_choice("objective", objective, OBJECTIVES)
        self.temperature = temperature
        self.similarity = similarity
        self.objective = objective

    def __call__(self, x: torch.Tensor, y: torch.Tensor, word_ids: torch.Tensor) -> torch.Tensor:
        """
        # Parameters
        x, y : `(words, K)` scores of the two views of the same words, padding removed.
        word_ids : `(words,)` word identities (equal ids = the same word string).

        # Returns
        The loss averaged over words, a scalar. Zero (with a gradient path) when there are no words.
        """
        self._check(x, y, word_ids)
        if x.shape[0] == 0:
            return x.sum() * 0.0
        return self._loss(F.normalize(x, dim=-1), self._target(y), *self._masks(word_ids))

    def symmetric(self, s1: torch.Tensor, s2: torch.Tensor, word_ids: torch.Tensor) -> torch.Tensor:
        """L_hash(s1, s2) + L_hash(s2, s1), as in Algorithm 1 `fine_tuning_step` (masks built once)."""
        self._check(s1, s2, word_ids)
        if s1.shape[0] == 0:
            return (s1.sum() + s2.sum()) * 0.0
        masks = self._masks(word_ids)
        return (self._loss(F.normalize(s1, dim=-1), self._target(s2), *masks)
                + self._loss(F.normalize(s2, dim=-1), self._target(s1), *masks))

    @staticmethod
    def _check(x: torch.Tensor, y: torch.Tensor, word_ids: torch.Tensor) -> None:
        if x.shape != y.shape or x.dim() != 2 or word_ids.shape != x.shape[:1]:
            raise ValueError(f"expected x, y (words, K) and word_ids (words,), got {x.shape}, {y.shape}, "
                             f"{word_ids.shape}")

    def _target(self, y: torch.Tensor) -> torch.Tensor:
        """The normalized other view: sign(y) for "cos_sign", y for "cos"."""
        return F.normalize(y.sign() if self.similarity == "cos_sign" else y, dim=-1)  # (words, K)

    @staticmethod
    def _masks(word_ids: torch.Tensor):
        eye = torch.eye(word_ids.shape[0], dtype=torch.bool, device=word_ids.device)  # (words, words)
        same_word = word_ids[:, None] == word_ids[None, :]  # (words, words)
        return eye, same_word

    def _loss(self, x: torch.Tensor, target: torch.Tensor, eye: torch.Tensor, same_word: torch.Tensor) -> torch.Tensor:
        score = x @ target.T / self.temperature  # (words, words)
        if self.objective == "self":
            return (score.logsumexp(dim=-1) - score.diagonal()).mean()
        if self.objective == "hash":
            score = score.masked_fill(same_word & ~eye, float("-inf"))  # (words, words)
            return (score.logsumexp(dim=-1) - score.diagonal()).mean()
        if self.objective == "max_pos":  # logsumexp over all − the best positive
            positive_max = score.masked_fill(~same_word, float("-inf")).amax(dim=-1)  # (words,)
            return (score.logsumexp(dim=-1) - positive_max).mean()
        # "sup": mean over positives of (logsumexp over all − s(x, x+))
        positives = same_word.to(score.dtype)  # (words, words)
        positive_mean = (score * positives).sum(dim=-1) / positives.sum(dim=-1)  # (words,)
        return (score.logsumexp(dim=-1) - positive_mean).mean()


ContrastiveHashLoss.register("contrastive_hash")(ContrastiveHashLoss)

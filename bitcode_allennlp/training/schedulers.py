"""Learning-rate schedule of the paper (§4.1): linear warm-up over a fraction of all steps, then linear decay."""
import torch
from allennlp.training.learning_rate_schedulers import LearningRateScheduler
from allennlp.training.learning_rate_schedulers.linear_with_warmup import LinearWithWarmup

from bitcode_allennlp.common.checks import check_range


@LearningRateScheduler.register("linear_with_warmup_fraction")
class LinearWithWarmupFraction(LinearWithWarmup):
    """
    AllenNLP's `linear_with_warmup`, with the warm-up given as a fraction of the total number of steps
    (paper: 6%) instead of a step count, so one config fits any corpus size and epoch count.

    Registered as a `LearningRateScheduler` with name "linear_with_warmup_fraction".

    # Parameters

    warmup_fraction : `float`, optional (default = `0.06`)
        Share of num_epochs × num_steps_per_epoch spent warming up (at least one step).
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        num_epochs: int,
        num_steps_per_epoch: int,
        warmup_fraction: float = 0.06,
        last_epoch: int = -1,
    ) -> None:
        check_range("warmup_fraction", warmup_fraction, 0, 1, high_open=True)
        warmup_steps = max(1, round(warmup_fraction * num_epochs * num_steps_per_epoch))
        super().__init__(optimizer, num_epochs, num_steps_per_epoch, warmup_steps=warmup_steps,
                         last_epoch=last_epoch)

"""Trainer callbacks. `parameter_count`: the model size |θ| of paper Table 1, logged when training starts and
written into the run's metrics (`metrics.json`, hence the archive's metrics) as `parameters` and
`trainable_parameters`. Every shipped config uses it.
"""
import logging
from typing import Any, Dict, Optional

from allennlp.training.callbacks.callback import TrainerCallback

logger = logging.getLogger(__name__)


def count_parameters(model) -> Dict[str, int]:
    """All parameters and the trainable ones (`requires_grad`), counted once even when a tensor is shared. All
    includes a frozen PLM held outside the module tree (`frozen_transformer_mismatched`, `frozen_parameters()`)."""
    unique = {id(p): p for p in model.parameters()}.values()
    frozen = sum(m.frozen_parameters() for m in model.modules() if hasattr(m, "frozen_parameters"))
    return {"parameters": sum(p.numel() for p in unique) + frozen,
            "trainable_parameters": sum(p.numel() for p in unique if p.requires_grad)}


@TrainerCallback.register("parameter_count")
class ParameterCountCallback(TrainerCallback):
    """
    Logs the model's parameter count at the start of training and adds it to the final metrics.

    Registered as a `TrainerCallback` with name "parameter_count".

    # Parameters

    serialization_dir : `str`
        Given by the trainer.
    """

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        self.counts = count_parameters(trainer.model)
        if is_primary:
            logger.info("Model size: %s parameters (%s trainable)",
                        f"{self.counts['parameters']:,}", f"{self.counts['trainable_parameters']:,}")

    def on_end(self, trainer, metrics: Optional[Dict[str, Any]] = None, epoch: Optional[int] = None,
               is_primary: bool = True, **kwargs) -> None:
        if metrics is not None:
            metrics.update(count_parameters(trainer.model))

"""Trainer callbacks, both used by every shipped config and both writing into the run's metrics (`metrics.json`,
hence the archive's metrics). `parameter_count`: the model size |θ| of paper Table 1 (`parameters`,
`trainable_parameters`), logged when training starts. `throughput`: training words per second, the training
steps alone (no validation, no checkpointing), logged per epoch (`training_words_per_second`,
`training_seconds`, `training_words`, `training_sentences`: totals over the steps this process trained, so after
`--recover` the steps since the resume), and on Linux the process's peak resident memory (`peak_rss_mb`, the
kernel's VmHWM) with the batch that first reached it (`peak_rss_batch`: training or validation, sentences, words,
padded sub-tokens), so a memory peak can be traced to the batch shape that caused it.
"""
import logging
import time
from typing import Any, Dict, List, Optional

from allennlp.nn.util import get_text_field_mask
from allennlp.training.callbacks.callback import TrainerCallback

from bitcode_allennlp.common.progress import duration

logger = logging.getLogger(__name__)


def count_parameters(model) -> Dict[str, int]:
    """All parameters and the trainable ones (`requires_grad`), counted once even when a tensor is shared. All
    includes a frozen PLM held outside the module tree (`frozen_plm_words`, `frozen_parameters()`)."""
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


def high_water_mark_mb() -> Optional[float]:
    """This process's peak resident memory so far (VmHWM of /proc/self/status) in MB; None where there is none."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _batch_shape(batch_inputs: List[Dict[str, Any]], text_field: str) -> Dict[str, int]:
    """Sentences, words and padded sub-tokens (word pieces of a transformer indexer) of a batch."""
    shape = {"sentences": 0, "words": 0, "padded_subtokens": 0}
    for batch in batch_inputs:
        if text_field not in batch:
            continue
        mask = get_text_field_mask(batch[text_field])  # (batch, words)
        shape["sentences"] += mask.size(0)
        shape["words"] += int(mask.sum())
        for tensors in batch[text_field].values():
            if "token_ids" in tensors:
                shape["padded_subtokens"] += int(tensors["token_ids"].numel())  # (batch, pieces)
    return shape


@TrainerCallback.register("throughput")
class ThroughputCallback(TrainerCallback):
    """
    Words per second of the training steps: from the end of one training batch (or the start of training, or the
    end of a validation pass) to the end of the next one, so data loading and the step count, validation and
    checkpoints do not. Words are the unmasked positions of the batch's `text_field` (word level for our
    readers: a PLM's word-piece indexer gives the word mask).

    Registered as a `TrainerCallback` with name "throughput".

    # Parameters

    serialization_dir : `str`
        Given by the trainer.
    text_field : `str`, optional (default = `"tokens"`)
        The batch key whose mask counts the words.
    """

    def __init__(self, serialization_dir: str, text_field: str = "tokens") -> None:
        super().__init__(serialization_dir)
        self.text_field = text_field
        self.seconds = 0.0
        self.words = 0
        self.sentences = 0
        self._last = 0.0
        self.peak_rss_mb: Optional[float] = None
        self.peak_rss_batch: Optional[Dict[str, Any]] = None

    def on_start(self, trainer, is_primary: bool = True, **kwargs) -> None:
        self._last = time.perf_counter()

    def on_batch(self, trainer, batch_inputs: List[Dict[str, Any]], batch_outputs=None, batch_metrics=None,
                 epoch: int = 0, batch_number: int = 0, is_training: bool = True, is_primary: bool = True,
                 batch_grad_norm: Optional[float] = None, **kwargs) -> None:
        now = time.perf_counter()
        if is_training:
            self.seconds += now - self._last
            for batch in batch_inputs:
                if self.text_field in batch:
                    mask = get_text_field_mask(batch[self.text_field])  # (batch, words)
                    self.words += int(mask.sum())
                    self.sentences += mask.size(0)
        peak = high_water_mark_mb()
        if peak is not None and (self.peak_rss_mb is None or peak > self.peak_rss_mb):
            self.peak_rss_mb = peak
            self.peak_rss_batch = {"training": is_training, "epoch": epoch, "batch": batch_number,
                                   **_batch_shape(batch_inputs, self.text_field)}
        self._last = time.perf_counter()

    def totals(self) -> Dict[str, Any]:
        return {"peak_rss_mb": self.peak_rss_mb, "peak_rss_batch": self.peak_rss_batch,
                "training_sentences": self.sentences, "training_words": self.words,
                "training_seconds": round(self.seconds, 3),
                "training_words_per_second": round(self.words / self.seconds, 2) if self.seconds else 0.0}

    def on_epoch(self, trainer, metrics: Dict[str, Any], epoch: int, is_primary: bool = True, **kwargs) -> None:
        if is_primary:
            logger.info("%s", epoch_line(trainer, metrics, epoch, self.totals()))
        self._last = time.perf_counter()

    def on_end(self, trainer, metrics: Optional[Dict[str, Any]] = None, epoch: Optional[int] = None,
               is_primary: bool = True, **kwargs) -> None:
        if metrics is not None:
            metrics.update(self.totals())


def epoch_line(trainer, metrics: Dict[str, Any], epoch: int, totals: Dict[str, Any]) -> str:
    """One line for a finished epoch, what the quiet `allennlp train` prints: the epoch, the training loss, the
    tracked dev metric first then the other task metrics (the codes' `code_*` metrics stay in `out.log`'s table and in
    `metrics_epoch_N.json`), the training words/s, the time so far and left at this pace (`training_duration`, the
    time since this process started training)."""
    epochs = getattr(trainer, "_num_epochs", None)
    first = getattr(trainer, "_start_after_epochs_completed", 0) or 0  # a --recover run starts later
    tracked = [name for _, name in getattr(getattr(trainer, "_metric_tracker", None), "tracked_metrics", [])]
    dev = {key[len("validation_"):]: value for key, value in metrics.items()
           if key.startswith("validation_") and isinstance(value, (int, float)) and "code_" not in key
           and "loss" not in key}
    order = [name for name in tracked if name in dev] + sorted(k for k in dev if k not in tracked)
    line = [f"epoch {epoch + 1}/{epochs}" if epochs else f"epoch {epoch + 1}"]
    if isinstance(metrics.get("training_loss"), (int, float)):
        line.append(f"training loss {metrics['training_loss']:.3f}")
    if order:
        line.append("dev " + ", ".join(f"{name} {100 * dev[name]:.2f}" for name in order[:4]))
    line.append(f"{totals['training_words_per_second']:,.0f} words/s")
    seconds = _seconds(metrics.get("training_duration"))
    if seconds is not None:
        left = seconds / max(1, epoch + 1 - first) * (epochs - epoch - 1) if epochs else 0
        line.append(f"{duration(seconds)} so far" + (f", about {duration(left)} left" if left else ""))
    return " · ".join(line)


def _seconds(duration: Any) -> Optional[float]:
    """AllenNLP's `training_duration` ("H:MM:SS.ffffff", a `timedelta` as text) in seconds, or None."""
    try:
        hours, minutes, seconds = str(duration).split(":")
        return int(hours) * 3600 + int(minutes) * 60 + float(seconds)
    except ValueError:
        return None

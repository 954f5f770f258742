"""Exact `allennlp train --recover`: the random generator states a checkpoint needs, and where to put them back.

An AllenNLP bug (any torch), repaired by an extension installed when AllenNLP's trainer is imported
(`install_exact_recover`, patch ``exact_recover``; `bitcode_allennlp.host.extensions`): `allennlp train --recover` from
a mid-epoch checkpoint (``checkpointer: {save_every_num_batches: N}``) does not continue the interrupted run. The
checkpoint holds the weights, the optimizer, the learning-rate scheduler and the metric tracker, and the trainer
replays the data loader up to the saved batch (so the data order is right), but no random generator state is saved:
after the resume, dropout draws from the generator as left by model construction, and the run drifts from the
uninterrupted one (a measured case: docs/install_and_compat.md).

So `rng_state()` (Python, NumPy, torch and CUDA generators) goes into every checkpoint's training state and, when a
run is recovered, a `ResumingDataLoader` in front of the trainer's data loader puts it back at the moment the
uninterrupted run was at when it saved the checkpoint: when the trainer asks for the first batch after the
checkpoint (for an end-of-epoch checkpoint, before the next epoch draws its batches). The checkpointer also keeps its
every-N-batches cadence across the resume. Result: the same final weights, optimizer state and metrics as an
uninterrupted run (``tests/reliability/test_recover.py``). Safe: one more key in the training state (checkpoints
without it resume as before). Limits: single-process training only (under DDP only the primary's training state is
saved, so DDP resumes as before); the ``training_*`` metrics of the interrupted epoch itself count only the batches
trained after the resume (AllenNLP keeps no running sums in checkpoints; its ``training_loss`` divides their loss by
all the epoch's batches); every later epoch and every validation metric is exact.

A second repair in the same patch: `--recover` of a run that had already finished trains nothing, and AllenNLP then
wrote a `metrics.json` with only the `best_*` keys, losing the training and validation metrics of the finished
run. `_keeping_finished_metrics` returns the last epoch's metrics (`metrics_epoch_<last>.json`) for such a run,
updated with what the resumed trainer computed, so `metrics.json` is written as the uninterrupted run wrote it.
"""
import json
import os
import random
from typing import Any, Dict

import numpy
import torch

from bitcode_allennlp.host.patching import patch


def rng_state() -> Dict[str, Any]:
    """The Python, NumPy, torch (and CUDA) generator states, as tensors, tuples and numbers only: the
    checkpointer reads them back with `torch.load(weights_only=True)`."""
    name, keys, position, has_gauss, gauss = numpy.random.get_state()
    state = {"python": random.getstate(), "torch": torch.get_rng_state(),
             "numpy": (name, torch.from_numpy(keys.astype("int64")), int(position), int(has_gauss), float(gauss))}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Dict[str, Any]) -> None:
    """Puts back what `rng_state()` returned."""
    random.setstate(tuple(state["python"]))
    name, keys, position, has_gauss, gauss = state["numpy"]
    numpy.random.set_state((name, keys.numpy().astype("uint32"), position, has_gauss, gauss))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class ResumingDataLoader:
    """
    Stands in for a recovered trainer's data loader until the point of the checkpoint, and passes everything
    through. When the trainer asks for the first batch after the checkpoint (batch `batches` of epoch `epoch`;
    with `batches` 0, before that epoch draws its batches), it puts the checkpoint's generator states back and
    gives the trainer its own data loader back.

    # Parameters

    trainer : `GradientDescentTrainer`
        The trainer being recovered, whose `data_loader` this object replaces until the resume point.
    epoch : `int`
        Epochs completed at the checkpoint.
    batches : `int`
        Batches of the data loader completed in that epoch at the checkpoint.
    state : `Dict[str, Any]`
        What `rng_state()` returned when the checkpoint was saved.
    """

    def __init__(self, trainer, epoch: int, batches: int, state: Dict[str, Any]) -> None:
        self._trainer = trainer
        self._loader = trainer.data_loader
        self._epoch = epoch
        self._batches = batches
        self._state = state
        self._epochs_started = 0

    def __len__(self) -> int:
        return len(self._loader)

    def __getattr__(self, name):
        if name == "_loader":  # not set yet (copy, pickle)
            raise AttributeError(name)
        return getattr(self._loader, name)

    def __iter__(self):
        epoch, self._epochs_started = self._epochs_started, self._epochs_started + 1
        if epoch < self._epoch:
            return iter(self._loader)  # an epoch the checkpoint had finished: replayed without training
        if self._batches == 0:  # an end-of-epoch checkpoint: before `len()` and `iter()` draw this epoch's batches
            self._resume()
            return iter(self._loader)
        return self._resume_after(iter(self._loader))

    def _resume_after(self, batches):
        for _ in range(self._batches):
            try:
                batch = next(batches)
            except StopIteration:
                break
            yield batch
        self._resume()
        yield from batches

    def _resume(self) -> None:
        set_rng_state(self._state)
        self._trainer.data_loader = self._loader


def install_exact_recover(module) -> None:
    """`allennlp.training.gradient_descent_trainer`: checkpoints keep the generator states (`rng_state`), and a
    recovered trainer puts them back in place (`ResumingDataLoader`) and keeps the checkpointer's cadence."""
    reason = "checkpoints keep the random generator states; --recover puts them back in place"
    patch(module.GradientDescentTrainer, "get_checkpoint_state", _with_rng_state, mark="exact_recover", reason=reason)
    patch(module.GradientDescentTrainer, "_maybe_restore_checkpoint", _resuming_in_place, mark="exact_recover",
          reason=reason)
    patch(module.GradientDescentTrainer, "_try_train", _keeping_finished_metrics, mark="exact_recover",
          reason=reason + "; a finished run keeps its metrics")


def _keeping_finished_metrics(original_try_train):
    def _try_train(self):
        finished = self._num_epochs > 0 and self._start_after_epochs_completed >= self._num_epochs
        metrics, epoch = original_try_train(self)
        last = os.path.join(self._serialization_dir or "", f"metrics_epoch_{self._num_epochs - 1}.json")
        if finished and self._serialization_dir and os.path.isfile(last):
            with open(last, encoding="utf-8") as file:
                metrics = {**json.load(file), **metrics}
        return metrics, epoch

    return _try_train


def _with_rng_state(original_state):
    def get_checkpoint_state(self):
        checkpoint = original_state(self)
        if checkpoint is not None and not self._distributed:
            checkpoint.trainer_state["rng_state"] = rng_state()
        return checkpoint

    return get_checkpoint_state


def _resuming_in_place(original_restore):
    def _maybe_restore_checkpoint(self) -> None:
        checkpointer, loaded = self._checkpointer, []
        if checkpointer is not None:  # keep what the original loads (it keeps nothing but its effects)
            load = checkpointer.load_checkpoint
            checkpointer.load_checkpoint = lambda: loaded.append(load()) or loaded[-1]
        try:
            original_restore(self)
        finally:
            if checkpointer is not None:
                del checkpointer.load_checkpoint
        if not loaded or loaded[0] is None:
            return
        epochs, batches = self._start_after_epochs_completed, self._start_after_batches_in_epoch_completed
        if hasattr(checkpointer, "_last_save_num_batches_in_epoch_completed"):  # continue the save cadence
            checkpointer._last_save_num_epochs_completed = epochs
            checkpointer._last_save_num_batches_in_epoch_completed = batches
        state = loaded[0].trainer_state.get("rng_state")
        if state is not None and not self._distributed:
            self.data_loader = ResumingDataLoader(
                self, epochs, batches * self._num_gradient_accumulation_steps, state)

    return _maybe_restore_checkpoint

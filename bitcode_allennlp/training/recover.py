"""Exact `allennlp train --recover`: the random generator states a checkpoint needs, and where to put them back.

`bitcode_allennlp.compat` (`exact_recover`) adds `rng_state()` to every checkpoint's training state and, when a
run is recovered, puts a `ResumingDataLoader` in front of the trainer's data loader. AllenNLP replays the data
loader from the start of training up to the checkpoint (without training), so the data order comes back by
itself; the generators that training itself draws from (dropout) are put back by `ResumingDataLoader` at the
moment the uninterrupted run was at when it saved the checkpoint. Imported by compat when AllenNLP's trainer is.
"""
import random
from typing import Any, Dict

import numpy
import torch


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

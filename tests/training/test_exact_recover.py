"""Exact `allennlp train --recover` (`bitcode_allennlp.host.recover`, patch ``exact_recover``) on a toy model: the
resumed run ends with the same weights as the uninterrupted one, and keeps the checkpoint cadence. The full-size
check, with a killed `allennlp train` process, is `tests/reliability/test_recover.py`."""
import pytest
import torch


def toy_training(serialization_dir, save_every_num_batches=None, stop_at=None):
    """Trains a linear model with dropout on shuffled toy data (8 instances, batches of 2, 2 epochs) with a
    checkpointer; `stop_at=(epoch, batch)` raises after that batch (an interruption). Returns the final state."""
    import random

    import numpy
    from allennlp.data import Instance, Vocabulary
    from allennlp.data.data_loaders import SimpleDataLoader
    from allennlp.data.fields import LabelField, TensorField
    from allennlp.models import Model
    from allennlp.training import Checkpointer, GradientDescentTrainer
    from allennlp.training.callbacks import TrainerCallback

    class Toy(Model):
        def __init__(self, vocab):
            super().__init__(vocab)
            self.linear = torch.nn.Linear(4, 2)
            self.dropout = torch.nn.Dropout(0.5)

        def forward(self, x, y):
            return {"loss": torch.nn.functional.cross_entropy(self.linear(self.dropout(x)), y)}

    class Interrupt(TrainerCallback):
        def on_batch(self, trainer, batch_inputs, batch_outputs, batch_metrics, epoch, batch_number,
                     is_training, **kwargs):
            if (epoch, batch_number) == stop_at:
                raise KeyboardInterrupt

    random.seed(1), numpy.random.seed(1), torch.manual_seed(1)  # as prepare_environment does
    data = [Instance({"x": TensorField(torch.randn(4)), "y": LabelField(i % 2, skip_indexing=True)})
            for i in range(8)]
    vocab = Vocabulary()
    model = Toy(vocab)
    trainer = GradientDescentTrainer(
        model, torch.optim.SGD(model.parameters(), lr=0.5), SimpleDataLoader(data, 2, shuffle=True, vocab=vocab),
        num_epochs=2, serialization_dir=str(serialization_dir), callbacks=[Interrupt(str(serialization_dir))],
        checkpointer=Checkpointer(str(serialization_dir), save_every_num_batches=save_every_num_batches,
                                  keep_most_recent_by_count=None))
    trainer.train()
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("save_every_num_batches, stop_at", [(2, (0, 3)), (None, (1, 1))])
def test_recover_continues_the_interrupted_run_exactly(tmp_path, monkeypatch, save_every_num_batches, stop_at):
    from allennlp.training import GradientDescentTrainer

    def interrupted_then_resumed(directory):
        with pytest.raises(KeyboardInterrupt):
            toy_training(directory, save_every_num_batches, stop_at)
        return toy_training(directory, save_every_num_batches)  # recovers from the last checkpoint

    uninterrupted = toy_training(tmp_path / "a", save_every_num_batches)
    resumed = interrupted_then_resumed(tmp_path / "b")
    assert all(torch.equal(uninterrupted[k], resumed[k]) for k in uninterrupted)
    assert torch.load(next((tmp_path / "b").glob("training_state_*.th")))["rng_state"]["torch"].dtype == torch.uint8
    # The same interruption without the fix: dropout masks after the resume differ, and so do the weights.
    for name in ("get_checkpoint_state", "_maybe_restore_checkpoint"):
        monkeypatch.setattr(GradientDescentTrainer, name, getattr(GradientDescentTrainer, name).__wrapped__)
    drifted = interrupted_then_resumed(tmp_path / "c")
    assert not all(torch.equal(uninterrupted[k], drifted[k]) for k in uninterrupted)


def test_recover_keeps_the_checkpoint_cadence(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        toy_training(tmp_path, 3, stop_at=(0, 4))
    toy_training(tmp_path, 3)
    names = sorted(p.name for p in tmp_path.glob("model_state_*.th"))
    assert names == ["model_state_e0_b3.th", "model_state_e1_b0.th", "model_state_e1_b3.th", "model_state_e2_b0.th"]

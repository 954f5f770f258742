"""common/progress.py: reading AllenNLP's epoch lines and tqdm bars into a progress line with the time left."""
from bitcode_allennlp.common import progress
from bitcode_allennlp.common.progress import TrainingProgress, duration, seconds


def test_tqdm_times_and_durations():
    assert seconds("01:25") == 85 and seconds("1:02:03") == 3723 and seconds("?") is None
    assert duration(45) == "45 s" and duration(89) == "89 s" and duration(600) == "10 min"


def test_the_line_follows_epochs_and_bars(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    training = TrainingProgress(3)
    assert training.line() == "epoch 1/3: starting (0 s so far)"
    training.read("INFO Epoch 0/2\nloss: 0.5 ||:  10%|#         | 12/120 [00:10<?, ?it/s]")
    assert training.line() == "epoch 1/3: batch 12/120 (0 s so far)"  # tqdm's estimate not printed yet
    clock[0] = 130.0
    training.read("\rloss: 0.4 ||:  40%|####      | 48/120 [00:30<01:05, 1.6it/s]")
    assert training.line() == "epoch 1/3: batch 48/120, about 65 s left in this epoch (30 s so far)"
    clock[0] = 200.0
    training.read("Epoch 1/2\n")  # the first epoch took 100 s: the pace of the rest
    clock[0] = 210.0
    training.read("\r 6/120 [00:10<01:40, 1.2it/s]")
    assert training.line() == "epoch 2/3: batch 6/120, about 3 min left (2 min so far)"  # 100 s + 1 x 100 s

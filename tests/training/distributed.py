"""Runs a function in a small CPU process group (gloo) for the distributed tests.

The workers are started with the `fork` start method: they inherit the already imported AllenNLP, whereas
`spawn` re-imports it in every worker (about 10 s on a 2-core machine). Each worker limits torch to one thread
(forked OpenMP pools are not safe to reuse). Where `fork` is unavailable we use `spawn`; the worker function
must then be importable (defined at module level).
"""
import multiprocessing
import os
import pickle
import socket
import tempfile
from typing import Any, Callable, List

import torch
import torch.distributed as dist
import torch.multiprocessing as torch_mp


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _worker(rank: int, world_size: int, port: int, out_dir: str, fn: Callable, args: tuple) -> None:
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size
    )
    try:
        result = fn(rank, world_size, *args)
    finally:
        dist.destroy_process_group()
    with open(os.path.join(out_dir, f"{rank}.pkl"), "wb") as f:
        pickle.dump(result, f)


def run_distributed(fn: Callable, world_size: int = 2, *args: Any) -> List[Any]:
    """Runs `fn(rank, world_size, *args)` in `world_size` gloo workers; returns their results by rank."""
    start_method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with tempfile.TemporaryDirectory() as out_dir:
        torch_mp.start_processes(
            _worker,
            args=(world_size, free_port(), out_dir, fn, args),
            nprocs=world_size,
            join=True,
            start_method=start_method,
        )
        results = []
        for rank in range(world_size):
            with open(os.path.join(out_dir, f"{rank}.pkl"), "rb") as f:
                results.append(pickle.load(f))
    return results

"""On the GPU machine: MiniLM rebuilt from the parts of make_model.py's sparse.safetensors (the word-piece rows the
runs index; zeros elsewhere) into a model folder, its SHA-256 checked against the one make_model.py wrote.
    python3 benchmarks/gpu/rebuild_model.py FILES_DIR OUT_DIR PART [PART ...]
FILES_DIR: config, tokenizer, EMBEDDING_NAME and SHA256 (.dev/a/minilm_files); OUT_DIR gets them and
model.safetensors."""
import hashlib
import shutil
import sys
from pathlib import Path
from typing import Sequence


def rebuild(files: Path, out: Path, parts: Sequence[Path], sha256: str) -> str:
    """Writes OUT/model.safetensors (and FILES' other files) from PARTS; returns its SHA-256, which must be SHA256."""
    import torch
    from safetensors.torch import load_file, save_file

    sparse = out / "sparse.safetensors"
    out.mkdir(parents=True, exist_ok=True)
    with open(sparse, "wb") as f:
        for part in parts:
            f.write(Path(part).read_bytes())
    state = load_file(str(sparse))
    keep, rows, shape = state.pop("__keep_ids"), state.pop("__rows"), state.pop("__shape")
    full = torch.zeros(tuple(shape.tolist()), dtype=rows.dtype)  # (vocab, 384)
    full[keep] = rows
    state[(files / "EMBEDDING_NAME").read_text()] = full
    shutil.copytree(files, out, dirs_exist_ok=True)
    save_file(state, str(out / "model.safetensors"))
    sparse.unlink()
    digest = hashlib.sha256((out / "model.safetensors").read_bytes()).hexdigest()
    if digest != sha256:
        raise SystemExit(f"{out / 'model.safetensors'}: SHA-256 {digest}, not {sha256}: a part is missing or damaged")
    return digest


if __name__ == "__main__":
    files, out = Path(sys.argv[1]), Path(sys.argv[2])
    print(rebuild(files, out, [Path(p) for p in sys.argv[3:]], (files / "SHA256").read_text().strip()))

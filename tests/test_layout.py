"""The package's layers: the shared foundation never imports a pipeline stage or task package (issue 18).

Foundation: `structs/` (pure-torch structures), `code_format`/`codes` (the code format), `common/` (the hashing model
base, checks, batching), `modules/` (the hash layer, the loss), `data/` (readers, samplers), `training/`. Stages and
tasks built on it: `tagging/`, `parsing/` (its pure-Python `parsing/trees.py` excepted: read by the PTB reader),
`code_stage/`, `bits/`, `spacy_components/`. Read from the source (every `import`, also inside functions).
"""
import ast
from pathlib import Path

import bitcode_allennlp

PACKAGE = Path(bitcode_allennlp.__file__).parent
FOUNDATION = ("structs", "code_format", "codes", "common", "modules", "data", "training")
LATER = ("tagging", "parsing", "code_stage", "validation", "bits", "spacy_components")
ALLOWED = {
    "bitcode_allennlp.parsing.trees",  # pure Python, no AllenNLP (like structs/): trees for the PTB reader
    "bitcode_allennlp.bits.command",  # common/light_cli.py: the light `allennlp bits` entry point dispatches to it
}


def imported_modules(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def test_foundation_does_not_import_later_stages():
    wrong = []
    for top in FOUNDATION:
        paths = sorted((PACKAGE / top).rglob("*.py")) if (PACKAGE / top).is_dir() else [PACKAGE / f"{top}.py"]
        assert paths and all(path.exists() for path in paths), top
        for path in paths:
            for module in imported_modules(path):
                parts = module.split(".")
                if parts[0] == "bitcode_allennlp" and len(parts) > 1 and parts[1] in LATER and module not in ALLOWED:
                    wrong.append(f"{path.relative_to(PACKAGE)} imports {module}")
    assert not wrong, wrong


def test_the_check_reads_imports_inside_functions(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from bitcode_allennlp.code_stage.code_batch import code_batch_tensors\n")
    assert list(imported_modules(source)) == ["bitcode_allennlp.code_stage.code_batch"]

"""The package's layers (docs/method.md, "Repository layout"): a module imports only from its own layer or the
layers below, and no module imports itself back through others (no import cycle). Read from the source: every
`import`, also inside functions. No exceptions. Nothing in the package imports `tests` (the harness the tests and
benchmarks share, `tests/harness/`, stays out of the runtime package).

  0 `host/`, and the root's `version`, `resources`, `plm`, `plugin`: the AllenNLP host layer (`plugin`, the name
    AllenNLP imports, loads every module at run time: no import statement) and where files are
  1 `structs/`, `common/`, `tasks/`: the foundation (pure structures and trees, the code format, checks, text; the
    tasks' plug-ins and their registry)
  2 `modules/`, `data/`, `training/`: components registered with AllenNLP
  3 `model/`, `tagging/`, `parsing/`: what a model is, and the task models on it
  4 `code_stage/`, `bits/`, `spacy_components/`, the root's `api`, `demo`, `recipes` and `__init__` (`load`): stages
    and tools
"""
import ast
from pathlib import Path
from typing import Dict, Iterator, List, Set

import pytest

import bitcode_allennlp

PACKAGE = Path(bitcode_allennlp.__file__).parent
LAYERS = {
    0: ("host", "version", "resources", "plm", "plugin"),
    1: ("structs", "common", "tasks"),
    2: ("modules", "data", "training"),
    3: ("model", "tagging", "parsing"),
    4: ("code_stage", "bits", "spacy_components", "api", "demo", "recipes", "__init__"),
}
LAYER_OF = {top: layer for layer, tops in LAYERS.items() for top in tops}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path) -> Iterator[str]:
    """Every module an import statement names: `import a.b` -> a.b; `from a import b, c` -> a.b and a.c (a module
    or a name of a: `package_graph` resolves each to the longest module it names)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def package_graph() -> Dict[str, Set[str]]:
    """Module -> the package's modules it imports (a name is resolved to the longest module it names)."""
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in paths.items():
        targets = set()
        for module in imported_modules(path):
            while module and module not in paths:
                module = module.rpartition(".")[0]
            if module.startswith("bitcode_allennlp") and module != name:
                targets.add(module)
        graph[name] = targets
    return graph


def layer(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    assert top in LAYER_OF, f"{module}: its folder {top!r} is in no layer (add it to LAYERS and the README)"
    return LAYER_OF[top]


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_folder_has_a_layer():
    for module in package_graph():
        layer(module)


def test_imports_go_down_the_layers():
    graph = package_graph()
    wrong = [f"{module} (layer {layer(module)}) imports {target} (layer {layer(target)})"
             for module, targets in sorted(graph.items())
             for target in sorted(targets) if layer(target) > layer(module)]
    assert not wrong, wrong


def test_no_import_cycle():
    assert cycles(package_graph()) == []


def test_the_package_imports_nothing_from_the_tests():
    """The harness (`tests/harness/`: browser driver, real EVALB) and the tests stay outside the runtime package."""
    wrong = [f"{module_name(path)} imports {module}" for path in sorted(PACKAGE.rglob("*.py"))
             for module in imported_modules(path) if module == "tests" or module.startswith("tests.")]
    assert not wrong, wrong


def test_the_cycle_check_finds_a_cycle_and_imports_inside_functions(tmp_path):
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from bitcode_allennlp.common import codes\n")
    assert list(imported_modules(source)) == ["bitcode_allennlp.common.codes"]


@pytest.mark.parametrize("folder", sorted(top for tops in LAYERS.values() for top in tops
                                          if (PACKAGE / top).is_dir()))
def test_the_layout_page_names_each_folder(folder):
    text = (PACKAGE.parent / "docs" / "method.md").read_text()
    layout = text[text.index("## Repository layout"):].split("\n## ")[0]
    assert f" {folder}/ " in layout or f"\n  {folder}/" in layout


MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 64
MAX_PARAMETERS = 8
ALLENNLP_SIGNATURES = {"on_batch"}  # `TrainerCallback.on_batch`: AllenNLP calls it with these arguments


def registered(node: ast.ClassDef) -> bool:
    """A class decorated `@X.register(...)`: AllenNLP builds it from a config, one constructor parameter per key."""
    return any(isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "register"
               for d in node.decorator_list)


def oversized(path: Path, root: Path = PACKAGE) -> Iterator[str]:
    source = path.read_text()
    lines = len(source.splitlines())
    if lines > MAX_MODULE_LINES:
        yield f"{path.relative_to(root)}: {lines} lines"
    tree = ast.parse(source)
    constructors = {id(item) for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and registered(node)
                    for item in node.body if isinstance(item, ast.FunctionDef) and item.name == "__init__"}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        where = f"{path.relative_to(root)}:{node.lineno} {node.name}"
        if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES:
            yield f"{where}: {node.end_lineno - node.lineno + 1} lines"
        arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        count = len([a for a in arguments if a.arg not in ("self", "cls")])
        if count > MAX_PARAMETERS and id(node) not in constructors and node.name not in ALLENNLP_SIGNATURES:
            yield f"{where}: {count} parameters (group them in a small dataclass)"


def test_no_large_module_long_function_or_long_signature():
    """About 600 lines a module, 60 a function, 8 parameters a signature; registered constructors are exempt from
    the parameter count (their parameters are the config's keys, as in allennlp-models)."""
    found = [problem for path in sorted(PACKAGE.rglob("*.py")) for problem in oversized(path)]
    assert not found, found


def test_the_size_check_finds_a_long_signature(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f(a, b, c, d, e, f, g, h, i):\n    pass\n\n\n@Model.register('x')\nclass M:\n"
                      "    def __init__(self, a, b, c, d, e, f, g, h, i):\n        pass\n")
    assert [problem.split(": ", 1)[1] for problem in oversized(source, tmp_path)] == [
        "9 parameters (group them in a small dataclass)"]

"""The package's shape: no import circles between modules, and no module importing from a layer above its own.

Imports are read from the source (also those inside functions, which would otherwise hide a circle), so the
test fails on the commit that adds a circle or an upward import, not when it first bites at run time.
"""

from __future__ import annotations

import ast
from pathlib import Path

import treenets

PACKAGE = Path(treenets.__file__).parent

# Each top-level module or subpackage of treenets, by layer: a unit may import from its own layer and below.
# A task names its config schema's sections and its predictor, so the tasks sit above both; the config union and
# the predictors read the tasks from the registry, which hands itself down to them (`config.use_task_registry`).
LAYERS = [
    {"errors", "version", "limits", "console", "files", "folders", "devices", "schema", "vocab", "checkpoint", "runlog",
     "optim"},
    {"trees", "text"},
    {"data"},
    {"nn"},
    {"config", "zoo"},
    {"predictors"},
    {"tasks"},
    {"train", "cards", "syneval", "golden", "convert", "report", "evaluate", "parsing"},
    {"serve", "treenets"},
    {"commands"},
    {"cli", "__main__"},
]
LEVEL = {unit: level for level, units in enumerate(LAYERS) for unit in units}


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(("treenets", *path.relative_to(PACKAGE).with_suffix("").parts))
        modules[name.removesuffix(".__init__")] = path
    return modules


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the treenets modules it imports (anywhere in its source)."""

    def owner(name: str) -> str:  # `treenets.x.y` may name a module or something inside one
        while name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {owner(a.name) for a in node.names if a.name.split(".")[0] == "treenets"}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("treenets"):
                found |= {owner(f"{node.module}.{a.name}") for a in node.names}
        graph[name] = found - {name}
    return graph


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "treenets"


def test_every_unit_has_a_layer():
    units = {_unit(m) for m in _modules()}
    assert units <= set(LEVEL), f"place {sorted(units - set(LEVEL))} in LAYERS"


def test_no_module_imports_from_a_layer_above_its_own():
    upward = sorted(f"{module} -> {target}" for module, targets in _imports(_modules()).items() for target in targets
                    if LEVEL[_unit(target)] > LEVEL[_unit(module)])
    assert upward == []


def test_no_import_circle():
    graph = _imports(_modules())
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> list[str] | None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                return [*path[path.index(target):], target] if target in path else [module, target]
            if target not in state:
                circle = visit(target, [*path, target])
                if circle:
                    return circle
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state:
            circle = visit(module, [module])
            assert circle is None, " -> ".join(circle)

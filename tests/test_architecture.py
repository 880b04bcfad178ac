"""The package's shape: no import circles between modules, and no module importing from a layer above its own.

Imports are read from the source (also those inside functions, which would otherwise hide a circle), so the
test fails on the commit that adds a circle or an upward import, not when it first bites at run time.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import treenets

PACKAGE = Path(treenets.__file__).parent

# Each top-level module or subpackage of treenets, by layer: a unit may import from its own layer and below.
# A task names its config schema's sections and its predictor, so the tasks sit above both; the config union and
# the predictors read the tasks from the registry, which hands itself down to them (`config.use_task_registry`).
# The workflows are one unit but `serve`, which reads models through the package's own `treenets.load`.
LAYERS = [
    {"core"},
    {"trees", "text"},
    {"data"},
    {"nn"},
    {"config", "zoo"},
    {"predictors"},
    {"tasks"},
    {"workflows", "report"},
    {"workflows.serve", "treenets"},
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
    if ".".join(parts[1:3]) in LEVEL:
        return ".".join(parts[1:3])
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


# The layers that serve every model: they learn what a model offers from its folder's registration
# (`treenets.nn.registry`) and name no model themselves (identifiers, imports and strings that are a model's name,
# kind or kernel; docstrings and the prose of messages aside).
SHARED = ["workflows", "zoo", "config", "core", "report", "commands", "trees", "predictors", "tasks", "nn.backend",
          "nn.registry", "nn.official", "nn.encoders", "nn.tree_models", "nn.pair_classifier", "nn.sequence_classifier"]
# Where naming a model is the plain truth, each with why (at most five): "module: text -> model".
NAMED_MODELS_ALLOWED: dict[str, str] = {
    "treenets.trees.evaluation: compound-pcfg -> compound-pcfg":
        "parse-eval --output writes the trees in the format of Kim et al.'s compare_trees.py into a folder named "
        "after that code, compound-pcfg/: a format's name, which the report's users know it by",
    "treenets.predictors.tree_sources: onlstm-ptb-small -> onlstm":
        "the default of the Tree-LSTM tasks' data.parser: the shipped model (a zoo name) that induces the trees of "
        "sentences that come without one, as a task's default model is named in its config",
}


def _words(identifier: str) -> list[str]:
    """An identifier's or a dotted path's words, lower case: `ONLSTMConfig` -> onlstm, config."""
    return [w.lower() for w in re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+", identifier)]


def _model_tokens() -> dict[str, str]:
    """A model's words, joined (`orderedmemory`), -> the model: its name, title, folder, kernels and fixture kinds."""
    from treenets.nn.registry import all_models

    tokens = {}
    for name, model in all_models().items():
        names = {name, model.title.split(" (")[0].replace("-", ""), model.package.rsplit(".", 1)[1], *model.fixtures,
                 *(k.name for k in model.kernels)}
        tokens.update({"".join(_words(n)): name for n in names})
    # Ordered Memory's own vocabulary: its trees are built from the memory slots it writes each token at.
    tokens.update({"".join(_words(n)): "ordered-memory" for n in ("tree_from_slots",)})
    return tokens


def _names_a_model(text: str, tokens: dict[str, str]) -> str | None:
    """The model `text` (an identifier, a dotted path, or a short string) names by a whole run of its words."""
    words = _words(text)
    for start in range(len(words)):
        for end in range(start + 1, len(words) + 1):
            if "".join(words[start:end]) in tokens:
                return tokens["".join(words[start:end])]
    return None


def _shared_modules() -> dict[str, Path]:
    return {name: path for name, path in _modules().items()
            if any(name == f"treenets.{unit}" or name.startswith(f"treenets.{unit}.") for unit in SHARED)}


def _named_models(path: Path, tokens: dict[str, str]) -> list[str]:
    """`line: text -> model` for each identifier, import or short string constant of the module naming a model."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        texts = []
        if isinstance(node, ast.Name):
            texts = [node.id]
        elif isinstance(node, ast.Attribute):
            texts = [node.attr]
        elif isinstance(node, ast.ImportFrom):
            texts = [node.module or "", *(a.name for a in node.names)]
        elif isinstance(node, ast.Import):
            texts = [a.name for a in node.names]
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            texts = [node.name]
        elif isinstance(node, ast.arg) or isinstance(node, ast.keyword) and node.arg:
            texts = [node.arg]
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
              and " " not in node.value.strip()):  # a name or a kind, not the prose of a message
            texts = [node.value]
        for text in texts:
            model = _names_a_model(text, tokens)
            if model:
                found.append(f"{getattr(node, 'lineno', '?')}: {text} -> {model}")
    return found


def _task_default(path: Path) -> set[str]:
    """In a task's module, what names the task's default model, which its config names (`model: ParserConfig =
    SpanParserConfig()`, or a classifier's default encoder, `encoder: PairEncoderConfig = ONLSTMPairEncoderConfig()`):
    the import of that one config class from the model's folder, and the class."""
    imports = [node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ImportFrom)
               and re.fullmatch(r"treenets\.nn\.\w+\.(model|encoders)", node.module or "")
               and all(a.name.endswith("Config") for a in node.names) and len(node.names) == 1]
    assert len(imports) <= 1, f"{path}: a task has one default model"
    # the import itself (its line), and the class wherever it is used
    return {text for node in imports for text in (f"{node.lineno}: {node.module}", node.names[0].name)}


def _unexpected_names(name: str, path: Path, tokens: dict[str, str]) -> set[str]:
    """`module: text -> model` for each place of a shared module that names a model, a task's default aside."""
    default = _task_default(path) if name.startswith("treenets.tasks.") else set()
    found = set()
    for place in _named_models(path, tokens):
        line, text = place.rsplit(" -> ", 1)[0].split(": ", 1)
        if text not in default and f"{line}: {text}" not in default:
            found.add(f"{name}: {place.split(': ', 1)[1]}")
    return found


def test_the_shared_layers_name_no_model():
    tokens = _model_tokens()
    named = {place for name, path in _shared_modules().items() for place in _unexpected_names(name, path, tokens)}
    assert sorted(named - set(NAMED_MODELS_ALLOWED)) == []
    assert len(NAMED_MODELS_ALLOWED) <= 5


def test_the_check_of_named_models_finds_them(tmp_path):
    """The negative control: a shared module that imports a model's network, names a fixture kind and takes an
    argument named after a model is caught; a docstring naming one is not."""
    module = tmp_path / "shared.py"
    module.write_text("from treenets.nn.onlstm.model import ONLSTMConfig\n"
                      "KINDS = {'structformer-mlm': 1}\n"
                      "def f(ordered_memory_slots):\n"
                      "    \"\"\"PRPN and the TreeLSTM in a docstring are prose.\"\"\"\n")
    named = {place.rsplit(" -> ", 1)[1] for place in _named_models(module, _model_tokens())}
    assert named == {"onlstm", "structformer", "ordered-memory"}


def test_a_task_may_name_its_default_model_and_nothing_else_of_a_model(tmp_path):
    """A task's module imports its default model's config (which its config names) and nothing else from a model
    folder: a constant beside the config class is caught, in a task's module too."""
    module = tmp_path / "task.py"
    module.write_text("from treenets.nn.structformer.model import StructFormerConfig\n"
                      "from treenets.nn.structformer.model import MAX_POSITIONS\n"
                      "class C:\n"
                      "    model: StructFormerConfig = StructFormerConfig()\n")
    found = _unexpected_names("treenets.tasks.masked", module, _model_tokens())
    assert found == {"treenets.tasks.masked: treenets.nn.structformer.model -> structformer"}  # the second import
    assert _unexpected_names("treenets.other", module, _model_tokens()) == {  # not a task: every one
        "treenets.other: treenets.nn.structformer.model -> structformer",
        "treenets.other: StructFormerConfig -> structformer"}

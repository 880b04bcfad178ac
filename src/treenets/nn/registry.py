"""The models, one folder each, and the one registry from a model's name to what its folder declares.

A model lives in its own package under `treenets/nn/` (`treenets/nn/onlstm/`, `treenets/nn/structformer/`, ...):
its network (`model.py`, read top to bottom), the conversion of the official `state_dict` (`convert.py`), the
fixture kinds `treenets check-golden` runs for it (`fixtures.py`), the C++ kernels it builds (`<name>_cpu.cpp`) and
what its configs offer the tasks. Its `__init__.py` declares all of that in one `register(Model(...))`; the shared
layers (`check-golden`, the kernels' builds, the tasks' config schemas, `treenets.workflows.convert`) read the registry
and name no model. Adding a model is adding such a folder: `all_models` finds and imports it.

What a folder names by module (`"convert:from_official"`) is imported only when it is used, so that the registry
is complete without importing every converter and fixture module (nor their imports: a converter may build a
shared classifier that imports the model back).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Protocol

from treenets.core.errors import TreenetsError

NN = Path(__file__).parent


@dataclass(frozen=True)
class Kernel:
    """C++ kernels a model or a shared layer builds (`treenets kernels build NAME`), compiled from `source` with the
    shared headers of `treenets/nn/csrc/`."""

    name: str  # the build's name, e.g. "onlstm"
    source: Path  # the .cpp file, in the model's folder (a shared layer's: beside its module)
    mixed_precision: bool = False  # whether they run their products in bfloat16 inside a bf16 block


@dataclass(frozen=True)
class Model:
    """What a model's folder declares about itself (`register(Model(...))` in its `__init__.py`).

    Attributes:
        name: the model's name (also the `name` of the configs it offers, e.g. `onlstm`).
        title: how people name it, with its paper (`ON-LSTM (Shen et al., ICLR 2019)`).
        package: the folder's package (`__name__` of its `__init__.py`); `convert` and `fixtures` name functions
            in its modules.
        configs: task name -> the config classes it offers that task's `model` section (each with a literal
            `name` and `build(vocab_size)`); the task's schema is the union of every model's (`model_configs`).
        encoders: kind of encoder -> the config classes of the encoders it offers the classifiers that read that
            kind (`treenets.nn.encoders`: "sentences", "pairs", "sequences"), each with a literal `name` and
            `build(in_dim)`; a classifier's `encoder` section is the union of every model's (`encoder_union`).
        convert: `"module:function"`: the official `state_dict` and constructor arguments -> the network, its
            weights loaded (`treenets.workflows.convert.from_official`); None where there is no official code to
            load from.
        fixtures: `check-golden` kind (the `kind` of a fixture's `config.json`) -> `"module:function"`, a
            `FixtureKind` run (`treenets.workflows.check_golden`).
        fixture_files: the `.npz` files its fixtures hold besides `config.json` and `outputs.npz` (`params.npz`
            and `inputs.npz` for most; a fixture whose inputs travel in `outputs.npz` lists `params.npz` only).
        fixture_inputs: the prefixes of the arrays of `outputs.npz` that are inputs, not outputs (e.g. `tokens_`
            where the inputs travel there): read by the kind, not compared.
        fixture_tolerance: None: every array within `treenets.workflows.check_golden.TOLERANCE` (1e-5); a number
            r: each array within r times its largest magnitude (at least 1), for references whose float32 rounding
            is larger than 1e-5 (the PCFGs': values derived from log Z in the hundreds); say why where it is
            declared.
        kernels: the C++ kernels it builds (`treenets.nn.backend`).
        order: its place among the models (the order of unions, listings and messages; then by name).
    """

    name: str
    title: str
    package: str
    configs: Mapping[str, tuple[type, ...]] = field(default_factory=dict)
    encoders: Mapping[str, tuple[type, ...]] = field(default_factory=dict)
    convert: str | None = None
    fixtures: Mapping[str, str] = field(default_factory=dict)
    fixture_files: tuple[str, ...] = ("params.npz", "inputs.npz")
    fixture_inputs: tuple[str, ...] = ()
    fixture_tolerance: float | None = None
    kernels: tuple[Kernel, ...] = ()
    order: int = 100

    def function(self, reference: str) -> Callable:
        """The function `"module:function"` names in this model's folder."""
        module, _, name = reference.partition(":")
        return getattr(importlib.import_module(f"{self.package}.{module}"), name)


class InducedTrees(Protocol):
    """What an encoder that induces a tree of each sequence it reads returns beside its vectors (a classifier's
    `encode_inducing`, `forward_inducing`): the tasks and predictors score and draw its trees through these two
    without knowing how the encoder builds them (Ordered Memory: bottom-up from the memory slots)."""

    row_name: str  # how `parse --distances` names the row of distances (Ordered Memory's: "slots")

    @property
    def distances(self) -> object:
        """[T, B] one number per token of each sequence (column b) that the trees are built from."""

    def trees(self, words: Sequence[Sequence[str]]) -> list:
        """The tree of each sequence read, column b over its tokens `words[b]`: a token, or nested lists."""


_MODELS: dict[str, Model] = {}


def register(model: Model) -> Model:
    """Add `model` to the registry under `model.name` (also from outside this package: a folder elsewhere that
    registers itself is found like the others once imported)."""
    if model.name in _MODELS and _MODELS[model.name] != model:
        raise ValueError(f"two models are named {model.name!r}: {_MODELS[model.name].package} and {model.package}")
    _MODELS[model.name] = model
    return model


@cache
def _import_model_folders() -> None:
    for module in sorted(pkgutil.iter_modules([str(NN)]), key=lambda m: m.name):
        if module.ispkg:
            importlib.import_module(f"treenets.nn.{module.name}")


def all_models() -> dict[str, Model]:
    """Model name -> `Model`, for every model folder under `treenets/nn/`, by `order`, then name."""
    _import_model_folders()
    return {m.name: m for m in sorted(_MODELS.values(), key=lambda m: (m.order, m.name))}


def model(name: str) -> Model:
    """The model registered as `name`."""
    models = all_models()
    if name not in models:
        raise TreenetsError(f"unknown model {name!r} (expected one of: {', '.join(models)})")
    return models[name]


def model_configs(task: str) -> tuple[type, ...]:
    """The config classes every model offers `task`'s `model` section, in the models' order."""
    return tuple(config for m in all_models().values() for config in m.configs.get(task, ()))


def _named_union(configs: tuple[type, ...], missing: str):
    """The type of a section that is one of `configs`, told apart by their `name` (the one class where there is
    one); `missing`, the error's message where there is none."""
    from typing import Annotated, Union

    from pydantic import Field

    if not configs:
        raise TreenetsError(missing)
    if len(configs) == 1:
        return configs[0]
    return Annotated[Union[configs], Field(discriminator="name")]  # noqa: UP007 - a runtime tuple


def config_union(task: str):
    """The type of `task`'s `model` section: the union of `model_configs(task)`, told apart by their `name`."""
    return _named_union(model_configs(task), f"no model offers a config to the {task} task")


def encoder_configs(kind: str, where: Callable[[type], bool] | None = None) -> dict[str, type]:
    """Name -> config class of every encoder of `kind` the models offer (`Model.encoders`), in the models' order;
    `where`: only the classes it accepts (what they declare, e.g. a memory cell)."""
    configs = {config.model_fields["name"].default: config for m in all_models().values()
               for config in m.encoders.get(kind, ())}
    return {name: config for name, config in configs.items() if where is None or where(config)}


def encoder_union(kind: str, where: Callable[[type], bool] | None = None):
    """The type of a classifier's `encoder` section: the union of `encoder_configs(kind, where)`, told apart by
    their `name`."""
    return _named_union(tuple(encoder_configs(kind, where).values()), f"no model offers an encoder of {kind}")


@dataclass(frozen=True)
class FixtureKind:
    """A `check-golden` fixture kind: the model that runs it and the files it reads."""

    kind: str
    model: Model

    @property
    def files(self) -> tuple[str, ...]:
        return self.model.fixture_files

    def tolerance(self, reference, default: float) -> float:
        """The largest difference allowed from the array `reference` (`Model.fixture_tolerance`)."""
        relative = self.model.fixture_tolerance
        return default if relative is None else relative * max(1.0, float(abs(reference).max(initial=0.0)))

    def reads_outputs(self, name: str) -> bool:
        """Whether the array `name` of `outputs.npz` is an input of the kind (`Model.fixture_inputs`)."""
        return name.startswith(self.model.fixture_inputs) if self.model.fixture_inputs else False

    def run(self, config: dict, arrays: dict[str, dict], path: Path) -> dict:
        """The kind's outputs for the fixture: `arrays` holds each of `files` by name without `.npz`, and
        `outputs` (a kind may read its inputs there); `path` names `config.json` in messages."""
        return self.model.function(self.model.fixtures[self.kind])(config, arrays, path)


def fixture_kinds() -> dict[str, FixtureKind]:
    """Every model fixture kind of every model, by kind."""
    return dict(sorted((kind, FixtureKind(kind, m)) for m in all_models().values() for kind in m.fixtures))


# The shared layers' kernels, whichever model runs them: the dynamic programs over binary trees (`treenets.nn.chart`,
# its source beside it: every grammar's Viterbi and inside pass).
LAYER_KERNELS = (Kernel("pcfg_chart", NN / "chart_cpu.cpp"),)


def kernels() -> dict[str, Kernel]:
    """Every model's C++ kernels, by name (the models' order), then the shared layers' (`LAYER_KERNELS`)."""
    return {k.name: k for k in (*(k for m in all_models().values() for k in m.kernels), *LAYER_KERNELS)}

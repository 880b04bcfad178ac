"""Training configurations: YAML files validated against typed schemas, with `--set key=value` overrides.

A config has the sections `task`, `data`, `model`, (`loss`,) `optim` and `train`. Each task declares its
schema beside its code (`treenets.tasks.<task>`, registered by name: the registry hands itself down to this
module, `use_task_registry`); model sections are declared beside the models (`treenets.nn`), optimiser
sections in `treenets.core.optim`, the `train` section here. Unknown keys, wrong types and impossible combinations
are refused with a message naming the file (or the `--set` option) and the key.

The recipes shipped with treenets (the checkout's `configs/`, which the package holds as `treenets/configs`)
are found by name wherever treenets is installed: `treenets train onlstm-ptb-small`; `treenets configs` lists
them and writes a copy to edit.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Hashable
from functools import cache
from itertools import takewhile
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import Field, TypeAdapter, ValidationError

from treenets.core.errors import TreenetsError
from treenets.core.files import output_file, read_text
from treenets.core.schema import BACKENDS, PRECISIONS, PositiveFloat, PositiveInt, Section


class TrainConfig(Section):
    seed: int = 141
    epochs: PositiveInt = 1000
    log_interval: PositiveInt = 200  # steps between progress lines in the metrics file
    checkpoint_minutes: PositiveFloat = 10.0  # also saved at every epoch end and on stop
    max_steps: PositiveInt | None = None  # stop after this many optimizer steps in all (resume included)
    max_minutes: PositiveFloat | None = None  # stop after this much training time in this run
    # stop when the validation score has not improved for this many epochs in a row (converged); None: never
    patience: PositiveInt | None = None
    device: str = "auto"  # auto, cpu, cuda, cuda:1, ...
    threads: PositiveInt | None = None  # torch intra-op threads; None: $TREENETS_THREADS, else torch's default
    # kernels (treenets.nn.backend); None: $TREENETS_BACKEND
    backend: Literal[BACKENDS] | None = None
    # fp32, or bf16: matrix products in bfloat16, weights and element-wise work in float32 (treenets.nn.precision)
    precision: Literal[PRECISIONS] = "fp32"


# The task registry (`treenets.tasks.all_tasks`): it sits above this module (each task imports its config's sections
# from here), so it is not imported here but hands itself down when it is imported, which the package does first.
_task_registry: Callable[[], dict[str, type]]


def use_task_registry(registry: Callable[[], dict[str, type]]) -> None:
    """Read the tasks from `registry` (task name -> task class): `treenets.tasks` calls this with `all_tasks`."""
    global _task_registry
    _task_registry = registry


def registered_tasks() -> dict[str, type]:
    """Task name -> task class, for every registered task (each declares its config schema, `Config`, its network
    builder, `build_net`, and its predictor, `Predictor`)."""
    return _task_registry()


def task_configs() -> list[type]:
    """The config schema of every registered task."""
    return [task.Config for task in registered_tasks().values()]


def _adapter() -> TypeAdapter:
    """The validator of every registered task's config (built again when the registry changes)."""
    return _adapter_for(tuple(task_configs()))


@cache
def _adapter_for(configs: tuple[type, ...]) -> TypeAdapter:
    if len(configs) == 1:
        return TypeAdapter(configs[0])
    return TypeAdapter(Annotated[Union[configs], Field(discriminator="task")])  # noqa: UP007 - a runtime tuple


def _unwrap(annotation) -> list:
    """The model classes an annotation allows: `X`, `X | Y`, `Annotated[X | Annotated[Y, ...], ...]` -> [X, Y]."""
    if get_origin(annotation) is Annotated:
        return _unwrap(get_args(annotation)[0])
    if get_origin(annotation) in (Union, UnionType):
        return [cls for member in get_args(annotation) for cls in _unwrap(member)]
    return [annotation] if hasattr(annotation, "model_fields") else []


def _tag_of(cls) -> str | None:
    for key in ("task", "name"):
        field = cls.model_fields.get(key)
        if field is not None and get_origin(field.annotation) is Literal:
            return get_args(field.annotation)[0]
    return None


def _schema_path(loc: tuple) -> tuple[list, tuple]:
    """Walk `loc` through the schema; returns the classes at the end and the key path without union tags."""
    classes, path = task_configs(), []
    for part in loc:
        fields = classes[0].model_fields if len(classes) == 1 else {}
        tagged = [c for c in classes if _tag_of(c) == part]
        if part not in fields and tagged:  # a discriminated union's tag: choose that member
            classes = tagged
            continue
        path.append(part)
        classes = _unwrap(fields[part].annotation) if part in fields else []
    return classes, tuple(path)


def _format_error(error: dict, source: str, overrides: dict[str, str]) -> str:
    _, loc = _schema_path(tuple(error["loc"]))
    key = ".".join(str(p) for p in loc)
    related = [opt for k, opt in overrides.items() if k == key or k.startswith(key + ".")]
    # the `--set` of the key, or of a key above it (`--set model.relations=[...]` for `model.relations.1`)
    covering = next((opt for k, opt in overrides.items() if k == key or key.startswith(k + ".")), None)
    where = f"--set {covering}" if covering else source
    if related and not covering:
        where += " with " + ", ".join(f"--set {opt}" for opt in related)
    if error["type"] == "extra_forbidden":
        classes, _ = _schema_path(tuple(error["loc"])[:-1])
        allowed = sorted(classes[0].model_fields) if classes else []
        hint = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
        # A key of another member of a union (e.g. an SGD option under `name: adam`): say whose it is.
        members, _ = _schema_path(tuple(error["loc"])[:-2])
        owners = [f"name: {_tag_of(c)}" for c in members if len(members) > 1 and loc[-1] in c.model_fields]
        if owners and not hint:
            suggestion = f"; it is an option of {' and '.join(owners)} only"
        return f"{where}: unknown key {key!r} (expected one of: {', '.join(allowed)}){suggestion}"
    if error["type"] in ("union_tag_not_found", "union_tag_invalid"):
        classes, _ = _schema_path(tuple(error["loc"]))
        tasks = task_configs()
        options = classes or tasks
        tag = "task" if options[0] in tasks else "name"
        expected = ", ".join(str(_tag_of(c)) for c in options)
        if error["type"] == "union_tag_not_found":
            return f"{where}: {'.'.join([*map(str, loc), tag])}: missing (expected one of: {expected})"
        value = error["input"].get(tag) if isinstance(error["input"], dict) else error["input"]
        return f"{where}: {'.'.join([*map(str, loc), tag])}: unknown {value!r} (expected one of: {expected})"
    message = error["msg"].removeprefix("Value error, ")
    return f"{where}: {key or 'config'}: {message}"


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (PyYAML would keep the last silently)."""

    def construct_mapping(self, node, deep=False):
        first = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # the keys a `<<` merge brings are meant to be overridden
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):
                continue  # an unhashable key: the base loader refuses it
            if key in first:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first on line {first[key].line + 1})", key_node.start_mark)
            first[key] = key_node.start_mark
        return super().construct_mapping(node, deep)


def parse_yaml(text: str):
    """The data of a YAML document, as `yaml.safe_load` reads it but refusing duplicate keys."""
    return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader: plain data only, never objects


def _set_dotted(raw: dict, dotted: str, value: Any, option: str) -> None:
    node = raw
    parts = dotted.split(".")
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise TreenetsError(f"--set {option}: {part!r} is not a section")
        node = child
    node[parts[-1]] = value


def parse_overrides(items: list[str]) -> dict[str, tuple[Any, str]]:
    """`["optim.lr=10", ...]` -> `{"optim.lr": (10, "optim.lr=10")}`; values are parsed as YAML."""
    parsed = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise TreenetsError(f"--set {item}: expected KEY=VALUE, e.g. --set optim.lr=10")
        try:
            value = parse_yaml(text)
        except yaml.YAMLError as exc:
            raise TreenetsError(f"--set {item}: value is not valid YAML ({exc.problem})") from None
        parsed[key.strip()] = (value, item)
    return parsed


# Keys that configs saved by treenets 0.1 hold and the current schema does not (see the README's changelog).
_SGD_ONLY = ("nt_asgd", "nonmono", "lr_scale_by_length")
_ADAM_ONLY = ("betas", "eps")


def _model_section(name) -> type | None:
    """The config class of the model section named `name` (its literal `name`), of any model folder."""
    from treenets.nn.registry import all_models

    for model in all_models().values():
        for configs in model.configs.values():
            for config in configs:
                if config.model_fields["name"].default == name:
                    return config
    return None


def upgrade_saved(raw: dict) -> dict:
    """A config saved in a checkpoint by an earlier treenets, in the current schema: its model section as its
    model's config upgrades it (`Section.upgrade_saved`, declared in the model's folder), and the flat optimiser
    section keeps only its optimiser's keys."""
    raw = yaml.safe_load(yaml.safe_dump(raw))
    model, optim = raw.get("model"), raw.get("optim")
    if isinstance(model, dict) and isinstance(model.get("name"), str):
        section = _model_section(model["name"])
        raw["model"] = section.upgrade_saved(model) if section else model
    if isinstance(optim, dict):
        name = optim.get("name", "sgd")
        dropped = (_ADAM_ONLY if name != "adam" else ()) + (_SGD_ONLY if name != "sgd" else ())
        for key in dropped:
            optim.pop(key, None)
    return raw


def build_config(raw: dict, source: str = "config", overrides: list[str] = ()):
    """Validate a config dict, after applying `--set` overrides; returns the task's config object.

    Raises:
        TreenetsError: naming the file (or the `--set` option) and the key at fault.
    """
    if not isinstance(raw, dict):
        raise TreenetsError(f"{source}: expected a mapping of sections (task, data, model, ...)")
    raw = yaml.safe_load(yaml.safe_dump(raw))  # deep copy of plain data
    parsed = parse_overrides(list(overrides))
    for key, (value, option) in parsed.items():
        _set_dotted(raw, key, value, option)
    try:
        return _adapter().validate_python(raw)
    except ValidationError as exc:
        options = {key: option for key, (_, option) in parsed.items()}
        lines = [_format_error(e, source, options) for e in exc.errors()]
        raise TreenetsError("\n".join(lines)) from None


def saved_config(saved: dict, path, overrides: list[str] = ()):
    """The validated config of a checkpoint read by `treenets.core.checkpoint.load`."""
    source = f"{path} (saved config)"
    try:
        raw = upgrade_saved(saved["config"])
    except yaml.YAMLError as exc:  # e.g. a tensor where a number belongs: not what treenets saves
        raise TreenetsError(f"{source}: not plain data ({str(exc)[:100]}); expected the config treenets "
                            "saved") from None
    return build_config(raw, source=source, overrides=overrides)


# The shipped recipes: in a checkout a link to its `configs/` folder, in a wheel a copy of it (pyproject.toml).
SHIPPED = Path(__file__).with_name("configs")


def shipped_configs() -> dict[str, Path]:
    """Name -> file of the configs shipped with treenets (`configs/NAME.yaml`)."""
    return {path.stem: path for path in sorted(SHIPPED.glob("*.yaml"))}


def find_config(ref: str | Path) -> Path:
    """The config file `ref` names: a file, else the shipped config of that name (`onlstm-ptb-small`).

    Raises:
        TreenetsError: when `ref` is neither, saying so and naming the shipped config it may have meant.
    """
    path, shipped = Path(ref), shipped_configs()
    if path.exists():
        return path
    if str(ref) in shipped:
        return shipped[str(ref)]
    meant = f"; the shipped {path.stem} is given by its name: `treenets train {path.stem}`" if path.stem in shipped \
        else ""
    raise TreenetsError(f"{path}: does not exist (expected a YAML config file, or the name of a config shipped with "
                        f"treenets: `treenets configs` lists them{meant})")


def print_configs() -> None:
    """`treenets configs`: each shipped config's name, task and model, and the start of its opening comment."""
    for name, path in shipped_configs().items():
        config = load_config(path)
        opening = takewhile(lambda line: line.startswith("#"), path.read_text().splitlines())
        comment = " ".join(line.lstrip("#").strip() for line in opening)
        print(f"{name}  ({config.task}, {config.model.name})\n  {comment[:110]}{'...' if len(comment) > 110 else ''}")


def copy_config(name: str, out: str | Path | None = None) -> None:
    """`treenets configs NAME`: print the shipped config `name`, or with `out` write a copy of it there to edit
    (a new file: an existing one is never replaced)."""
    shipped = shipped_configs()
    if name not in shipped:
        raise TreenetsError(f"unknown config {name!r}: expected one of {', '.join(shipped)}")
    text = shipped[name].read_text()
    if out is None:
        print(text, end="")
        return
    target = output_file(out, "--out", (".yaml", ".yml"))
    if target.exists():
        raise TreenetsError(f"--out {target}: exists; give a new file name (nothing was written)")
    target.write_text(text)
    print(f"wrote {target}")


def load_config(path: str | Path, overrides: list[str] = ()):
    """Read and validate a YAML config file, or a shipped config given by its name (`find_config`); see
    `build_config`."""
    path = find_config(path)
    text = read_text(path, "a YAML config file")
    try:
        raw = parse_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise TreenetsError(f"{path}{line}: not valid YAML ({getattr(exc, 'problem', exc)})") from None
    return build_config(raw if raw is not None else {}, source=str(path), overrides=overrides)


def to_dict(config) -> dict:
    """Plain (YAML/JSON/`weights_only`-safe) dict of a config."""
    return config.model_dump(mode="json")

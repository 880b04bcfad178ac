"""Training configurations: YAML files validated against typed schemas, with `--set key=value` overrides.

A config has the sections `task`, `data`, `model`, `loss`, `optim` and `train`. Unknown keys, wrong types
and impossible combinations are refused with a message naming the file (or the `--set` option) and the key.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from treenets.errors import TreenetsError

Probability = Annotated[float, Field(ge=0.0, lt=1.0)]
PositiveInt = Annotated[int, Field(gt=0)]
PositiveFloat = Annotated[float, Field(gt=0.0)]
NonNegativeFloat = Annotated[float, Field(ge=0.0)]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ONLSTMConfig(Section):
    """ON-LSTM language model; the names of the official `main.py` options are given in brackets."""

    name: Literal["onlstm"] = "onlstm"
    emb_size: PositiveInt = 400  # [emsize] also the size of the last layer
    hidden_size: PositiveInt = 1150  # [nhid]
    num_layers: PositiveInt = 3  # [nlayers]
    chunk_size: PositiveInt = 10  # [chunk_size] neurons per master-gate chunk
    dropout: Probability = 0.45  # [dropout] locked dropout on the last layer's output
    dropout_hidden: Probability = 0.3  # [dropouth] locked dropout between layers
    dropout_input: Probability = 0.5  # [dropouti] locked dropout on the embeddings
    dropout_embedding: Probability = 0.1  # [dropoute] drops whole words from the embedding matrix
    weight_drop: Probability = 0.45  # [wdrop] DropConnect on the hidden-to-hidden weights
    weight_drop_inverted: bool = False  # False: official (no rescale in training, x(1-p) in eval)
    tie_weights: bool = True
    fused: bool = True  # hand-derived backward over the whole sequence; False: plain autograd per step

    @model_validator(mode="after")
    def _sizes_divisible_by_chunk(self):
        sizes = {"emb_size": self.emb_size}
        if self.num_layers > 1:
            sizes["hidden_size"] = self.hidden_size
        for key, size in sizes.items():
            if size % self.chunk_size:
                raise ValueError(
                    f"{key}={size} is not divisible by chunk_size={self.chunk_size} "
                    "(every ON-LSTM layer is split into chunks of chunk_size neurons)"
                )
        return self

    def layer_sizes(self) -> list[int]:
        """`[emb] + [hidden] * (L - 1) + [emb]`: input size of the first layer, then each layer's size."""
        return [self.emb_size] + [self.hidden_size] * (self.num_layers - 1) + [self.emb_size]


class PTBDataConfig(Section):
    """A word-level corpus in the Mikolov PTB format: one sentence per line, `<eos>` appended to each."""

    path: str = "ptb_lm"  # folder, relative to the data root unless absolute
    train: str = "ptb.train.txt"
    valid: str = "ptb.valid.txt"
    test: str = "ptb.test.txt"
    batch_size: PositiveInt = 20
    eval_batch_size: PositiveInt = 10
    test_batch_size: PositiveInt = 1
    bptt: Annotated[int, Field(ge=2)] = 70
    variable_bptt: bool = True  # AWD-LSTM: N(bptt, 5) lengths, bptt/2 with probability 0.05


class LMLossConfig(Section):
    ar: NonNegativeFloat = 2.0  # [alpha] activation regularisation on the last layer's output
    tar: NonNegativeFloat = 1.0  # [beta] temporal activation regularisation (slowness)


class OptimConfig(Section):
    name: Literal["sgd", "adam"] = "sgd"
    lr: PositiveFloat = 30.0
    clip: NonNegativeFloat = 0.25  # max gradient norm; 0 = no clipping
    weight_decay: NonNegativeFloat = 1.2e-6
    nt_asgd: bool = True  # SGD only: switch to averaged SGD when validation stops improving
    nonmono: PositiveInt = 5  # the non-monotone trigger's window (epochs)
    lr_scale_by_length: bool = True  # lr x seq_len / bptt for variable-length BPTT batches
    betas: tuple[float, float] = (0.9, 0.999)
    eps: PositiveFloat = 1e-8


class TrainConfig(Section):
    seed: int = 141
    epochs: PositiveInt = 1000
    log_interval: PositiveInt = 200  # steps between progress lines in the metrics file
    checkpoint_minutes: PositiveFloat = 10.0  # also saved at every epoch end and on stop
    max_steps: PositiveInt | None = None  # stop after this many optimizer steps in all (resume included)
    max_minutes: PositiveFloat | None = None  # stop after this much training time in this run
    device: str = "auto"  # auto, cpu, cuda, cuda:1, ...
    threads: PositiveInt | None = None  # torch intra-op threads; None = torch's default


class LMConfig(Section):
    task: Literal["lm"]
    data: PTBDataConfig = PTBDataConfig()
    model: ONLSTMConfig = ONLSTMConfig()
    loss: LMLossConfig = LMLossConfig()
    optim: OptimConfig = OptimConfig()
    train: TrainConfig = TrainConfig()


TASKS = {"lm": LMConfig}
Config = Annotated[LMConfig, Field(discriminator="task")]
_ADAPTER = TypeAdapter(Config)


def _allowed_keys(loc: tuple) -> list[str]:
    """The field names valid at the parent of `loc`, walking the schema (discriminator tags are skipped)."""
    cls: Any = LMConfig
    for part in loc[:-1]:
        fields = getattr(cls, "model_fields", {})
        if part in fields:
            cls = fields[part].annotation
    return sorted(getattr(cls, "model_fields", {}))


def _format_error(error: dict, source: str, overrides: dict[str, str]) -> str:
    loc = tuple(p for p in error["loc"] if p != "lm")
    key = ".".join(str(p) for p in loc)
    related = [opt for k, opt in overrides.items() if k == key or k.startswith(key + ".")]
    where = f"--set {related[0]}" if key in overrides else source
    if related and key not in overrides:
        where += " with " + ", ".join(f"--set {opt}" for opt in related)
    if error["type"] == "extra_forbidden":
        allowed = _allowed_keys(loc)
        hint = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
        return f"{where}: unknown key {key!r} (expected one of: {', '.join(allowed)}){suggestion}"
    if error["type"] == "union_tag_not_found":
        return f"{where}: missing key 'task' (expected one of: {', '.join(TASKS)})"
    if error["type"] == "union_tag_invalid":
        return f"{where}: task: unknown task {error['input'].get('task')!r} (expected one of: {', '.join(TASKS)})"
    message = error["msg"].removeprefix("Value error, ")
    return f"{where}: {key or 'config'}: {message}"


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
            value = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise TreenetsError(f"--set {item}: value is not valid YAML ({exc.problem})") from exc
        parsed[key.strip()] = (value, item)
    return parsed


def build_config(raw: dict, source: str = "config", overrides: list[str] = ()) -> LMConfig:
    """Validate a config dict, after applying `--set` overrides.

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
        return _ADAPTER.validate_python(raw)
    except ValidationError as exc:
        options = {key: option for key, (_, option) in parsed.items()}
        lines = [_format_error(e, source, options) for e in exc.errors()]
        raise TreenetsError("\n".join(lines)) from None


def load_config(path: str | Path, overrides: list[str] = ()) -> LMConfig:
    """Read and validate a YAML config file; see `build_config`."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise TreenetsError(f"config file {path} does not exist") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise TreenetsError(f"{path}{line}: not valid YAML ({getattr(exc, 'problem', exc)})") from None
    return build_config(raw if raw is not None else {}, source=str(path), overrides=overrides)


def to_dict(config: LMConfig) -> dict:
    """Plain (YAML/JSON/`weights_only`-safe) dict of a config."""
    return config.model_dump(mode="json")

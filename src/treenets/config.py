"""Training configurations: YAML files validated against typed schemas, with `--set key=value` overrides.

A config has the sections `task`, `data`, `model`, `loss`, `optim` and `train`. Unknown keys, wrong types
and impossible combinations are refused with a message naming the file (or the `--set` option) and the key.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

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


class PRPNConfig(Section):
    """PRPN language model; the official `main_LM.py` option names are the same."""

    name: Literal["prpn"] = "prpn"
    emb_size: PositiveInt = 800  # [emsize]
    hidden_size: PositiveInt = 1200  # [nhid]
    num_layers: PositiveInt = 2  # [nlayers] reading layers
    nslots: PositiveInt = 15  # memory slots: how many past states the attention sees
    nlookback: PositiveInt = 5  # the parsing convolution reads nlookback + 1 embeddings
    resolution: PositiveFloat = 0.1  # temperature of the memory gates
    dropout: Probability = 0.7  # on the first reading layer's input and the decoder's input
    idropout: Probability = 0.5  # everywhere else
    rdropout: Probability = 0.5  # on the hidden state each reading layer feeds its cell
    tie_weights: bool = True  # [tied]
    hard: bool = True  # hardtanh memory gates instead of sigmoid ones
    res: Annotated[int, Field(ge=0)] = 0  # residual blocks in the predict network


ModelConfig = Annotated[ONLSTMConfig | PRPNConfig, Field(discriminator="name")]


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
    random_offset: bool = False  # PRPN: every epoch cuts the stream into columns from a random offset


class SentenceDataConfig(Section):
    """Sentences of treebanks, one per batch row (the PRPN unsupervised-parsing recipe).

    Treebanks are paths (files or folders of .mrg), paths under the data root, or the names nltk-sample,
    wsj22, wsj24. Words are preprocessed as for parsing evaluation (word tags only, lower-cased, digits -> N).
    """

    train: list[str] = ["nltk-sample", "wsj22"]
    valid: list[str] = ["wsj24"]
    min_count: PositiveInt = 3  # training words seen fewer times are read as <unk> (official: 3)
    batch_size: PositiveInt = 64
    eval_batch_size: PositiveInt = 64
    shuffle: bool = True  # a new order of the training sentences every epoch


class LMLossConfig(Section):
    ar: NonNegativeFloat = 2.0  # [alpha] activation regularisation on the last layer's output
    tar: NonNegativeFloat = 1.0  # [beta] temporal activation regularisation (slowness)


class OptimConfig(Section):
    name: Literal["sgd", "adam", "adagrad"] = "sgd"
    lr: PositiveFloat = 30.0
    clip: NonNegativeFloat = 0.25  # max gradient norm; 0 = no clipping
    weight_decay: NonNegativeFloat = 1.2e-6
    decay_embeddings: bool = True  # false: no weight decay on word embeddings
    nt_asgd: bool = True  # SGD only: switch to averaged SGD when validation stops improving
    nonmono: PositiveInt = 5  # the non-monotone trigger's window (epochs)
    lr_scale_by_length: bool = True  # lr x seq_len / bptt for variable-length BPTT batches
    betas: tuple[float, float] = (0.9, 0.999)
    eps: PositiveFloat = 1e-8
    lr_plateau_factor: Annotated[float, Field(gt=0.0, lt=1.0)] | None = None  # multiply lr on a plateau
    lr_plateau_patience: Annotated[int, Field(ge=0)] = 2  # epochs without a new best validation loss


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
    model: ModelConfig = ONLSTMConfig()
    loss: LMLossConfig = LMLossConfig()
    optim: OptimConfig = OptimConfig()
    train: TrainConfig = TrainConfig()


class SentenceLMConfig(Section):
    task: Literal["sentence-lm"]
    data: SentenceDataConfig = SentenceDataConfig()
    model: ModelConfig = PRPNConfig()
    loss: LMLossConfig = LMLossConfig(ar=0.0, tar=0.0)
    optim: OptimConfig = OptimConfig()
    train: TrainConfig = TrainConfig()


TreeEncoder = Literal["childsum-treelstm", "binary-treelstm", "lstm", "bilstm"]
# The optimisation of Tai et al. (2015) for both Tree-LSTM tasks.
TREE_LSTM_OPTIM = OptimConfig(name="adagrad", lr=0.05, weight_decay=1e-4, decay_embeddings=False, clip=0.0,
                              nt_asgd=False, lr_scale_by_length=False)


class RelatednessModelConfig(Section):
    """Tree-LSTM (or LSTM) sentence encoder and the similarity head of Tai et al. (2015)."""

    name: TreeEncoder = "childsum-treelstm"
    emb_size: PositiveInt = 300  # [input_dim] the word vectors' size
    mem_size: PositiveInt = 150  # [mem_dim]
    hidden_size: PositiveInt = 50  # [hidden_dim] of the similarity head
    num_classes: Annotated[int, Field(ge=2)] = 5  # relatedness scores 1..num_classes
    head_state: Literal["h", "c"] = "h"  # the root state the head compares: h (paper) or c (official port)
    freeze_embeddings: bool = False


class SICKDataConfig(Section):
    path: str = "sick"  # folder with train/, dev/ (SICK trial), test/ and the vocabulary
    vocab: str = "sick.vocab"  # one word per line, under `path`; 4 special tokens go in front
    trees: Literal["dependency", "constituency"] = "dependency"  # *.parents or *.cparents (binarised)
    embeddings: str | None = "sick/sick_embed.pth"  # a [vocab, emb] matrix in vocabulary order, or GloVe text
    batch_size: PositiveInt = 25
    eval_batch_size: PositiveInt = 100


class RelatednessConfig(Section):
    task: Literal["relatedness"]
    data: SICKDataConfig = SICKDataConfig()
    model: RelatednessModelConfig = RelatednessModelConfig()
    optim: OptimConfig = TREE_LSTM_OPTIM
    train: TrainConfig = TrainConfig(epochs=10, log_interval=20, seed=123)

    @model_validator(mode="after")
    def _trees_fit_the_encoder(self):
        if self.model.name == "binary-treelstm" and self.data.trees == "dependency":
            raise ValueError("model.name binary-treelstm needs data.trees: constituency (dependency trees have "
                             "any number of children; use childsum-treelstm)")
        return self


class SentimentModelConfig(Section):
    """Tree-LSTM (or LSTM) encoder with a softmax classifier (on every node for Tree-LSTMs)."""

    name: TreeEncoder = "binary-treelstm"
    emb_size: PositiveInt = 300
    mem_size: PositiveInt = 150
    dropout: Probability = 0.5  # on the classifier's input
    freeze_embeddings: bool = False


class SSTDataConfig(Section):
    path: str = "sst/trainDevTestTrees_PTB/trees"  # train.txt, dev.txt, test.txt
    classes: Literal["fine", "binary"] = "fine"
    embeddings: str | None = None  # GloVe-format text file; None: random initialisation
    batch_size: PositiveInt = 25
    eval_batch_size: PositiveInt = 100


class SentimentConfig(Section):
    task: Literal["sentiment"]
    data: SSTDataConfig = SSTDataConfig()
    model: SentimentModelConfig = SentimentModelConfig()
    optim: OptimConfig = TREE_LSTM_OPTIM
    train: TrainConfig = TrainConfig(epochs=10, log_interval=50, seed=123)

    @model_validator(mode="after")
    def _trees_fit_the_encoder(self):
        if self.model.name == "childsum-treelstm":
            raise ValueError("model.name: SST trees are binary constituency trees; use binary-treelstm (or lstm, "
                             "bilstm)")
        return self


TASKS = {"lm": LMConfig, "sentence-lm": SentenceLMConfig, "relatedness": RelatednessConfig,
         "sentiment": SentimentConfig}
AnyConfig = LMConfig | SentenceLMConfig | RelatednessConfig | SentimentConfig
Config = Annotated[AnyConfig, Field(discriminator="task")]
_ADAPTER = TypeAdapter(Config)


def _unwrap(annotation):
    """The model classes an annotation allows: `X`, `X | Y`, `Annotated[X | Y, ...]` -> [X, Y]."""
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, UnionType):
        return [a for a in get_args(annotation) if hasattr(a, "model_fields")]
    return [annotation] if hasattr(annotation, "model_fields") else []


def _tag_of(cls) -> str | None:
    for key in ("task", "name"):
        field = cls.model_fields.get(key)
        if field is not None and get_origin(field.annotation) is Literal:
            return get_args(field.annotation)[0]
    return None


def _schema_path(loc: tuple) -> tuple[list, tuple]:
    """Walk `loc` through the schema; returns the classes at the end and the key path without union tags."""
    classes, path = list(TASKS.values()), []
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
    where = f"--set {related[0]}" if key in overrides else source
    if related and key not in overrides:
        where += " with " + ", ".join(f"--set {opt}" for opt in related)
    if error["type"] == "extra_forbidden":
        classes, _ = _schema_path(tuple(error["loc"])[:-1])
        allowed = sorted(classes[0].model_fields) if classes else []
        hint = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
        return f"{where}: unknown key {key!r} (expected one of: {', '.join(allowed)}){suggestion}"
    if error["type"] in ("union_tag_not_found", "union_tag_invalid"):
        classes, _ = _schema_path(tuple(error["loc"]))
        options = classes or list(TASKS.values())
        tag = "task" if options[0] in TASKS.values() else "name"
        expected = ", ".join(str(_tag_of(c)) for c in options)
        if error["type"] == "union_tag_not_found":
            return f"{where}: {'.'.join([*map(str, loc), tag])}: missing (expected one of: {expected})"
        value = error["input"].get(tag) if isinstance(error["input"], dict) else error["input"]
        return f"{where}: {'.'.join([*map(str, loc), tag])}: unknown {value!r} (expected one of: {expected})"
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


def build_config(raw: dict, source: str = "config", overrides: list[str] = ()) -> AnyConfig:
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


def load_config(path: str | Path, overrides: list[str] = ()) -> AnyConfig:
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


def to_dict(config: AnyConfig) -> dict:
    """Plain (YAML/JSON/`weights_only`-safe) dict of a config."""
    return config.model_dump(mode="json")

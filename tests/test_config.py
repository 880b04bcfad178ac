"""Config validation: every mistake is named with its file (or --set option) and key."""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path

import pytest
import torch

from treenets.config import build_config, load_config, parse_yaml, to_dict
from treenets.core.errors import TreenetsError
from treenets.tasks import all_tasks

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_shipped_configs_are_valid(path):
    config = load_config(path)
    assert config.task == path.read_text().split("task: ")[1].split()[0]  # the file's task, validated


def test_paper_recipe():
    config = load_config(Path(__file__).resolve().parents[1] / "configs/onlstm-ptb.yaml")
    m, o = config.model, config.optim
    assert (m.emb_size, m.hidden_size, m.num_layers) == (400, 1150, 3)
    assert (m.chunk_size, m.dropout, m.dropout_hidden, m.dropout_input, m.dropout_embedding, m.weight_drop) == (
        10, 0.45, 0.3, 0.5, 0.1, 0.45)
    assert (o.lr, o.clip, config.data.batch_size, config.data.bptt, config.train.seed, config.train.epochs) == (
        30.0, 0.25, 20, 70, 141, 1000)


def test_ordered_memory_logic_recipe_is_the_official_one():
    """yikangshen/Ordered-Memory `proplog.py`'s defaults, and its evaluation with twice the slots."""
    config = load_config(Path(__file__).resolve().parents[1] / "configs/om-logic.yaml")
    m, e, o = config.model, config.model.encoder, config.optim
    assert (e.name, m.emb_size, e.hidden_size, e.slots, e.test_slots) == ("ordered-memory", 200, 200, 12, 24)
    assert (e.dropout, m.dropout_input, m.dropout_output, e.dropout_memory) == (0.2, 0.1, 0.3, 0.2)
    assert (o.name, o.lr, tuple(o.betas), o.eps, o.weight_decay, o.clip) == ("adam", 0.001, (0.0, 0.999), 1e-9,
                                                                            1.2e-6, 1.0)
    assert (o.lr_plateau_factor, o.lr_plateau_patience, o.lr_plateau_on) == (0.5, 2, "score")
    assert (config.data.batch_size, config.data.max_train_operators, config.train.seed) == (128, 6, 1111)


def test_unknown_key_names_file_key_and_suggestion():
    with pytest.raises(TreenetsError) as info:
        build_config({"task": "lm", "optim": {"lrr": 3}}, source="my.yaml")
    message = str(info.value)
    assert message.startswith("my.yaml: unknown key 'optim.lrr'")
    assert "did you mean 'lr'?" in message


def test_optimiser_sections_by_name():
    assert build_config({"task": "lm", "optim": {"lr": 3}}).optim.name == "sgd"  # no name: SGD, as before
    adam = build_config({"task": "lm", "optim": {"name": "adam", "betas": [0.0, 0.999]}}).optim
    assert (adam.lr, adam.betas) == (0.001, (0.0, 0.999)) and not hasattr(adam, "nt_asgd")
    relatedness = build_config({"task": "relatedness"}).optim
    assert (relatedness.name, relatedness.lr, relatedness.weight_decay, relatedness.clip) == ("adagrad", 0.05, 1e-4, 0)


def test_overrides_are_typed_and_named():
    config = build_config({"task": "lm", "model": {"name": "onlstm"}}, overrides=["optim.lr=10",
                                                                                  "model.tie_weights=false"])
    assert config.optim.lr == 10.0 and config.model.tie_weights is False
    with pytest.raises(TreenetsError, match=r"^--set optim.lr=fast: optim.lr"):
        build_config({"task": "lm"}, overrides=["optim.lr=fast"])
    with pytest.raises(TreenetsError, match="expected KEY=VALUE"):
        build_config({"task": "lm"}, overrides=["optim.lr"])


def test_chunk_size_must_divide_layer_sizes():
    with pytest.raises(TreenetsError, match="hidden_size=1150 is not divisible by chunk_size=4"):
        build_config({"task": "lm", "model": {"name": "onlstm", "emb_size": 400, "chunk_size": 4}}, source="c.yaml")


TASK_NAMES = ", ".join(sorted(all_tasks()))  # whatever tasks the registry holds (a new one adds itself)


@pytest.mark.parametrize("raw,message", [
    ({"task": "mt"}, f"task: unknown .mt. \\(expected one of: {TASK_NAMES}\\)"),
    ({}, f"task: missing \\(expected one of: {TASK_NAMES}\\)"),
    ({"task": "relatedness", "model": {"name": "binary-treelstm"}}, "binary-treelstm needs data.trees"),
    ({"task": "lm", "model": {"name": "onlstm", "dropout": 1.5}}, "model.dropout"),
    ({"task": "lm", "model": {"dropout": 0.5}}, "model.name: missing \\(expected one of: onlstm, prpn, lstm\\)"),
    ({"task": "lm", "data": {"batch_size": 0}}, "data.batch_size"),
    ({"task": "relatedness", "optim": {"name": "adagrad", "nt_asgd": False}},
     "unknown key 'optim.nt_asgd' .* it is an option of name: sgd only"),
    ({"task": "lm", "optim": {"name": "rmsprop"}}, "optim.name: unknown 'rmsprop' \\(expected one of: sgd, adam"),
    ({"task": "lm", "model": {"name": "onlstm", "fused": True}}, "unknown key 'model.fused'"),
    ([1, 2], "expected a mapping"),
    # a grammar's curriculum that shrinks (both were accepted: issue 65)
    ({"task": "pcfg", "data": {"length_increment": -1}}, "data.length_increment: Input should be greater than or "
                                                          "equal to 0"),
    ({"task": "pcfg", "data": {"final_max_length": 10}}, "data: final_max_length 10 is below max_length 30, the "
                                                         "curriculum's first length"),
])
def test_invalid_values(raw, message):
    with pytest.raises(TreenetsError, match=message):
        build_config(raw, source="c.yaml")


def test_yaml_syntax_error_names_the_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("task: lm\nmodel:\n  emb_size: [1, 2\n")
    with pytest.raises(TreenetsError, match=r"broken.yaml:\d+: not valid YAML"):
        load_config(path)
    with pytest.raises(TreenetsError, match="does not exist"):
        load_config(tmp_path / "absent.yaml")


def test_duplicate_key_names_the_key_and_line(tmp_path):
    # Before: YAML kept the last value silently.
    path = tmp_path / "twice.yaml"
    path.write_text("task: lm\ndata:\n  batch_size: 4\n  bptt: 12\n  batch_size: 8\n")
    with pytest.raises(TreenetsError, match=r"twice.yaml:5: .*duplicate key 'batch_size' \(first on line 3\)"):
        load_config(path)
    assert parse_yaml("a: &x {b: 1}\nc:\n  <<: *x\n  b: 2\n") == {"a": {"b": 1}, "c": {"b": 2}}  # merges override


def _number_leaves(node, path=()):
    """(dotted key, value) of every int and float in a config dict (booleans excluded), lists included."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        if isinstance(value, (dict, list)):
            yield from _number_leaves(value, (*path, str(key)))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            yield ".".join((*path, str(key))), value


def _with(raw, dotted, value):
    raw = copy.deepcopy(raw)
    *parents, last = dotted.split(".")
    node = raw
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    node[int(last) if isinstance(node, list) else last] = value
    return raw


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_number_refuses_booleans_and_non_finite_values(path):
    # Before: `batch_size: true` was read as 1 and `lr: .inf` or `.nan` accepted, in every section.
    raw = to_dict(load_config(path))
    leaves = list(_number_leaves(raw))
    assert leaves
    for key, value in leaves:
        with pytest.raises(TreenetsError, match=rf"{re.escape(key)}: true is a boolean; expected a number"):
            build_config(_with(raw, key, True), source="c.yaml")
        if isinstance(value, float):
            for bad in (math.inf, -math.inf, math.nan):
                with pytest.raises(TreenetsError, match=rf"{re.escape(key)}: Input should be a finite number"):
                    build_config(_with(raw, key, bad), source="c.yaml")


def test_non_finite_override_is_named(config_file):
    with pytest.raises(TreenetsError, match=r"^--set optim.lr=.nan: optim.lr: Input should be a finite number"):
        load_config(config_file(), ["optim.lr=.nan"])


@pytest.mark.parametrize("kind", ["binary", "folder", "checkpoint", "latin-1"])
def test_config_that_is_not_yaml_text_is_named(tmp_path, kind):
    # Before: UnicodeDecodeError or IsADirectoryError tracebacks.
    path = tmp_path / "c.yaml"
    if kind == "folder":
        path.mkdir()
    elif kind == "checkpoint":
        torch.save({"model": {"w": torch.ones(2)}}, path)
    else:
        path.write_bytes(bytes(range(256)) if kind == "binary" else "task: lm  # café\n".encode("latin-1"))
    expected = {"binary": ": binary file", "folder": ": a folder", "checkpoint": ": binary file",
                "latin-1": ":1: not UTF-8 text"}[kind]
    with pytest.raises(TreenetsError, match=rf"^{re.escape(str(path))}{expected}.*expected a YAML config file"):
        load_config(path)


def test_a_saved_config_is_upgraded_by_its_models_own_section():
    """A checkpoint's config from an earlier treenets loads: the ON-LSTM's section drops its `fused` (declared in its
    folder, `ONLSTMConfig.upgrade_saved`); another model's section keeps what it has, so `fused` there stays an
    error, and a config without the key is unchanged."""
    from treenets.config import saved_config

    earlier = {"task": "lm", "model": {"name": "onlstm", "emb_size": 20, "hidden_size": 30, "fused": True}}
    config = saved_config({"config": earlier}, "old.pt")
    assert (config.model.name, config.model.emb_size) == ("onlstm", 20) and "fused" not in to_dict(config)["model"]
    assert earlier["model"]["fused"] is True  # (the checkpoint's dict is left as it was)
    with pytest.raises(TreenetsError, match=r"old.pt \(saved config\).*unknown key 'model.fused'"):
        saved_config({"config": {"task": "lm", "model": {"name": "lstm", "fused": True}}}, "old.pt")
    today = {"task": "lm", "model": {"name": "onlstm", "emb_size": 20, "hidden_size": 30}}
    assert to_dict(saved_config({"config": today}, "new.pt")) == to_dict(build_config(today))

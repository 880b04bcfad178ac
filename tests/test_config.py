"""Config validation: every mistake is named with its file (or --set option) and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from treenets.config import build_config, load_config
from treenets.errors import TreenetsError

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


@pytest.mark.parametrize("raw,message", [
    ({"task": "mt"},
     "task: unknown .mt. \\(expected one of: char-lm, lm, logic, relatedness, sentence-lm, sentiment\\)"),
    ({}, "task: missing \\(expected one of: char-lm, lm, logic, relatedness, sentence-lm, sentiment\\)"),
    ({"task": "relatedness", "model": {"name": "binary-treelstm"}}, "binary-treelstm needs data.trees"),
    ({"task": "lm", "model": {"name": "onlstm", "dropout": 1.5}}, "model.dropout"),
    ({"task": "lm", "model": {"dropout": 0.5}}, "model.name: missing \\(expected one of: onlstm, prpn, lstm\\)"),
    ({"task": "lm", "data": {"batch_size": 0}}, "data.batch_size"),
    ({"task": "relatedness", "optim": {"name": "adagrad", "nt_asgd": False}},
     "unknown key 'optim.nt_asgd' .* it is an option of name: sgd only"),
    ({"task": "lm", "optim": {"name": "rmsprop"}}, "optim.name: unknown 'rmsprop' \\(expected one of: sgd, adam"),
    ({"task": "lm", "model": {"name": "onlstm", "fused": True}}, "unknown key 'model.fused'"),
    ([1, 2], "expected a mapping"),
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

"""SICK relatedness: the paper's target distribution, and training, evaluation and prediction end to end."""

from __future__ import annotations

import pytest
import torch
from helpers import tiny_sick, train_and_test

import treenets
from treenets.core import folders
from treenets.core.errors import TreenetsError
from treenets.predictors import Relatedness
from treenets.tasks.relatedness import sparse_target


def test_sparse_target_has_the_score_as_expectation():
    target = sparse_target(torch.tensor([3.6, 5.0, 1.0, 2.25]), 5)
    assert target[0].tolist() == pytest.approx([0, 0, 0.4, 0.6, 0])
    assert target[1].tolist() == pytest.approx([0, 0, 0, 0, 1])
    assert target[2].tolist() == pytest.approx([1, 0, 0, 0, 0])
    assert (target @ torch.arange(1.0, 6.0)).tolist() == pytest.approx([3.6, 5.0, 1.0, 2.25])


@pytest.mark.parametrize("encoder,trees", [("childsum-treelstm", "dependency"), ("binary-treelstm", "constituency"),
                                           ("lstm", "dependency"), ("binary-treelstm", "induced"),
                                           ("binary-treelstm", "balanced")])
def test_relatedness_trains_evaluates_and_predicts(tmp_path, data_root, capsys, encoder, trees):
    folder = tiny_sick(data_root, tmp_path / "sick")
    config = {"task": "relatedness",
              "data": {"path": str(folder), "trees": trees, "embeddings": str(data_root / "sick" / "sick_embed.pth"),
                       "batch_size": 8},
              "model": {"name": encoder, "mem_size": 12, "hidden_size": 6},
              "train": {"epochs": 2, "threads": 1, "log_interval": 1}}
    result = train_and_test(tmp_path, capsys, config)
    assert set(result) >= {"pearson", "spearman", "mse"} and result["pairs"] == 12
    model = treenets.load(tmp_path / "run" / "best.pt")
    a, b = "A man is playing a guitar", "A person is playing an instrument"
    parents = {"dependency": ("2 4 4 0 6 4", "2 4 4 0 6 4")}.get(
        trees, ("7 7 10 9 8 8 11 9 10 11 0", "7 7 10 9 8 8 11 9 10 11 0"))
    if encoder == "lstm":
        parents = (None, None)
    prediction = model.predict(a, b, *parents)
    assert isinstance(prediction, Relatedness) and 1.0 <= prediction.score <= 5.0
    assert prediction.scale == "1 (completely unrelated) to 5 (very related)"  # before: a bare number
    assert sum(prediction.distribution) == pytest.approx(1.0, abs=1e-5)
    assert prediction.score == pytest.approx(sum((k + 1) * p for k, p in enumerate(prediction.distribution)),
                                             abs=1e-4)
    if trees == "dependency" and encoder != "lstm":
        with pytest.raises(TreenetsError, match="this model reads dependency trees .* give its parents"):
            model.predict(a, b)
    elif encoder != "lstm":  # a sentence as typed, over the tree the model's parser induces (or its shape)
        typed = model.predict("A man is playing a guitar.", "A person is playing an instrument.")
        assert typed.tokens == [["A", "man", "is", "playing", "a", "guitar", "."],
                                ["A", "person", "is", "playing", "an", "instrument", "."]]
        assert typed.parser == {"balanced": "balanced"}.get(trees, "onlstm-ptb-small")
        assert 1.0 <= typed.score <= 5.0
    if trees in ("induced", "balanced"):  # the trees it trained on were built, not read from the cparents
        cached = list((folders.cache_dir() / "trees").glob("*.json"))  # the test's own cache, empty before
        assert len(cached) == (3 * 2 if trees == "induced" else 0)  # a file per split and side

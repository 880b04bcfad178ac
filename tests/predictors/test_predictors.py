"""Predictors: one base for loading, saving and predicting; typed results; checkpoints of earlier versions."""

from __future__ import annotations

import pytest
import torch
from helpers import tiny_config

import treenets
from treenets import checkpoint
from treenets.config import build_config
from treenets.errors import TreenetsError
from treenets.predictors import LanguageModel, Predictor, RelatednessPredictor, SentenceScore
from treenets.train import Trainer


@pytest.fixture(scope="module")
def best(tmp_path_factory):
    from helpers import write_corpus

    root = tmp_path_factory.mktemp("predictors")
    config = build_config(tiny_config(write_corpus(root / "corpus"), train={"max_steps": 3}))
    Trainer(config, root / "run", progress=False, log=lambda *_: None).run()
    return root / "run" / "best.pt"


def test_save_then_load_predicts_the_same(best, tmp_path):
    lm = treenets.load(best)
    assert isinstance(lm, LanguageModel) and type(Predictor.load(best)) is LanguageModel
    path = lm.save(tmp_path / "copy.pt")
    again = LanguageModel.load(path)
    assert again.vocab.words == lm.vocab.words and again.config == lm.config
    one, two = lm.predict("the dog of bird"), again.predict("the dog of bird")
    assert isinstance(one, SentenceScore) and one.logprobs == two.logprobs
    assert torch.equal(lm.distances("the dog of bird"), again.distances("the dog of bird"))


def test_a_checkpoint_of_another_task_is_refused_by_name(best):
    with pytest.raises(TreenetsError, match="a lm model, not for RelatednessPredictor .it loads as "
                                            "LanguageModel."):
        RelatednessPredictor.load(best)


def test_configs_saved_by_earlier_versions_load(best, tmp_path):
    """treenets 0.1 saved ON-LSTM's `fused` and a flat optimiser section with every optimiser's keys."""
    saved = checkpoint.load(best)
    saved["config"]["model"]["fused"] = True
    saved["config"]["optim"].update(betas=[0.9, 0.999], eps=1e-8)  # an SGD section with Adam's keys
    old = checkpoint.save({k: v for k, v in saved.items() if k not in ("format", "version")}, tmp_path / "old.pt")
    lm = treenets.load(old)
    assert lm.config.optim.name == "sgd" and not hasattr(lm.config.model, "fused")
    assert lm.score("the dog").logprobs == treenets.load(best).score("the dog").logprobs


def test_the_ptb_number_token_does_not_switch_lower_casing_off(best):
    # Before: PTB's vocabulary holds `N`, an upper-case word, so text was no longer lower-cased and `The`
    # became <unk> (and an error for a character model).
    from treenets.vocab import Vocab

    lm = LanguageModel.load(best)
    with_numbers = LanguageModel(lm.net, Vocab(lm.vocab.words + ["N"]), lm.config)
    assert with_numbers.tokenize("The Cat saw 3 dogs") == ["the", "cat", "saw", "N", "dogs"]
    cased = LanguageModel(lm.net, Vocab(lm.vocab.words + ["N", "Paris"]), lm.config)
    assert cased.tokenize("The Cat") == ["The", "Cat"]


def test_a_sentiment_tree_deeper_than_the_recursion_limit_is_classified():
    from treenets.config import build_config
    from treenets.predictors import SentimentClassifier
    from treenets.vocab import Vocab

    config = build_config({"task": "sentiment", "data": {"path": "sst"},
                           "model": {"name": "binary-treelstm", "emb_size": 4, "mem_size": 3}})
    vocab = Vocab(["<unk>", "a"])
    model = SentimentClassifier(config.model.build(len(vocab), 5), vocab, config)
    tree = "(X a)"
    for _ in range(3000):
        tree = f"(X (X a) {tree})"
    result = model.predict(tree)
    assert len(result.phrases) == 2 * 3001 - 1 and result.phrases[0][0] == " ".join(["a"] * 3001)

"""`treenets.load`: a trained model, ready to use, from a checkpoint."""

from __future__ import annotations

from treenets import checkpoint
from treenets.config import build_config
from treenets.vocab import Vocab


def wrapper_for(task: str):
    """The class that wraps a trained network of `task` for use (and builds its network)."""
    from treenets.tasks.lm import LanguageModel
    from treenets.tasks.relatedness import RelatednessPredictor
    from treenets.tasks.sentiment import SentimentPredictor

    return {"lm": LanguageModel, "sentence-lm": LanguageModel, "relatedness": RelatednessPredictor,
            "sentiment": SentimentPredictor}[task]


def load(path, device="cpu"):
    """See `treenets.load`."""
    saved = checkpoint.load(path)
    config = build_config(saved["config"], source=f"{path} (saved config)")
    wrapper = wrapper_for(config.task)
    net = wrapper.build_net(config, len(saved["vocab"]))
    checkpoint.load_weights(net, saved["model"], path)
    return wrapper(net.to(device), Vocab(saved["vocab"]), config, device=device)

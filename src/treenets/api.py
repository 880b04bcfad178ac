"""`treenets.load`: a trained model, ready to use, from a checkpoint."""

from __future__ import annotations

from treenets import checkpoint
from treenets.config import build_config
from treenets.vocab import Vocab


def load(path, device="cpu"):
    """See `treenets.load`."""
    from treenets.tasks.lm import LanguageModel

    wrappers = {"lm": LanguageModel}
    saved = checkpoint.load(path)
    config = build_config(saved["config"], source=f"{path} (saved config)")
    wrapper = wrappers[config.task]
    net = wrapper.build_net(config, len(saved["vocab"]))
    checkpoint.load_weights(net, saved["model"], path)
    return wrapper(net.to(device), Vocab(saved["vocab"]), config, device=device)

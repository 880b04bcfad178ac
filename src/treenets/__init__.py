"""treenets: tree-structured and tree-inducing recurrent networks in modern PyTorch."""

from treenets.errors import TreenetsError

__version__ = "0.1.0"
__all__ = ["TreenetsError", "__version__", "load"]


def load(path, device="cpu"):
    """Load a trained model from a treenets checkpoint, with its vocabulary, in eval mode.

    Args:
        path: a checkpoint written by `treenets train` (`best.pt` or `last.pt`).
        device: where to put the model (`"cpu"`, `"cuda"`, a `torch.device`).

    Returns:
        a language model (`treenets.tasks.lm.LanguageModel`: `score`, `distances`, `parse`), a relatedness
        model (`RelatednessPredictor.predict(a, b, a_parents, b_parents)`) or a sentiment classifier
        (`SentimentPredictor.predict(tree_or_sentence)`), each with its vocabulary and config.
    """
    from treenets.api import load as _load

    return _load(path, device=device)

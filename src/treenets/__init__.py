"""treenets: tree-structured and tree-inducing recurrent networks in modern PyTorch."""

from treenets import tasks as _tasks  # noqa: F401 - the task registry hands itself down to the layers below it
from treenets.core.errors import TreenetsError
from treenets.core.version import __version__

__all__ = ["TreenetsError", "__version__", "load"]


def load(name_or_path, device="cpu"):
    """Load a trained model with its vocabulary, in eval mode.

    Args:
        name_or_path: the name of a shipped model (`treenets models` lists them, e.g. `"onlstm-ptb-small"`),
            a model folder (`treenets export`), or a checkpoint written by `treenets train` (`best.pt`).
        device: where to put the model (`"cpu"`, `"cuda"`, a `torch.device`).

    On a CPU it computes on `$TREENETS_THREADS` threads when that is set (as every command does; their
    `--threads` wins), else on torch's default: every core (`torch.set_num_threads` changes it).

    Returns:
        the predictor of the checkpoint's task (`treenets.predictors`): a `LanguageModel` (`score`,
        `distances`, `parse`), a `RelatednessPredictor` (`predict(a, b)`: two sentences as typed) or a
        `SentimentClassifier` (`predict(sentence)`, or `predict(tree=...)`), each with its vocabulary and config.
    """
    from treenets.core.devices import set_threads
    from treenets.predictors import Predictor
    from treenets.predictors.ensemble import EnsembleParser
    from treenets.zoo.model_folder import ensemble_folder

    set_threads()
    folder = ensemble_folder(name_or_path)
    if folder is not None:  # an ensemble of models (`treenets ensemble`): its members' trees combined
        return EnsembleParser.from_folder(folder, device)
    return Predictor.load(name_or_path, device=device)

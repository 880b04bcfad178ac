"""Trained models evaluated: each on a split of its dataset (or a language model on a text file of sentences),
and the mean and standard deviation of every figure over several (the seeds of a recipe): `treenets eval`."""

from __future__ import annotations

import statistics
import sys

from tqdm.auto import tqdm

from treenets import zoo
from treenets.errors import TreenetsError
from treenets.predictors import LanguageModel, Predictor
from treenets.tasks import make_task
from treenets.tasks.metrics import Metric


def evaluate_model(ref, device, split: str = "valid", sentences: list[tuple[str, str]] | None = None,
                   batch_size: int | None = None, pretokenized: bool = False, root=None) -> Metric:
    """The metric of the model `ref` (a checkpoint, model folder or zoo name) on `split` of its dataset, or, given
    `sentences` (`(where, text)` pairs, e.g. from `treenets.files.read_sentences`), of a language model on them,
    each read on its own as `LanguageModel.score` reads it. A progress bar shows on a terminal only."""
    saved = zoo.read(ref)
    predictor = Predictor.from_checkpoint(saved, ref, device)
    if saved.get("kind") == "train-state" and saved["optimizer"]["kind"] == "asgd":
        print(f"note: {ref} is a train state; the averaged weights are in best.pt", file=sys.stderr)
    if sentences is not None:
        if not isinstance(predictor, LanguageModel):
            raise TreenetsError(f"eval --file: {ref} is a {predictor.config.task} model; --file is for language "
                                "models (the other tasks are evaluated on --split)")
        for where, text in sentences:  # a line with nothing to read: an error naming it
            predictor.read(text, pretokenized, where)
        return predictor.evaluate([text for _, text in sentences], batch_size or 64, pretokenized)
    task = make_task(predictor.config, predictor.vocab, root, device, splits=(split,))
    # disable=None: a progress bar on a terminal only, not in a log file
    with tqdm(total=task.eval_units(split, batch_size), unit=task.units, desc=f"eval {split}", leave=False,
              disable=None) as bar:
        return task.evaluate(predictor.net, split, batch_size=batch_size, progress=bar.update)


def summarize(results: list[dict]) -> dict | None:
    """Mean and standard deviation of every figure the results of several models share (None for one)."""
    if len(results) < 2:
        return None
    keys = [k for k, v in results[0].items() if isinstance(v, float) and all(k in r for r in results)]
    return {k: {"mean": statistics.fmean(r[k] for r in results), "std": statistics.stdev(r[k] for r in results)}
            for k in keys}

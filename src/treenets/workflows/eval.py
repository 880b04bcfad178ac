"""Trained models evaluated: each on a split of its dataset (or a language model on a text file of sentences),
and the mean and standard deviation of every figure over several (the seeds of a recipe): `treenets eval`
(`evaluate_models`)."""

from __future__ import annotations

import statistics
from pathlib import Path

from tqdm.auto import tqdm

from treenets.config import to_dict
from treenets.core.console import note
from treenets.core.devices import resolve_device
from treenets.core.errors import TreenetsError
from treenets.core.files import json_text, plot_file, read_sentences, record_outputs, report_folder, write_text_atomic
from treenets.core.runlog import format_breakdown, plot_breakdown
from treenets.predictors import LanguageModel, Predictor
from treenets.report import eval_document, write_report
from treenets.tasks import make_task, task_class
from treenets.tasks.metrics import Metric
from treenets.zoo import model_folder


def evaluate_model(ref, device, split: str = "valid", sentences: list[tuple[str, str]] | None = None,
                   batch_size: int | None = None, pretokenized: bool = False, root=None,
                   corpus=None, source: str = "--file") -> tuple[Metric, dict, dict]:
    """The metric of the model `ref` (a checkpoint, model folder or zoo name) on `split` of its dataset (of the
    folder `corpus` instead, for a task whose data is a folder: a prepared corpus or Mikolov files), or, given
    `sentences` (`(where, text)` pairs, e.g. from `treenets.core.files.read_sentences`), of a language model on them,
    each read on its own as `LanguageModel.score` reads it (the task's `evaluate_text`: a grammar's as a split's,
    its KL included; `source` names the text in messages); its network's config (the `model` section as a
    dict: models with the same one are seeds of one architecture); and counts beside the metric (of `corpus`:
    `unknown`, its tokens the model lacks, read as `<unk>`). A progress bar shows on a terminal only."""
    saved = model_folder.read(ref)
    predictor = Predictor.from_checkpoint(saved, ref, device)
    network = to_dict(predictor.config)["model"]
    if saved.get("kind") == "train-state" and saved["optimizer"]["kind"] == "asgd":
        note(f"note: {ref} is a train state; the averaged weights are in best.pt")
    if sentences is not None:
        if not isinstance(predictor, LanguageModel):
            raise TreenetsError(f"eval --file: {ref} is a {predictor.config.task} model; --file is for language "
                                "models (the other tasks are evaluated on --split)")
        metric = task_class(predictor.config.task).evaluate_text(predictor, sentences, batch_size, pretokenized,
                                                                 source, note)
        return metric, network, {}
    config = predictor.config
    if corpus is not None:
        if task_class(config.task).level is None:
            raise TreenetsError(f"eval --corpus: {ref} is a {config.task} model; --corpus is for language models")
        config = config.model_copy(update={"data": config.data.model_copy(update={"path": str(corpus)})})
    task = make_task(config, predictor.vocab, root, device, splits=(split,))
    # disable=None: a progress bar on a terminal only, not in a log file
    with tqdm(total=task.eval_units(split, batch_size), unit=task.units, desc=f"eval {split}", leave=False,
              disable=None) as bar:
        metric = task.evaluate(predictor.net, split, batch_size=batch_size, progress=bar.update)
    return metric, network, {"unknown": task.unknown_tokens(split)} if corpus is not None else {}


def summarize(results: list[dict]) -> dict | None:
    """Mean and standard deviation of every figure the results of several models share (None for one)."""
    if len(results) < 2:
        return None
    keys = [k for k, v in results[0].items() if isinstance(v, float) and all(k in r for r in results)]
    return {k: {"mean": statistics.fmean(r[k] for r in results), "std": statistics.stdev(r[k] for r in results)}
            for k in keys}


def evaluate_models(refs: list[str], split: str | None = None, file: str | None = None, pretokenized: bool = False,
                    batch_size: int | None = None, plot: str | None = None, output: str | None = None,
                    device="auto", root=None, corpus=None, overwrite: bool = False) -> None:
    """`treenets eval`: evaluate each model of `refs` (`evaluate_model`) on `split` (default: valid) of its data
    (of the folder `corpus` instead), or each language model on the sentences of the text `file`, and print one
    JSON line each; for metrics by group a table of every model's groups (drawn to the PNG file `plot`); with
    several models of one architecture (seeds) a last line with the mean and standard deviation of every figure;
    with `output`, every value in `output/eval.json` and an HTML report beside it (a folder that is new, empty or
    an earlier report's unless `overwrite`: `files.report_folder`)."""
    if file and split:
        raise TreenetsError("eval: give --split or --file, not both")
    if pretokenized and not file:
        raise TreenetsError("eval: --pretokenized is for the text of --file")
    if corpus and file:
        raise TreenetsError("eval: give --corpus or --file, not both")
    device = resolve_device(device, "--device")
    if plot:
        plot_file(plot, "--plot")
    if output:
        report_folder(output, "--output", overwrite)
    split = split or "valid"
    sentences = read_sentences(file, "--file") if file else None
    source = ({"file": str(file), "sentences": len(sentences)} if file else
              {"split": split, **({"corpus": str(corpus)} if corpus else {})})
    results, breakdowns, networks = [], {}, []
    for path in refs:
        result, network, counts = evaluate_model(path, device, split, sentences, batch_size, pretokenized, root,
                                                 corpus, f"--file {file}")
        results.append({**result.values(), **counts})
        networks.append(network)
        print(json_text({"checkpoint": str(path), **source, **results[-1]}))
        if result.breakdown() is not None:
            title, breakdowns[f"[{len(results)}]"] = result.breakdown()
    if breakdowns:
        print("\n".join(f"[{k}] {path}" for k, path in enumerate(refs, start=1)))
        print(format_breakdown(title, breakdowns))
        if plot:
            named = {f"{label} {path}": values for (label, values), path in zip(breakdowns.items(), refs)}
            plot_breakdown(title, result.key, named, plot)
            print(f"plot: {plot}")
    elif plot:
        raise TreenetsError(f"--plot: the metric {result.key} has no groups to draw")
    # mean and spread over seeds: only of models of one architecture (not, e.g., an ON-LSTM beside an LSTM)
    summary = summarize(results) if all(network == networks[0] for network in networks) else None
    if summary is not None:
        print(json_text({"checkpoints": len(results), **source, **summary}))
    if output:
        label = str(file) if file else split
        document = eval_document(label, refs, results, result, breakdowns, summary)
        written = write_text_atomic(Path(output) / "eval.json", json_text(document, indent=1))
        report = write_report(output, f"treenets eval ({label})", evaluation=document)
        folder = Path(output).resolve()
        # a plot drawn into the folder is this run's output too
        inside = [Path(plot).resolve()] if plot and folder in Path(plot).resolve().parents else []
        record_outputs(folder, [written.resolve(), report.resolve(), *inside])
        print(f"report: {report}")

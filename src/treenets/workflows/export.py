"""Model cards: the figures of a trained model measured on the files that ship (`metrics.json`), and the
`README.md` written from them (`treenets export --measure`).

Every task is measured the same way, by its own evaluation on each held-out split; a language model that
gives syntactic distances over words is also scored as a parser (every layer and the mean, beside the
baselines) on the NLTK WSJ sample, WSJ section 22 and section 24, each whole and as WSJ10. A `check` records
one figure cheap enough for the test suite to recompute from the shipped files (to 1e-4).
"""

from __future__ import annotations

import math
import platform
import tempfile
from pathlib import Path

import torch
import yaml

from treenets.config import to_dict
from treenets.core.console import note
from treenets.core.errors import TreenetsError
from treenets.core.files import read_text
from treenets.core.runlog import format_figure, read_metrics
from treenets.trees.metrics import LABELS
from treenets.zoo import model_folder
from treenets.zoo import registry as zoo

TREEBANKS = ("nltk-sample", "wsj22", "wsj24")
CARD_CONVENTIONS = ["official", "kim"]  # the ON-LSTM/PRPN papers' and the PCFGs' (trees/conventions.py)
CHECK_SENTENCES = 200  # sentences of the NLTK sample in the parsing check
CHECK_BATCH = 80  # the check's evaluation batch (tasks other than language modelling)
CHECK_EXAMPLES = 2500  # a larger split is checked on every k-th example, so that the test suite stays quick


def _parses_words(predictor) -> bool:
    from treenets.predictors.base import TreeInducer

    return isinstance(predictor, TreeInducer) and predictor.induces_trees


def check_figures(predictor, root=None) -> dict:
    """`_check_figures` on one thread: the products' rounding changes with the thread count, and with it a
    grammar's near-tied trees; on one thread the figures are the same whatever the caller set."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _check_figures(predictor, root)
    finally:
        torch.set_num_threads(threads)


def _check_figures(predictor, root=None) -> dict:
    """The figures the tests recompute. A language model: the perplexity of the first `CHECK_SENTENCES`
    sentences of the NLTK sample (each read on its own, as `LanguageModel.score` does) and, for a parser, the
    sentence-F1 of its default layer on them; an ensemble, the sentence-F1 of its trees of them; another task: the
    score of its last held-out split, or of every k-th of its examples where it has more than `CHECK_EXAMPLES`
    (the logic and SICK test splits)."""
    from treenets.data.treebanks import resolve_treebank
    from treenets.predictors.ensemble import EnsembleParser
    from treenets.predictors.lm import LanguageModel
    from treenets.tasks import make_task, task_class
    from treenets.trees.evaluation import evaluate_model
    from treenets.trees.ptb import load_gold

    if isinstance(predictor, EnsembleParser):  # trees only: the sentence-F1 of its trees
        sentences = load_gold(resolve_treebank("nltk-sample", root))[:CHECK_SENTENCES]
        (result,), _, _ = evaluate_model(predictor, "ensemble", sentences, [1], "official", progress=False)
        return {f"nltk-sample first {CHECK_SENTENCES} sent-F1": result.scores.summary()["sentence_f1"]}
    if not isinstance(predictor, LanguageModel):
        config = predictor.config
        split = [s for s in task_class(config.task).all_splits if s != "train"][-1]
        task = make_task(config, predictor.vocab, root, predictor.device, splits=(split,))
        every = math.ceil((task.eval_units(split) or 0) / CHECK_EXAMPLES)
        if every > 1:
            task.keep_every(split, every)
        result = task.evaluate(predictor.net, split, batch_size=CHECK_BATCH)
        suffix = "th" if every % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(every % 10, "th")
        sample = f", every {every}{suffix} of its {task.units}" if every > 1 else ""
        return {f"{split} {result.key} (batch {CHECK_BATCH}{sample})": result.score}
    sentences = load_gold(resolve_treebank("nltk-sample", root))[:CHECK_SENTENCES]
    figures = {}
    if predictor.scores_sentences:  # (a parser that gives trees alone: their F1 only)
        scores = predictor.score([s.words for s in sentences if s.words])
        predicted = sum(score.predicted for score in scores)  # the tokens and closing boundaries scored
        figures[f"nltk-sample first {CHECK_SENTENCES} perplexity"] = math.exp(-sum(s.total for s in scores) /
                                                                              predicted)
    if _parses_words(predictor):
        layer = predictor.default_layer
        (result,), _, _ = evaluate_model(predictor, "model", sentences, [layer], "official", progress=False)
        figures[f"nltk-sample first {CHECK_SENTENCES} sent-F1 (layer {layer})"] = result.scores.summary()["sentence_f1"]
    return figures


def measure_figures(predictor, name: str, summary: str = "", root=None, training: dict | None = None,
                    log=note) -> dict:
    """Everything a card reports, measured with `predictor` (load it from the files that ship)."""
    from treenets.data.treebanks import resolve_treebank
    from treenets.tasks import make_task, task_class
    from treenets.trees.dependency_scoring import dependency_rows, gold_dependencies
    from treenets.trees.evaluation import evaluate_baselines, evaluate_model, gold_nodes, system_summary
    from treenets.trees.ptb import PTB, load_gold

    config = predictor.config
    task_type = task_class(config.task)
    splits = {}
    for split in (s for s in task_type.all_splits if s != "train"):
        log(f"{name}: evaluating {split}")
        task = make_task(config, predictor.vocab, root, predictor.device, splits=(split,))
        result = task.evaluate(predictor.net, split)
        splits[split] = {**result.values(), "key": result.key}
    parsing = {}
    if _parses_words(predictor):
        for treebank in TREEBANKS:
            for wsj10 in (False, True):
                label = treebank + (" WSJ10" if wsj10 else "")
                log(f"{name}: parsing {label}")
                sentences = load_gold(resolve_treebank(treebank, root), wsj10=wsj10)
                results, _, counts = evaluate_model(predictor, name, sentences, predictor.layers("all"), "official",
                                                    progress=False)
                nodes = gold_nodes(sentences)
                parsing[label] = {"layers": {r.layer: system_summary(r, nodes, CARD_CONVENTIONS) for r in results},
                                  "baselines": evaluate_baselines(sentences, conventions=CARD_CONVENTIONS), **counts}
                if results[0].heads is not None:  # a model that induces dependencies too
                    gold = gold_dependencies(sentences, PTB)
                    parsing[label]["dependencies"] = dependency_rows([(name, results[0].heads)], sentences, gold)
    headline = {f"{split} {v['key']}": v[v["key"]] for split, v in splits.items()}
    if parsing:
        layer = str(predictor.default_layer)
        for label in ("wsj24", "wsj24 WSJ10"):
            headline[f"{label} sent-F1 (layer {layer})"] = parsing[label]["layers"][layer]["sentence_f1"]
        kim = parsing["wsj24"]["layers"][layer]["conventions"]["kim"]  # the grammar induction papers' convention
        headline[f"wsj24 kim sent-F1 (layer {layer})"] = kim["sentence_f1"]
        if "dependencies" in parsing["wsj24"]:
            headline["wsj24 DDA"] = parsing["wsj24"]["dependencies"][0]["dda"]
    parameters = sum(p.numel() for p in predictor.net.parameters())
    where = f"{platform.machine()}, Python {platform.python_version()}, torch {torch.__version__}"
    return {"name": name, "summary": summary, "task": config.task, "model": config.model.name, "parameters": parameters,
            "splits": splits, "parsing": parsing, "headline": headline, "check": check_figures(predictor, root),
            "training": training or {}, "measured_on": where}


def training_info(checkpoint_path: Path, saved: dict) -> dict:
    """What a run's checkpoints say about its training: the model it started from (`train --init`), steps, epochs
    and time (from `last.pt` beside it)."""
    from treenets.core import checkpoint

    info = {}
    if "trainer" in saved:
        if saved["trainer"].get("initialized_from"):
            info.update(initialized_from=saved["trainer"]["initialized_from"])
        info.update(best_step=saved["trainer"]["step"])
    last = Path(checkpoint_path).with_name("last.pt")
    if last.is_file():
        trainer = checkpoint.load(last)["trainer"]
        info.update(steps=trainer["step"], epochs_completed=trainer["epoch"] - 1,  # `epoch` is the one under way
                    minutes=round(trainer["train_seconds"] / 60, 1))
    return info


def export_model(ref: str | Path, out: str | Path, name: str | None = None, summary: str = "",
                 notes_file: str | Path | None = None, half: bool = False, measure: bool = False, device="cpu",
                 root=None, overwrite: bool = False, log=note, config_file: str | Path | None = None) -> dict:
    """`treenets export`: write a trained model (a checkpoint, a model folder or a zoo name) as a model folder
    `out` with its card (`notes_file`, a markdown file, its Training section), print the folder and the card's
    headline figures, and return the card's figures (`metrics.json`); `log` reports progress.

    With `measure`, the figures are measured on the written files (`measure`); else they are the training
    run's last validation (`metrics.jsonl` beside a checkpoint), or a model folder's own card figures, or none.
    The target is checked before anything is read or written (`treenets.zoo.model_folder.check_target`): a new or
    empty folder, or with `overwrite` a model folder, whose model files only are replaced. `config_file`, the YAML
    config that reproduces the model, becomes the folder's config (`config.json`, the card) in place of the
    run's, which may differ from it in `train` alone (a run resumed with other time limits, say).
    """
    from treenets.predictors import Predictor

    notes = read_text(notes_file, "a markdown file of notes") if notes_file else ""
    target = model_folder.check_target(out, ref, overwrite)
    source = model_folder.located(ref)  # (a zoo name: its folder)
    saved = model_folder.read(source)
    predictor = Predictor.from_checkpoint(saved, ref, "cpu")
    if config_file is not None:
        predictor.config = reproducing_config(predictor.config, config_file)
    name = name or target.name
    before = {}  # a model folder's own card figures: its summary and training carry over
    if source.is_dir() and (source / "metrics.json").is_file():
        import json

        try:
            before = json.loads((source / "metrics.json").read_text())
        except ValueError as exc:
            raise TreenetsError(f"{source / 'metrics.json'}: not JSON ({exc})") from None
        if not isinstance(before, dict) or not isinstance(before.get("splits", {}), dict):
            raise TreenetsError(f"{source / 'metrics.json'}: expected the figures `treenets export` writes")
    summary = summary or before.get("summary", "")
    training = training_info(source, saved) if source.is_file() else before.get("training", {})
    if measure:  # the card's figures are those of the files written, measured before `target` is touched
        with tempfile.TemporaryDirectory(dir=target.parent if target.parent.is_dir() else None) as tmp:
            written = model_folder.write_folder(predictor, Path(tmp) / target.name, half=half)
            metrics = measure_figures(Predictor.load(written, device=device), name, summary, root, training, log=log)
    elif before.keys() >= {"task", "model", "parameters", "splits", "parsing", "headline", "check", "measured_on"}:
        metrics = {**before, "name": name, "summary": summary}
    else:
        log_file = source.parent / "metrics.jsonl"
        runs = [r for r in read_metrics(log_file) if r["event"] == "eval" and r.get("split") == "valid"] \
            if source.is_file() and log_file.is_file() else []
        best = [r for r in runs if r["step"] == training.get("best_step")] or runs[-1:]
        valid = {k: v for k, v in best[0].items() if isinstance(v, float)} if best else {}
        metrics = {"name": name, "summary": summary, "task": predictor.config.task,
                   "model": predictor.config.model.name,
                   "parameters": sum(p.numel() for p in predictor.net.parameters()),
                   "splits": {"valid (training run)": valid} if valid else {}, "parsing": {},
                   "headline": {f"valid {k}": v for k, v in valid.items()}, "check": {}, "training": training,
                   "measured_on": "the training run's validation"}
    metrics["storage"] = "float16" if half else "float32"
    model_folder.write_folder(predictor, target, half=half, metrics=metrics,
                              card=write_card(metrics, predictor.config, notes), overwrite=overwrite)
    print(f"model folder: {out}")
    for key, value in metrics["headline"].items():
        print(f"  {key}: {format_figure(value)}")
    return metrics


def reproducing_config(config, config_file: str | Path):
    """The config of YAML file `config_file`, checked to describe the model of `config` (a run's): every section
    but `train` equal, field by field."""
    from treenets.config import load_config, to_dict

    reproducing = load_config(config_file)
    wanted, run = to_dict(reproducing), to_dict(config)
    differences = []
    for section, values in wanted.items():
        if section == "train":
            continue
        for key, value in values.items() if isinstance(values, dict) else [("", values)]:
            have = run[section].get(key) if key else run[section]
            if have != value:
                differences.append(f"{section}{'.' * bool(key)}{key}: {have!r} in the model, {value!r} in the file")
    if differences:
        raise TreenetsError(f"{config_file}: does not describe this model (only `train` may differ): "
                            + "; ".join(differences))
    return reproducing


def write_card(metrics: dict, config, recipe: str = "") -> str:
    """The `README.md` of a model folder, from its `metrics.json` and config."""
    name = metrics["name"]
    ref = name if name in zoo.registry() else f"path/to/{name}"  # a folder loads by its path, a zoo model by name
    lines = [f"# {name}", "", metrics["summary"], "",
             f"Task `{metrics['task']}`, model `{metrics['model']}`, {metrics['parameters']:,} parameters "
             f"(weights stored as {metrics.get('storage', 'float16')}, computed in float32).", "",
             "```python", "import treenets", f'model = treenets.load("{ref}")', "```", ""]
    if recipe:
        lines += ["## Training", "", recipe, ""]
    info = metrics.get("training") or {}
    if info:
        lines += ["| " + " | ".join(info) + " |", "|" + " --- |" * len(info),
                  "| " + " | ".join(str(v) for v in info.values()) + " |", ""]
    lines += ["## Figures", ""]
    if not metrics["splits"]:
        lines += ["None were measured: `treenets export MODEL DIR --measure` measures them on the written files.", ""]
    else:
        # every figure of any split, in the order of the split with the most (the logic test split's accuracy by
        # number of operators runs on past the validation split's, and stays before the tree scores both have)
        ordered = sorted(metrics["splits"].values(), key=len, reverse=True)
        columns = list(dict.fromkeys(k for values in ordered for k in values if k != "key"))
        lines += [f"Measured with the files of this folder ({metrics['measured_on']}), by "
                  f"`treenets export --measure`.", "", "| split | " + " | ".join(columns) + " |",
                  "| --- |" + " ---: |" * len(columns)]
        for split, values in metrics["splits"].items():
            lines.append(f"| {split} | " + " | ".join(format_figure(values[k]) if k in values else ""
                                                      for k in columns) + " |")
        lines.append("")
    if metrics["parsing"]:
        lines += ["### Unsupervised parsing", "",
                  "Sentence-level F1 (`sent-F1`, the papers' figure), corpus-level F1 and evalb-style F1 of the "
                  "model's trees (from each layer's distances, split as the official code, and from their mean; a "
                  "grammar's Viterbi trees as its layer 1), beside "
                  "the baselines (`treenets parse-eval NAME --treebank T [--wsj10]`); where measured, the same "
                  "under Kim et al.'s convention (`--convention kim`, the grammar "
                  "induction papers' figure) and the recall of the gold phrases by label.", ""]
        for label, block in metrics["parsing"].items():
            rows = [(f"layer {k}", v) for k, v in block["layers"].items()] + list(block["baselines"].items())
            kim = "conventions" in rows[0][1]  # cards measured since the grammars give Kim's figures and recalls
            recalls = [k for k in (f"recall_{label}" for label in LABELS[:6]) if kim and k in rows[0][1]]
            header = ["trees", "sent-F1", "corp-F1", "evalb-F1"] + (["kim sent-F1", "kim corp-F1"] if kim else []) \
                + ["depth"] + [f"{k.removeprefix('recall_')} recall" for k in recalls]
            lines += [f"**{label}** ({next(iter(block['layers'].values()))['n']} sentences, {block['unknown']} of "
                      f"{block['words']} words read as `<unk>`)", "",
                      "| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
            for row, s in rows:
                cells = [s["sentence_f1"], s["corpus_f1"], s["evalb_f1"]]
                if kim:
                    cells += [s["conventions"]["kim"]["sentence_f1"], s["conventions"]["kim"]["corpus_f1"]]
                text = [f"{100 * v:.1f}" for v in cells] + [f"{s['depth']:.2f}"] \
                    + [f"{100 * s[k]:.1f}" if k in s else "" for k in recalls]
                lines.append(f"| {row} | " + " | ".join(text) + " |")
            lines.append("")
            if "dependencies" in block:
                lines += ["Dependencies against the gold trees converted by Collins' head rules, punctuation not "
                          "scored: directed (DDA, = UAS) and undirected (UDA) attachment accuracy.", "",
                          "| heads | DDA | UDA |", "| --- | ---: | ---: |"]
                lines += [f"| {row['system']} | {100 * row['dda']:.1f} | {100 * row['uda']:.1f} |"
                          for row in block["dependencies"]]
                lines.append("")
    if metrics["check"]:
        lines += ["### Check", "", "Cheap to recompute from these files (`treenets export --measure` measured them; "
                  "for the models that ship with treenets, the test suite recomputes them):", ""]
        lines += [f"- {k}: {v:.6f}" for k, v in metrics["check"].items()]
    lines += ["", "## Config", "", "```yaml", yaml.safe_dump(to_dict(config), sort_keys=False).rstrip(), "```", ""]
    return "\n".join(lines)

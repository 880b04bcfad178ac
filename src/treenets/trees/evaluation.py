"""Unsupervised parsing evaluation: trees induced by a language model scored against a treebank beside the
baseline trees, as a table, per-sentence records and figures (`treenets parse-eval`, `treenets baselines`).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from treenets.errors import TreenetsError
from treenets.trees import ParseScores, balanced, left_branching, random_tree, right_branching, sentence_prf, spans
from treenets.trees.draw import bracketed, parse_figure
from treenets.trees.metrics import LABELS, multi_run, self_f1
from treenets.trees.ptb import GoldSentence


@dataclass
class ModelResult:
    checkpoint: str
    layer: str
    scores: ParseScores
    trees: list  # predicted nested-list tree per sentence


def evaluate_model(lm, checkpoint: str, sentences: list[GoldSentence], layers: list, split: str,
                   batch_size: int = 64, progress: bool = True) -> tuple[list[ModelResult], list, dict]:
    """Induce (`lm.parse`) and score trees for every requested layer of one model.

    Returns the results per layer, the distances per sentence (`[rows, words]`, None for an empty
    sentence), and counts of the words the vocabulary did not know.
    """
    lm.require_words(f"parse-eval: {checkpoint}")
    present = [i for i, s in enumerate(sentences) if s.words]
    parses = [None] * len(sentences)
    bar = tqdm(total=len(present), unit="sent", desc=f"distances {Path(checkpoint).name}", leave=False,
               disable=None if progress else True)
    for start in range(0, len(present), batch_size * 8):
        chunk = present[start : start + batch_size * 8]
        for index, parse in zip(chunk, lm.parse([sentences[i].words for i in chunk], layers[0], split, batch_size)):
            parses[index] = parse
        bar.update(len(chunk))
    bar.close()
    words = sum(len(s.words) for s in sentences)
    unknown = sum(len(p.unknown) for p in parses if p is not None)
    results = []
    for layer in layers:
        scores, trees = ParseScores(), []
        for sentence, parse in zip(sentences, parses):
            tree = parse.at(layer).nested if parse is not None else []
            scores.add(tree, sentence.gold, sentence.labeled)
            trees.append(tree)
        results.append(ModelResult(checkpoint, str(layer), scores, trees))
    distances = [p.distances.numpy() if p is not None else None for p in parses]
    return results, distances, {"words": words, "unknown": unknown}


def check_scorable(sentences: list[GoldSentence], where: str) -> None:
    """An error naming `where` unless some sentence has a gold phrase to score (two or more words, not the
    whole sentence): over sentences without one, every F1 is 100 by the official convention (a tree of one
    or two words cannot be wrong), which is no result."""
    if not any(spans(s.gold) for s in sentences if s.words):
        empty = sum(1 for s in sentences if not s.words)
        raise TreenetsError(f"{where}: no sentence with a phrase to score ({len(sentences)} sentences: {empty} empty "
                            "after filtering punctuation and empty elements, the others of one or two words); every "
                            "F1 over them would be 100 by convention, which says nothing")


def evaluate_baselines(sentences: list[GoldSentence], draws: int = 5, seed: int = 0) -> dict[str, dict]:
    """Summaries of the baseline trees; `random` is the mean over `draws` seeded draws."""
    builders = {"right-branching": right_branching, "left-branching": left_branching, "balanced": balanced}
    result = {}
    for name, build in builders.items():
        scores = ParseScores()
        for s in sentences:
            scores.add(build(s.words), s.gold, s.labeled)
        result[name] = scores.summary()
    rng = random.Random(seed)
    summaries = []
    for _ in range(draws):
        scores = ParseScores()
        for s in sentences:
            scores.add(random_tree(s.words, rng), s.gold, s.labeled)
        summaries.append(scores.summary())
    result[f"random ({draws} draws)"] = {k: sum(d.get(k, 0.0) for d in summaries) / draws for k in summaries[0]}
    return result


COLUMNS = ("sentence_f1", "corpus_f1", "evalb_f1", "depth") + tuple(f"recall_{label}" for label in LABELS[:6])
HEADERS = ("sent-F1", "corp-F1", "evalb-F1", "depth") + LABELS[:6]


def format_table(rows: list[tuple[str, str, dict]]) -> str:
    """Rows of (name, layer, summary) as a text table; F1 and recalls in percent."""
    width = max(12, *(len(name) for name, _, _ in rows))
    lines = [f"{'':{width}} {'layer':>5} " + " ".join(f"{h:>8}" for h in HEADERS)]
    for name, layer, summary in rows:
        cells = []
        for key in COLUMNS:
            value = summary.get(key, float("nan"))
            if value != value:  # NaN: no gold phrase of that label
                cells.append(f"{'n/a':>8}")
            else:
                cells.append(f"{value:8.2f}" if key == "depth" else f"{100 * value:8.1f}")
        lines.append(f"{name:{width}} {layer:>5} " + " ".join(cells))
    return "\n".join(lines)


def multi_run_summary(results: list[ModelResult]) -> list[dict]:
    """For several checkpoints: per layer found in two or more, the mean/std/max sentence F1 over the runs and
    the mean self-F1 between them (`layer`, `runs`, `mean`, `std`, `max`, `self_f1`; in percent)."""
    summary = []
    for layer in dict.fromkeys(r.layer for r in results):
        runs = [r for r in results if r.layer == layer]
        if len(runs) < 2:
            continue
        stats = multi_run([r.scores.summary()["sentence_f1"] * 100 for r in runs])
        pairs = [self_f1(a.trees, b.trees) * 100 for i, a in enumerate(runs) for b in runs[i + 1 :]]
        summary.append({"layer": layer, **stats, "self_f1": sum(pairs) / len(pairs)})
    return summary


def multi_run_lines(results: list[ModelResult]) -> list[str]:
    """`multi_run_summary` as lines of text."""
    return [f"layer {s['layer']}: sentence F1 over {s['runs']} runs: mean {s['mean']:.1f}, std {s['std']:.1f}, "
            f"max {s['max']:.1f}; self-F1 {s['self_f1']:.1f}" for s in multi_run_summary(results)]


class _Text(str):
    """Finished JSON text, beside the values (a plain `str` among them) still to encode."""


def _json(value) -> str:
    """`json.dumps(value)` without recursion: a record holds trees that nest as deep as their sentence is long,
    and the json module gives up at about 1,000 levels."""
    parts, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Text):
            parts.append(item)
        elif isinstance(item, (dict, list, tuple)):
            is_dict = isinstance(item, dict)
            tokens = [_Text("{" if is_dict else "[")]
            for i, (key, child) in enumerate(item.items() if is_dict else enumerate(item)):
                tokens += [_Text((", " if i else "") + (f"{json.dumps(str(key))}: " if is_dict else "")), child]
            tokens.append(_Text("}" if is_dict else "]"))
            stack.extend(reversed(tokens))
        else:
            parts.append(json.dumps(item))
    return "".join(parts)


def write_outputs(out: Path, sentences: list[GoldSentence], results: list[ModelResult], distances: dict,
                  figure_layer: str | None = None, figures: int = 5) -> None:
    """`trees-<model>-layer<L>.txt` (bracketed predicted trees), `sentences.jsonl` (per sentence: words, gold,
    distances and every model/layer's tree and scores), and figures for the first `figures` sentences of
    3 to 20 words (PNG: predicted beside gold, distances under the words; the first model's `figure_layer`,
    else its first layer)."""
    out.mkdir(parents=True, exist_ok=True)
    tags = {id(r): f"{Path(r.checkpoint).parent.name or 'model'}-{Path(r.checkpoint).stem}-layer{r.layer}"
            for r in results}
    for r in results:
        lines = [bracketed(t) if t != [] else "" for t in r.trees]
        (out / f"trees-{tags[id(r)]}.txt").write_text("\n".join(lines) + "\n")
    with open(out / "sentences.jsonl", "w") as fh:
        for i, s in enumerate(sentences):
            record = {"source": str(s.source), "words": s.words, "gold": s.gold, "models": {}}
            for r in results:
                tree = r.trees[i]
                prf = sentence_prf(spans(tree), spans(s.gold)) if s.words else (None, None, None)
                record["models"][tags[id(r)]] = {"tree": tree, "prec": prf[0], "reca": prf[1], "f1": prf[2]}
            record["distances"] = {ckpt: (d[i].tolist() if d[i] is not None else None)
                                   for ckpt, d in distances.items()}
            fh.write(_json(record) + "\n")
    if not results:
        return
    first = next((r for r in results if r.layer == figure_layer), results[0])
    first_distances = distances[first.checkpoint]
    drawn = 0
    figure_dir = out / "figures"
    figure_dir.mkdir(exist_ok=True)
    for i, s in enumerate(sentences):
        if drawn >= figures:
            break
        if 3 <= len(s.words) <= 20:
            layers = first_distances[i]
            names = [f"layer {k + 1}" for k in range(len(layers))]
            f1 = sentence_prf(spans(first.trees[i]), spans(s.gold))[2]
            parse_figure(s.words, first.trees[i], s.gold, layers, figure_dir / f"{i:05d}.png", names,
                         title=f"{s.source} - layer {first.layer} - sentence F1 {100 * f1:.1f}")
            drawn += 1

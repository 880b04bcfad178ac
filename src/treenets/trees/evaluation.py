"""Unsupervised parsing evaluation: trees induced by a language model or written by any parser (a file of
bracketed trees) scored against a treebank beside the baseline trees, under the conventions of the literature,
side by side with significance, as a table, per-sentence records and figures (`treenets parse-eval`,
`treenets baselines`).
"""

from __future__ import annotations

import functools
import json
import math
import random
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from treenets.core.errors import TreenetsError
from treenets.core.files import write_text_atomic
from treenets.trees import ParseScores, balanced, left_branching, random_tree, right_branching, sentence_prf, spans
from treenets.trees.compare import LENGTH_BUCKETS, agreement, bucket_counts, bucket_name, by_length, pairwise_bootstrap
from treenets.trees.conventions import CONVENTIONS, ConventionScores
from treenets.trees.dependency_scoring import GoldDependencies
from treenets.trees.draw import bracketed, parse_figure, preterminal_bracketed
from treenets.trees.metrics import LABELS, multi_run, node_spans, official_spans, self_f1
from treenets.trees.predicted import PredictedTrees, read_predicted
from treenets.trees.ptb import WRAPPERS, GoldSentence
from treenets.trees.walk import with_words


@dataclass
class SystemResult:
    """The trees of one system and their official scores: a language model's layer (`source` the model,
    `layer` the layer whose distances built them), a file of another parser's trees (`layer` ""), or a baseline.
    `trees` has one entry per gold sentence: a nested list, `[]` for a sentence left empty by the preprocessing,
    None where a file has no tree for it."""

    source: str
    layer: str
    scores: ParseScores
    trees: list
    heads: list | None = None  # a model that induces dependencies: each sentence's heads over its words (CoNLL's)
    labels: list | None = None  # a model that labels its trees (a grammar): each sentence's `Parse.labels()`

    @property
    def name(self) -> str:
        return f"{self.source} layer {self.layer}" if self.layer else self.source

    @functools.cached_property
    def nodes(self) -> list:
        """Each tree's `node_spans` (None where there is no tree, or an empty one), computed once for every
        convention and comparison."""
        return [node_spans(t) if t is not None and t != [] else None for t in self.trees]


def dependencies_only(source: str, heads: list) -> SystemResult:
    """A system that gives dependencies and no trees (a CoNLL file), beside the others in the outputs: `heads`
    one list per gold sentence (None where it has none), `trees` all None."""
    return SystemResult(source, "", ParseScores(), [None] * len(heads), heads)


def gold_nodes(sentences: list[GoldSentence]) -> list:
    """Every gold tree's `node_spans` (with all its phrases: `GoldSentence.nodes`), None for an empty sentence:
    what the conventions score against."""
    return [s.nodes for s in sentences]


def score_trees(source: str, layer: str, trees: list, sentences: list[GoldSentence]) -> SystemResult:
    """`trees` (one per gold sentence) with their official scores."""
    result = SystemResult(source, layer, ParseScores(), trees)
    for tree, nodes, sentence in zip(trees, result.nodes, sentences, strict=True):
        both = (nodes, sentence.nodes) if nodes is not None and sentence.nodes is not None else None
        result.scores.add(tree, sentence.gold, sentence.labeled, both)
    return result


def evaluate_model(lm, checkpoint: str, sentences: list[GoldSentence], layers: list, split: str,
                   batch_size: int = 64, progress: bool = True, options: dict | None = None
                   ) -> tuple[list[SystemResult], list, dict]:
    """Induce (`lm.parse`, with `options`: e.g. a grammar's `decode`) and score trees for every requested layer of
    one model.

    Returns the results per layer, the distances per sentence (`[rows, words]`, NaN where no tree reads one:
    `Parse.read_distances`; None for an empty sentence), and counts of the words the vocabulary did not know.
    """
    lm.require_words(f"parse-eval: {checkpoint}")
    present = [i for i, s in enumerate(sentences) if s.words]
    parses = [None] * len(sentences)
    bar = tqdm(total=len(present), unit="sent", desc=f"distances {Path(checkpoint).name}", leave=False,
               disable=None if progress else True)
    for start in range(0, len(present), batch_size * 8):
        chunk = present[start : start + batch_size * 8]
        for index, parse in zip(chunk, lm.parse([sentences[i].words for i in chunk], layers[0], split, batch_size,
                                                **(options or {}))):
            parses[index] = parse
        bar.update(len(chunk))
    bar.close()
    words = sum(len(s.words) for s in sentences)
    unknown = sum(len(p.unknown) for p in parses if p is not None)
    results = [score_trees(checkpoint, str(layer), [parse.at(layer).nested if parse is not None else []
                                                     for parse in parses], sentences) for layer in layers]
    if any(p is not None and p.heads is not None for p in parses):
        for result in results:
            result.heads = [p.heads if p is not None else None for p in parses]
    if any(p is not None and p.labels() is not None for p in parses):
        for result in results:
            result.labels = [p.labels() if p is not None else None for p in parses]
    distances = [p.read_distances.numpy() if p is not None else None for p in parses]
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


def evaluate_file(path: str, sentences: list[GoldSentence], words_rule: str = "", max_length: int | None = None,
                  fmt: str = "auto", drop_punctuation: bool = False) -> tuple[SystemResult, PredictedTrees]:
    """A file of another parser's trees (`treenets.trees.predicted.read_predicted`: in format `fmt`, `-` for
    standard input), matched with `sentences` and scored; and what was read of it."""
    predicted = read_predicted(path, sentences, words_rule, max_length, fmt, drop_punctuation)
    return score_trees(predicted.path, "", predicted.trees, sentences), predicted


BASELINES = {"right-branching": right_branching, "left-branching": left_branching, "balanced": balanced}


def baseline_results(sentences: list[GoldSentence]) -> list[SystemResult]:
    """The right- and left-branching and balanced trees of every sentence, scored."""
    return [score_trees(name, "", [build(s.words) if s.words else [] for s in sentences], sentences)
            for name, build in BASELINES.items()]


def random_results(sentences: list[GoldSentence], draws: int = 5, seed: int = 0) -> list[SystemResult]:
    """`draws` seeded draws of a random binary tree for every sentence, each scored."""
    rng = random.Random(seed)
    return [score_trees(f"random draw {k + 1}", "", [random_tree(s.words, rng) if s.words else [] for s in sentences],
                        sentences) for k in range(draws)]


def _mean(summaries: list[dict]) -> dict:
    """The mean of summaries (nested ones too) key by key."""
    return {key: _mean([d[key] for d in summaries]) if isinstance(value, dict)
            else sum(d.get(key, 0.0) for d in summaries) / len(summaries) for key, value in summaries[0].items()}


def system_summary(result: SystemResult, nodes: list, conventions: list[str]) -> dict:
    """`result.scores.summary()` with, under `conventions`, each convention's `ConventionScores.summary()`."""
    return {**result.scores.summary(), "conventions": {
        name: ConventionScores.score(CONVENTIONS[name], result.nodes, nodes).summary() for name in conventions}}


def evaluate_baselines(sentences: list[GoldSentence], draws: int = 5, seed: int = 0,
                       conventions: list[str] = ("official",)) -> dict[str, dict]:
    """Summaries of the baseline trees (`system_summary`); `random` is the mean over `draws` seeded draws."""
    nodes = gold_nodes(sentences)
    result = {r.source: system_summary(r, nodes, conventions) for r in baseline_results(sentences)}
    result[f"random ({draws} draws)"] = _mean([system_summary(r, nodes, conventions)
                                               for r in random_results(sentences, draws, seed)])
    return result


OFFICIAL_COLUMNS = (("sentence_f1", "sent-F1"), ("corpus_f1", "corp-F1"), ("evalb_f1", "evalb-F1"))


def table_columns(conventions: list[str]) -> list[tuple[str, str]]:
    """The table's columns `(key, header)` for `conventions` in their order: `official` as its three F1s (the
    sentence, corpus and evalb-style F1 of the ON-LSTM/PRPN table), any other as its figure (key
    `conventions.<name>`); then depth and the recall of the six most frequent labels."""
    columns = []
    for name in conventions:
        columns += OFFICIAL_COLUMNS if name == "official" else [(f"conventions.{name}", name)]
    return columns + [("depth", "depth")] + [(f"recall_{label}", label) for label in LABELS[:6]]


def cell(summary: dict, key: str) -> float:
    """A summary's value under a table key (`conventions.kim`: that convention's figure); NaN when absent."""
    if key.startswith("conventions."):
        return summary.get("conventions", {}).get(key.split(".", 1)[1], {}).get("f1", float("nan"))
    return summary.get(key, float("nan"))


def format_table(rows: list[tuple[str, str, dict]], conventions: list[str] = ("official",)) -> str:
    """Rows of (name, layer, summary) as a text table (`table_columns`); F1 and recalls in percent."""
    columns = table_columns(list(conventions))
    width = max(12, *(len(name) for name, _, _ in rows))
    lines = [f"{'':{width}} {'layer':>5} " + " ".join(f"{header:>8}" for _, header in columns)]
    for name, layer, summary in rows:
        cells = []
        for key, _ in columns:
            value = cell(summary, key)
            if value != value:  # NaN: no gold phrase of that label
                cells.append(f"{'n/a':>8}")
            else:
                cells.append(f"{value:8.2f}" if key == "depth" else f"{100 * value:8.1f}")
        lines.append(f"{name:{width}} {layer:>5} " + " ".join(cells))
    return "\n".join(lines)


def compare_systems(systems: list[SystemResult], sentences: list[GoldSentence], nodes: list, convention: str,
                    draws: int = 10_000, seed: int = 0) -> dict:
    """Systems side by side under `convention`: each one's figure and number of sentences scored, the paired
    bootstrap of every pair (`treenets.trees.compare`), the agreement between their trees, the figure by sentence
    length and the recall by gold label (the labels by number of gold phrases, the most first)."""
    scores = [ConventionScores.score(CONVENTIONS[convention], r.nodes, nodes) for r in systems]
    lengths = np.array([len(s.words) for s in sentences])
    labels = sorted(systems[0].scores.label_total.items(), key=lambda item: (-item[1], item[0])) if systems else []
    labels = [(label, count) for label, count in labels if label not in WRAPPERS]
    return {
        "convention": convention, "title": CONVENTIONS[convention].title, "level": CONVENTIONS[convention].level,
        "systems": [r.name for r in systems], "figures": [s.figure() for s in scores],
        "sentences": [len(s.f1) for s in scores],
        "bootstrap": pairwise_bootstrap(scores, draws, seed),
        "agreement": agreement([[official_spans(*n) if n is not None else None for n in r.nodes] for r in systems]),
        "by_length": {"buckets": [bucket_name(b) for b in LENGTH_BUCKETS],
                      "sentences": bucket_counts(lengths[lengths > 0]),
                      "figures": [by_length(s, lengths) for s in scores]},
        "by_label": {"labels": [label for label, _ in labels], "gold": [count for _, count in labels],
                     "recall": [[r.scores.label_correct[label] / count for label, count in labels] for r in systems]},
    }


def comparison_lines(comparison: dict) -> list[str]:
    """The systems, the paired bootstrap and the agreement of `compare_systems` as lines of text."""
    C = comparison
    lines = [f"systems side by side ({C['convention']}: {C['title']}; "
             f"{'mean sentence' if C['level'] == 'sentence' else 'corpus'} F1):"]
    lines += [f"  [{k + 1}] {name}: {100 * figure:.1f} over {count:,} sentences"
              for k, (name, figure, count) in enumerate(zip(C["systems"], C["figures"], C["sentences"]))]
    if C["bootstrap"]:
        first = C["bootstrap"][0]
        lines.append(f"paired bootstrap ({first['draws']:,} samples, seed {first['seed']}): A - B, 95% interval, "
                     "p-value (two-sided)")
        for b in C["bootstrap"]:
            lines.append(f"  [{b['a'] + 1}] - [{b['b'] + 1}]: {100 * b['difference']:+6.1f} [{100 * b['low']:+.1f}, "
                         f"{100 * b['high']:+.1f}]  p {b['p']:.4f}  ({b['sentences']:,} sentences)")
    lines.append("agreement (mean sentence F1 between the trees of two systems):")
    lines.append("      " + " ".join(f"{f'[{k + 1}]':>6}" for k in range(len(C["systems"]))))
    lines += [f"{f'[{i + 1}]':>5} " + " ".join(f"{100 * v:6.1f}" for v in row) for i, row in enumerate(C["agreement"])]
    return lines


def multi_run_summary(results: list[SystemResult]) -> list[dict]:
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


def multi_run_lines(results: list[SystemResult]) -> list[str]:
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
        elif isinstance(item, float) and not math.isfinite(item):  # no number (a distance no tree reads): null
            parts.append("null")
        else:
            parts.append(json.dumps(item))
    return "".join(parts)


_UNSAFE = re.compile(r"[^\w.+-]+")


def output_tags(results: list[SystemResult]) -> list[str]:
    """The names of the systems in file names and records, one each: `<folder>-<stem>-layer<L>` for a model's
    layer, `file-<stem>` for a file of trees (`file-stdin` for standard input); systems that would share a name
    get the folders above them in it (`file-a-sys`, `file-b-sys` for `a/sys.txt` and `b/sys.txt`), and the same
    system given twice a number (`file-sys-2`)."""
    def tag(result: SystemResult, folders: int) -> str:
        path = Path(result.source)
        if result.layer:
            folders = max(folders, 1)
        above = [part for part in path.parent.parts if part not in (path.anchor, ".", "..")][::-1][:folders][::-1]
        if result.layer and not above:
            above = ["model"]
        stem = "stdin" if result.source == "<stdin>" else path.stem
        name = "-".join([*above, stem]) + (f"-layer{result.layer}" if result.layer else "")
        return _UNSAFE.sub("_", name if result.layer else f"file-{name}")

    folders = [0] * len(results)
    while True:
        tags = [tag(r, n) for r, n in zip(results, folders)]
        shared = [k for k, t in enumerate(tags) if any(t == tags[j] and results[j].source != results[k].source
                                                        for j in range(len(results)))]
        grown = [k for k in shared if tag(results[k], folders[k] + 1) != tags[k]]
        if not grown:
            break
        for k in grown:
            folders[k] += 1
    seen: Counter = Counter()
    unique = []
    for t in tags:
        seen[t] += 1
        unique.append(t if seen[t] == 1 else f"{t}-{seen[t]}")
    return unique


def write_outputs(out: Path, sentences: list[GoldSentence], results: list[SystemResult], distances: dict,
                  figure_layer: str | None = None, figures: int = 5, gold: GoldDependencies | None = None,
                  dependency_files: list[SystemResult] = ()) -> tuple[list[Path], list[Path]]:
    """`trees-<tag>.txt` (each system's trees over the treebank's words, bracketed as `(X (X the cat) sat)`, a line
    per gold sentence, blank where it has none), `compound-pcfg/<tag>.txt` and `compound-pcfg/gold.txt` (the same
    trees and the gold trees over the kept words, a line per sentence with words, in the format of compound-pcfg
    and ED4UCP, which their scripts read: `(X (X the) (X cat))`), `sentences.jsonl` (per sentence: words, gold,
    distances and every system's tree and scores), and figures for the first `figures` sentences of 3 to 20 words
    (PNG: predicted beside gold, distances under the words; the first model's `figure_layer`, else its first
    system); each system under its name of `output_tags`.

    With the `gold` dependencies (when they were scored), a record also has `gold_heads` (the gold heads over its
    words, `GoldDependencies.kept_heads`; None for a sentence without words), and each system that gives
    dependencies (a model that induces them; `dependency_files`, systems of dependencies only, which have no tree
    and nothing else) its `heads` and their `dda` and `uda` in the sentence (None where it has none). A system
    that labels its trees (a grammar) has its `labels` (`{"start-end": label}`) and `word_labels`.
    Returns the figures' paths, and the paths of every file written."""
    out.mkdir(parents=True, exist_ok=True)
    tags = dict(zip(map(id, [*results, *dependency_files]), output_tags([*results, *dependency_files])))
    pcfg = out / "compound-pcfg"
    pcfg.mkdir(exist_ok=True)
    present = [i for i, s in enumerate(sentences) if s.words]
    written = [write_text_atomic(pcfg / "gold.txt", "".join(preterminal_bracketed(sentences[i].phrases) + "\n"
                                                            for i in present))]
    for r in results:
        # Over the treebank's words (a model's trees are over the tokens it read: `%` is `N` to a PTB model), so
        # that the files read back, here and in other tools, against the treebank.
        trees = [with_words(t, s.words) if t not in (None, []) else t for t, s in zip(r.trees, sentences)]
        lines = [bracketed(t) if t not in (None, []) else "" for t in trees]
        written.append(write_text_atomic(out / f"trees-{tags[id(r)]}.txt", "\n".join(lines) + "\n"))
        written.append(write_text_atomic(pcfg / f"{tags[id(r)]}.txt", "".join(
            (preterminal_bracketed(trees[i]) if trees[i] is not None else "") + "\n" for i in present)))
    records = []
    for i, s in enumerate(sentences):
        record = {"source": str(s.source), "words": s.words, "gold": s.gold, "models": {}}
        for r in results:
            tree = r.trees[i]
            scored = s.words and tree is not None
            prf = sentence_prf(spans(tree), spans(s.gold)) if scored else (None, None, None)
            record["models"][tags[id(r)]] = {"tree": tree, "prec": prf[0], "reca": prf[1], "f1": prf[2]}
            if r.labels is not None and r.labels[i] is not None:  # a grammar: its nodes' and words' labels
                record["models"][tags[id(r)]].update(zip(("labels", "word_labels"), r.labels[i]))
        if gold is not None:
            record["gold_heads"] = gold.kept_heads(i)
            for r in [*results, *dependency_files]:
                if r.heads is not None:
                    entry = record["models"].setdefault(tags[id(r)], {})
                    entry.update(heads=r.heads[i], **gold.sentence_scores(r.heads[i], i))
        record["distances"] = {ckpt: (d[i].tolist() if d[i] is not None else None) for ckpt, d in distances.items()}
        records.append(_json(record) + "\n")
    written.append(write_text_atomic(out / "sentences.jsonl", "".join(records)))
    if not results:
        return [], written
    first = next((r for r in results if r.layer == figure_layer), results[0])
    first_distances = distances.get(first.source)
    drawn = []
    figure_dir = out / "figures"
    figure_dir.mkdir(exist_ok=True)
    for i, s in enumerate(sentences):
        if len(drawn) >= figures:
            break
        if 3 <= len(s.words) <= 20 and first.trees[i] is not None:
            layers = first_distances[i] if first_distances is not None else []
            names = [f"layer {k + 1}" for k in range(len(layers))]
            f1 = sentence_prf(spans(first.trees[i]), spans(s.gold))[2]
            path = figure_dir / f"{i:05d}.png"
            parse_figure(s.words, first.trees[i], s.gold, layers, path, names,
                         title=f"{s.source} - {f'layer {first.layer}' if first.layer else Path(first.source).name} - "
                               f"sentence F1 {100 * f1:.1f}")
            drawn.append(path)
    return drawn, written + drawn

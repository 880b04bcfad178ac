"""Ensembles of systems' trees over a treebank (`treenets ensemble`) and over typed sentences (`treenets parse
--ensemble`): the combination is `treenets.trees.ensemble`'s; here the systems are read as `parse-eval` reads them.

A system is a file of another parser's trees (any format `parse-eval` reads, aligned with the treebank's sentences
under the same normalisations, what was matched how said on stderr) or a treenets model (a zoo name, a folder, a
checkpoint) that parses the treebank's sentences (its default layer; a grammar's Viterbi trees unless `decode`).
"""

from __future__ import annotations

import sys
import time

from treenets.console import note
from treenets.errors import TreenetsError
from treenets.files import output_file, write_text_atomic
from treenets.trees.draw import bracketed
from treenets.trees.ensemble import combine, nested_from_spans
from treenets.trees.metrics import node_spans

MODES = ("generative", "selective")


def _positions(tree) -> list[tuple[int, int]]:
    """A tree's spans of two or more words (start, end exclusive), every node's (non-binary trees too)."""
    nodes, _ = node_spans(tree)
    return sorted({span for span in nodes if span[1] - span[0] >= 2})


def system_trees(refs: list[str], sentences, treebank, fmt: str = "auto", drop_punctuation: bool = False,
                 batch_size: int = 64, device="cpu", decode: str | None = None) -> list[list]:
    """Each system's tree of every sentence (nested lists over the sentence's positions; None where it has none),
    read as `parse-eval` reads its systems."""
    from treenets.parsing import _check_decoder, _file_notes, is_tree_file
    from treenets.predictors.lm import LanguageModel
    from treenets.trees.evaluation import evaluate_file, evaluate_model

    found = []
    for ref in refs:
        if is_tree_file(ref):
            result, predicted = evaluate_file(ref, sentences, treebank.describe_words(), treebank.length_limit, fmt,
                                              drop_punctuation)
            for line in _file_notes(predicted, sentences, treebank.length_limit):
                note(line)
            trees = result.trees
        else:
            lm = LanguageModel.load(ref, device=device)
            _check_decoder(lm, ref, decode)
            results, _, _ = evaluate_model(lm, ref, sentences, [lm.default_layer], "official", batch_size,
                                           options={"decode": decode} if decode else {})
            trees = results[0].trees
        found.append([None if tree is None or tree == [] or not s.words else
                      nested_from_spans(list(range(len(s.words))), _positions(tree))
                      for tree, s in zip(trees, sentences)])
    return found


def parse_weights(weights: str | None, count: int) -> list[float]:
    """`--weights w1,w2,...`: one non-negative number per system (default: 1 each)."""
    if weights is None:
        return [1.0] * count
    try:
        values = [float(w) for w in weights.split(",")]
    except ValueError:
        raise TreenetsError(f"--weights {weights}: expected {count} numbers separated by commas") from None
    if len(values) != count:
        raise TreenetsError(f"--weights {weights}: {len(values)} weights for {count} systems (one each, in order)")
    if any(not v >= 0 for v in values) or not any(values):
        raise TreenetsError(f"--weights {weights}: expected numbers of at least 0, not all 0")
    return values


def ensemble_treebank(refs: list[str], treebank, output: str, mode: str = "generative", weights: str | None = None,
                      fmt: str = "auto", drop_punctuation: bool = False, batch_size: int = 64, device="cpu",
                      root=None, decode: str | None = None) -> int:
    """`treenets ensemble`: the ensemble tree of every sentence of `treebank` from the systems `refs`, written to
    `output` one bracketed tree a line over the treebank's words (as it writes them), in its order; the sentences
    no system parsed are left out and counted. Prints each system's mean agreement (official sentence F1) with the
    ensemble's trees. Returns how many trees were written."""
    if mode not in MODES:
        raise TreenetsError(f"--mode {mode}: expected one of {', '.join(MODES)}")
    if len(refs) < 2:
        raise TreenetsError("ensemble: give two systems or more (files of trees or models)")
    values = parse_weights(weights, len(refs))
    target = output_file(output, "--output")  # (before the work: a folder or an unwritable place is said now)
    _, sentences = treebank.read(root)
    trees = system_trees(refs, sentences, treebank, fmt, drop_punctuation, batch_size, device, decode)
    start = time.perf_counter()
    lines, agreements, unparsed = [], [[] for _ in refs], 0
    for i, sentence in enumerate(sentences):
        if not sentence.words:
            continue
        tree, agree = combine(list(range(len(sentence.words))), [system[i] for system in trees], values, mode)
        if tree is None:
            unparsed += 1
            continue
        forms = sentence.forms
        lines.append(bracketed(nested_from_spans(forms, _positions(tree))))
        for k, value in enumerate(agree):
            if value is not None:
                agreements[k].append(value)
    seconds = time.perf_counter() - start
    write_text_atomic(target, "".join(line + "\n" for line in lines))
    note(f"ensemble ({mode}) of {len(refs)} systems: {len(lines):,} trees in {seconds:.2f} s, written to {output}"
         + (f"; {unparsed:,} sentences no system parsed, left out" if unparsed else ""))
    print("| system | weight | sentences | agreement with the ensemble (sentence F1) |")
    print("| --- | ---: | ---: | ---: |")
    for ref, weight, values_k in zip(refs, values, agreements):
        mean = 100 * sum(values_k) / len(values_k) if values_k else float("nan")
        print(f"| {ref} | {weight:g} | {len(values_k):,} | {mean:.1f} |")
    sys.stdout.flush()
    return len(lines)

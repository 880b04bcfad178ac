"""The trees that language models induce, for people: printed and drawn for sentences (`treenets parse`:
`print_trees`), and scored against a treebank beside the baseline trees (`treenets parse-eval`:
`evaluate_parsing`; `treenets baselines`: `print_baselines`)."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import torch

from treenets.data.treebanks import GoldTreebank
from treenets.errors import TreenetsError
from treenets.files import json_text, output_folder, read_sentences
from treenets.limits import MAX_TREE_DEPTH
from treenets.predictors.lm import LanguageModel, Layer, Parse
from treenets.report import parsing_section, write_report
from treenets.text import invisible
from treenets.trees.draw import ascii_art, bracketed, write_svg
from treenets.trees.evaluation import evaluate_baselines, evaluate_model, format_table, multi_run_lines, write_outputs
from treenets.trees.walk import depth


def parse_record(text: str, parse: Parse, layers: list[Layer], distances: bool) -> dict:
    """What `parse --json` prints for a sentence: its text, what the model read (and what of the text it read
    nothing from: `dropped`, each piece's text, start and why), the tree of `parse.layer`, every layer's tree when
    several are asked, and with `distances` every row of distances."""
    record = {"text": text, "tokens": parse.words, "unknown": parse.unknown,
              "dropped": [asdict(piece) for piece in parse.dropped], "tree": bracketed(parse.nested),
              "layer": parse.layer}
    if len(layers) > 1:
        record["trees"] = {str(layer): bracketed(parse.at(layer).nested) for layer in layers}
    if distances:
        record["distances"] = [[round(value, 6) for value in row] for row in parse.distances.tolist()]
    return record


def shown(text: str) -> str:
    """`text` for a terminal: an invisible or unprintable character as its code point (`<U+200D>`)."""
    return "".join(char if char.isprintable() and not invisible(char) else f"<U+{ord(char):04X}>" for char in text)


def print_trees(ref: str, sentences: list[str] = (), file: str | None = None, layer: str = "default",
                split: str = "official", distances: bool = False, svg: str | None = None, as_json: bool = False,
                pretokenized: bool = False, device="cpu") -> int:
    """`treenets parse`: the tree the language model `ref` induces for each sentence (those given, then the lines
    of `file`) from the distances of `layer` (`LanguageModel.layers`; `all`: each layer's tree, then the mean's),
    printed bracketed and drawn as text, or with `as_json` one JSON object per line (`parse_record`); with
    `distances` every layer's distances too; with `svg` one drawing per tree in that folder. A sentence given
    that the model cannot read is an error; a line of `file` is skipped, named on stderr with the reason, and
    counted in a last line there. Returns how many lines were skipped."""
    given = [(None, text) for text in sentences]  # (where, text): arguments are quoted in messages
    lines = read_sentences(file, "--file") if file else []
    if not given and not lines:
        raise TreenetsError("parse: give sentences as arguments or --file")
    if svg:
        output_folder(svg, "--svg")
    lm = LanguageModel.load(ref, device=device)
    layers = lm.layers(layer, option="--layer")
    for where, text in given:  # a sentence with nothing to read: an error naming it, before any output
        lm.read(text, pretokenized, where)
    readable = []
    for where, text in lines:
        try:
            lm.read(text, pretokenized, where)
        except TreenetsError as exc:  # its message starts with `file:line`
            print(f"{exc} (skipped)", file=sys.stderr)
            continue
        readable.append((where, text))
    sentences = given + readable
    if not sentences:
        raise TreenetsError(f"{file}: no line of it could be read (above)")
    first = layers[0] if len(layers) == 1 else lm.default_layer  # --json's `tree` (with --layer all: the default's)
    parses = lm.parse([text for _, text in sentences], first, split, pretokenized=pretokenized)
    for number, ((where, text), parse) in enumerate(zip(sentences, parses), start=1):
        words = parse.words
        if as_json:
            if not torch.isfinite(parse.distances).all():  # JSON has no NaN
                raise TreenetsError(f"{where or f'sentence {number}'}: the model's distances are not finite numbers "
                                    "(a damaged model?)")
            print(json.dumps(parse_record(text, parse, layers, distances), allow_nan=False), flush=True)
        else:
            print(f"[{number}] {' '.join(words)}")
            if parse.unknown:
                print(f"    unknown words (read as <unk>): {' '.join(parse.unknown)}")
            if parse.dropped:
                print(f"    dropped: {' '.join(shown(piece.text) for piece in parse.dropped)}")
        for row in layers:
            tree = parse.at(row).nested
            levels = depth(tree)
            if not as_json:
                if len(layers) > 1:
                    print(f"layer {row}:")
                print(bracketed(tree))
                if levels > MAX_TREE_DEPTH:  # the bracketed tree above is the whole answer; a drawing would not fit
                    print(f"    (not drawn: {levels} levels deep, drawings stop at {MAX_TREE_DEPTH})")
                    continue
                print(ascii_art(tree, words))
            if svg and levels <= MAX_TREE_DEPTH:
                write_svg(tree, Path(svg) / (f"{number:04d}.svg" if len(layers) == 1 else
                                             f"{number:04d}-layer-{row}.svg"))
        if distances and not as_json:
            for i, values in enumerate(parse.distances):
                print(f"    layer {i + 1}: " + " ".join(f"{w}={d:.2f}" for w, d in zip(words, values.tolist())))
            print()
    if svg:
        print(f"SVG drawings: {svg}", file=sys.stderr if as_json else sys.stdout)
    skipped = len(lines) - len(readable)
    if file:  # the summary, after the trees
        print(f"{file}: {len(readable):,} of {len(lines):,} sentences parsed, {skipped:,} skipped (unreadable)",
              file=sys.stderr)
    return skipped


def evaluate_parsing(refs: list[str], treebank: GoldTreebank, layer: str = "all", split: str = "official",
                     output: str | None = None, batch_size: int = 64, random_draws: int = 5, device="cpu",
                     root=None) -> None:
    """`treenets parse-eval`: induce a tree for every sentence of `treebank` with each language model of `refs`,
    from the distances of `layer` (`all`: each layer and the mean), score them beside the baselines
    (`random_draws` random trees averaged) and print the table, then with several models their mean, spread
    and self-F1; with `output`, the trees, per-sentence scores, figures, `summary.json` and an HTML report in
    that folder."""
    if output:
        output_folder(output, "--output")
    path, sentences = treebank.read(root)
    rows, results, distances, notes, figure_layer = [], [], {}, [], None
    for ref in refs:
        lm = LanguageModel.load(ref, device=device)
        figure_layer = figure_layer or str(lm.default_layer)
        layers = lm.layers(layer, "--layer")
        model_results, model_distances, counts = evaluate_model(lm, ref, sentences, layers, split, batch_size)
        results += model_results
        distances[ref] = model_distances
        rows += [(ref, r.layer, r.scores.summary()) for r in model_results]
        notes.append(f"{ref}: {counts['unknown']} of {counts['words']} words not in the vocabulary (read as <unk>)")
    rows += [(name, "", summary) for name, summary in evaluate_baselines(sentences, random_draws).items()]
    summary = rows[0][2]
    print(f"treebank: {treebank.where(path)}: {summary['n']} sentences scored, {summary['empty']} empty after "
          f"filtering; split: {split}; {treebank.describe_words()}")
    print(format_table(rows))
    for line in notes + multi_run_lines(results):
        print(line)
    if output:
        write_outputs(Path(output), sentences, results, distances, figure_layer)
        summary = [{"model": name, "layer": row_layer, **values} for name, row_layer, values in rows]
        (Path(output) / "summary.json").write_text(json_text(summary, indent=1))
        section = parsing_section(f"{path}; {treebank.describe_words()}", split, treebank.wsj10, sentences, results,
                                  distances, rows, figure_layer)
        print(f"report: {write_report(output, f'treenets parse-eval: {treebank.name}', parsing=section)}")
        print(f"outputs: {output}")


def print_baselines(treebank: GoldTreebank, random_draws: int = 5, root=None) -> None:
    """`treenets baselines`: the right- and left-branching, balanced and random trees (`random_draws` averaged)
    scored against `treebank`, as `evaluate_parsing` scores a model's."""
    path, sentences = treebank.read(root)
    rows = [(name, "", summary) for name, summary in evaluate_baselines(sentences, random_draws).items()]
    print(f"treebank: {treebank.where(path)}: {rows[0][2]['n']} sentences scored, {rows[0][2]['empty']} empty after "
          f"filtering; {treebank.describe_words()}")
    print(format_table(rows))

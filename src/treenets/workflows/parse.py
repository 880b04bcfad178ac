"""The trees that language models induce, for people: printed and drawn for sentences (`treenets parse`:
`print_trees`; also those an Ordered Memory encoder of a logic, ListOps or sentiment model induces of what it
reads)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import torch

from treenets.core.errors import TreenetsError
from treenets.core.files import read_sentences, record_outputs, report_folder
from treenets.core.limits import MAX_TREE_DEPTH
from treenets.predictors.base import Predictor, TreeInducer
from treenets.predictors.ensemble import EnsembleParser
from treenets.predictors.parse import Layer, Parse
from treenets.text import invisible
from treenets.trees.draw import arc_art, ascii_art, bracketed, write_svg
from treenets.trees.walk import depth
from treenets.zoo.model_folder import ensemble_folder


def parse_record(text: str, parse: Parse, layers: list[Layer], distances: bool) -> dict:
    """What `parse --json` prints for a sentence: its text, what the model read (and what of the text it read
    nothing from: `dropped`, each piece's text, start and why), the tree of `parse.layer`, every layer's tree when
    several are asked, and with `distances` every row of distances."""
    record = {"text": text, "tokens": parse.words, "unknown": parse.unknown,
              "dropped": [dict(vars(piece)) for piece in parse.dropped], "tree": bracketed(parse.nested),
              "layer": parse.layer}
    if len(layers) > 1:
        record["trees"] = {str(layer): bracketed(parse.at(layer).nested) for layer in layers}
    if parse.heads is not None:
        record["heads"] = parse.heads  # the dependency tree: each token's head, 1-based, 0 for the root (CoNLL)
    record.update(parse.record_fields())  # what this kind of parse adds (Ordered Memory's: the scored and own trees)
    if distances:  # null where no tree reads one (a StructFormer's after its last word: `Parse.read_distances`)
        record["distances"] = [[None if math.isnan(value) else round(value, 6) for value in row]
                               for row in parse.read_distances.tolist()]
    return record


def tree_inducer(ref: str | list[str], device="cpu") -> TreeInducer:
    """The model `ref` (`Predictor.load`), or an error unless it induces trees (`TreeInducer`: a language model,
    or a model whose encoder may induce them, whose `layers` says whether it does); several models: their
    ensemble (`EnsembleParser`)."""
    if isinstance(ref, list):
        return EnsembleParser.load(ref, device=device)
    folder = ensemble_folder(ref)
    if folder is not None:  # a zoo ensemble
        return EnsembleParser.from_folder(folder, device)
    model = Predictor.load(ref, device=device)
    if not isinstance(model, TreeInducer):
        raise TreenetsError(f"{ref}: a {model.config.task} model induces no trees (`treenets parse` reads language "
                            "models, and logic, ListOps and sentiment models whose encoder is Ordered Memory)")
    return model


def _named(ref: str | list[str]) -> str:
    """A model, or an ensemble of models, as messages name it."""
    return f"the ensemble of {', '.join(ref)}" if isinstance(ref, list) else ref


def check_decoder(model, ref: str | list[str], decode: str | None) -> None:
    """An error unless `decode` is None or one of `model`'s decoders (`TreeInducer.decoders`)."""
    if decode is not None and decode not in model.decoders:
        raise TreenetsError(f"--decode {decode}: {_named(ref)} has no decoder to choose (its trees come from "
                            f"{model.tree_source}); --decode is for a model that decodes its trees: a grammar, a "
                            "span parser")


def shown(text: str) -> str:
    """`text` for a terminal: an invisible or unprintable character as its code point (`<U+200D>`)."""
    return "".join(char if char.isprintable() and not invisible(char) else f"<U+{ord(char):04X}>" for char in text)


def print_trees(ref: str | list[str], sentences: list[str] = (), file: str | None = None, layer: str = "default",
                split: str = "official", distances: bool = False, svg: str | None = None, as_json: bool = False,
                pretokenized: bool = False, device="cpu", overwrite: bool = False, decode: str | None = None) -> int:
    """`treenets parse`: the tree the language model `ref` (several: their ensemble, `tree_inducer`) induces for each
    sentence (those given, then the lines
    of `file`) from the distances of `layer` (`LanguageModel.layers`; `all`: each layer's tree, then the mean's),
    printed bracketed and drawn as text (for an encoder that induces trees, `tree_inducer`: the tree it built over
    the tokens it read, then without the tokens its task leaves out, and the input's own tree where it has one:
    `InducedParse`), or with `as_json` one JSON object per line (`parse_record`); with `distances` every layer's
    distances too; with `svg` one drawing per tree in that folder (new, empty or an earlier run's unless
    `overwrite`: `files.report_folder`); `decode` how a model that decodes its trees finds them
    (`TreeInducer.decoders`: a grammar's viterbi or mbr; None its default). A sentence given
    that the model cannot read is an error; a line of `file` is skipped, named on stderr with the reason, and
    counted in a last line there. Returns how many lines were skipped."""
    given = [(None, text) for text in sentences]  # (where, text): arguments are quoted in messages
    lines = read_sentences(file, "--file") if file else []
    if not given and not lines:
        raise TreenetsError("parse: give sentences as arguments or --file")
    if svg:
        report_folder(svg, "--svg", overwrite)
    lm = tree_inducer(ref, device)
    check_decoder(lm, ref, decode)
    options = {"decode": decode} if decode is not None else {}
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
    parses = lm.parse([text for _, text in sentences], first, split, pretokenized=pretokenized, **options)
    drawings = []  # the SVG files written
    try:  # the drawings written are recorded even when the output stops part-way (a closed pipe)
        for number, ((where, text), parse) in enumerate(zip(sentences, parses), start=1):
            words = parse.words
            if as_json:
                if not torch.isfinite(parse.distances).all():  # JSON has no NaN
                    raise TreenetsError(f"{where or f'sentence {number}'}: the model's distances are not finite "
                                        "numbers (a damaged model?)")
                print(json.dumps(parse_record(text, parse, layers, distances), allow_nan=False), flush=True)
            else:
                print(f"[{number}] {' '.join(words)}")
                if parse.unknown:
                    print(f"    unknown words ({lm.unknown_words}): {' '.join(parse.unknown)}")
                if parse.dropped:
                    print(f"    dropped: {' '.join(shown(piece.text) for piece in parse.dropped)}")
            for row in layers:
                if as_json and not svg:
                    break  # the JSON line holds the trees
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
                    for line in parse.notes():  # what this kind of parse adds below its drawing
                        print(f"    {line}")
                if svg and levels <= MAX_TREE_DEPTH:
                    drawings.append(Path(svg) / (f"{number:04d}.svg" if len(layers) == 1 else
                                                 f"{number:04d}-layer-{row}.svg"))
                    write_svg(tree, drawings[-1])
            if parse.heads is not None and not as_json:
                print("dependencies (each arc from the head down to its dependent, v):")
                print(arc_art(words, parse.heads))
                print(f"    heads (CoNLL, 1-based, 0 the root): {' '.join(map(str, parse.heads))}")
            if distances and not as_json:
                for i, values in enumerate(parse.read_distances):  # ("-" where no tree reads one)
                    name = parse.row_name(i)
                    print(f"    {name}: " + " ".join(f"{w}=-" if isinstance(d, float) and math.isnan(d) else
                                                     f"{w}={d:.2f}" if isinstance(d, float) else f"{w}={d}"
                                                     for w, d in zip(words, values.tolist())))
                print()
    finally:
        if svg:
            record_outputs(Path(svg), drawings)
    if svg:
        print(f"SVG drawings: {svg}", file=sys.stderr if as_json else sys.stdout)
    skipped = len(lines) - len(readable)
    if file:  # the summary, after the trees
        print(f"{file}: {len(readable):,} of {len(lines):,} sentences parsed, {skipped:,} skipped (unreadable)",
              file=sys.stderr)
    return skipped

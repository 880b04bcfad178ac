"""The trees that language models induce, for people: printed and drawn for sentences (`treenets parse`:
`print_trees`; also those an Ordered Memory encoder of a logic, ListOps or sentiment model induces of what it
reads), and scored with any parser's trees against a treebank beside the baseline trees (`treenets parse-eval`:
`evaluate_parsing`; `treenets baselines`: `print_baselines`)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import torch

from treenets.checkpoint import TORCH_FILE_STARTS
from treenets.console import note
from treenets.data.treebanks import GoldTreebank
from treenets.errors import TreenetsError
from treenets.files import json_text, read_sentences, record_outputs, report_folder, write_text_atomic
from treenets.limits import MAX_TREE_DEPTH
from treenets.predictors.base import Predictor, TreeInducer
from treenets.predictors.ensemble import EnsembleParser
from treenets.predictors.lm import LanguageModel, Layer, Parse
from treenets.report import parsing_section, write_report
from treenets.text import invisible
from treenets.trees.conventions import CONVENTIONS
from treenets.trees.dependencies import CONLL_COLUMNS
from treenets.trees.dependency_scoring import dependency_rows, dependency_table, is_conll_file, read_system_heads
from treenets.trees.dependency_scoring import gold_dependencies as gold_dependency_trees
from treenets.trees.draw import arc_art, ascii_art, bracketed, write_svg
from treenets.trees.evaluation import (
    baseline_results,
    compare_systems,
    comparison_lines,
    dependencies_only,
    evaluate_baselines,
    evaluate_file,
    evaluate_model,
    format_table,
    gold_nodes,
    multi_run_lines,
    multi_run_summary,
    system_summary,
    write_outputs,
)
from treenets.trees.formats import FORMATS
from treenets.trees.predicted import FILE_KINDS, STDIN, FileReading
from treenets.trees.walk import depth
from treenets.zoo import ensemble_folder


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


def _check_decoder(model, ref: str | list[str], decode: str | None) -> None:
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
    _check_decoder(lm, ref, decode)
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


def is_tree_file(ref: str) -> bool:
    """Whether a system given to `parse-eval` is a file of trees (`-`, standard input, or a text file whose first
    character, white space aside, is `(`, `[` or `{`: bracketed trees or JSON lines) rather than a model (a
    checkpoint, a model folder or a zoo name)."""
    if ref == STDIN:
        return True
    path = Path(ref)
    if not path.is_file():
        return False
    with open(path, "rb") as fh:
        return fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"(", b"[", b"{")


def system_kind(ref: str) -> str:
    """What a system given to `parse-eval` or `ensemble` is: `conll`, a CoNLL file of dependency trees
    (`is_conll_file`); `trees`, a file of trees (`is_tree_file`); or `model` (a checkpoint, a model folder, a zoo
    name).

    Raises:
        TreenetsError: naming a file that is none of them (no torch file either), and why each reading failed.
    """
    if is_conll_file(ref):
        return "conll"
    if is_tree_file(ref):
        return "trees"
    path = Path(ref)
    if not path.is_file():
        return "model"
    with open(path, "rb") as fh:
        head = fh.read(4096)
    if head.startswith(TORCH_FILE_STARTS):
        return "model"
    expected = "expected a file of trees, a CoNLL file of dependency trees or a treenets checkpoint"
    if not head.strip():
        what = "white space only" if head else "empty file (0 bytes)"
        raise TreenetsError(f"{path}: {what}: no system in it ({expected})")
    first = next(line for line in head.decode("utf-8", errors="replace").splitlines() if line.strip())
    tabs, spaces = len(first.split("\t")), len(first.split())
    raise TreenetsError(
        f"{path}: no reading fits it ({expected}): not a file of trees ({', '.join(FORMATS)}), whose first "
        f"character is '(', '[' or '{{', not {first.strip()[0]!r}; not a CoNLL file: its first line has {tabs} "
        f"tab-separated column{'s' if tabs > 1 else ''} where CoNLL has {len(CONLL_COLUMNS)}"
        + (f" ({spaces} separated by spaces: CoNLL separates them by tabs)" if spaces == len(CONLL_COLUMNS) else "")
        + f"; not a treenets checkpoint, nor any torch file: it begins with {head[:4]!r}, where a torch file begins "
        "with PK or \\x80")


def _file_notes(predicted: FileReading, sentences: list, max_length: int | None) -> list[str]:
    """What was read of a file: its format, how its lines matched the sentences (`Matching.summary`), the lines
    that could not be placed, the gold sentences it has a tree for and those it lacks (the first named), and its
    lines skipped for their length."""
    total, missing, matching = sum(1 for s in sentences if s.words), predicted.missing, predicted.matching
    notes = [f"{predicted.path}: {FILE_KINDS[matching.format]}; {matching.summary()}"]
    if matching.unplaced:
        lines = [f"line {number} ({len(fits)} sentences: {', '.join(fits[:3])}{', ...' if len(fits) > 3 else ''})"
                 for number, fits in list(matching.unplaced.items())[:5]]
        notes.append(f"{predicted.path}: {len(matching.unplaced):,} lines fit several sentences and could not be "
                     f"placed by the file's order, not scored: {'; '.join(lines)}"
                     f"{'; ...' if len(matching.unplaced) > 5 else ''}")
    note = f"{predicted.path}: trees for {total - len(missing):,} of {total:,} sentences"
    if missing:
        first = sentences[missing[0]]
        note += (f"; {len(missing):,} without a tree, not scored for it (the first: {first.source} "
                 f"{' '.join(first.words)[:80]!r})")
    if predicted.longer:
        note += f"; {predicted.longer:,} lines of more than {max_length} words skipped"
    return notes + [note]


def evaluate_parsing(refs: list[str], treebank: GoldTreebank, layer: str = "all", split: str = "official",
                     output: str | None = None, batch_size: int = 64, random_draws: int = 5, device="cpu",
                     root=None, conventions: list[str] = ("official",), draws: int = 10_000, seed: int = 0,
                     fmt: str = "auto", drop_punctuation: bool = False, overwrite: bool = False,
                     gold_dependencies: str | None = None, decode: str | None = None) -> None:
    """`treenets parse-eval`: score the trees of each system of `refs` against `treebank`, beside the baselines
    (`random_draws` random trees averaged), under `conventions` (`treenets.trees.conventions`; the first is the
    one systems are compared under), and print the table. A system is a file of bracketed trees (another parser's:
    `treenets.trees.predicted`), or a language model, whose trees are induced from the distances of `layer`
    (`all`: each layer and the mean; `split` where spans split). With several models, their mean, spread and
    self-F1; with two systems or more, the systems side by side (a model's default layer): the paired bootstrap
    (`draws` samples, `seed`) of every pair and their agreement. A file (`-`: standard input) is read in format
    `fmt` (`treenets.trees.formats`; `auto`: detected), its punctuation dropped from its trees with
    `drop_punctuation`; what was matched how is said on stderr. With `output`, the trees (also in compound-pcfg's
    format), per-sentence scores, figures, `summary.json` and an HTML report in that folder, which must be new,
    empty or an earlier report's unless `overwrite` (`files.report_folder`). Dependencies (a model that induces
    them, a system's CoNLL file) are scored against the gold trees converted by head rules, or `gold_dependencies`
    (a CoNLL file), beside the chains and random projective trees (`treenets.trees.dependency_scoring`). `decode`:
    how a model that decodes its trees finds them (`TreeInducer.decoders`: a grammar's viterbi or mbr)."""
    conventions = list(conventions)
    if refs.count(STDIN) > 1:
        raise TreenetsError("parse-eval: standard input (-) given more than once")
    if output:
        report_folder(output, "--output", overwrite)
    path, sentences = treebank.read(root)
    nodes = gold_nodes(sentences)
    results, compared, distances, notes, figure_layer, matched = [], [], {}, [], None, {}
    dependency_systems = []  # (name, heads): models that induce dependencies, CoNLL files
    dependency_files = []  # the CoNLL files, as systems without trees
    gold = None

    def gold_heads():
        nonlocal gold
        if gold is None:
            gold = gold_dependency_trees(sentences, treebank.rule, gold_dependencies, treebank.length_limit)
            if gold.reading is not None:  # how its sentences were matched, on stderr
                for line in _file_notes(gold.reading, sentences, treebank.length_limit):
                    note(line)
        return gold

    kinds = [system_kind(ref) for ref in refs]  # (a file no reading fits: said before any work)
    if gold_dependencies:  # (read first: its errors before any system's work)
        gold_heads()
    for ref, kind in zip(refs, kinds):
        if kind != "model":
            if kind == "conll":
                reading = read_system_heads(ref, sentences, treebank.describe_words(), treebank.length_limit)
                dependency_files.append(dependencies_only(ref, reading.heads))
                dependency_systems.append((ref, reading.heads))
            else:
                result, reading = evaluate_file(ref, sentences, treebank.describe_words(), treebank.length_limit,
                                                fmt, drop_punctuation)
                results.append(result)
                compared.append(result)
                matched[id(result)] = reading.matching.record()
            file_notes = _file_notes(reading, sentences, treebank.length_limit)
            for line in file_notes[:-1]:  # how it was read, on stderr; what was scored, with the table
                note(line)
            notes.append(file_notes[-1])
            continue
        folder = ensemble_folder(ref)
        lm = EnsembleParser.from_folder(folder, device) if folder else LanguageModel.load(ref, device=device)
        _check_decoder(lm, ref, decode)
        figure_layer = figure_layer or str(lm.default_layer)
        layers = lm.layers(layer, "--layer")
        model_results, model_distances, counts = evaluate_model(lm, ref, sentences, layers, split, batch_size,
                                                                options={"decode": decode} if decode else {})
        results += model_results
        compared.append(next((r for r in model_results if r.layer == str(lm.default_layer)), model_results[0]))
        if compared[-1].heads is not None:
            dependency_systems.append((ref, compared[-1].heads))
        distances[ref] = model_distances
        notes.append(f"{ref}: {counts['unknown']} of {counts['words']} words not in the vocabulary (read as <unk>)")
    rows = [{"model": r.source, "layer": r.layer, "kind": "model" if r.layer else "file",
             **system_summary(r, nodes, conventions), **({"matching": matched[id(r)]} if id(r) in matched else {})}
            for r in results]
    rows += [{"model": name, "layer": "", "kind": "baseline", **summary}
             for name, summary in evaluate_baselines(sentences, random_draws, conventions=conventions).items()]
    table = [(row["model"], row["layer"], row) for row in rows]
    scored = sum(1 for s in sentences if s.words)
    print(f"treebank: {treebank.where(path)}: {scored} sentences scored, {len(sentences) - scored} empty after "
          f"filtering; split: {split}; {treebank.describe_words()}")
    print(format_table(table, conventions))
    models = [r for r in results if r.layer]
    for line in notes + multi_run_lines(models):
        print(line)
    dependencies = None
    if dependency_systems or gold_dependencies:
        gold = gold_heads()
        dependencies = {"gold": gold.origin, "words": gold.rule.name,
                        "rows": dependency_rows(dependency_systems, sentences, gold, random_draws)}
        print(dependency_table(dependencies["rows"], gold))
    comparison = None
    if compared:  # beside right-branching, the reference of the field
        comparison = compare_systems(compared + baseline_results(sentences)[:1], sentences, nodes, conventions[0],
                                     draws, seed)
        if len(compared) > 1:
            for line in comparison_lines(comparison):
                print(line)
    if output:
        figures, written = write_outputs(Path(output), sentences, results, distances, figure_layer,
                                         gold=gold, dependency_files=dependency_files)
        document = {"treebank": treebank.where(path), "words": treebank.rule.name, "split": split,
                    "conventions": [CONVENTIONS[name].record() for name in conventions], "rows": rows,
                    "multi_run": multi_run_summary(models), "comparison": comparison, "dependencies": dependencies}
        written.append(write_text_atomic(Path(output) / "summary.json", json_text(document, indent=1)))
        section = parsing_section(f"{path}; {treebank.describe_words()}", split, treebank.length_limit, sentences,
                                  results, distances, rows, figure_layer, document["conventions"], comparison,
                                  [str(f.relative_to(output)) for f in figures], dependencies, gold,
                                  dependency_files)
        report = write_report(output, f"treenets parse-eval: {treebank.name}", parsing=section)
        record_outputs(Path(output), [*written, report])
        print(f"report: {report}")
        print(f"outputs: {output}")


def print_baselines(treebank: GoldTreebank, random_draws: int = 5, root=None,
                    conventions: list[str] = ("official",)) -> None:
    """`treenets baselines`: the right- and left-branching, balanced and random trees (`random_draws` averaged)
    scored against `treebank` under `conventions`, as `evaluate_parsing` scores a model's."""
    path, sentences = treebank.read(root)
    rows = [(name, "", summary) for name, summary in
            evaluate_baselines(sentences, random_draws, conventions=list(conventions)).items()]
    print(f"treebank: {treebank.where(path)}: {rows[0][2]['n']} sentences scored, {rows[0][2]['empty']} empty after "
          f"filtering; {treebank.describe_words()}")
    print(format_table(rows, conventions))

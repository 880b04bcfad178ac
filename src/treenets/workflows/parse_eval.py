"""Parsers' trees scored against a treebank (`treenets parse-eval`: `evaluate_parsing`): any model's, or a file of
another parser's, beside the baseline trees."""

from __future__ import annotations

from pathlib import Path

from treenets.core.checkpoint import TORCH_FILE_STARTS
from treenets.core.console import note
from treenets.core.errors import TreenetsError
from treenets.core.files import json_text, record_outputs, report_folder, write_text_atomic
from treenets.data.treebanks import GoldTreebank
from treenets.predictors.ensemble import EnsembleParser
from treenets.predictors.lm import LanguageModel
from treenets.report import parsing_section, write_report
from treenets.trees.conventions import CONVENTIONS
from treenets.trees.dependencies import CONLL_COLUMNS
from treenets.trees.dependency_scoring import dependency_rows, dependency_table, is_conll_file, read_system_heads
from treenets.trees.dependency_scoring import gold_dependencies as gold_dependency_trees
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
from treenets.workflows.parse import check_decoder
from treenets.zoo.model_folder import ensemble_folder


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


def file_notes(predicted: FileReading, sentences: list, max_length: int | None) -> list[str]:
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
                for line in file_notes(gold.reading, sentences, treebank.length_limit):
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
            read_notes = file_notes(reading, sentences, treebank.length_limit)
            for line in read_notes[:-1]:  # how it was read, on stderr; what was scored, with the table
                note(line)
            notes.append(read_notes[-1])
            continue
        folder = ensemble_folder(ref)
        lm = EnsembleParser.from_folder(folder, device) if folder else LanguageModel.load(ref, device=device)
        check_decoder(lm, ref, decode)
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

"""Ensembles of systems' trees over a treebank (`treenets ensemble`) and over typed sentences (`treenets parse
--ensemble`): the combination is `treenets.trees.ensemble`'s; here the systems are read as `parse-eval` reads them.

A system is a file of another parser's trees (any format `parse-eval` reads, aligned with the treebank's sentences
under the same normalisations, what was matched how said on stderr) or a treenets model (a zoo name, a folder, a
checkpoint) that parses the treebank's sentences (its default layer; a grammar's Viterbi trees unless `decode`).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from treenets.core.console import note
from treenets.core.errors import TreenetsError
from treenets.core.files import output_file, read_text, refuse_output_over_inputs, write_text_atomic
from treenets.trees.draw import bracketed
from treenets.trees.ensemble import combine, nested_from_spans
from treenets.trees.metrics import node_spans


def _positions(tree) -> list[tuple[int, int]]:
    """A tree's spans of two or more words (start, end exclusive), every node's (non-binary trees too)."""
    nodes, _ = node_spans(tree)
    return sorted({span for span in nodes if span[1] - span[0] >= 2})


def system_trees(refs: list, sentences, treebank, fmt: str = "auto", drop_punctuation: bool = False,
                 batch_size: int = 64, device="cpu", decode: str | None = None) -> list[list]:
    """Each system's tree of every sentence (nested lists over the sentence's positions; None where it has none),
    read as `parse-eval` reads its systems; a model's (`Member`: REF[:layer=L][:decode=D]) from its layer and
    decoder, else its default layer and `decode` where it has decoders."""
    from treenets.predictors.ensemble import EnsembleParser, Member
    from treenets.predictors.lm import LanguageModel
    from treenets.trees.evaluation import evaluate_file, evaluate_model
    from treenets.workflows.parse import check_decoder
    from treenets.workflows.parse_eval import file_notes, system_kind
    from treenets.zoo.model_folder import ensemble_folder

    members = [Member.read(ref, "ensemble") for ref in refs]
    kinds = [system_kind(m.ref) for m in members]  # (a file no reading fits: said before any work)
    if "conll" in kinds:
        raise TreenetsError(f"{refs[kinds.index('conll')]}: a CoNLL file of dependency trees; an ensemble combines "
                            "constituency trees (expected files of trees, or models)")
    found = []
    for member, kind in zip(members, kinds):
        if kind == "trees":
            if member.layer or member.decode:
                raise TreenetsError(f"{member}: a file of trees has no layer or decoder to choose (those are a "
                                    "model's)")
            result, predicted = evaluate_file(member.ref, sentences, treebank.describe_words(),
                                              treebank.length_limit, fmt, drop_punctuation)
            for line in file_notes(predicted, sentences, treebank.length_limit):
                note(line)
            trees = result.trees
        else:
            folder = ensemble_folder(member.ref)  # an ensemble's folder is a system too
            lm = (EnsembleParser.from_folder(folder, device) if folder
                  else LanguageModel.load(member.ref, device=device))
            chosen = member.decode or (decode if decode in lm.decoders else None)
            check_decoder(lm, str(member), member.decode or decode)
            layer = lm.layers(member.layer, f"{member}: layer")[0] if member.layer else lm.default_layer
            results, _, _ = evaluate_model(lm, str(member), sentences, [layer], "official", batch_size,
                                           options={"decode": chosen} if chosen else {})
            trees = results[0].trees
        found.append(over_positions(trees, sentences))
    return found


def over_positions(trees: list, sentences) -> list:
    """Trees over the treebank's words as trees over each sentence's positions (None where there is none)."""
    return [None if tree is None or tree == [] or not s.words else
            nested_from_spans(list(range(len(s.words))), _positions(tree)) for tree, s in zip(trees, sentences)]


def parse_weights(weights: str | None, count: int) -> list[float] | None:
    """`--weights w1,w2,...` as numbers (None: 1 each); `ensemble_definition` checks them with the members."""
    if weights is None:
        return None
    try:
        return [float(w) for w in weights.split(",")]
    except ValueError:
        raise TreenetsError(f"--weights {weights}: expected {count} numbers separated by commas") from None


def ensemble_treebank(refs: list[str], treebank, output: str, mode: str = "generative", weights: str | None = None,
                      fmt: str = "auto", drop_punctuation: bool = False, batch_size: int = 64, device="cpu",
                      root=None, decode: str | None = None) -> int:
    """`treenets ensemble`: the ensemble tree of every sentence of `treebank` from the systems `refs`, written to
    `output` one bracketed tree a line over the treebank's words (as it writes them), in its order; the sentences
    no system parsed are left out and counted. Prints each system's mean agreement (official sentence F1) with the
    ensemble's trees. Returns how many trees were written."""
    from treenets.predictors.ensemble import ensemble_definition

    members, values, mode = ensemble_definition(refs, parse_weights(weights, len(refs)), mode, "ensemble",
                                                "--weights")
    refs = [str(m) for m in members]
    target = output_file(output, "--output")  # (before the work: a folder or an unwritable place is said now)
    path, sentences = treebank.read(root, scored=False)  # (the sentences alone: flat trees will do)
    inputs = {"--treebank": path, **{f"system {m}": Path(m.ref) for m in members if m.ref != "-"}}
    refuse_output_over_inputs(target, inputs, "--output")
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


def measure_ensemble(refs: list[str], weights: list[float], mode: str, root=None, device="cpu",
                     treebanks=("wsj22", "wsj24"), batch_size: int = 64) -> dict:
    """The figures of an ensemble of models and of each member alone, per treebank: sentence- and corpus-F1 of the
    `official` convention, the sentence-F1 of `kim`, and the right-branching baseline's."""
    from treenets.data.treebanks import GoldTreebank
    from treenets.trees import right_branching
    from treenets.trees.conventions import CONVENTIONS, ConventionScores
    from treenets.trees.evaluation import gold_nodes, score_trees

    figures = {}
    for name in treebanks:
        treebank = GoldTreebank(name)
        _, sentences = treebank.read(root)
        members = system_trees(refs, sentences, treebank, batch_size=batch_size, device=device)
        combined = []
        for i, sentence in enumerate(sentences):
            tree = combine(list(range(len(sentence.words))), [m[i] for m in members], weights, mode)[0] \
                if sentence.words else []
            combined.append([] if tree is None else _over(tree, sentence.words))
        systems = {"ensemble": combined, **{ref: [[] if t is None else _over(t, s.words) for t, s in zip(m, sentences)]
                                             for ref, m in zip(refs, members)},
                   "right-branching": [right_branching(s.words) if s.words else [] for s in sentences]}
        nodes = gold_nodes(sentences)
        rows = {}
        for system, trees in systems.items():
            result = score_trees(system, "", trees, sentences)
            summary = result.scores.summary()
            kim = ConventionScores.score(CONVENTIONS["kim"], result.nodes, nodes).summary()
            rows[system] = {"sentence_f1": summary["sentence_f1"], "corpus_f1": summary["corpus_f1"],
                            "kim_sentence_f1": kim["f1"]}
        figures[name] = rows
    return figures


def _over(tree, words: list[str]):
    """A tree over positions as the same tree over `words`."""
    return [_over(child, words) for child in tree] if isinstance(tree, list) else words[tree]


def save_ensemble(refs: list, out: str, name: str, summary: str, weights: str | None = None,
                  mode: str = "generative", root=None, device="cpu", notes: str | None = None) -> Path:
    """Write the zoo folder of the ensemble of the models `refs` (zoo names, so that the folder names them, each
    with its layer or decoder: `Member`): `ensemble.json` (the members, their weights, the mode), `metrics.json`
    (its headline figures, each member's, and the check the tests recompute:
    `treenets.workflows.export.check_figures`) and `README.md`, its card, with `notes` (a markdown file: how the
    ensemble was chosen) as its section "Choice".
    Returns the folder."""
    import json

    from treenets.predictors.ensemble import CONFIG, EnsembleParser, ensemble_definition
    from treenets.workflows.export import check_figures
    from treenets.zoo import registry as zoo

    members, values, mode = ensemble_definition(refs, parse_weights(weights, len(refs)), mode, "--save-as",
                                                "--weights")
    unknown = [str(m) for m in members if m.ref not in zoo.registry()]
    if unknown:
        raise TreenetsError(f"--save-as: a zoo ensemble's members are zoo models; not: {', '.join(unknown)}")
    refs = [str(m) for m in members]
    text = read_text(notes, "--notes") if notes else ""
    folder = Path(out)
    if folder.exists() and any(folder.iterdir()) and not (folder / CONFIG).is_file():
        raise TreenetsError(f"--save-as {folder}: a folder holding other files (expected a new or empty folder, or "
                            "an ensemble's)")
    folder.mkdir(parents=True, exist_ok=True)
    spec = {"members": refs, "weights": values, "mode": mode}
    write_text_atomic(folder / CONFIG, json.dumps(spec, indent=1) + "\n")
    figures = measure_ensemble(refs, values, mode, root, device)
    check = check_figures(EnsembleParser.from_folder(folder, device), root)
    headline = {f"{treebank} sent-F1": rows["ensemble"]["sentence_f1"] for treebank, rows in figures.items()}
    metrics = {"name": name, "summary": summary, "task": "ensemble", "model": "ensemble", **spec,
               "figures": figures, "headline": headline, "check": check, "notes": text}
    write_text_atomic(folder / "metrics.json", json.dumps(metrics, indent=1) + "\n")
    write_text_atomic(folder / "README.md", ensemble_card(metrics))
    return folder


def _variants(ref: str, sentences, treebank, fmt, drop_punctuation, batch_size, device) -> list[tuple]:
    """The ways system `ref` parses the treebank: (member, its trees over positions, its official sentence-F1),
    one for a file or a member given with its options; a model's each layer (its rows of distances, their mean)
    under each decoder, parsed once."""
    from treenets.predictors.ensemble import Member
    from treenets.predictors.lm import LanguageModel
    from treenets.trees.evaluation import evaluate_model
    from treenets.workflows.parse_eval import system_kind
    from treenets.zoo.model_folder import ensemble_folder

    member = Member.read(ref, "--choose-on")
    if member.layer or member.decode or system_kind(member.ref) != "model" or ensemble_folder(member.ref):
        trees = system_trees([ref], sentences, treebank, fmt, drop_punctuation, batch_size, device)[0]
        return [(member, trees, _sentence_f1(trees, sentences))]
    lm = LanguageModel.load(member.ref, device=device)
    layers = lm.layers("all")
    found = []
    for decode in lm.decoders or (None,):
        results, _, _ = evaluate_model(lm, member.ref, sentences, layers, "official", batch_size,
                                       options={"decode": decode} if decode else {})
        for layer, result in zip(layers, results):
            variant = Member(member.ref, str(layer) if len(layers) > 1 else None, decode)
            found.append((variant, over_positions(result.trees, sentences), result.scores.summary()["sentence_f1"]))
    return found


def _sentence_f1(trees: list, sentences) -> float:
    """The official sentence-F1 of trees over positions (None where there is none)."""
    from treenets.trees.evaluation import score_trees

    over = [[] if t is None else _over(t, s.words) for t, s in zip(trees, sentences)]
    return score_trees("", "", over, sentences).scores.summary()["sentence_f1"]


def choose_ensemble(refs: list[str], treebank, fmt: str = "auto", drop_punctuation: bool = False,
                    batch_size: int = 64, device="cpu", root=None) -> tuple[list[str], str]:
    """`treenets ensemble --choose-on TREEBANK`: the ensemble of the systems `refs` that scores best on `treebank`
    (a development set: WSJ 22; never the one the figures report). Each model parses it once under each of its
    layers and decoders, and keeps the way it scores best with alone (a system given as REF:layer=L or
    REF:decode=D, or a file, is taken as given); then every combination of two or more of them, generative and
    selective, unweighted, is scored by its official sentence-F1 there. Prints both tables (stdout), ranked, and
    returns the best (its members as `Member` writes them, its mode); ties go to the fewer members, then the
    order given."""
    import itertools

    from treenets.predictors.ensemble import MODES, ensemble_definition

    ensemble_definition(refs, None, "generative", "--choose-on")  # (two systems or more, none twice)
    _, sentences = treebank.read(root)
    present = [i for i, s in enumerate(sentences) if s.words]
    systems = []
    print(f"| system | sentence-F1 (official) on {treebank.name} | chosen |")
    print("| --- | ---: | --- |")
    for ref in refs:
        variants = _variants(ref, sentences, treebank, "auto" if fmt is None else fmt, drop_punctuation, batch_size,
                             device)
        best = max(range(len(variants)), key=lambda k: (variants[k][2], -k))
        for k, (member, _, f1) in enumerate(variants):
            print(f"| {member} | {100 * f1:.1f} | {'yes' if k == best else ''} |")
        systems.append(variants[best])
    sys.stdout.flush()
    start, ranked = time.perf_counter(), []
    for size in range(2, len(systems) + 1):
        for chosen in itertools.combinations(range(len(systems)), size):
            for mode in MODES:
                trees = [None] * len(sentences)
                for i in present:
                    positions = list(range(len(sentences[i].words)))
                    trees[i] = combine(positions, [systems[k][1][i] for k in chosen], [1.0] * size, mode)[0]
                ranked.append((_sentence_f1(trees, sentences), chosen, mode))
    ranked.sort(key=lambda row: (-row[0], len(row[1])))  # (stable: then the order of the search)
    note(f"--choose-on {treebank.name}: {len(ranked)} ensembles of {len(systems)} systems scored in "
         f"{time.perf_counter() - start:.1f} s")
    print(f"| rank | members | mode | sentence-F1 (official) on {treebank.name} |")
    print("| ---: | --- | --- | ---: |")
    for rank, (f1, chosen, mode) in enumerate(ranked, 1):
        print(f"| {rank} | {' '.join(str(systems[k][0]) for k in chosen)} | {mode} | {100 * f1:.1f} |")
    sys.stdout.flush()
    f1, chosen, mode = ranked[0]
    members = [str(systems[k][0]) for k in chosen]
    note(f"chosen on {treebank.name}: {' '.join(members)} --mode {mode} (sentence-F1 {100 * f1:.1f})")
    return members, mode


def ensemble_card(metrics: dict) -> str:
    """The card of a zoo ensemble, from its `metrics.json`."""
    members = ", ".join(f"`{ref}` (weight {w:g})" for ref, w in zip(metrics["members"], metrics["weights"]))
    lines = [f"# {metrics['name']}", "", metrics["summary"], "",
             f"An ensemble ({metrics['mode']}, Shayegh et al., ICLR 2024) of {members}: for each sentence the binary "
             "tree with the largest total agreement (the official sentence F1) with the members' trees.", "",
             "```python", "import treenets", f"parser = treenets.load(\"{metrics['name']}\")",
             'parser.parse("The economy grew 3% last year.").tree', "```", "",
             f"    treenets parse {metrics['name']} \"The economy grew 3% last year.\"", "",
             *(["## Choice", "", metrics["notes"].strip(), ""] if metrics.get("notes") else []), "## Figures", "",
             "Measured with the shipped members by `treenets ensemble --save-as` (WSJ 22 and WSJ 24, the words the "
             "official evaluation reads; F1 in percent):", ""]
    for treebank, rows in metrics["figures"].items():
        lines += [f"| {treebank} | sentence-F1 (official) | corpus-F1 | sentence-F1 (kim) |",
                  "| --- | ---: | ---: | ---: |"]
        lines += [f"| {system} | {100 * r['sentence_f1']:.1f} | {100 * r['corpus_f1']:.1f} | "
                  f"{100 * r['kim_sentence_f1']:.1f} |" for system, r in rows.items()]
        lines.append("")
    lines += ["The figure the tests recompute from the shipped files (`treenets.workflows.export.check_figures`):", ""]
    lines += [f"- {key}: {value:.6f}" for key, value in metrics["check"].items()]
    return "\n".join(lines) + "\n"

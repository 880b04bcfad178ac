"""Dependency trees scored against a treebank (`treenets parse-eval`): the gold dependencies (the treebank's trees
converted by Collins' head rules, `treenets.trees.head_rules`, or a CoNLL file the user gives), the heads of each
system (a model that induces them, StructFormer; or another parser's CoNLL file), and their directed and undirected
attachment accuracy beside the baselines (left and right chains, random projective trees), punctuation excluded as
StructFormer's evaluation excludes it (`treenets.trees.dependencies.AttachmentScores`).

A system's heads are over the words the treebank's word rule keeps (`GoldSentence.words`), one list per gold
sentence (None where it has none). The sentences of a CoNLL file (a system's, or the gold one of `--gold-dependencies`)
are matched with the treebank's by their words as a file of trees is (`treenets.trees.predicted.align_lines`: in any
order, under the same normalisations, what was matched how counted), each with the treebank's kept words only or with
some or all of its punctuation and symbols too (a system's head on such a token is followed up to a kept word, as for
the gold trees).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from treenets.core.errors import TreenetsError
from treenets.core.files import read_text
from treenets.trees.dependencies import (
    AttachmentScores,
    DependencySentence,
    heads_among,
    left_chain,
    parse_conll,
    random_projective_tree,
    read_conll,
    right_chain,
    word_rule_for,
)
from treenets.trees.formats import Line
from treenets.trees.head_rules import dependencies_by_head_rules
from treenets.trees.predicted import Alignment, FileReading, Matching, align_lines
from treenets.trees.ptb import GoldSentence, WordRule

CONLL_SUFFIXES = (".conll", ".conllu", ".conllx")
BASELINES = {"left chain": left_chain, "right chain": right_chain}


@dataclass
class GoldDependencies:
    """The gold dependency tree of every gold sentence (None for one without words), the rule telling which of
    their tokens are scored, where they came from (for the table and `summary.json`), and for a CoNLL file what was
    read of it (`reading`: how its sentences were matched with the treebank's)."""

    trees: list[DependencySentence | None]
    rule: WordRule
    origin: str
    reading: FileReading | None = None

    def kept_heads(self, i: int) -> list[int] | None:
        """The gold heads of sentence `i` over its words (the tokens `rule` keeps; 1-based, 0 for the root), None
        for a sentence without words."""
        tree = self.trees[i]
        return tree.kept_heads(self.rule) if tree is not None else None

    def sentence_scores(self, heads: list[int] | None, i: int) -> dict:
        """`dda` and `uda` of a system's `heads` of sentence `i` alone; None for both where the system or the
        sentence has none."""
        if heads is None or self.trees[i] is None:
            return {"dda": None, "uda": None}
        scores = AttachmentScores().add(heads, self.trees[i], self.rule)
        return {"dda": scores.dda, "uda": scores.uda}


def gold_dependencies(sentences: list[GoldSentence], rule: WordRule, conll: str | None = None,
                      max_length: int | None = None) -> GoldDependencies:
    """The gold dependencies of `sentences`: their trees converted by Collins' head rules, or with `conll` that
    file's sentences (its words scored by its tags: `word_rule_for`), matched with the treebank's by those words
    (`align_conll`; with `max_length`, the treebank's sentences are those of at most that many words).

    Raises:
        TreenetsError: naming the file when it lacks a sentence of the treebank, and the line of a sentence that
            fits none, or that has another number of words to score than its treebank sentence.
    """
    present = [i for i, s in enumerate(sentences) if s.words]
    trees: list[DependencySentence | None] = [None] * len(sentences)
    if conll is None:
        for i in present:
            trees[i] = dependencies_by_head_rules(sentences[i].tree, sentences[i].source)
        return GoldDependencies(trees, rule, "the gold trees converted by Collins (1999)'s head rules")
    given = read_conll(conll)
    rule = word_rule_for(given)
    alignment, reading = align_conll(conll, given, [[t.words[p] for p in t.kept(rule)] for t in given], sentences,
                                     max_length=max_length)
    if alignment.missing:
        first = sentences[alignment.missing[0]]
        raise TreenetsError(f"{conll}: no dependency tree for {len(alignment.missing):,} of the treebank's "
                            f"{len(present):,} sentences with words to score (the first: {first.source} "
                            f"{' '.join(first.words)[:80]!r}); --gold-dependencies: a CoNLL file of the treebank's "
                            "sentences")
    for k, (i, _) in alignment.placed.items():
        tree = given[k]
        scored = len(tree.kept(rule))
        if scored != len(sentences[i].words):
            raise TreenetsError(f"{tree.where}: {scored} words to score (rule '{rule.name}': {rule.summary}), but "
                                f"{sentences[i].source} has {len(sentences[i].words)}: "
                                f"{' '.join(sentences[i].words)[:80]!r}")
        trees[i] = tree
    return GoldDependencies(trees, rule, f"{conll} (rule '{rule.name}': {rule.summary})", reading)


def align_conll(path: str, trees: list[DependencySentence], words: list[list[str]], sentences: list[GoldSentence],
                words_rule: str = "", max_length: int | None = None) -> tuple[Alignment, FileReading]:
    """The sentences of CoNLL file `path` (`trees`, each read as its `words`) placed on the treebank's `sentences`
    as the lines of a file of trees are (`align_lines`: a sentence that keeps punctuation or symbols the word rule
    drops fits with them; with `max_length`, one of more words that fits none is skipped and counted), and what was
    read of the file.

    Raises:
        TreenetsError: naming the line of a sentence whose words are no gold sentence left (`align_lines`).
    """
    matching = Matching("conll")
    alignment = align_lines(path, [Line(tree.source.line) for tree in trees], words, sentences, matching,
                            words_rule, max_length, drop_punctuation=True)
    return alignment, FileReading(path, alignment.missing, len(alignment.placed), alignment.longer, matching)


def is_conll_file(ref: str) -> bool:
    """Whether a system given to `parse-eval` is a CoNLL file of dependency trees: a file named `.conll`,
    `.conllu` or `.conllx`, or whose first line that is not a comment has ten tab-separated columns."""
    path = Path(ref)
    if not path.is_file():
        return False
    if path.suffix.lower() in CONLL_SUFFIXES:
        return True
    with open(path, "rb") as fh:
        head = fh.read(4096).decode("utf-8", errors="replace").splitlines()
    first = next((line for line in head if line.strip() and not line.startswith("#")), "")
    return first.count("\t") == 9


@dataclass
class SystemHeads(FileReading):
    """A system's CoNLL file: the heads of each gold sentence over its words (`heads[i]`, 1-based, 0 for the root;
    None where the file has no tree for it), and what was read of it."""

    heads: list = field(default_factory=list)


def read_system_heads(path: str, sentences: list[GoldSentence], words_rule: str = "",
                      max_length: int | None = None) -> SystemHeads:
    """The heads of a system's CoNLL file over each gold sentence's words, its sentences matched with the
    treebank's by their words (`align_conll`; `words_rule` names the word rule in messages).

    Raises:
        TreenetsError: naming the file, or the line of a sentence whose words are no gold sentence left.
    """
    system = parse_conll(read_text(path, "a CoNLL file of dependency trees"), path)
    alignment, reading = align_conll(path, system, [tree.words for tree in system], sentences, words_rule,
                                     max_length)
    heads: list[list[int] | None] = [None] * len(sentences)
    for k, (i, dropped) in alignment.placed.items():
        tree = system[k]
        heads[i] = heads_among(tree.heads, [p for p in range(len(tree.words)) if p not in set(dropped)])
    return SystemHeads(reading.path, reading.missing, reading.lines, reading.longer, reading.matching, heads)


def score_heads(heads: list[list[int] | None], gold: GoldDependencies) -> AttachmentScores:
    """The attachment scores of a system's heads (None: no tree for that sentence, not scored)."""
    scores = AttachmentScores()
    for predicted, tree in zip(heads, gold.trees, strict=True):
        if predicted is not None and tree is not None:
            scores.add(predicted, tree, gold.rule)
    return scores


def baseline_heads(sentences: list[GoldSentence], draws: int = 5, seed: int = 0) -> dict[str, list]:
    """The baselines' heads of every sentence: the left and right chains, and `draws` seeded random projective
    trees (`random k`)."""
    baselines = {name: [build(len(s.words)) if s.words else None for s in sentences] for name, build in
                 BASELINES.items()}
    rng = random.Random(seed)
    for k in range(draws):
        baselines[f"random {k + 1}"] = [random_projective_tree(len(s.words), rng) if s.words else None
                                        for s in sentences]
    return baselines


def dependency_rows(systems: list[tuple[str, list]], sentences: list[GoldSentence], gold: GoldDependencies,
                    draws: int = 5, seed: int = 0) -> list[dict]:
    """Each system's (name, heads) summary (`AttachmentScores.summary`, with `system` and `kind`), then the
    baselines' (the random trees' the mean over `draws`)."""
    rows = [{"system": name, "kind": "system", **score_heads(heads, gold).summary()} for name, heads in systems]
    randoms = []
    for name, heads in baseline_heads(sentences, draws, seed).items():
        summary = score_heads(heads, gold).summary()
        if name.startswith("random"):
            randoms.append(summary)
        else:
            rows.append({"system": name, "kind": "baseline", **summary})
    if randoms:
        mean = {key: sum(r[key] for r in randoms) / len(randoms) for key in ("dda", "uda")}
        rows.append({"system": f"random projective ({draws} draws)", "kind": "baseline", **randoms[0], **mean})
    return rows


def dependency_table(rows: list[dict], gold: GoldDependencies) -> str:
    """The rows as a text table: DDA (= UAS) and UDA in percent."""
    width = max(12, *(len(row["system"]) for row in rows))
    every = rows[-1]  # a baseline: every sentence
    lines = [f"dependencies against {gold.origin}; punctuation not scored "
             f"({every['words']:,} words of {every['sentences']:,} sentences):",
             f"{'':{width}} {'DDA':>6} {'UDA':>6}"]
    lines += [f"{row['system']:{width}} {100 * row['dda']:6.1f} {100 * row['uda']:6.1f}" for row in rows]
    return "\n".join(lines)

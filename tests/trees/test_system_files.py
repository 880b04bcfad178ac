"""Files of trees as systems publish them, made from WSJ 24: numbers without their commas, digits as `N`, Mikolov's
PTB text (numbers and `%` as `N`), lower case, `<unk>` for rare words, `(` for `-LRB-`, punctuation kept, in a
shuffled order, with sentences missing, with one sentence whose words truly differ. Each scores as the same trees
over the treebank's own words score, under every convention, and its lines are counted by the normalisation they
needed (`Matching`), as the test computes from what it changed."""

from __future__ import annotations

import json
import random
import re
from collections import Counter

import pytest

from treenets.core.errors import TreenetsError
from treenets.trees import random_tree
from treenets.trees.build import attach_dropped
from treenets.trees.conventions import CONVENTIONS, ConventionScores
from treenets.trees.draw import bracketed, preterminal_bracketed
from treenets.trees.evaluation import gold_nodes, score_trees
from treenets.trees.metrics import node_spans
from treenets.trees.predicted import read_predicted
from treenets.trees.ptb import WORD_RULES, load_gold, normalize_word
from treenets.trees.walk import with_words


@pytest.fixture(scope="module")
def wsj24(data_root):
    return data_root / "wsj_trees" / "dev_24.LDC99T42"


@pytest.fixture(scope="module")
def section(wsj24):
    """The sentences of WSJ 24 and a random tree over each one's positions (the system's)."""
    sentences = load_gold(wsj24)
    rng = random.Random(24)
    shapes = [random_tree(list(range(len(s.words))), rng) for s in sentences]
    return sentences, shapes


def scores(trees: list, sentences: list) -> dict:
    """Every convention's summary of `trees` (None where a sentence has none), and the official table's."""
    result = score_trees("system", "", trees, sentences)
    nodes = gold_nodes(sentences)
    return {"official table": result.scores.summary(), **{
        name: ConventionScores.score(convention, result.nodes, nodes).summary()
        for name, convention in CONVENTIONS.items()}}


def file_of(tmp_path, lines: list[str], name: str = "system.txt") -> str:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def mikolov(word: str) -> str:
    """Mikolov's PTB text: lower case, a number (and `%`) as `N`."""
    return "N" if word == "%" or re.fullmatch(r"[0-9][0-9,.\\/]*", word) else word.lower()


# Each way of writing a word, and the step it needs: a function of the word as the treebank writes it.
VARIANTS = {
    "lower case": (str.lower, lambda word: "case"),
    "numbers without commas": (lambda w: re.sub(r"(?<=[0-9]),(?=[0-9])", "", w), lambda word: "numbers"),
    "digits as N": (normalize_word, lambda word: "numbers" if re.search("[0-9]", word) else "case"),
    "Mikolov's text": (mikolov, lambda word: "numbers" if mikolov(word) == "N" else "case"),
    # Shayegh et al.'s ensemble files: digit runs as N, then the separators between them dropped (`20,000`: `NN`)
    "numbers as NN": (lambda w: re.sub(r"(?<=N)(?:[.,:-]|\\/)+(?=N)", "", normalize_word(w)),
                      lambda word: "numbers" if re.search("[0-9]", word) else "case"),
}
LOOSEST = ("exact", "case", "symbols", "numbers", "unknown")


def expected_counts(sentences, written: list[list[str]], step_of) -> tuple[Counter, Counter]:
    """The sentences by the loosest step their words needed, and the words by step, from what was changed."""
    by_sentence, by_word = Counter(), Counter()
    for s, words in zip(sentences, written):
        steps = [step_of(form) if word != form else "exact" for form, word in zip(s.forms, words)]
        if steps:
            by_sentence[max(steps, key=LOOSEST.index)] += 1
            by_word.update(step for step in steps if step != "exact")
    return by_sentence, by_word


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("order", ["in order", "shuffled", "missing sentences"])
def test_a_file_in_the_forms_systems_write_scores_as_the_treebanks_words(tmp_path, section, variant, order):
    sentences, shapes = section
    change, step_of = VARIANTS[variant]
    present = [i for i, s in enumerate(sentences) if s.words]
    written = [[change(form) for form in s.forms] for s in sentences]
    own = [with_words(shape, s.forms) if s.words else None for shape, s in zip(shapes, sentences)]
    theirs = [with_words(shape, words) for shape, words in zip(shapes, written)]
    kept = present if order == "in order" else random.Random(7).sample(present, len(present))
    if order == "missing sentences":
        kept = sorted(kept[: len(kept) - 40])  # in the treebank's order, 40 sentences left out
    write = preterminal_bracketed if variant == "lower case" else bracketed  # (both formats of the field)
    predicted = read_predicted(file_of(tmp_path, [write(theirs[i]) for i in kept]), sentences)
    assert predicted.trees == [theirs[i] if i in kept else None for i in range(len(sentences))]
    assert predicted.missing == sorted(set(present) - set(kept))
    reference = [own[i] if i in kept else None for i in range(len(sentences))]
    assert scores(predicted.trees, sentences) == scores(reference, sentences)
    by_sentence, by_word = expected_counts([sentences[i] for i in kept], [written[i] for i in kept], step_of)
    assert predicted.matching.sentences == by_sentence and predicted.matching.words == by_word
    assert by_sentence["exact"] < len(kept)  # (the variant changed something)


def test_unknown_words_and_numbers_as_published_by_a_language_model(tmp_path, section):
    """`<unk>` for the words seen once in the section, Mikolov's `N`s: in order, every line is its sentence's; shuffled,
    a line fitting sentences of other words is not placed, and said, and every line placed is its own sentence's."""
    sentences, shapes = section
    seen = Counter(form.lower() for s in sentences for form in s.forms)
    written = [["<unk>" if seen[form.lower()] == 1 else mikolov(form) for form in s.forms] for s in sentences]
    theirs = [with_words(shape, words) for shape, words in zip(shapes, written)]
    present = [i for i, s in enumerate(sentences) if s.words]
    predicted = read_predicted(file_of(tmp_path, [bracketed(theirs[i]) for i in present]), sentences)
    assert predicted.trees == theirs and not predicted.matching.unplaced
    own = [with_words(shape, s.forms) for shape, s in zip(shapes, sentences)]
    assert scores(predicted.trees, sentences) == scores(own, sentences)
    unknown = sum(words.count("<unk>") for words in written)
    assert predicted.matching.words["unknown"] == unknown > 1000
    assert predicted.matching.sentences["unknown"] == sum("<unk>" in words for words in written)
    shuffled = random.Random(3).sample(present, len(present))
    predicted = read_predicted(file_of(tmp_path, [bracketed(theirs[i]) for i in shuffled]), sentences)
    placed = [i for i in present if predicted.trees[i] is not None]
    assert all(predicted.trees[i] == theirs[i] for i in placed)  # nothing scored against another sentence
    assert len(placed) + len(predicted.matching.unplaced) == len(present) and predicted.matching.unplaced
    for number, fits in predicted.matching.unplaced.items():
        true = sentences[shuffled[number - 1]]
        assert str(true.source) in fits and len(fits) > 1


def test_brackets_and_quotes_as_characters_in_json_lines(tmp_path, wsj24):
    """DIORA's JSON lines, over every word with punctuation (`--words li-punct`): `-LRB-` as `(`, `` `` `` as `"`."""
    sentences = load_gold(wsj24, rule=WORD_RULES["li-punct"])
    rng = random.Random(5)
    table = {"-LRB-": "(", "-RRB-": ")", "-LCB-": "{", "-RCB-": "}", "``": '"', "''": '"'}
    lines, own, changed = [], [], 0
    for s in sentences:
        shape = random_tree(list(range(len(s.words))), rng)
        words = [table.get(form, form) for form in s.forms]
        changed += sum(word != form for word, form in zip(words, s.forms))
        lines.append(json.dumps({"example_id": str(s.source), "tree": with_words(shape, words)}))
        own.append(with_words(shape, s.forms))
    predicted = read_predicted(file_of(tmp_path, lines, "diora.jsonl"), sentences)
    assert predicted.matching.format == "jsonl" and predicted.missing == []
    assert scores(predicted.trees, sentences) == scores(own, sentences)
    assert predicted.matching.words == {"symbols": changed} and changed > 100


def test_a_file_that_keeps_punctuation_scores_as_its_trees_without_it(tmp_path, wsj24, section):
    """Trees over every word (the punctuation attached as a treebank attaches it, `build.attach_dropped`): refused,
    naming the punctuation and the choices; with `drop_punctuation`, the same scores as the trees without it."""
    sentences, shapes = section
    lines, present = [], [i for i, s in enumerate(sentences) if s.words]
    dropped = 0
    for i in present:
        leaves = sentences[i].leaves
        kept = [p for p, (_, _, keep) in enumerate(leaves) if keep]
        dropped += len(leaves) - len(kept)
        positions = with_words(shapes[i], kept)
        lines.append(bracketed(with_words(attach_dropped(positions, kept, [w for w, _, _ in leaves]),
                                          [w for w, _, _ in leaves])))
    path = file_of(tmp_path, lines)
    with pytest.raises(TreenetsError, match=r":1: the line keeps 4 word\(s\) that the treebank's word rule drops "
                                            r"\(',' '\.': punctuation or symbols\) .* --words li-punct reads"):
        read_predicted(path, sentences)
    predicted = read_predicted(path, sentences, drop_punctuation=True)
    own = [with_words(shape, s.forms) if s.words else None for shape, s in zip(shapes, sentences)]
    assert scores(predicted.trees, sentences) == scores(own, sentences)
    assert predicted.matching.words["punctuation"] == dropped
    assert predicted.matching.sentences["punctuation"] == sum(len(sentences[i].leaves) > len(sentences[i].words)
                                                              for i in present)


def test_mikolovs_text_keeping_its_symbols_scores_as_its_trees_without_them(tmp_path, section):
    """Mikolov's PTB text keeps `$` and `#` and drops the other punctuation: before, such a line fitted no sentence
    (`word 9 is '$'`), even with `drop_punctuation`, which matched only lines keeping every punctuation token."""
    sentences, shapes = section
    lines, present, symbols = [], [i for i, s in enumerate(sentences) if s.words], 0
    for i in present:
        leaves = sentences[i].leaves
        chosen = [p for p, (_, tag, keep) in enumerate(leaves) if keep or tag in ("$", "#")]
        words = [mikolov(leaves[p][0]) if leaves[p][2] else leaves[p][0] for p in chosen]
        kept = [q for q, p in enumerate(chosen) if leaves[p][2]]
        symbols += len(chosen) - len(kept)
        lines.append(bracketed(with_words(attach_dropped(with_words(shapes[i], kept), kept, words), words)))
    random.Random(11).shuffle(lines)
    path = file_of(tmp_path, lines)
    with pytest.raises(TreenetsError, match=r":\d+: the line keeps 1 word\(s\) that the treebank's word rule drops "
                                            r"\('\$': punctuation or symbols\) and is otherwise"):
        read_predicted(path, sentences)
    predicted = read_predicted(path, sentences, drop_punctuation=True)
    own = [with_words(shape, s.forms) if s.words else None for shape, s in zip(shapes, sentences)]
    assert predicted.missing == [] and scores(predicted.trees, sentences) == scores(own, sentences)
    assert predicted.matching.words["punctuation"] == symbols > 100


def test_one_sentence_whose_words_truly_differ(tmp_path, section):
    """In the treebank's order with every sentence, the line is placed by that order and said; with a sentence
    missing, or shuffled, nothing says where it goes: today's error, naming it."""
    sentences, shapes = section
    present = [i for i, s in enumerate(sentences) if s.words]
    words = [list(s.forms) for s in sentences]
    words[present[100]][0] = "Completely-different"
    lines = [bracketed(with_words(shapes[i], words[i])) for i in present]
    predicted = read_predicted(file_of(tmp_path, lines), sentences)
    assert predicted.matching.sentences == {"exact": len(present) - 1, "order": 1}
    assert predicted.matching.words == {"order": 1}
    own = [with_words(shape, s.forms) if s.words else None for shape, s in zip(shapes, sentences)]
    assert scores(predicted.trees, sentences) == scores(own, sentences)
    for changed in (lines[:-1], lines[1:], random.Random(1).sample(lines, len(lines))):
        with pytest.raises(TreenetsError, match=r":\d+: no sentence of the treebank without a tree yet has its "
                                                r"words: 'Completely-different .*; word 1 is 'Completely-different'"):
            read_predicted(file_of(tmp_path, changed), sentences)


def test_span_lists_in_the_treebanks_order(tmp_path, section):
    sentences, shapes = section
    present = [i for i, s in enumerate(sentences) if s.words]
    # every node's span with its last word (inclusive ends, as some systems write them), the root's too
    lines = [json.dumps([[start, end - 1] for start, end in node_spans(shapes[i])[0]]) for i in present]
    predicted = read_predicted(file_of(tmp_path, lines, "spans.jsonl"), sentences)
    own = [with_words(shape, s.words) if s.words else [] for shape, s in zip(shapes, sentences)]
    assert predicted.trees == [t if s.words else None for t, s in zip(own, sentences)]
    assert predicted.matching.format == "spans" and predicted.matching.sentences == {"treebank": len(present)}

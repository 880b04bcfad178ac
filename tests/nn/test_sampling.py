"""Drawing trees from a grammar (treenets.nn.sampling) against its specification: on tiny hand-made grammars (Kim's
rules and SimplePCFG's left and right productions), the frequencies of 20,000 draws against the exact probabilities
of every tree and sentence of up to three words (a brute force over every labelled tree, whose sentence sums are
also the inside algorithm's), a chi-square test that fails against a perturbed grammar (the negative control); each
tree drawn is one binary tree over its words in the chart's order, scored by the chart as the draw scored it; the
length limit, the seed, and the errors."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import pytest
import torch
from scipy.stats import chisquare

from treenets.core.errors import TreenetsError
from treenets.nn import chart
from treenets.nn.chart import Grammar, inside, viterbi
from treenets.nn.sampling import SampledTree, sample_trees

DRAWS = 20_000
SEED = 12345
ALPHA = 1e-3  # the goodness of fit passes above it (a fixed seed: the same p-value on every run)

# The tiny grammar: NT = 2 nonterminals (symbols 0, 1), T = 2 preterminals (symbols 2, 3), V = 3 words. Each
# nonterminal's expected number of nonterminal children is below 1 (0.55 and 0.4; 0.4 each for the productions
# below), so the sentences are short: the trees of up to three words hold most of the probability.
ROOTS = [0.7, 0.3]
RULES = [  # p(A -> B C) at [A][B][C]; zeros included (never drawn)
    [[0.00, 0.05, 0.10, 0.00],
     [0.00, 0.05, 0.05, 0.05],
     [0.00, 0.10, 0.25, 0.15],
     [0.05, 0.00, 0.10, 0.05]],
    [[0.00, 0.00, 0.00, 0.10],
     [0.00, 0.10, 0.00, 0.00],
     [0.10, 0.00, 0.10, 0.30],
     [0.00, 0.00, 0.20, 0.10]],
]
LEFT = [[0.10, 0.10, 0.50, 0.30], [0.20, 0.00, 0.40, 0.40]]  # p(B as A's left child) at [A][B]
RIGHT = [[0.05, 0.15, 0.40, 0.40], [0.10, 0.10, 0.30, 0.50]]  # p(C as A's right child) at [A][C]
EMISSIONS = [[0.6, 0.3, 0.1], [0.2, 0.3, 0.5]]  # p(word | preterminal)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One intra-op thread for this module's small tensors (two only add synchronisation; restored after)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tables(factored: bool, perturbed: bool = False) -> dict[str, torch.Tensor]:
    """The tiny grammar in log space, as `sample_trees` takes it; `perturbed`: its first preterminal's emissions
    moved a little (0.6, 0.3, 0.1 -> 0.55, 0.3, 0.15), the negative control's grammar."""
    emissions = torch.tensor(EMISSIONS, dtype=torch.float64)
    if perturbed:
        emissions[0] = torch.tensor([0.55, 0.3, 0.15])
    grammar = {"roots": torch.tensor(ROOTS, dtype=torch.float64).log(), "emissions": emissions.log()}
    if factored:
        grammar["left"] = torch.tensor(LEFT, dtype=torch.float64).log()
        grammar["right"] = torch.tensor(RIGHT, dtype=torch.float64).log()
    else:
        grammar["rules"] = torch.tensor(RULES, dtype=torch.float64).log()
    return grammar


def rule_table(grammar: dict[str, torch.Tensor]) -> torch.Tensor:
    """log p(A -> B C) [NT, S, S] of either form (SimplePCFG's: left[A, B] + right[A, C])."""
    if "rules" in grammar:
        return grammar["rules"]
    return grammar["left"][:, :, None] + grammar["right"][:, None, :]


# --- the brute force ----------------------------------------------------------------------------------------------


def derivations(s: int, e: int, symbol: int, rules: torch.Tensor, nt: int, t: int):
    """Every subtree of `symbol` over the words s..e (inclusive): (spans, tags {position: preterminal}, log of its
    rules' product). A word's symbol is a preterminal, a wider span's a nonterminal (the chart's width
    restriction)."""
    if s == e:
        if symbol >= nt:
            yield (), {s: symbol - nt}, 0.0
        return
    if symbol >= nt:
        return
    for split in range(s, e):
        lefts = range(nt, nt + t) if split == s else range(nt)
        rights = range(nt, nt + t) if split + 1 == e else range(nt)
        for b, c in itertools.product(lefts, rights):
            rule = float(rules[symbol, b, c])
            if rule == -math.inf:
                continue
            for (left_spans, left_tags, left_score), (right_spans, right_tags, right_score) in itertools.product(
                    derivations(s, split, b, rules, nt, t), derivations(split + 1, e, c, rules, nt, t)):
                yield (*left_spans, *right_spans, (s, e, symbol)), {**left_tags, **right_tags}, \
                    rule + left_score + right_score


def every_tree(grammar: dict[str, torch.Tensor], longest: int) -> dict[tuple, float]:
    """p(words, tree) of every labelled tree of 2..longest words: key (words, spans (sorted), tags)."""
    nt, (t, v) = grammar["roots"].shape[0], grammar["emissions"].shape
    rules, emissions = rule_table(grammar), grammar["emissions"]
    found = {}
    for n in range(2, longest + 1):
        for root in range(nt):
            for spans, tags, score in derivations(0, n - 1, root, rules, nt, t):
                tags = tuple(tags[i] for i in range(n))
                for words in itertools.product(range(v), repeat=n):
                    log_p = float(grammar["roots"][root]) + score + sum(float(emissions[j, w])
                                                                        for j, w in zip(tags, words))
                    found[words, tuple(sorted(spans)), tags] = math.exp(log_p)
    return found


def sentence_probabilities(trees: dict[tuple, float]) -> dict[tuple, float]:
    """p(sentence): the sum over its trees."""
    sums = Counter()
    for (words, _, _), p in trees.items():
        sums[words] += p
    return dict(sums)


def key(tree: SampledTree) -> tuple:
    return tuple(tree.words), tuple(sorted(tree.spans)), tuple(tree.tags)


def goodness_of_fit(observed: Counter, expected: dict, draws: int) -> float:
    """The chi-square p-value of the observed counts of the outcomes against their expected probabilities; the
    outcomes expected fewer than 5 times, and every outcome not listed (longer sentences), pooled into one cell."""
    cells, rest_observed, rest_expected = [], draws, 1.0
    for outcome, p in expected.items():
        if p * draws >= 5:
            cells.append((observed[outcome], p * draws))
            rest_observed -= observed[outcome]
            rest_expected -= p
    cells.append((rest_observed, rest_expected * draws))
    observed_counts, expected_counts = zip(*cells)
    assert len(cells) >= 10  # enough cells to test something
    return chisquare(observed_counts, expected_counts).pvalue


# --- the frequencies ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("factored", [False, True], ids=["rules", "left-right"])
def test_the_brute_force_sums_are_the_inside_algorithms(factored):
    grammar = tables(factored)
    sentences = sentence_probabilities(every_tree(grammar, 3))
    for n in (2, 3):
        words = [w for w in sentences if len(w) == n]
        terms = grammar["emissions"].T[torch.tensor(words)]  # [B, n, T]: log p(word i | preterminal j)
        productions = ({"rules": grammar["rules"][None]} if not factored else
                       {"left": grammar["left"][None], "right": grammar["right"][None]})
        log_z = inside(Grammar(grammar["roots"][None], terms, **productions), [n] * len(words))
        assert torch.allclose(log_z.exp(), torch.tensor([sentences[w] for w in words], dtype=torch.float64),
                              rtol=1e-12, atol=0)


@pytest.mark.parametrize("factored", [False, True], ids=["rules", "left-right"])
@pytest.mark.parametrize("max_length", [3, 100])
def test_the_draws_follow_the_grammars_distribution(factored, max_length):
    """Trees and sentences of up to three words against their exact probabilities (given length <= max_length:
    with max_length 3 every draw is one of them, the longer ones drawn again), and against a perturbed grammar's,
    which the same test must reject."""
    trees = sample_trees(**tables(factored), generator=torch.Generator().manual_seed(SEED), count=DRAWS,
                         max_length=max_length)
    assert len(trees) == DRAWS and max(len(tree.words) for tree in trees) <= max_length
    redraws = sum(tree.redraws for tree in trees)
    assert (redraws > 0) == (max_length == 3)  # the grammar's longer sentences drawn again, only at 3

    def expected(grammar):  # p(outcome | length <= max_length) of the trees and of the sentences
        exact = every_tree(grammar, 3)
        short = sum(exact.values()) if max_length == 3 else 1.0  # (the tail past 100 words: negligible)
        return ({k: p / short for k, p in exact.items()},
                {k: p / short for k, p in sentence_probabilities(exact).items()})

    tree_counts, sentence_counts = Counter(map(key, trees)), Counter(tuple(tree.words) for tree in trees)
    true_trees, true_sentences = expected(tables(factored))
    assert goodness_of_fit(tree_counts, true_trees, DRAWS) > ALPHA
    assert goodness_of_fit(sentence_counts, true_sentences, DRAWS) > ALPHA
    if max_length == 3:  # every draw is a tree the brute force lists
        assert set(tree_counts) <= set(true_trees)
    false_trees, false_sentences = expected(tables(factored, perturbed=True))
    assert goodness_of_fit(tree_counts, false_trees, DRAWS) < 1e-9
    assert goodness_of_fit(sentence_counts, false_sentences, DRAWS) < 1e-9


# --- the trees ----------------------------------------------------------------------------------------------------


def check_tree(tree: SampledTree, nt: int, t: int) -> None:
    """The spans and tags make one binary tree over the words, listed in the reverse of the pre-order."""
    n = len(tree.words)
    assert n >= 2 and len(tree.tags) == n and all(0 <= j < t for j in tree.tags)
    labels = {(s, e): a for s, e, a in tree.spans}
    assert len(labels) == len(tree.spans) == n - 1 and tree.spans[-1][:2] == (0, n - 1)
    assert all(0 <= a < nt for a in labels.values())
    order = []

    def walk(s, e):
        if s == e:
            return
        order.append((s, e, labels[s, e]))
        splits = [u for u in range(s, e) if (u == s or (s, u) in labels) and (u + 1 == e or (u + 1, e) in labels)]
        assert len(splits) == 1, (s, e, tree.spans)
        walk(s, splits[0])
        walk(splits[0] + 1, e)

    walk(0, n - 1)
    assert order[::-1] == tree.spans  # every span reached, in the chart's order (`ViterbiTree.spans`)


def chart_score(grammar: dict[str, torch.Tensor], tree: SampledTree) -> float:
    """log p(words, tree) by the chart's inside algorithm restricted to the tree: every other label of every cell
    (and every other preterminal of every word) given an offset of -10^4, which takes it out of the sums."""
    n, nt = len(tree.words), grammar["roots"].shape[0]
    terms = torch.full((1, n, grammar["emissions"].shape[0]), -1e4, dtype=torch.float64)
    for i, (j, w) in enumerate(zip(tree.tags, tree.words)):
        terms[0, i, j] = grammar["emissions"][j, w]
    offsets = torch.full((1, n, n, nt), -1e4, dtype=torch.float64)
    for s, e, a in tree.spans:
        offsets[0, s, e, a] = 0.0
    productions = {k: v[None] for k, v in grammar.items() if k in ("rules", "left", "right")}
    return float(chart._inside(Grammar(grammar["roots"][None], terms, **productions), [n], offsets)[0][0])


@pytest.mark.parametrize("factored", [False, True], ids=["rules", "left-right"])
def test_each_tree_is_one_binary_tree_scored_by_the_chart_as_drawn(factored):
    torch.manual_seed(0)
    nt, t, v = 3, 4, 6
    s = nt + t
    logits = torch.randn(nt + t + 2 * nt, max(s * s, v), dtype=torch.float64)
    grammar = {"roots": logits[0, :nt].log_softmax(-1), "emissions": logits[1 : 1 + t, :v].log_softmax(-1)}
    if factored:
        grammar["left"] = logits[1 + t : 1 + t + nt, :s].log_softmax(-1)
        grammar["right"] = logits[1 + t + nt : 1 + t + 2 * nt, :s].log_softmax(-1)
    else:
        grammar["rules"] = logits[1 + t : 1 + t + nt].log_softmax(-1).view(nt, s, s)
    trees = sample_trees(**grammar, generator=torch.Generator().manual_seed(3), count=200, max_length=12)
    assert any(len(tree.words) >= 6 for tree in trees)  # nested trees, not only the shortest
    for tree in trees:
        check_tree(tree, nt, t)
        assert all(0 <= w < v for w in tree.words)
        assert chart_score(grammar, tree) == pytest.approx(tree.log_prob, abs=1e-9)
    # the chart's best tree of each sentence scores at least the tree it was drawn with
    longest = max(len(tree.words) for tree in trees)
    terms = grammar["emissions"].T[torch.tensor([tree.words + [0] * (longest - len(tree.words)) for tree in trees])]
    productions = {k: value[None] for k, value in grammar.items() if k in ("rules", "left", "right")}
    best = viterbi(Grammar(grammar["roots"][None], terms, **productions), [len(tree.words) for tree in trees])
    assert all(b.score >= tree.log_prob - 1e-9 for b, tree in zip(best, trees))


# --- the seed, the limit, the errors ------------------------------------------------------------------------------


def test_the_same_seed_gives_the_same_trees_and_float32_tables_draw_too():
    grammar = tables(factored=False)
    first = sample_trees(**grammar, generator=torch.Generator().manual_seed(7), count=50)
    assert sample_trees(**grammar, generator=torch.Generator().manual_seed(7), count=50) == first
    assert sample_trees(**grammar, generator=torch.Generator().manual_seed(8), count=50) != first
    single = {k: v.float() for k, v in grammar.items()}
    assert len(sample_trees(**single, generator=torch.Generator().manual_seed(7), count=50)) == 50


def test_a_grammar_of_only_long_sentences_is_given_up_on_naming_the_limit():
    # every nonterminal's children are two nonterminals: no tree ever ends
    grammar = tables(factored=False)
    rules = torch.full((2, 4, 4), -math.inf, dtype=torch.float64)
    rules[:, 0, 1] = 0.0
    with pytest.raises(TreenetsError, match=r"max_length 20: 50 trees drawn in a row were all longer than 20 words"):
        sample_trees(grammar["roots"], grammar["emissions"], torch.Generator().manual_seed(0), count=3,
                     rules=rules, max_length=20, max_draws=50)


def test_errors_name_what_was_expected():
    grammar = tables(factored=False)
    roots, emissions, rules = grammar["roots"], grammar["emissions"], grammar["rules"]
    generator = torch.Generator().manual_seed(0)
    cases = [
        (dict(roots=roots[None], emissions=emissions, rules=rules), r"roots must be a tensor \[NT\], got \[1, 2\]"),
        (dict(roots=roots, emissions=emissions), r"give either rules \[NT, S, S\] = \[2, 4, 4\] or both left"),
        (dict(roots=roots, emissions=emissions, rules=rules, left=rules[:, 0]), "give either rules"),
        (dict(roots=roots, emissions=emissions, rules=rules[:, :3]), r"rules must be \[NT, S, S\] = \[2, 4, 4\]"),
        (dict(roots=roots, emissions=emissions, left=rules[:, 0], right=rules[0]), r"right must be \[NT, S\]"),
        (dict(roots=roots, emissions=emissions, rules=rules, max_length=1), "max_length must be at least 2"),
        (dict(roots=roots, emissions=emissions, rules=rules, count=0), "count must be at least 1"),
        (dict(roots=roots, emissions=torch.full_like(emissions, -math.inf), rules=rules),
         "emissions: row 0 has no distribution to draw from"),
    ]
    for arguments, message in cases:
        with pytest.raises(ValueError, match=message):
            sample_trees(generator=generator, **arguments)

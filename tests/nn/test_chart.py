"""The PCFG dynamic programs (treenets.nn.chart) against their specification: a brute force that enumerates every
labelled binary tree of short sentences (log Z, its gradients, the best tree, the marginals, the MBR tree), a plain
per-cell CKY in Kim's tie order for the Viterbi ties, hand-computed cases, padding, float32 stability, errors."""

from __future__ import annotations

import itertools
import math
import os
import platform
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from treenets.nn import chart
from treenets.nn.backend import kernels, use_backend
from treenets.nn.chart import Grammar, Marginals, inside, marginals, mbr, viterbi

# The PyTorch code and the compiled kernels (nn/chart_cpu.cpp: Viterbi's max-plus products, the
# factored inside's sums over split points with its hand-written backward), which the PyTorch code specifies: the
# same trees, scores and ties, the same log Z, gradients and marginals
BACKENDS = ["torch", "cpp"]


def _require_kernels(backend: str) -> None:
    if backend == "cpp" and kernels("pcfg_chart") is None:
        pytest.skip("compiled kernels unavailable")


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One intra-op thread for this module's small tensors: two threads only add synchronisation, and on a loaded
    machine their waits made the module's time vary tenfold (restored after)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(params=BACKENDS)
def chart_backend(request):
    """The test run under each backend (the kernels' where they can be built)."""
    _require_kernels(request.param)
    with use_backend(request.param):
        yield request.param


# --- random grammars ---------------------------------------------------------------------------------------------


def random_grammar(seed: int, batch: int, n: int, nt: int, t: int, factored: bool, dtype=torch.float64,
                   vocab: int = 7, scale: float = 2.0, shared: bool = False) -> Grammar:
    """Normalised log-probabilities from random logits: roots over NT, rules over S * S per parent (or left and
    right over S each), and emissions over a vocabulary of which random words make the terms. `shared`: one grammar
    for the batch (roots and productions of batch 1), the terms still per sentence."""
    g = torch.Generator().manual_seed(seed)
    s = nt + t
    grammars = 1 if shared else batch

    def logits(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64) * scale

    roots = logits(grammars, nt).log_softmax(-1)
    emissions = logits(batch, t, vocab).log_softmax(-1)  # log p(word | preterminal)
    words = torch.randint(vocab, (batch, n), generator=g)
    terms = emissions.gather(2, words[:, None, :].expand(batch, t, n)).transpose(1, 2)  # [B, n, T]
    if factored:
        left, right = logits(grammars, nt, s).log_softmax(-1), logits(grammars, nt, s).log_softmax(-1)
        return Grammar(roots.to(dtype), terms.to(dtype), left=left.to(dtype), right=right.to(dtype))
    rules = logits(grammars, nt, s * s).log_softmax(-1).view(grammars, nt, s, s)
    return Grammar(roots.to(dtype), terms.to(dtype), rules.to(dtype))


def full_rules(grammar: Grammar) -> torch.Tensor:
    """rules [B, NT, S, S] of either form (SimplePCFG's: left[A, B] + right[A, C])."""
    if grammar.rules is not None:
        return grammar.rules
    return grammar.left[:, :, :, None] + grammar.right[:, :, None, :]


def leaves(grammar: Grammar) -> list[torch.Tensor]:
    """The grammar's tensors, made leaves that require gradients (in place in the grammar)."""
    names = ["roots", "terms"] + (["left", "right"] if grammar.rules is None else ["rules"])
    out = []
    for name in names:
        setattr(grammar, name, getattr(grammar, name).detach().clone().requires_grad_(True))
        out.append(getattr(grammar, name))
    return out


# --- the brute force: every labelled binary tree ----------------------------------------------------------------


def bracketings(s: int, t: int):
    """Every binary tree over the words s..t as its internal nodes (start, end, split) in pre-order; the left
    child is start..split."""
    if s == t:
        yield []
        return
    for u in range(s, t):
        for left in bracketings(s, u):
            for right in bracketings(u + 1, t):
                yield [(s, t, u), *left, *right]


def brute_force(roots: torch.Tensor, terms: torch.Tensor, rules: torch.Tensor, n: int) -> SimpleNamespace:
    """Enumerate every labelled tree of an n-word sentence (roots [NT], terms [>= n, T], rules [NT, S, S]):
    log Z (differentiable), the best tree and the runner-up's score, each label's best score, the marginals, the
    MBR tree (from these marginals) and the runner-up bracketing's sum."""
    nt, t = roots.shape[0], terms.shape[1]
    labellings = torch.tensor(list(itertools.product(range(nt), repeat=n - 1)))  # [L, n - 1], pre-order nodes
    taggings = torch.tensor(list(itertools.product(range(t), repeat=n)))  # [M, n]
    labels_of = labellings[:, None, :]  # [L, 1, n - 1]
    tags_of = taggings[None, :, :]  # [1, M, n]
    trees, scores, bodies = [], [], []
    for nodes in bracketings(0, n - 1):
        where = {(s, e): j for j, (s, e, _) in enumerate(nodes)}

        def symbol(s, e, where=where):
            return labels_of[..., where[s, e]] if s < e else nt + tags_of[..., s]

        body = sum(terms[i, tags_of[..., i]] for i in range(n))  # the tree's score but for its root rule
        for j, (s, e, u) in enumerate(nodes):
            body = body + rules[labels_of[..., j], symbol(s, u), symbol(u + 1, e)]
        trees.append(nodes)
        bodies.append(body)
        scores.append(body + roots[labels_of[..., 0]])  # [L, M]
    flat = torch.cat([sc.reshape(-1) for sc in scores])
    log_z = torch.logsumexp(flat, 0)
    out = SimpleNamespace(log_z=log_z)
    with torch.no_grad():
        ordered = flat.sort(descending=True).values
        out.best_score = float(ordered[0])
        out.margin = float(ordered[0] - ordered[1]) if len(ordered) > 1 else math.inf
        position = int(flat.argmax())
        size = len(labellings) * len(taggings)
        nodes = trees[position // size]
        labels, tags = labellings[position % size // len(taggings)], taggings[position % len(taggings)]
        out.spans = [(s, e, int(labels[j])) for j, (s, e, _) in enumerate(nodes)][::-1]  # reverse pre-order
        out.tags = [int(v) for v in tags]
        out.root = int(labels[0])
        out.label_scores = []
        for a in range(nt):
            out.label_scores.append(max(float(body[labellings[:, 0] == a].max()) for body in bodies))
        # the marginals: sums of the trees' posterior probabilities
        spans = torch.zeros(n, n, dtype=flat.dtype)
        label_marginals = torch.zeros(n, n, nt, dtype=flat.dtype)
        tag_marginals = torch.zeros(n, t, dtype=flat.dtype)
        for nodes, sc in zip(trees, scores):
            p = torch.exp(sc - log_z)
            per_labelling, per_tagging = p.sum(1), p.sum(0)
            for j, (s, e, _) in enumerate(nodes):
                spans[s, e] += p.sum()
                label_marginals[s, e].index_add_(0, labellings[:, j], per_labelling)
            for i in range(n):
                tag_marginals[i].index_add_(0, taggings[:, i], per_tagging)
        out.span_marginals, out.label_marginals, out.tag_marginals = spans, label_marginals, tag_marginals
        # MBR: the bracketing with the largest sum of span marginals
        sums = sorted(((sum(float(spans[s, e]) for s, e, _ in nodes), k) for k, nodes in enumerate(trees)),
                      key=lambda x: -x[0])
        out.mbr_score = sums[0][0]
        out.mbr_margin = sums[0][0] - sums[1][0] if len(sums) > 1 else math.inf
        chosen = trees[sums[0][1]]
        out.mbr_spans = [(s, e, int(label_marginals[s, e].argmax())) for s, e, _ in chosen][::-1]
        out.mbr_tags = [int(v) for v in tag_marginals.argmax(-1)]
    return out


# --- a plain CKY, one cell and one split at a time, in Kim's order (the tie rules) -------------------------------


def kim_order_viterbi(roots: list, terms: list, rules: list, n: int, nt: int, t: int):
    """Python floats; per cell and parent: splits ascending, then left symbols, then right symbols, a candidate
    replacing the best only when strictly larger (Kim's first maximum). Returns (score, root, spans, tags,
    label_scores)."""
    best, back = {}, {}
    for i in range(n):
        best[i, i] = {nt + j: terms[i][j] for j in range(t)}
    for w in range(2, n + 1):
        for s in range(n - w + 1):
            e = s + w - 1
            best[s, e] = {}
            for a in range(nt):
                top, arg = -math.inf, None
                for u in range(s, e):
                    for b, left in best[s, u].items():
                        for c, right in best[u + 1, e].items():
                            value = left + right + rules[a][b][c]
                            if value > top or arg is None:
                                top, arg = value, (u, b, c)
                best[s, e][a], back[s, e, a] = top, arg
    label_scores = [best[0, n - 1][a] for a in range(nt)]
    totals = [label_scores[a] + roots[a] for a in range(nt)]
    root = max(range(nt), key=lambda a: (totals[a], -a))
    spans, tags = [], [None] * n

    def walk(s, e, symbol):
        if s == e:
            tags[s] = symbol - nt
            return
        spans.insert(0, (s, e, symbol))
        u, b, c = back[s, e, symbol]
        walk(s, u, b)
        walk(u + 1, e, c)

    walk(0, n - 1, root)
    return totals[root], root, spans, tags, label_scores


def tree_score(grammar: Grammar, b: int, spans, tags) -> float:
    """The log probability of the tree given by its spans and tags, after checking that they make one binary tree
    over the sentence listed in reverse pre-order."""
    grammar = grammar.expanded()
    rules = full_rules(grammar)[b].detach()
    nt, n = grammar.nt, len(tags)
    labels = {(s, e): a for s, e, a in spans}
    assert len(labels) == len(spans) == n - 1 and (0, n - 1) in labels
    order = []

    def walk(s, e):
        if s == e:
            return nt + tags[s]
        order.append((s, e, labels[s, e]))
        splits = [u for u in range(s, e) if (u == s or (s, u) in labels) and (u + 1 == e or (u + 1, e) in labels)]
        assert len(splits) == 1, (s, e, spans)
        u = splits[0]
        left, right = walk(s, u), walk(u + 1, e)  # before reading total: the children add to it
        total[0] += float(rules[labels[s, e], left, right])
        return labels[s, e]

    total = [0.0]
    walk(0, n - 1)
    assert order[::-1] == list(spans)  # Kim's order: the reverse of the pre-order
    root = labels[0, n - 1]
    terms = grammar.terms[b].detach()
    return total[0] + float(grammar.roots[b, root].detach()) + sum(float(terms[i, j]) for i, j in enumerate(tags))


# --- the brute force as the specification, with hypothesis ---------------------------------------------------------

grammars = st.fixed_dictionaries({
    "seed": st.integers(0, 2**31 - 1),
    "nt": st.integers(1, 3),
    "t": st.integers(1, 3),
    "lengths": st.lists(st.integers(2, 5), min_size=1, max_size=3),
    "pad": st.integers(0, 1),
    "factored": st.booleans(),
    "shared": st.booleans(),
})


def make(case) -> tuple[Grammar, torch.Tensor]:
    n = max(case["lengths"]) + case["pad"]
    grammar = random_grammar(case["seed"], len(case["lengths"]), n, case["nt"], case["t"], case["factored"],
                             shared=case["shared"])
    return grammar, torch.tensor(case["lengths"])


def brute_forces(grammar: Grammar, lengths) -> list[SimpleNamespace]:
    grammar = grammar.expanded()  # (a shared grammar's tensors: the same for every sentence)
    rules = full_rules(grammar)
    return [brute_force(grammar.roots[b], grammar.terms[b], rules[b], int(n)) for b, n in enumerate(lengths)]


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=60, deadline=None)
@given(grammars)
def test_inside_and_its_gradients_are_the_sum_over_every_tree(backend, case):
    _require_kernels(backend)
    grammar, lengths = make(case)
    params = leaves(grammar)
    with use_backend(backend):
        log_z = inside(grammar, lengths)
    assert log_z.shape == (len(lengths),) and log_z.dtype == torch.float64
    got = torch.autograd.grad(log_z.sum(), params)
    references = brute_forces(grammar, lengths)
    expected_z = torch.stack([r.log_z for r in references])
    expected = torch.autograd.grad(expected_z.sum(), params)
    torch.testing.assert_close(log_z, expected_z, rtol=0, atol=1e-9)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=0, atol=1e-8)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=60, deadline=None)
@given(grammars)
def test_viterbi_is_the_best_of_every_tree(backend, case):
    _require_kernels(backend)
    grammar, lengths = make(case)
    with use_backend(backend):
        trees = viterbi(grammar, lengths)
    for b, (tree, ref) in enumerate(zip(trees, brute_forces(grammar, lengths))):
        assert tree.score == pytest.approx(ref.best_score, abs=1e-9)
        assert tree.label_scores == pytest.approx(ref.label_scores, abs=1e-9)
        assert tree_score(grammar, b, tree.spans, tree.tags) == pytest.approx(tree.score, abs=1e-9)
        if ref.margin > 1e-9:  # equal scores in real arithmetic (NT = T = 1, say) may round either way
            assert (tree.spans, tree.tags, tree.root) == (ref.spans, ref.tags, ref.root)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=60, deadline=None)
@given(grammars)
def test_marginals_and_mbr_are_those_of_every_tree(backend, case):
    _require_kernels(backend)
    grammar, lengths = make(case)
    with use_backend(backend):
        got = marginals(grammar, lengths)
    batch, n = grammar.terms.shape[:2]
    references = brute_forces(grammar, lengths)
    expected = Marginals(spans=torch.zeros(batch, n, n, dtype=torch.float64),
                         labels=torch.zeros(batch, n, n, grammar.nt, dtype=torch.float64),
                         tags=torch.zeros(batch, n, grammar.t, dtype=torch.float64),
                         log_z=torch.stack([r.log_z for r in references]).detach())
    for b, (length, ref) in enumerate(zip(lengths.tolist(), references)):
        expected.spans[b, :length, :length] = ref.span_marginals
        expected.labels[b, :length, :length] = ref.label_marginals
        expected.tags[b, :length] = ref.tag_marginals
    for name in ("spans", "labels", "tags", "log_z"):
        torch.testing.assert_close(getattr(got, name), getattr(expected, name), rtol=0, atol=1e-9)
    for tree, ours, ref in zip(mbr(expected, lengths), mbr(got, lengths), references):
        assert tree.score == pytest.approx(ref.mbr_score, abs=1e-12)
        assert ours.score == pytest.approx(ref.mbr_score, abs=1e-8)
        assert tree.tags == ours.tags == ref.mbr_tags
        if ref.mbr_margin > 1e-8:
            assert tree.spans == ours.spans == ref.mbr_spans


# --- the tree CRF over span scores (the span parser's): every binary tree -----------------------------------------


def binary_trees(s: int, t: int):
    """Every binary tree over the words s..t as its spans (start, end inclusive) of two words or more."""
    if s == t:
        yield []
        return
    for u in range(s, t):
        for left in binary_trees(s, u):
            for right in binary_trees(u + 1, t):
                yield [(s, t), *left, *right]


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.lists(st.integers(2, 6), min_size=1, max_size=3), st.integers(0, 1))
def test_the_tree_crf_is_the_sum_over_every_binary_tree(backend, seed, lengths, pad):
    """log Z, its gradient (each span's marginal), the score of a tree and the Viterbi and MBR trees of the span
    parser's decoder against every binary tree of each sentence."""
    _require_kernels(backend)
    from treenets.nn.chart import tree_crf_log_z, tree_crf_marginals, tree_crf_score
    from treenets.predictors.parsing import decode_trees

    g = torch.Generator().manual_seed(seed)
    n = max(lengths) + pad
    scores = (torch.randn(len(lengths), n, n, generator=g, dtype=torch.float64) * 2).requires_grad_(True)
    with use_backend(backend):
        log_z = tree_crf_log_z(scores, lengths)
        (grad,) = torch.autograd.grad(log_z.sum(), [scores])
        marginal = tree_crf_marginals(scores, lengths)
    torch.testing.assert_close(marginal, grad, rtol=0, atol=1e-12)
    viterbi_trees = decode_trees(scores.detach(), torch.tensor(lengths), "viterbi")
    mbr_trees = decode_trees(scores.detach(), torch.tensor(lengths), "mbr")
    for b, length in enumerate(lengths):
        trees = list(binary_trees(0, length - 1))
        totals = torch.stack([sum((scores[b, s, t] for s, t in tree), scores.new_zeros(())) for tree in trees])
        expected = torch.logsumexp(totals, 0)
        assert log_z[b].item() == pytest.approx(expected.item(), abs=1e-10)
        expected_marginal = torch.zeros(n, n, dtype=torch.float64)
        for tree, p in zip(trees, torch.softmax(totals.detach(), 0).tolist()):
            for s, t in tree:
                expected_marginal[s, t] += p
        torch.testing.assert_close(marginal[b], expected_marginal, rtol=0, atol=1e-10)
        chosen = int(totals.argmax())
        assert tree_crf_score(scores, [trees[chosen]])[0].item() == pytest.approx(totals[chosen].item(), abs=1e-12) \
            if b == 0 else True
        if sorted(totals.tolist())[-2:][0] < totals.max().item() - 1e-9:  # a unique best tree
            assert sorted(viterbi_trees[b]) == sorted(trees[chosen])
        gains = torch.tensor([sum(expected_marginal[s, t].item() for s, t in tree) for tree in trees])
        if sorted(gains.tolist())[-2:][0] < gains.max().item() - 1e-9:
            assert sorted(mbr_trees[b]) == sorted(trees[int(gains.argmax())])


def test_the_tree_crf_score_sums_the_spans_of_each_tree():
    from treenets.nn.chart import tree_crf_score

    scores = torch.arange(2 * 4 * 4, dtype=torch.float64).view(2, 4, 4)
    got = tree_crf_score(scores, [[(0, 3), (0, 1), (2, 3)], [(0, 1)]])
    assert got.tolist() == [scores[0, 0, 3] + scores[0, 0, 1] + scores[0, 2, 3], scores[1, 0, 1]]
    with pytest.raises(ValueError, match=r"span scores must be a floating-point tensor \[B, N, N\]"):
        tree_crf_score(scores[:, :3], [[]])


# --- ties: Kim's order, exactly (integer log scores: every sum is exact) -------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 3), st.integers(1, 3), st.integers(2, 7), st.booleans())
def test_viterbi_ties_follow_kims_order(backend, seed, nt, t, n, factored):
    _require_kernels(backend)
    """Scores drawn from a few integers, so that many trees tie exactly: the chosen tree is the one of Kim's
    per-cell loop (the lowest split, then the lowest left symbol, then the lowest right symbol)."""
    g = torch.Generator().manual_seed(seed)
    s = nt + t

    def ints(*shape):
        return torch.randint(-2, 1, shape, generator=g).double()

    if factored:
        grammar = Grammar(ints(1, nt), ints(1, n, t), left=ints(1, nt, s), right=ints(1, nt, s))
    else:
        grammar = Grammar(ints(1, nt), ints(1, n, t), ints(1, nt, s, s))
    with use_backend(backend):
        tree = viterbi(grammar, torch.tensor([n]))[0]
    score, root, spans, tags, label_scores = kim_order_viterbi(
        grammar.roots[0].tolist(), grammar.terms[0].tolist(), full_rules(grammar)[0].tolist(), n, nt, t)
    assert (tree.score, tree.root, tree.spans, tree.tags, tree.label_scores) == (score, root, spans, tags,
                                                                                 label_scores)


def test_all_equal_scores_give_the_right_branching_tree_with_the_first_symbols():
    # every tree scores the same: the lowest split (the left child a word) at every node, label 0, tag 0
    grammar = Grammar(torch.zeros(1, 2), torch.full((1, 5, 2), -2.0), torch.full((1, 2, 4, 4), -1.0))
    tree = viterbi(grammar, torch.tensor([5]))[0]
    assert tree.spans == [(3, 4, 0), (2, 4, 0), (1, 4, 0), (0, 4, 0)]
    assert tree.tags == [0] * 5 and tree.root == 0 and tree.score == -14.0
    assert tree.label_scores == [-14.0, -14.0]
    # MBR with uniform span marginals: the lowest split too
    uniform = Marginals(spans=torch.ones(1, 5, 5), labels=torch.ones(1, 5, 5, 2), tags=torch.ones(1, 5, 2),
                        log_z=torch.zeros(1))
    assert mbr(uniform, [5])[0].spans == [(3, 4, 0), (2, 4, 0), (1, 4, 0), (0, 4, 0)]


# --- hand-computed ---------------------------------------------------------------------------------------------------


def test_hand_computed_three_words_one_nonterminal():
    """NT = 1, T = 1 (symbol 0 the nonterminal, symbol 1 the preterminal) over 3 words: two trees,
    ((w0 w1) w2) with p(A -> A P) p(A -> P P) and (w0 (w1 w2)) with p(A -> P A) p(A -> P P)."""
    log = math.log
    p_pp, p_ap, p_pa, p_aa = 0.5, 0.2, 0.3, 0.0
    rules = torch.tensor([[[p_aa, p_ap], [p_pa, p_pp]]], dtype=torch.float64).log()[None]  # [1, 1, 2, 2]
    terms = torch.tensor([[[0.1], [0.2], [0.3]]], dtype=torch.float64).log()  # [1, 3, 1]
    grammar = Grammar(torch.zeros(1, 1, dtype=torch.float64), terms, rules)
    words = 0.1 * 0.2 * 0.3
    left_tree, right_tree = words * p_ap * p_pp, words * p_pa * p_pp  # 0.0006, 0.0009
    assert inside(grammar, [3]).item() == pytest.approx(log(left_tree + right_tree), abs=1e-12)  # log 0.0015

    tree = viterbi(grammar, [3])[0]
    assert tree.spans == [(1, 2, 0), (0, 2, 0)] and tree.tags == [0, 0, 0] and tree.root == 0
    assert tree.score == pytest.approx(log(right_tree), abs=1e-12)
    assert tree.label_scores == pytest.approx([log(right_tree)], abs=1e-12)

    m = marginals(grammar, [3])
    expected = torch.zeros(3, 3, dtype=torch.float64)
    expected[0, 2], expected[0, 1], expected[1, 2] = 1.0, 0.4, 0.6
    torch.testing.assert_close(m.spans[0], expected, rtol=0, atol=1e-12)
    torch.testing.assert_close(m.labels[0, ..., 0], expected, rtol=0, atol=1e-12)
    torch.testing.assert_close(m.tags[0], torch.ones(3, 1, dtype=torch.float64), rtol=0, atol=1e-12)
    assert m.log_z.item() == pytest.approx(log(0.0015), abs=1e-12)
    best = mbr(m, [3])[0]
    assert best.spans == [(1, 2, 0), (0, 2, 0)] and best.tags == [0, 0, 0]
    assert best.score == pytest.approx(1.6, abs=1e-12)

    # a grammar of SimplePCFG's productions: p(A -> B C) = p_left(B | A) p_right(C | A)
    left = torch.tensor([[[0.4, 0.6]]], dtype=torch.float64).log()  # A or P on the left
    right = torch.tensor([[[0.25, 0.75]]], dtype=torch.float64).log()
    factored = Grammar(torch.zeros(1, 1, dtype=torch.float64), terms, left=left, right=right)
    two_trees = words * (0.4 * 0.75 * 0.6 * 0.75 + 0.6 * 0.25 * 0.6 * 0.75)
    assert inside(factored, [3]).item() == pytest.approx(log(two_trees), abs=1e-12)


# --- padding, batching, forms, larger sentences --------------------------------------------------------------------


@pytest.mark.parametrize("factored", [False, True])
@pytest.mark.parametrize("fill", [math.nan, -math.inf])
def test_a_sentence_in_a_batch_is_the_sentence_alone(chart_backend, factored, fill):
    lengths = [7, 2, 5, 3, 6]
    grammar = random_grammar(11, len(lengths), 9, 3, 4, factored)  # N = 9 > every length
    for b, n in enumerate(lengths):
        grammar.terms[b, n:] = fill
    params = leaves(grammar)
    log_z = inside(grammar, torch.tensor(lengths))
    grads = torch.autograd.grad(log_z.sum(), params)
    assert all(torch.isfinite(g).all() for g in grads)
    assert (grads[1][1, 2:] == 0).all()  # no gradient for the padding
    together, together_m = viterbi(grammar, lengths), marginals(grammar, lengths)
    together_mbr = mbr(together_m, lengths)
    for b, n in enumerate(lengths):
        alone = Grammar(*(None if x is None else x.detach()[b:b + 1]
                          for x in (grammar.roots, grammar.terms[:, :n], grammar.rules, grammar.left, grammar.right)))
        leaves(alone)
        z = inside(alone, [n])
        alone_grads = torch.autograd.grad(z.sum(), leaves_of(alone))
        assert z.item() == pytest.approx(log_z[b].item(), abs=1e-12)
        for k, (g, a) in enumerate(zip(grads, alone_grads)):
            torch.testing.assert_close(g[b:b + 1, :n] if k == 1 else g[b:b + 1], a, rtol=0, atol=1e-12)
        single = viterbi(alone, [n])[0]
        assert (single.spans, single.tags, single.root) == (together[b].spans, together[b].tags, together[b].root)
        assert single.score == pytest.approx(together[b].score, abs=1e-12)
        assert single.label_scores == pytest.approx(together[b].label_scores, abs=1e-12)
        m = marginals(alone, [n])
        torch.testing.assert_close(m.labels[0], together_m.labels[b, :n, :n], rtol=0, atol=1e-12)
        torch.testing.assert_close(m.tags[0], together_m.tags[b, :n], rtol=0, atol=1e-12)
        assert (together_m.labels[b, n:] == 0).all() and (together_m.labels[b, :, n:] == 0).all()
        assert (together_m.tags[b, n:] == 0).all()
        assert mbr(m, [n])[0].spans == together_mbr[b].spans


def leaves_of(grammar: Grammar) -> list[torch.Tensor]:
    names = ["roots", "terms"] + (["left", "right"] if grammar.rules is None else ["rules"])
    return [getattr(grammar, name) for name in names]


def reference_inside(roots, terms, rules, n):
    """A plain CKY in log space, one cell and one split at a time (Kim's loops, float64)."""
    nt = roots.shape[0]
    beta = {}
    for i in range(n):
        beta[i, i] = torch.cat([torch.full((nt,), -math.inf, dtype=terms.dtype), terms[i]])
    for w in range(2, n + 1):
        for s in range(n - w + 1):
            e = s + w - 1
            parts = []
            for u in range(s, e):
                left = beta[s, u] if u == s else torch.cat([beta[s, u][:nt], torch.full_like(terms[0], -math.inf)])
                right = beta[u + 1, e]
                if u + 1 < e:
                    right = torch.cat([right[:nt], torch.full_like(terms[0], -math.inf)])
                parts.append(torch.logsumexp((left[:, None] + right[None, :] + rules).reshape(nt, -1), -1))
            inner = torch.logsumexp(torch.stack(parts), 0)
            beta[s, e] = torch.cat([inner, torch.full_like(terms[0], -math.inf)])
    return torch.logsumexp(beta[0, n - 1][:nt] + roots, 0)


@pytest.mark.parametrize("factored", [False, True])
def test_longer_sentences_against_a_plain_cky(chart_backend, factored):
    """Sentences of up to 9 words (many middle splits), beyond the brute force's reach."""
    lengths = [9, 6, 8]
    grammar = random_grammar(3, len(lengths), 9, 3, 4, factored)
    params = leaves(grammar)
    log_z = inside(grammar, lengths)
    rules = full_rules(grammar)
    expected = torch.stack([reference_inside(grammar.roots[b], grammar.terms[b], rules[b], n)
                            for b, n in enumerate(lengths)])
    torch.testing.assert_close(log_z, expected, rtol=0, atol=1e-10)
    for g, e in zip(torch.autograd.grad(log_z.sum(), params), torch.autograd.grad(expected.sum(), params)):
        torch.testing.assert_close(g, e, rtol=0, atol=1e-9)
    for b, (tree, n) in enumerate(zip(viterbi(grammar, lengths), lengths)):
        score, _, _, _, label_scores = kim_order_viterbi(grammar.roots[b].tolist(), grammar.terms[b].tolist(),
                                                         rules[b].tolist(), n, grammar.nt, grammar.t)
        assert tree.score == pytest.approx(score, abs=1e-9)
        assert tree.label_scores == pytest.approx(label_scores, abs=1e-9)
        assert tree_score(grammar, b, tree.spans, tree.tags) == pytest.approx(score, abs=1e-9)


def test_simple_pcfg_productions_equal_their_rules():
    """left/right grammars give what the rules left[A, B] + right[A, C] give, on sentences of 14 words."""
    lengths = [14, 11]
    factored = random_grammar(5, 2, 14, 4, 5, factored=True)
    rules = Grammar(factored.roots, factored.terms, full_rules(factored))
    torch.testing.assert_close(inside(factored, lengths), inside(rules, lengths), rtol=0, atol=1e-10)
    m_f, m_r = marginals(factored, lengths), marginals(rules, lengths)
    for name in ("labels", "tags", "log_z"):
        torch.testing.assert_close(getattr(m_f, name), getattr(m_r, name), rtol=0, atol=1e-10)
    for a, b in zip(viterbi(factored, lengths), viterbi(rules, lengths)):
        assert (a.spans, a.tags, a.root) == (b.spans, b.tags, b.root)
        assert a.score == pytest.approx(b.score, abs=1e-10)


def test_marginals_are_distributions_and_work_under_no_grad():
    lengths = [12, 7]
    grammar = random_grammar(8, 2, 12, 3, 4, factored=False)
    with torch.no_grad():
        m = marginals(grammar, lengths)
    assert not m.labels.requires_grad and not m.log_z.requires_grad
    for b, n in enumerate(lengths):
        assert m.spans[b, 0, n - 1].item() == pytest.approx(1.0, abs=1e-12)
        assert m.spans[b].sum().item() == pytest.approx(n - 1, abs=1e-10)  # a binary tree has n - 1 such spans
        torch.testing.assert_close(m.tags[b, :n].sum(-1), torch.ones(n, dtype=torch.float64), rtol=0, atol=1e-12)
        assert (m.spans[b].diagonal() == 0).all() and (m.spans[b].tril() == 0).all()
    torch.testing.assert_close(m.log_z, inside(grammar, lengths), rtol=0, atol=0)


# --- impossible rules and words: -inf in the inputs ---------------------------------------------------------------


@pytest.mark.parametrize("factored", [False, True])
def test_forbidden_rules_give_exact_results_and_finite_gradients(chart_backend, factored):
    """Rules of -inf (whole blocks: a scaled sum of zero, clamped before its log) and roots of -inf: the brute force's
    values, gradients without NaN, -inf label scores where a label has no tree."""
    lengths = [5, 4, 2]
    grammar = random_grammar(21, len(lengths), 5, 3, 3, factored)
    nt = 3
    with torch.no_grad():
        if factored:
            grammar.left[:, 0, :nt] = -math.inf  # parent 0: no nonterminal on the left
            grammar.right[:, 1, nt:] = -math.inf  # parent 1: no preterminal on the right
        else:
            grammar.rules[:, 0, :nt, :nt] = -math.inf  # parent 0: never two nonterminals
            grammar.rules[:, 1, nt:, :] = -math.inf  # parent 1: never a preterminal on the left
        grammar.roots[:, 2] = -math.inf
    params = leaves(grammar)
    log_z = inside(grammar, lengths)
    grads = torch.autograd.grad(log_z.sum(), params)
    references = brute_forces(grammar, lengths)
    expected_z = torch.stack([r.log_z for r in references])
    torch.testing.assert_close(log_z, expected_z, rtol=0, atol=1e-9)
    for g, e in zip(grads, torch.autograd.grad(expected_z.sum(), params)):
        assert torch.isfinite(g).all()
        torch.testing.assert_close(g, e, rtol=0, atol=1e-8)
    m = marginals(grammar, lengths)
    for b, (n, tree, ref) in enumerate(zip(lengths, viterbi(grammar, lengths), references)):
        torch.testing.assert_close(m.labels[b, :n, :n], ref.label_marginals, rtol=0, atol=1e-9)
        assert tree.score == pytest.approx(ref.best_score, abs=1e-9)
        assert tree.label_scores == pytest.approx(ref.label_scores, abs=1e-9)
        assert (tree.spans, tree.tags) == (ref.spans, ref.tags)
    assert viterbi(grammar, lengths)[2].label_scores[1] == -math.inf  # two words under parent 1: no tree


@pytest.mark.parametrize("factored", [False, True])
def test_an_impossible_word_gives_a_very_small_finite_log_z(chart_backend, factored):
    """A word of probability zero under every preterminal: no tree, but the clamp keeps the chart finite: log Z
    far below log(1e-308) yet finite, every gradient finite, the other sentences untouched."""
    lengths = [6, 5]
    grammar = random_grammar(2, 2, 6, 3, 4, factored)
    with torch.no_grad():
        grammar.terms[1, 2] = -math.inf
    params = leaves(grammar)
    log_z = inside(grammar, lengths)
    grads = torch.autograd.grad(log_z.sum(), params)
    assert torch.isfinite(log_z).all() and log_z[1].item() < math.log(torch.finfo(torch.float64).tiny)
    assert all(torch.isfinite(g).all() for g in grads)
    alone = random_grammar(2, 2, 6, 3, 4, factored)
    assert log_z[0].item() == pytest.approx(inside(alone, lengths)[0].item(), abs=1e-12)


# --- float32 -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("factored", [False, True])
def test_float32_is_stable_on_a_long_sentence(chart_backend, factored):
    """60 words, NT = 30, T = 60: rules from a log_softmax over S * S (or S), terms from a log_softmax over a
    vocabulary of 10,000."""
    g = torch.Generator().manual_seed(0)
    nt, t, n, s = 30, 60, 60, 90
    roots = torch.randn(1, nt, generator=g).log_softmax(-1)
    emissions = torch.randn(t, 10_000, generator=g).log_softmax(-1)
    terms = emissions[:, torch.randint(10_000, (n,), generator=g)].T[None]
    if factored:
        productions = {"left": torch.randn(1, nt, s, generator=g).log_softmax(-1),
                       "right": torch.randn(1, nt, s, generator=g).log_softmax(-1)}
    else:
        productions = {"rules": torch.randn(1, nt, s * s, generator=g).log_softmax(-1).view(1, nt, s, s)}
    results = {}
    for dtype in (torch.float32, torch.float64):
        grammar = Grammar(roots.to(dtype), terms.to(dtype), **{k: v.to(dtype) for k, v in productions.items()})
        params = leaves(grammar)
        log_z = inside(grammar, [n])
        grads = torch.autograd.grad(log_z.sum(), params)
        assert torch.isfinite(log_z).all() and all(torch.isfinite(x).all() for x in grads)
        results[dtype] = log_z.double(), [x.double() for x in grads]
    (z32, g32), (z64, g64) = results[torch.float32], results[torch.float64]
    assert abs(z32.item() - z64.item()) <= 1e-3 * abs(z64.item())
    for a, b in zip(g32, g64):
        # gradients are expected counts (of a rule, a tag, ...): at most a few tens
        assert (a - b).abs().max().item() <= 1e-3 * max(1.0, b.abs().max().item())


# --- errors -----------------------------------------------------------------------------------------------------------


def test_errors_name_what_was_expected():
    grammar = random_grammar(0, 2, 4, 2, 3, factored=False)
    with pytest.raises(ValueError, match="at least 2 words"):
        inside(grammar, [4, 1])
    with pytest.raises(ValueError, match="more than the N = 4"):
        viterbi(grammar, [5, 2])
    with pytest.raises(ValueError, match=r"lengths must be \[B\] = \[2\]"):
        marginals(grammar, [3])
    with pytest.raises(ValueError, match="integers"):
        inside(grammar, torch.tensor([3.0, 2.0]))
    with pytest.raises(ValueError, match="not both"):
        Grammar(grammar.roots, grammar.terms, grammar.rules, left=torch.zeros(2, 2, 5), right=torch.zeros(2, 2, 5))
    with pytest.raises(ValueError, match="or both left and right"):
        Grammar(grammar.roots, grammar.terms)
    with pytest.raises(ValueError, match="or both left and right"):
        Grammar(grammar.roots, grammar.terms, left=torch.zeros(2, 2, 5, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"rules must be \[B, NT, S, S\] = \[2, 2, 5, 5\].*got \[2, 2, 4, 4\]"):
        Grammar(grammar.roots, grammar.terms, grammar.rules[:, :, :4, :4])
    with pytest.raises(ValueError, match=r"left must be \[B, NT, S\] = \[2, 2, 5\].*got \[2, 2, 4\]"):
        Grammar(grammar.roots, grammar.terms, left=torch.zeros(2, 2, 4), right=torch.zeros(2, 2, 5))
    with pytest.raises(ValueError, match=r"terms must be \[B, N, T\] with B = 2"):
        Grammar(grammar.roots, grammar.terms[:1], grammar.rules)
    with pytest.raises(ValueError, match=r"roots must be a tensor \[B, NT\]"):
        Grammar(grammar.roots[0], grammar.terms, grammar.rules)
    with pytest.raises(ValueError, match="one dtype"):
        Grammar(grammar.roots.float(), grammar.terms, grammar.rules)
    grammar.rules = grammar.rules[:, :1]  # changed after construction: checked again by every function
    with pytest.raises(ValueError, match=r"rules must be \[B, NT, S, S\]"):
        inside(grammar, [4, 2])
    m = marginals(random_grammar(0, 2, 4, 2, 3, factored=False), [4, 3])
    with pytest.raises(ValueError, match=r"marginals.labels must be \[B, N, N, NT\]"):
        mbr(Marginals(m.spans, m.labels[:, :3], m.tags, m.log_z), [4, 3])
    with pytest.raises(ValueError, match="at least 2 words"):
        mbr(m, [4, 1])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("factored", [False, True])
def test_cuda_matches_the_cpu(factored):
    lengths = [12, 5, 9]
    grammar = random_grammar(4, 3, 12, 4, 5, factored, dtype=torch.float32)
    on_gpu = Grammar(*(None if x is None else x.cuda()
                       for x in (grammar.roots, grammar.terms, grammar.rules, grammar.left, grammar.right)))
    torch.testing.assert_close(inside(on_gpu, lengths).cpu(), inside(grammar, lengths), rtol=1e-5, atol=1e-4)
    m_gpu, m_cpu = marginals(on_gpu, lengths), marginals(grammar, lengths)
    assert m_gpu.labels.device.type == "cuda"
    torch.testing.assert_close(m_gpu.labels.cpu(), m_cpu.labels, rtol=1e-4, atol=1e-4)
    for a, b in zip(viterbi(on_gpu, lengths), viterbi(grammar, lengths)):
        assert a.score == pytest.approx(b.score, abs=1e-3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_compiled_max_plus_products_are_the_pytorch_ones(dtype):
    """The kernels against the PyTorch functions they replace, float for float, on scores with -inf (cells of no
    tree, impossible rules: a -ffast-math build must not read them as -FLT_MAX) and with ties (integers)."""
    _require_kernels("cpp")
    compiled = kernels("pcfg_chart")
    g = torch.Generator().manual_seed(7)
    nt, s, splits, cells = 5, 9, 3, 4
    for draw in (lambda *shape: torch.randn(*shape, generator=g, dtype=dtype),
                 lambda *shape: torch.randint(-2, 1, shape, generator=g).to(dtype)):
        lefts, rights, rules = draw(2, cells, splits, nt), draw(2, cells, splits, nt), draw(2, nt, nt * nt)
        lefts[1] = -math.inf  # a sentence shorter than the width: no tree in any cell
        rights[0, 1, :, 2] = -math.inf
        rules[0, 2, 3:7] = -math.inf
        symbols = torch.arange(nt)
        pair_keys = (symbols[:, None] * s + symbols[None, :]).reshape(nt * nt)
        want = chart._viterbi_middle(lefts, rights, splits + 3, cells, rules[:, None], pair_keys, s)
        got = compiled.viterbi_middle(lefts, rights, rules, s)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
        x, y = draw(2, 6, 4), draw(2, 4, 7)
        x[0, :, 0], y[1, 2:], x[1, 3] = -math.inf, -math.inf, -math.inf
        want, got = chart._max_plus(x, y), compiled.max_plus(x, y)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


@pytest.mark.parametrize("shared", [True, False])
def test_the_compiled_factored_inside_is_its_pytorch_code_in_float32(shared):
    """SimplePCFG's inside (`_FactoredInside`: the split sums compiled, the backward by hand) against its PyTorch
    code at a trained grammar's scale (float32, 20 words, 24/40 symbols, peaked productions): log Z, every gradient
    and the marginals to 1e-5 of their scale."""
    _require_kernels("cpp")
    lengths = [20, 13, 17]
    grammar = random_grammar(9, 3, 20, 24, 40, factored=True, dtype=torch.float32, vocab=50, scale=4.0,
                             shared=shared)
    results = {}
    for backend in BACKENDS:
        params = leaves(grammar)
        with use_backend(backend):
            log_z = inside(grammar, lengths)
            weights = torch.tensor([1.0, -2.0, 0.5])  # each sentence's gradient weighed otherwise
            grads = torch.autograd.grad((log_z * weights).sum(), params)
            results[backend] = (log_z.detach(), *grads, marginals(grammar, lengths).labels)
    for want, got in zip(results["torch"], results["cpp"]):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-5 * max(1.0, want.abs().max().item()))


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64") or not torch.cpu._is_avx512_supported(),
                    reason="the AVX2 build is played on an AVX-512 CPU (on an AVX2 one the tests above run it)")
def test_the_avx2_build_of_the_chart_kernels_gives_the_same_trees_and_sums(tmp_path):
    """What an AVX2-only CPU runs (-march=x86-64-v3), built and checked here too (run from `tmp_path`: the run's
    hypothesis database stays there)."""
    environment = dict(os.environ, TREENETS_MARCH="x86-64-v3")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k",
                           "compiled or (ties and cpp) or (every_tree and cpp)"], env=environment, capture_output=True,
                          text=True, cwd=tmp_path)
    assert done.returncode == 0 and " passed" in done.stdout and "skipped" not in done.stdout, done.stdout[-3000:]

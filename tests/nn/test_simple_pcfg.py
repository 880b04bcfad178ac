"""SimplePCFG (Liu et al., Findings of EMNLP 2023), neural and compound: its factored grammar is the full grammar
with rules = left + right for `treenets.nn.chart` (log Z, Viterbi, MBR), every distribution it produces is
normalised, a plain reference written here from the equations symbol by symbol (and a plain inside recursion in
probability space) gives the network's log-probabilities, a sentence of the compound grammar gets in a batch of
several lengths what it gets alone, and both grammars train through the `pcfg` task and parse with MBR."""

from __future__ import annotations

import json
import math

import pytest
import torch
import yaml
from helpers import write_corpus

from treenets.cli import main
from treenets.nn.chart import Grammar, inside, marginals, mbr, viterbi
from treenets.nn.simple_pcfg.model import SimpleCompoundPCFG, SimpleNeuralPCFG

VOCAB = 11


def _network(compound: bool, nt: int = 3, t: int = 4, dim: int = 6, seed: int = 0):
    torch.manual_seed(seed)
    if compound:
        net = SimpleCompoundPCFG(VOCAB, nt, t, dim, z_dim=2, h_dim=5, w_dim=4)
    else:
        net = SimpleNeuralPCFG(VOCAB, nt, t, dim)
    net = net.reset_parameters().double()
    with torch.no_grad():  # biases away from 0 (as built they are small), so that the reference checks them too
        for name, param in net.named_parameters():
            if name.endswith("bias"):
                param.uniform_(-0.5, 0.5)
    return net


def _batch(seed: int = 1, lengths=(7, 4, 2)):
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, VOCAB, (len(lengths), max(lengths)), generator=generator)
    return tokens, torch.tensor(lengths)


def _run(net, tokens, lengths, seed: int = 2):
    """The network's output with a fixed draw of z (the compound grammar's)."""
    noise = torch.randn(tokens.size(0), net.z_dim, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return net(tokens, lengths, noise=noise) if net.z_dim else net(tokens, lengths)


def _z(net, tokens, lengths, seed: int = 2):
    """The z `_run` reads (None for the neural grammar)."""
    if not net.z_dim:
        return None
    noise = torch.randn(tokens.size(0), net.z_dim, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    mean, logvar = net.encode(tokens, lengths)
    return mean + (0.5 * logvar).exp() * noise


# --- (a) the factored grammar is the full grammar ---------------------------------------------------------------
@pytest.mark.parametrize("compound", [False, True])
def test_the_productions_are_the_full_grammar_with_rules_left_plus_right(compound):
    net = _network(compound, nt=4, t=5)
    tokens, lengths = _batch(lengths=(9, 6, 3, 2))
    with torch.no_grad():
        run = _run(net, tokens, lengths)
    factored = run.grammar
    assert factored.factored and factored.rules is None  # no NT x S x S tensor from the network
    full = Grammar(factored.roots, factored.terms, rules=factored.left[:, :, :, None] + factored.right[:, :, None, :])
    log_z = inside(factored, lengths)
    torch.testing.assert_close(log_z, inside(full, lengths), rtol=0, atol=1e-10)
    torch.testing.assert_close(run.nll, -log_z, rtol=0, atol=0)
    for a, b in zip(viterbi(factored, lengths), viterbi(full, lengths)):
        assert (a.spans, a.tags, a.root) == (b.spans, b.tags, b.root)
        assert a.score == pytest.approx(b.score, abs=1e-10)
    m_factored, m_full = marginals(factored, lengths), marginals(full, lengths)
    torch.testing.assert_close(m_factored.labels, m_full.labels, rtol=0, atol=1e-10)
    for a, b in zip(mbr(m_factored, lengths), mbr(m_full, lengths)):
        assert (a.spans, a.tags) == (b.spans, b.tags)
        assert a.score == pytest.approx(b.score, abs=1e-10)


# --- (b) every distribution is normalised -----------------------------------------------------------------------
@pytest.mark.parametrize("compound", [False, True])
def test_every_distribution_sums_to_one(compound):
    net = _network(compound, nt=5, t=7, dim=8)
    tokens, lengths = _batch()
    with torch.no_grad():
        grammar = _run(net, tokens, lengths).grammar
        emissions = net.emissions(_z(net, tokens, lengths))
    nt, s = net.nonterminals, net.nonterminals + net.preterminals
    # what reads no sentence is one tensor for the batch (the roots; the neural grammar's productions)
    assert grammar.roots.shape == (1, nt)
    assert grammar.left.shape == grammar.right.shape == ((3 if compound else 1), nt, s)
    grammar = grammar.expanded()
    ones = torch.ones(tokens.size(0), nt, dtype=torch.float64)
    torch.testing.assert_close(grammar.roots.exp().sum(-1), ones[:, 0])  # the roots over NT
    torch.testing.assert_close(grammar.left.exp().sum(-1), ones)  # each parent's left children over S
    torch.testing.assert_close(grammar.right.exp().sum(-1), ones)  # and its right children over S
    assert emissions.shape == ((3 if compound else 1), net.preterminals, VOCAB)
    torch.testing.assert_close(emissions.exp().sum(-1), torch.ones(emissions.shape[:2], dtype=torch.float64))
    # the terms are the emission table's entries of the sentences' words
    expected = emissions.expand(3, -1, -1).gather(2, tokens[:, None, :].expand(-1, net.preterminals, -1))
    torch.testing.assert_close(grammar.terms, expected.transpose(1, 2), rtol=0, atol=0)


# --- (c) a plain reference from the equations -------------------------------------------------------------------
def _log_normalised(scores: list[float]) -> list[float]:
    top = max(scores)
    total = sum(math.exp(x - top) for x in scores)
    return [x - top - math.log(total) for x in scores]


def reference_distributions(params: dict, nt: int, t: int, vocab: int, z: torch.Tensor | None):
    """roots [NT], left [NT][S], right [NT][S], emissions [T][V] (Python lists of log-probabilities) as the
    equations define them, one symbol at a time: w the symbol embeddings, p_A the parents, l_B, r_C the children,
    e_T the preterminals' states."""
    w = params["symbol_emb"]

    def linear(name, v):
        return params[f"{name}.weight"] @ v + params[f"{name}.bias"]

    def residual(name, v):  # x + ReLU(W_2 ReLU(W_1 x + b_1) + b_2)
        return torch.relu(linear(f"{name}.lin2", torch.relu(linear(f"{name}.lin1", v)))) + v

    roots = _log_normalised([float(params["start_emb"][0] @ w[a]) for a in range(nt)])
    left, right = [], []
    for a in range(nt):
        parent_input = w[a] if z is None else torch.cat([w[a], z])
        p = torch.relu(linear("parent_net", parent_input)) + w[a]
        left.append(_log_normalised([float((torch.relu(linear("left_net", w[b])) + w[b]) @ p)
                                     for b in range(nt + t)]))
        right.append(_log_normalised([float((torch.relu(linear("right_net", w[c])) + w[c]) @ p)
                                      for c in range(nt + t)]))
    emissions = []
    for j in range(t):
        w_t = w[nt + j]
        if z is None:  # e_T = g(w_T) + w_T, g: linear and three residual layers; scores u_x^T e_T
            h = linear("preterminal_net.0", w_t)
            for k in (1, 2, 3):
                h = residual(f"preterminal_net.{k}", h)
            e = h + w_t
            scores = [float(params["word_emb"][:, x] @ e) for x in range(vocab)]
        else:  # f([w_T; z]): linear, two residual layers, linear to V
            h = linear("preterminal_net.0", torch.cat([w_t, z]))
            for k in (1, 2):
                h = residual(f"preterminal_net.{k}", h)
            scores = linear("preterminal_net.3", h).tolist()
        emissions.append(_log_normalised(scores))
    return roots, left, right, emissions


def reference_log_z(roots, left, right, emissions, words: list[int], nt: int) -> float:
    """log p(sentence) by the paper's inside recursion in probability space, cell by cell:
    beta[i, j, A] = sum_k (sum_B pi_{B <~ A} beta[i, k, B]) (sum_C pi_{A ~> C} beta[k + 1, j, C]), with a one-word
    span under the preterminals only and a wider one under the nonterminals only."""
    n, s = len(words), len(left[0])
    beta = {}
    for i, x in enumerate(words):
        beta[i, i] = [0.0] * nt + [math.exp(emissions[j][x]) for j in range(s - nt)]
    for width in range(1, n):
        for i in range(n - width):
            j = i + width
            cell = [0.0] * s
            for a in range(nt):
                for k in range(i, j):
                    on_left = sum(math.exp(left[a][b]) * beta[i, k][b] for b in range(s))
                    on_right = sum(math.exp(right[a][c]) * beta[k + 1, j][c] for c in range(s))
                    cell[a] += on_left * on_right
            beta[i, j] = cell
    return math.log(sum(math.exp(roots[a]) * beta[0, n - 1][a] for a in range(nt)))


@pytest.mark.parametrize("compound", [False, True])
def test_a_plain_reference_of_the_equations_gives_the_same_log_probabilities(compound):
    nt, t = 3, 4
    net = _network(compound, nt, t, dim=5, seed=3)
    tokens, lengths = _batch(seed=4, lengths=(5, 3))
    params = {name: p.detach() for name, p in net.named_parameters()}
    with torch.no_grad():
        run = _run(net, tokens, lengths)
        z = _z(net, tokens, lengths)
    for b, n in enumerate(lengths.tolist()):
        roots, left, right, emissions = reference_distributions(params, nt, t, VOCAB, None if z is None else z[b])
        g = run.grammar.expanded()
        torch.testing.assert_close(g.roots[b], torch.tensor(roots, dtype=torch.float64), rtol=0, atol=1e-12)
        torch.testing.assert_close(g.left[b], torch.tensor(left, dtype=torch.float64), rtol=0, atol=1e-12)
        torch.testing.assert_close(g.right[b], torch.tensor(right, dtype=torch.float64), rtol=0, atol=1e-12)
        words = tokens[b, :n].tolist()
        terms = torch.tensor([[emissions[j][x] for j in range(t)] for x in words], dtype=torch.float64)
        torch.testing.assert_close(g.terms[b, :n], terms, rtol=0, atol=1e-12)
        log_z = reference_log_z(roots, left, right, emissions, words, nt)
        assert -run.nll[b].item() == pytest.approx(log_z, abs=1e-10)


def test_the_reference_sees_a_changed_parameter():
    # the reference reads every parameter the grammar does: a change of the parents' bias changes both alike
    net = _network(False, 3, 4, dim=5, seed=3)
    params = {name: p.detach().clone() for name, p in net.named_parameters()}
    before = reference_distributions(params, 3, 4, VOCAB, None)[1]
    params["parent_net.bias"] += 0.3
    assert reference_distributions(params, 3, 4, VOCAB, None)[1] != before


# --- (d) a sentence in a batch of several lengths is the sentence alone ------------------------------------------
@pytest.mark.parametrize("compound", [False, True])
def test_a_batch_of_several_lengths_gives_each_sentence_what_it_has_alone(compound):
    net = _network(compound, nt=3, t=4, dim=6, seed=5)
    tokens, lengths = _batch(seed=6, lengths=(7, 4, 2, 5))
    noise = torch.randn(4, max(net.z_dim, 1), generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    extra = {"noise": noise} if compound else {}
    with torch.no_grad():
        together = net(tokens, lengths, **extra)
        mean_together = net(tokens, lengths, use_mean=True)
        for b, n in enumerate(lengths.tolist()):
            one = {"noise": noise[b : b + 1]} if compound else {}
            alone = net(tokens[b : b + 1, :n], lengths[b : b + 1], **one)
            torch.testing.assert_close(together.nll[b : b + 1], alone.nll, rtol=0, atol=1e-10)
            torch.testing.assert_close(together.kl[b : b + 1], alone.kl, rtol=0, atol=1e-10)
            for name in ("roots", "left", "right"):
                torch.testing.assert_close(getattr(together.grammar.expanded(), name)[b : b + 1],
                                           getattr(alone.grammar, name), rtol=0, atol=1e-12)
            torch.testing.assert_close(together.grammar.terms[b : b + 1, :n], alone.grammar.terms, rtol=0, atol=1e-12)
            mean_alone = net(tokens[b : b + 1, :n], lengths[b : b + 1], use_mean=True)
            torch.testing.assert_close(mean_together.nll[b : b + 1], mean_alone.nll, rtol=0, atol=1e-10)
            if compound:
                torch.testing.assert_close(net.encode(tokens, lengths)[0][b : b + 1],
                                           net.encode(tokens[b : b + 1, :n], lengths[b : b + 1])[0],
                                           rtol=0, atol=1e-12)
    if compound:  # z is read: another draw, another grammar
        other = net(tokens, lengths, noise=noise + 1.0)
        assert not torch.allclose(other.nll, together.nll)
        assert torch.equal(other.grammar.roots, together.grammar.roots)  # the roots read no z (as released)


def test_gradients_reach_every_parameter():
    for compound in (False, True):
        net = _network(compound, seed=8)
        tokens, lengths = _batch(seed=9)
        run = _run(net, tokens, lengths)
        (run.nll + run.kl).mean().backward()
        missing = [name for name, p in net.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
        assert missing == [], (compound, missing)


# --- (e) training through the pcfg task -------------------------------------------------------------------------
@pytest.fixture
def treebank(tmp_path, data_root):
    """The first 30 trees of WSJ 24, one per line."""
    lines = (data_root / "wsj_trees" / "dev_24.LDC99T42").read_text().splitlines()[:30]
    path = tmp_path / "wsj24-head.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("model", ["simple-neural-pcfg", "simple-compound-pcfg"])
def test_a_simple_pcfg_trains_through_the_task_and_parses_with_mbr(tmp_path, treebank, model, capsys):
    corpus = write_corpus(tmp_path / "corpus")
    sizes = {"nonterminals": 3, "preterminals": 4, "state_dim": 8}
    if model == "simple-compound-pcfg":
        sizes.update(z_dim=2, h_dim=4, w_dim=4)
    config = {"task": "pcfg",
              "data": {"path": str(corpus), "valid": [str(treebank)], "test": [str(treebank)], "batch_size": 4,
                       "max_length": 6, "length_increment": 0, "final_max_length": 6},
              "model": {"name": model, **sizes},
              "optim": {"name": "adam", "lr": 0.002, "betas": [0.75, 0.999], "clip": 3.0},
              "train": {"seed": 5, "epochs": 1, "log_interval": 5, "threads": 1}}
    path = tmp_path / "simple.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["train", str(path), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    best = tmp_path / "run" / "best.pt"
    saved = torch.load(tmp_path / "run" / "last.pt", weights_only=True)
    assert not any(key.endswith("rules") for key in saved["model"])  # the productions only
    capsys.readouterr()

    assert main(["eval", str(best), "--split", "test"]) == 0
    result = json.loads(capsys.readouterr().out)
    ppl = "ppl_bound" if model == "simple-compound-pcfg" else "ppl"  # a compound grammar's: the ELBO's bound
    assert math.isfinite(result[ppl]) and result[ppl] > 1 and 0 <= result["sentence_f1"] <= 100

    assert main(["parse", str(best), "--decode", "mbr", "--json", "The Cat sat on the mat, 3 times."]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["tokens"] == ["the", "cat", "sat", "on", "the", "mat", "N", "times"]
    assert record["decode"] == "mbr" and record["labelled_tree"].startswith("(NT-")
    assert len(record["spans"]) == 7 and record["spans"][-1][:2] == [0, 7]
    assert all(0 <= label < 3 for *_, label in record["spans"]) and all(0 <= tag < 4 for tag in record["tags"])
    assert main(["parse", str(best), "--decode", "mbr", "the cat sat", "dog"]) == 0
    out = capsys.readouterr().out
    assert "labelled (mbr): (NT-" in out and "labelled (mbr): (NT (T-" in out  # a one-word sentence: its tag

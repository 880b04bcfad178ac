"""The Neural and Compound PCFGs against the official fixture and against a plain reference written here from the
paper's equations: the rules computed symbol by symbol and position by position as the official code lays them
out, and a cell-by-cell CKY (-log Z, Viterbi); fixtures of other sizes made from it pass `check-golden`, and a
changed array fails."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from treenets.cli import main
from treenets.core.errors import TreenetsError
from treenets.nn.compound_pcfg.convert import from_official as compound_from_official
from treenets.nn.compound_pcfg.model import CompoundPCFG
from treenets.nn.neural_pcfg.convert import from_official as neural_from_official
from treenets.nn.neural_pcfg.model import NeuralPCFG


def _mlp(params: dict, prefix: str, x: torch.Tensor) -> torch.Tensor:
    """The official root/vocab network: Linear, two residual layers, Linear."""
    def linear(name, v):
        return v @ params[f"{prefix}.{name}.weight"].T + params[f"{prefix}.{name}.bias"]

    h = linear("0", x)
    for k in (1, 2):
        h = F.relu(linear(f"{k}.lin2", F.relu(linear(f"{k}.lin1", h)))) + h
    return linear("3", h)


def reference_rules(params: dict, words: list[int], nt: int, t: int, z: torch.Tensor | None):
    """One sentence's log-probabilities as the paper defines them: roots [NT], rules [NT, S, S], emissions of its
    words [n, T], computed for each position and symbol separately (the official layout)."""
    def with_z(v):
        return v if z is None else torch.cat([v, z])

    roots = F.log_softmax(_mlp(params, "root_mlp", with_z(params["root_emb"][0])), -1)
    rules = torch.stack([F.log_softmax(with_z(params["nt_emb"][a]) @ params["rule_mlp.weight"].T +
                                       params["rule_mlp.bias"], -1) for a in range(nt)]).view(nt, nt + t, nt + t)
    terms = torch.stack([torch.stack([F.log_softmax(_mlp(params, "vocab_mlp", with_z(params["t_emb"][j])), -1)[w]
                                      for j in range(t)]) for w in words])
    return roots, rules, terms


def reference_cky(roots, rules, terms, semiring: str):
    """log Z ("sum") or the best tree ("max": its score, root label scores, spans in the official order, tags) by
    a plain CKY over cells [s][e] (inclusive ends) holding one score per symbol."""
    n, nt = terms.size(0), roots.size(0)
    combine = torch.logsumexp if semiring == "sum" else (lambda x, dim: x.max(dim).values)
    chart, back = {}, {}
    for i in range(n):
        chart[i, i] = torch.cat([torch.full((nt,), -math.inf, dtype=terms.dtype), terms[i]])
    for width in range(1, n):
        for s in range(n - width):
            e = s + width
            candidates, keys = [], []
            for u in range(s, e):
                left, right = chart[s, u], chart[u + 1, e]
                scores = (rules + left[None, :, None] + right[None, None, :]).reshape(nt, -1)
                candidates.append(combine(scores, 1))
                keys.append((u, scores.argmax(1)))
            stacked = torch.stack(candidates, 1)  # [NT, splits]
            chart[s, e] = torch.cat([combine(stacked, 1), torch.full((terms.size(1),), -math.inf, dtype=terms.dtype)])
            back[s, e] = (stacked.argmax(1), keys)
    top = chart[0, n - 1][:nt]
    if semiring == "sum":
        return torch.logsumexp(top + roots, 0)
    symbols = rules.size(1)
    spans, tags = [], [None] * n

    def walk(s, e, a):
        if s == e:
            tags[s] = a - nt
            return
        split_index, keys = back[s, e]
        u, flat = keys[int(split_index[a])]
        b, c = divmod(int(flat[a]), symbols)
        spans.insert(0, [s, e, a])
        walk(s, u, b)
        walk(u + 1, e, c)

    root = int((top + roots).argmax())
    walk(0, n - 1, root)
    return float((top + roots).max()), top.tolist(), spans, tags


def _official_args(model) -> dict:
    return {"vocab": model.vocab_size, "h_dim": getattr(model, "enc_rnn", None) and model.enc_rnn.hidden_size or 8,
            "w_dim": getattr(model, "enc_emb", None) and model.enc_emb.embedding_dim or 8, "z_dim": model.z_dim,
            "state_dim": model.state_dim, "t_states": model.preterminals, "nt_states": model.nonterminals}


def write_fixture(folder, model, batches: list[torch.Tensor], seed: int = 0) -> None:
    """A PCFG fixture in the official layout for `model` (a NeuralPCFG or CompoundPCFG), its outputs from the
    reference: -log Z by the plain CKY, z from the encoder and the fixture's eps, the gradients of the mean loss
    through the reference, the Viterbi trees by the plain CKY at z = mean."""
    generator = torch.Generator().manual_seed(seed)
    params = {k: v.detach().double().clone().requires_grad_() for k, v in model.state_dict().items()}
    nt, t = model.nonterminals, model.preterminals
    compound = model.z_dim > 0
    reference = model.double() if compound else None  # the encoder: torch's LSTM, as the official code uses it
    outputs, spans, tags = {}, [], []
    for i, tokens in enumerate(batches):
        outputs[f"tokens_{i}"] = tokens.numpy()
        losses, means, nlls, nll_means, kls, scores, matrices = [], [], [], [], [], [], []
        batch_spans, batch_tags = [], []
        for row in tokens.tolist():
            z = z_mean = None
            kl = torch.zeros((), dtype=torch.float64)
            if compound:
                reference.load_state_dict({k: v.detach() for k, v in params.items()})
                emb = params["enc_emb.weight"][torch.tensor(row)][None]
                states = torch.func.functional_call(reference.enc_rnn, {
                    name: params[f"enc_rnn.{name}"] for name, _ in reference.enc_rnn.named_parameters()}, (emb,))[0]
                stats = states.max(1).values[0] @ params["enc_params.weight"].T + params["enc_params.bias"]
                mean, logvar = stats[: model.z_dim], stats[model.z_dim :]
                eps = torch.randn(model.z_dim, generator=generator, dtype=torch.float64)
                outputs.setdefault(f"eps_{i}", []).append(eps.numpy())
                z, z_mean = mean + (0.5 * logvar).exp() * eps, mean
                kl = -0.5 * (logvar - mean.pow(2) - logvar.exp() + 1).sum()
                means.append((mean.detach().numpy(), logvar.detach().numpy()))
            nll = -reference_cky(*reference_rules(params, row, nt, t, z), "sum")
            losses.append(nll + kl)
            nlls.append(float(nll.detach()))
            kls.append(float(kl.detach()))
            with torch.no_grad():
                nll_means.append(float(-reference_cky(*reference_rules(params, row, nt, t, z_mean), "sum")))
                _, label_scores, tree_spans, tree_tags = reference_cky(*reference_rules(params, row, nt, t, z_mean),
                                                                       "max")
            scores.append(label_scores)
            matrix = -np.ones((len(row), len(row)))
            for s, e, _ in tree_spans:
                matrix[s, e] = 1
            matrix[range(len(row)), range(len(row))] = 1
            matrices.append(matrix)
            batch_spans.append(tree_spans)
            batch_tags.append(tree_tags)
        torch.stack(losses).mean().backward()
        outputs.update({f"nll_{i}": np.array(nlls), f"kl_{i}": np.array(kls), f"nll_mean_{i}": np.array(nll_means),
                        f"kl_mean_{i}": np.array(kls), f"viterbi_score_{i}": np.array(scores),
                        f"binary_matrix_{i}": np.array(matrices)})
        if compound:
            outputs[f"eps_{i}"] = np.array(outputs[f"eps_{i}"])
            outputs[f"mean_{i}"] = np.array([m for m, _ in means])
            outputs[f"logvar_{i}"] = np.array([v for _, v in means])
        spans.append(batch_spans)
        tags.append(batch_tags)
    for name, value in params.items():
        if value.grad is not None:
            outputs[f"grad.{name}"] = value.grad.numpy()
    folder.mkdir()
    kind = "compound-pcfg" if compound else "neural-pcfg"
    (folder / "config.json").write_text(json.dumps({"kind": kind, "args": _official_args(model),
                                                    "viterbi_spans": spans, "viterbi_tags": tags}))
    np.savez(folder / "params.npz", **{k: v.detach().float().numpy() for k, v in params.items()})
    np.savez(folder / "outputs.npz", **{k: np.asarray(v, dtype=np.int64 if k.startswith("tokens_") else np.float64)
                                        for k, v in outputs.items()})


def _batches(vocab: int, shapes, seed: int = 1) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randint(0, vocab, shape, generator=generator) for shape in shapes]


def test_the_official_compound_fixture_passes(golden_root, capsys):
    assert main(["check-golden", str(golden_root / "compound-pcfg")]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1] == "PASS 74/74"
    assert "viterbi_spans  0.000e+00" in out and "viterbi_tags  0.000e+00" in out


@pytest.mark.parametrize("nt,t,dim,shapes", [(3, 4, 6, [(2, 2), (3, 4)]), (2, 5, 4, [(1, 5), (2, 3)])])
def test_neural_pcfg_fixtures_of_other_sizes_pass_and_a_changed_one_fails(tmp_path, capsys, nt, t, dim, shapes):
    torch.manual_seed(0)
    model = NeuralPCFG(11, nt, t, dim).reset_parameters()
    write_fixture(tmp_path / "fixture", model, _batches(11, shapes))
    assert main(["check-golden", str(tmp_path / "fixture")]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("PASS")
    with np.load(tmp_path / "fixture" / "outputs.npz") as archive:
        outputs = dict(archive)
    outputs["grad.rule_mlp.weight"][0, 0] += 0.01
    np.savez(tmp_path / "fixture" / "outputs.npz", **outputs)
    assert main(["check-golden", str(tmp_path / "fixture")]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_a_compound_pcfg_fixture_of_another_size_passes_and_a_wrong_tree_fails(tmp_path, capsys):
    torch.manual_seed(1)
    model = CompoundPCFG(9, 2, 3, 5, z_dim=3, h_dim=4, w_dim=5).reset_parameters()
    write_fixture(tmp_path / "fixture", model, _batches(9, [(2, 3), (1, 4)]))
    assert main(["check-golden", str(tmp_path / "fixture")]) == 0
    config = json.loads((tmp_path / "fixture" / "config.json").read_text())
    config["viterbi_tags"][1][0][0] = (config["viterbi_tags"][1][0][0] + 1) % 3
    (tmp_path / "fixture" / "config.json").write_text(json.dumps(config))
    capsys.readouterr()
    assert main(["check-golden", str(tmp_path / "fixture")]) == 1
    assert "viterbi_tags  1.000e+00" in capsys.readouterr().out


def test_a_batch_of_several_lengths_gives_each_sentence_what_it_has_alone():
    """The official code batches one length; here a sentence's z, -log Z and KL do not depend on its batch."""
    torch.manual_seed(2)
    model = CompoundPCFG(13, 3, 4, 6, z_dim=3, h_dim=5, w_dim=4).reset_parameters().double()
    sentences = [torch.randint(0, 13, (n,)) for n in (5, 2, 7, 3)]
    padded = torch.nn.utils.rnn.pad_sequence(sentences, batch_first=True)
    lengths = torch.tensor([len(s) for s in sentences])
    together = model(padded, lengths, use_mean=True)
    for i, sentence in enumerate(sentences):
        alone = model(sentence[None], lengths[i : i + 1], use_mean=True)
        assert torch.allclose(together.nll[i], alone.nll[0], atol=1e-10)
        assert torch.allclose(together.kl[i], alone.kl[0], atol=1e-10)


def test_the_converters_refuse_the_other_variant_and_a_wrong_state_dict():
    neural = NeuralPCFG(7, 2, 3, 4)
    state = {k: v.numpy() for k, v in neural.state_dict().items()}
    args = {"vocab": 7, "state_dim": 4, "t_states": 3, "nt_states": 2}
    assert isinstance(neural_from_official(state, **args, z_dim=0), NeuralPCFG)
    with pytest.raises(TreenetsError, match="z_dim=2: the Neural PCFG has no latent vector"):
        neural_from_official(state, **args, z_dim=2)
    with pytest.raises(TreenetsError, match="z_dim=0: a CompPCFG without a latent vector is the Neural PCFG"):
        compound_from_official(state, **args, z_dim=0)
    with pytest.raises(TreenetsError, match="t_emb: shape \\(3, 4\\) does not match \\(5, 4\\)"):
        neural_from_official(state, **{**args, "t_states": 5})

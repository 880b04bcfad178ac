"""`check-golden`'s `neural-pcfg` fixtures (and what the `compound-pcfg` ones share): the official `CompPCFG`'s
-log Z, KL, Viterbi trees and training gradients (the fixture's `config.json` `notes` say what each array is).

Per batch i, `outputs.npz` holds its inputs, `tokens_i` [B, n] (one length a batch) and for a Compound PCFG
`eps_i` [B, z_dim] (the standard normal draw of z); the outputs are `nll_i` and `kl_i` (z = mean + exp(logvar / 2)
eps_i), `nll_mean_i`, `kl_mean_i`, `viterbi_score_i` [B, NT] and `binary_matrix_i` [B, n, n] with z = mean (as the
official evaluation parses), `mean_i`, `logvar_i`, and `grad.NAME`: d (nll + kl).mean() / d NAME summed over the
batches. `config.json` holds `viterbi_spans` (per batch, per sentence: [start, end, nonterminal], inclusive ends,
in the official order) and `viterbi_tags`.
"""

from __future__ import annotations

import numpy as np
import torch

from treenets.nn.chart import viterbi
from treenets.nn.neural_pcfg.convert import from_official
from treenets.nn.official import fixture_arg, fixture_floats, fixture_ids


def batches(outputs: dict, path) -> list[int]:
    """The numbers i of the batches whose `tokens_i` the fixture holds."""
    found = sorted(int(name.rsplit("_", 1)[1]) for name in outputs if name.startswith("tokens_"))
    if not found:
        from treenets.core.errors import TreenetsError

        raise TreenetsError(f"{path.parent / 'outputs.npz'}: no tokens_0 (a PCFG fixture's inputs are its batches "
                            "tokens_i [B, n])")
    return found


def pcfg_outputs(model, arrays: dict, path) -> dict:
    """What a PCFG fixture compares, for `model` (a NeuralPCFG, or a CompoundPCFG: then with `eps_i`)."""
    outputs, results = arrays["outputs"], {}
    spans, tags = [], []
    compound = model.z_dim > 0
    model.zero_grad()
    for i in batches(outputs, path):
        tokens = torch.from_numpy(fixture_ids(outputs, f"tokens_{i}", ("batch", "length"), model.vocab_size, path,
                                              "outputs.npz")).long()  # [B, n]
        lengths = torch.full((tokens.size(0),), tokens.size(1), dtype=torch.long)
        extra = {}
        if compound:
            noise = fixture_floats(outputs, f"eps_{i}", {"batch": tokens.size(0), "z_dim": model.z_dim}, path)
            extra["noise"] = torch.from_numpy(noise).double()
        run = model(tokens, lengths, **extra)
        (run.nll + run.kl).mean().backward()
        with torch.no_grad():
            mean = model(tokens, lengths, use_mean=True)
            trees = viterbi(mean.grammar, lengths)
            if compound:
                results[f"mean_{i}"], results[f"logvar_{i}"] = (t.numpy() for t in model.encode(tokens, lengths))
        results.update({f"nll_{i}": run.nll.detach().numpy(), f"kl_{i}": run.kl.detach().numpy(),
                        f"nll_mean_{i}": mean.nll.numpy(), f"kl_mean_{i}": mean.kl.numpy(),
                        f"viterbi_score_{i}": np.array([tree.label_scores for tree in trees])})
        matrix = np.full((tokens.size(0), tokens.size(1), tokens.size(1)), -1.0)  # the official fill: -1 off the tree
        for b, tree in enumerate(trees):
            for start, end, _ in tree.spans:
                matrix[b, start, end] = 1
            matrix[b, range(tokens.size(1)), range(tokens.size(1))] = 1  # every word is a node too
        results[f"binary_matrix_{i}"] = matrix
        spans.append([[list(span) for span in tree.spans] for tree in trees])
        tags.append([list(tree.tags) for tree in trees])
    for name, param in model.named_parameters():
        results[f"grad.{name}"] = param.grad.numpy()
    return {**results, "viterbi_spans": spans, "viterbi_tags": tags}


def neural_pcfg(config: dict, arrays: dict, path) -> dict:
    """A `neural-pcfg` fixture: the official `CompPCFG` with `z_dim` 0."""
    args = fixture_arg(config, "args", path)
    return pcfg_outputs(from_official(arrays["params"], **args).double(), arrays, path)

"""`check-golden`'s `compound-pcfg` fixtures: the official `CompPCFG`'s -log Z with z given, KL, Viterbi trees and
training gradients (`treenets.nn.neural_pcfg.fixtures` says what each array is)."""

from __future__ import annotations

from treenets.nn.compound_pcfg.convert import from_official
from treenets.nn.neural_pcfg.fixtures import pcfg_outputs
from treenets.nn.official import fixture_arg


def compound_pcfg(config: dict, arrays: dict, path) -> dict:
    """A `compound-pcfg` fixture (shared/golden/compound-pcfg)."""
    args = fixture_arg(config, "args", path)
    return pcfg_outputs(from_official(arrays["params"], **args).double(), arrays, path)

"""The official Compound PCFG's weights (harvardnlp/compound-pcfg, `models.CompPCFG`) in treenets' Compound PCFG:
the parameters have the official names, so the `state_dict` loads as it is, checked key for key."""

from __future__ import annotations

from collections.abc import Mapping

from treenets.core.errors import TreenetsError
from treenets.nn.compound_pcfg.model import CompoundPCFG
from treenets.nn.official import load_renamed


def from_official(state_dict: Mapping, vocab: int, h_dim: int = 512, w_dim: int = 512, z_dim: int = 64,
                  state_dim: int = 256, t_states: int = 10, nt_states: int = 10, **_ignored) -> CompoundPCFG:
    """A `CompoundPCFG` holding the weights of an official `CompPCFG` (the official constructor's arguments and
    defaults).

    Raises:
        TreenetsError: `z_dim` 0 (the Neural PCFG: `treenets.nn.neural_pcfg`), a key missing or unexpected, or a
            shape that does not match the arguments.
    """
    if z_dim <= 0:
        raise TreenetsError(f"z_dim={z_dim}: a CompPCFG without a latent vector is the Neural PCFG "
                            "(treenets.nn.neural_pcfg)")
    model = CompoundPCFG(vocab, nt_states, t_states, state_dim, z_dim, h_dim, w_dim)
    load_renamed(model, state_dict, {key: key for key in model.state_dict()}, "an official Compound PCFG "
                 "state_dict (CompPCFG)", f"vocab={vocab}, h_dim={h_dim}, w_dim={w_dim}, z_dim={z_dim}, "
                 f"state_dim={state_dim}, t_states={t_states}, nt_states={nt_states}")
    return model.eval()

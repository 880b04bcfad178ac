"""The official Neural PCFG's weights (harvardnlp/compound-pcfg, `models.CompPCFG` with `z_dim=0`) in treenets'
Neural PCFG: the parameters have the official names, so the `state_dict` loads as it is, checked key for key."""

from __future__ import annotations

from collections.abc import Mapping

from treenets.core.errors import TreenetsError
from treenets.nn.neural_pcfg.model import NeuralPCFG
from treenets.nn.official import load_renamed


def from_official(state_dict: Mapping, vocab: int, state_dim: int = 256, t_states: int = 10, nt_states: int = 10,
                  z_dim: int = 0, **_ignored) -> NeuralPCFG:
    """A `NeuralPCFG` holding the weights of an official `CompPCFG` built with `z_dim=0` (the official constructor's
    arguments and defaults; `h_dim` and `w_dim` size an encoder the Neural PCFG does not have).

    Raises:
        TreenetsError: `z_dim` other than 0 (that is the Compound PCFG: `treenets.nn.compound_pcfg`), a key missing
            or unexpected, or a shape that does not match the arguments.
    """
    if z_dim:
        raise TreenetsError(f"z_dim={z_dim}: the Neural PCFG has no latent vector (z_dim 0); a CompPCFG with z_dim "
                            "> 0 is the Compound PCFG")
    model = NeuralPCFG(vocab, nt_states, t_states, state_dim)
    load_renamed(model, state_dict, {key: key for key in model.state_dict()}, "an official Neural PCFG state_dict "
                 "(CompPCFG with z_dim=0)", f"vocab={vocab}, state_dim={state_dim}, t_states={t_states}, "
                 f"nt_states={nt_states}")
    return model.eval()

"""The official StructFormer's weights (google-research `structformer/`, `StructFormer`) in treenets' StructFormer:
the parameters have the official names, so the `state_dict` loads as it is, checked key for key."""

from __future__ import annotations

from collections.abc import Mapping

from treenets.core.errors import TreenetsError
from treenets.nn.official import load_renamed
from treenets.nn.structformer.model import OFFICIAL_RELATIONS, StructFormer


def from_official(state_dict: Mapping, hidden_size: int, nlayers: int, ntokens: int, nhead: int = 8,
                  dropout: float = 0.1, dropatt: float = 0.1, relative_bias: bool = False, pos_emb: bool = False,
                  pad: int = 0, n_parser_layers: int = 4, conv_size: int = 9, relations=("head", "child"),
                  weight_act: str = "softmax", **_ignored) -> StructFormer:
    """A `StructFormer` holding the weights of the official `StructFormer` (google-research `structformer/`), whose
    constructor arguments (and defaults) these are; treenets' parameters have the official names. Relations are named
    as the official code names them (`head`, `child`, `cibling`).

    Raises:
        TreenetsError: if a relation is unknown, a key is missing or unexpected, or a shape does not match.
    """
    unknown = [r for r in relations if r not in OFFICIAL_RELATIONS]
    if unknown:
        raise TreenetsError(f"relations {unknown}: the official code knows {', '.join(OFFICIAL_RELATIONS)}")
    model = StructFormer(ntokens, hidden_size, nlayers, nhead, dropout, dropatt, relative_bias, pos_emb, pad,
                         n_parser_layers, conv_size, tuple(OFFICIAL_RELATIONS[r] for r in relations), weight_act)
    load_renamed(model, state_dict, {key: key for key in model.state_dict()}, "an official StructFormer state_dict",
                 f"hidden_size={hidden_size}, nlayers={nlayers}, ntokens={ntokens}, nhead={nhead}")
    return model.eval()

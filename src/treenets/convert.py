"""Load weights saved by the official implementations into treenets models.

The official code saves whole pickled objects; extract their `state_dict()` with the official code (or use
the `params.npz` layout of the golden fixtures: key for key the official `state_dict`) and pass it here
with the official constructor arguments.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from treenets.errors import TreenetsError
from treenets.nn.onlstm import ONLSTMLanguageModel


def _as_tensor(value) -> torch.Tensor:
    return value.detach().clone() if isinstance(value, torch.Tensor) else torch.from_numpy(np.array(value))


def onlstm_lm_from_official(state_dict: Mapping, ntoken: int, ninp: int, nhid: int, chunk_size: int,
                            nlayers: int, dropout: float = 0.4, dropouth: float = 0.25, dropouti: float = 0.5,
                            dropoute: float = 0.1, wdrop: float = 0.0, tie_weights: bool = True,
                            **_ignored) -> ONLSTMLanguageModel:
    """An `ONLSTMLanguageModel` holding the weights of an official `model.RNNModel` (yikangshen/Ordered-Neurons).

    Args:
        state_dict: the official `state_dict` (tensors or numpy arrays), e.g. `dict(np.load("params.npz"))`.
        ntoken, ninp, nhid, chunk_size, nlayers, dropout, dropouth, dropouti, dropoute, wdrop, tie_weights:
            the official constructor arguments (`wdrop` matters in evaluation: the official DropConnect
            scales the hidden-to-hidden weights by `1 - wdrop`). Other keys are ignored.

    Raises:
        TreenetsError: if a key is missing or unexpected, or a shape does not match the arguments.
    """
    if ninp % chunk_size or (nlayers > 1 and nhid % chunk_size):
        raise TreenetsError(f"ninp={ninp} and nhid={nhid} must be multiples of chunk_size={chunk_size}")
    model = ONLSTMLanguageModel(ntoken, ninp, nhid, nlayers, chunk_size, dropout=dropout,
                                dropout_hidden=dropouth, dropout_input=dropouti, dropout_embedding=dropoute,
                                weight_drop=wdrop, tie_weights=tie_weights)
    renamed = {"encoder.weight": "embedding.weight", "decoder.weight": "decoder.weight",
               "decoder.bias": "decoder.bias"}
    for layer in range(nlayers):
        for official, ours in (("ih.0", "ih"), ("hh", "hh")):
            for kind in ("weight", "bias"):
                renamed[f"rnn.cells.{layer}.{official}.{kind}"] = f"rnn.layers.{layer}.{ours}.{kind}"
    missing = sorted(set(renamed) - set(state_dict))
    unexpected = sorted(set(state_dict) - set(renamed))
    if missing or unexpected:
        raise TreenetsError(
            f"not an official ON-LSTM state_dict for nlayers={nlayers}: missing {missing or 'nothing'}, "
            f"unexpected {unexpected or 'nothing'}"
        )
    ours = model.state_dict()
    converted = {}
    for official, name in renamed.items():
        tensor = _as_tensor(state_dict[official]).to(ours[name].dtype)
        if tensor.shape != ours[name].shape:
            raise TreenetsError(
                f"{official}: shape {tuple(tensor.shape)} does not match {tuple(ours[name].shape)} "
                f"expected from ntoken={ntoken}, ninp={ninp}, nhid={nhid}, chunk_size={chunk_size}"
            )
        converted[name] = tensor
    if tie_weights and not torch.equal(converted["embedding.weight"], converted["decoder.weight"]):
        raise TreenetsError("tie_weights is set but encoder.weight and decoder.weight differ")
    model.load_state_dict(converted)
    return model.eval()

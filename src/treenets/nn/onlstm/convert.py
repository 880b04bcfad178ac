"""The official ON-LSTM's weights (yikangshen/Ordered-Neurons, `model.RNNModel`) in treenets' ON-LSTM."""

from __future__ import annotations

from collections.abc import Mapping

from treenets.core.errors import TreenetsError
from treenets.nn.official import check_tied, load_renamed
from treenets.nn.onlstm.model import ONLSTMLanguageModel


def from_official(state_dict: Mapping, ntoken: int, ninp: int, nhid: int, chunk_size: int, nlayers: int,
                  dropout: float = 0.4, dropouth: float = 0.25, dropouti: float = 0.5, dropoute: float = 0.1,
                  wdrop: float = 0.0, tie_weights: bool = True, **_ignored) -> ONLSTMLanguageModel:
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
    check_tied(state_dict, tie_weights)
    load_renamed(model, state_dict, renamed, f"an official ON-LSTM state_dict for nlayers={nlayers}",
                 f"ntoken={ntoken}, ninp={ninp}, nhid={nhid}, chunk_size={chunk_size}")
    return model.eval()

"""The official PRPN's weights (yikangshen/PRPN, `model_PRPN.PRPN`) in treenets' PRPN."""

from __future__ import annotations

from collections.abc import Mapping

from treenets.core.errors import TreenetsError
from treenets.nn.official import check_tied, load_renamed
from treenets.nn.prpn.model import PRPNLanguageModel


def from_official(state_dict: Mapping, ntoken: int, ninp: int, nhid: int, nlayers: int, nslots: int = 5,
                  nlookback: int = 1, resolution: float = 0.1, dropout: float = 0.4, idropout: float = 0.4,
                  rdropout: float = 0.1, tie_weights: bool = False, hard: bool = False, res: int = 1,
                  **_ignored) -> PRPNLanguageModel:
    """A `PRPNLanguageModel` holding the weights of an official `model_PRPN.PRPN` (yikangshen/PRPN).

    Args:
        state_dict: the official `state_dict` (tensors or numpy arrays), BatchNorm running statistics included.
        ntoken, ninp, nhid, nlayers, nslots, nlookback, resolution, dropout, idropout, rdropout, tie_weights,
            hard, res: the official constructor arguments (defaults as in the official constructor).

    Raises:
        TreenetsError: if a key is missing or unexpected, or a shape does not match the arguments.
    """
    if nlookback < 1:
        raise TreenetsError(f"nlookback={nlookback}: the official parsing network needs at least 1")
    model = PRPNLanguageModel(ntoken, ninp, nhid, nlayers, nslots, nlookback, resolution, dropout, idropout,
                              rdropout, tie_weights, hard, res)
    bn = ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")
    renamed = {"encoder.weight": "embedding.weight", "decoder.weight": "decoder.weight",
               "decoder.bias": "decoder.bias"}
    for official, ours, kinds in (("parser.gate.1", "parser.conv", ("weight", "bias")),
                                  ("parser.gate.2", "parser.norm", bn),
                                  ("parser.gate.5", "parser.out", ("weight", "bias")),
                                  ("predictor.projector_pred.1", "predictor.query", ("weight", "bias")),
                                  ("predictor.ffd.1", "predictor.fc", ("weight", "bias")),
                                  ("predictor.ffd.2", "predictor.norm", bn)):
        renamed.update({f"{official}.{k}": f"{ours}.{k}" for k in kinds})
    for j in range(nlayers):
        for official, ours, kinds in (("memory_rnn.ih.0", "ih", ("weight", "bias")),
                                      ("memory_rnn.ih.1", "ih_norm", ("gamma", "beta")),
                                      ("memory_rnn.hh.0", "hh", ("weight", "bias")),
                                      ("memory_rnn.hh.1", "hh_norm", ("gamma", "beta")),
                                      ("memory_rnn.c_norm", "c_norm", ("gamma", "beta")),
                                      ("projector_summ.1", "query", ("weight", "bias"))):
            renamed.update({f"reader.{j}.{official}.{k}": f"readers.{j}.{ours}.{k}" for k in kinds})
    for k in range(res):
        for official, ours, kinds in (("0", "fc1", ("weight", "bias")), ("1", "bn1", bn),
                                      ("4", "fc2", ("weight", "bias")), ("5", "bn2", bn)):
            renamed.update({f"predictor.res.res.{k}.{official}.{n}": f"predictor.blocks.{k}.{ours}.{n}"
                            for n in kinds})
    check_tied(state_dict, tie_weights)
    load_renamed(model, state_dict, renamed, f"an official PRPN state_dict for nlayers={nlayers}, res={res}",
                 f"ntoken={ntoken}, ninp={ninp}, nhid={nhid}, nslots={nslots}, nlookback={nlookback}")
    return model.eval()

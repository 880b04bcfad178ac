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
from treenets.nn.pair_classifier import PairClassifier, PairClassifierConfig
from treenets.nn.prpn import PRPNLanguageModel
from treenets.nn.structformer import OFFICIAL_RELATIONS, StructFormer
from treenets.nn.tree_models import RelatednessModel, RelatednessModelConfig


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
    _check_tied(state_dict, tie_weights)
    _load_renamed(model, state_dict, renamed, f"an official ON-LSTM state_dict for nlayers={nlayers}",
                  f"ntoken={ntoken}, ninp={ninp}, nhid={nhid}, chunk_size={chunk_size}")
    return model.eval()


def prpn_lm_from_official(state_dict: Mapping, ntoken: int, ninp: int, nhid: int, nlayers: int, nslots: int = 5,
                          nlookback: int = 1, resolution: float = 0.1, dropout: float = 0.4,
                          idropout: float = 0.4, rdropout: float = 0.1, tie_weights: bool = False,
                          hard: bool = False, res: int = 1, **_ignored) -> PRPNLanguageModel:
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
    _check_tied(state_dict, tie_weights)
    _load_renamed(model, state_dict, renamed, f"an official PRPN state_dict for nlayers={nlayers}, res={res}",
                  f"ntoken={ntoken}, ninp={ninp}, nhid={nhid}, nslots={nslots}, nlookback={nlookback}")
    return model.eval()


def childsum_similarity_from_official(state_dict: Mapping, vocab: int, in_dim: int, mem_dim: int, hidden_dim: int,
                                      num_classes: int = 5, **_ignored) -> RelatednessModel:
    """A `RelatednessModel` (Child-Sum Tree-LSTM + similarity head) holding the weights of the official
    PyTorch port's `SimilarityTreeLSTM` (dasguptar/treelstm.pytorch). Its head compares the root c states,
    as the port does (`head_state="c"`).

    Args:
        state_dict: the port's `state_dict` (`emb.weight`, `childsumtreelstm.*`, `similarity.*`).
        vocab, in_dim, mem_dim, hidden_dim, num_classes: the port's constructor arguments.
    """
    config = RelatednessModelConfig(name="childsum-treelstm", emb_size=in_dim, mem_size=mem_dim,
                                    hidden_size=hidden_dim, num_classes=num_classes, head_state="c")
    model = config.build(vocab)
    renamed = {"emb.weight": "emb.weight"}
    for part in ("ioux", "iouh", "fx", "fh"):
        renamed.update({f"childsumtreelstm.{part}.{k}": f"encoder.{part}.{k}" for k in ("weight", "bias")})
    for part in ("wh", "wp"):
        renamed.update({f"similarity.{part}.{k}": f"similarity.{part}.{k}" for k in ("weight", "bias")})
    _load_renamed(model, state_dict, renamed, "an official SimilarityTreeLSTM state_dict",
                  f"vocab={vocab}, in_dim={in_dim}, mem_dim={mem_dim}, hidden_dim={hidden_dim}")
    return model.eval()


def ordered_memory_classifier_from_official(state_dict: Mapping, ntoken: int, ninp: int, nhid: int, nout: int,
                                            nslot: int, dropout: float = 0.2, dropouti: float = 0.1,
                                            dropouto: float = 0.3, dropoutm: float = 0.2,
                                            **_ignored) -> PairClassifier:
    """A `PairClassifier` with an Ordered Memory encoder holding the weights of the official `proplog.py`
    `Classifier` (yikangshen/Ordered-Memory), bidirectional when the `state_dict` holds an `OM_backward`.

    The official LayerNorm of each direction is one module stored under three names (`input_projection.1`,
    `activation`, `cell.activation`); they must hold the same values. The embedding's rows keep the official
    token ids (`proplog.py`'s `num2char`, then the padding): treenets' logic vocabulary orders `and` and `or`
    the other way.

    Args:
        state_dict: the official `state_dict` (tensors or numpy arrays), e.g. `dict(np.load("params.npz"))`.
        ntoken, ninp, nhid, nout, nslot, dropout, dropouti, dropouto, dropoutm: the official constructor
            arguments. Other keys are ignored.

    Raises:
        TreenetsError: if a key is missing or unexpected, the copies of a LayerNorm differ, or a shape does not
            match the arguments.
    """
    bidirectional = any(key.startswith("encoder.OM_backward.") for key in state_dict)
    config = PairClassifierConfig(name="ordered-memory", emb_size=ninp, hidden_size=nhid, slots=nslot,
                                  dropout=dropout, dropout_input=dropouti, dropout_output=dropouto,
                                  dropout_memory=dropoutm, bidirectional=bidirectional)
    model = config.build(ntoken, nout)
    renamed = {"embedding.weight": "embedding.weight"}
    renamed.update({f"mlp.{i}.{k}": f"mlp.{i}.{k}" for i in (1, 4) for k in ("weight", "bias")})
    state_dict = dict(state_dict)
    for official_direction, ours_direction in (("OM_forward", "forward_memory"), ("OM_backward", "backward_memory")):
        if official_direction == "OM_backward" and not bidirectional:
            continue
        official, ours = f"encoder.{official_direction}", f"encoder.{ours_direction}"
        for kind in ("weight", "bias"):
            norm = f"{official}.input_projection.1.{kind}"
            for copy in (f"{official}.activation.{kind}", f"{official}.cell.activation.{kind}"):
                if copy in state_dict:
                    if norm in state_dict and not torch.equal(_as_tensor(state_dict[copy]),
                                                              _as_tensor(state_dict[norm])):
                        raise TreenetsError(f"{copy} differs from {norm}: the official model shares one LayerNorm")
                    del state_dict[copy]
        for part, name in (("input_projection.0", "input_projection"), ("input_projection.1", "norm"),
                           ("distribution.query.1", "attention.query"),
                           ("distribution.query.2", "attention.query_norm"),
                           ("distribution.key.1", "attention.key"), ("distribution.key.2", "attention.key_norm"),
                           ("distribution.beta.2", "attention.score"), ("cell.input_t.1", "cell.hidden"),
                           ("cell.input_t.4", "cell.out")):
            renamed.update({f"{official}.{part}.{k}": f"{ours}.{name}.{k}" for k in ("weight", "bias")})
    _load_renamed(model, state_dict, renamed, "an official Ordered Memory Classifier state_dict",
                  f"ntoken={ntoken}, ninp={ninp}, nhid={nhid}, nout={nout}")
    return model.eval()


def structformer_from_official(state_dict: Mapping, hidden_size: int, nlayers: int, ntokens: int, nhead: int = 8,
                               dropout: float = 0.1, dropatt: float = 0.1, relative_bias: bool = False,
                               pos_emb: bool = False, pad: int = 0, n_parser_layers: int = 4, conv_size: int = 9,
                               relations=("head", "child"), weight_act: str = "softmax", **_ignored) -> StructFormer:
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
    _load_renamed(model, state_dict, {key: key for key in model.state_dict()}, "an official StructFormer state_dict",
                  f"hidden_size={hidden_size}, nlayers={nlayers}, ntokens={ntokens}, nhead={nhead}")
    return model.eval()


def _check_tied(state_dict: Mapping, tie_weights: bool) -> None:
    if tie_weights and "encoder.weight" in state_dict and "decoder.weight" in state_dict and not torch.equal(
            _as_tensor(state_dict["encoder.weight"]), _as_tensor(state_dict["decoder.weight"])):
        raise TreenetsError("tie_weights is set but encoder.weight and decoder.weight differ")


def _load_renamed(model, state_dict: Mapping, renamed: dict, what: str, arguments: str) -> None:
    """Load `state_dict` into `model` under the names `renamed` maps its keys to, checking keys and shapes."""
    missing = sorted(set(renamed) - set(state_dict))
    unexpected = sorted(set(state_dict) - set(renamed))
    if missing or unexpected:
        raise TreenetsError(f"not {what}: missing {missing or 'nothing'}, unexpected {unexpected or 'nothing'}")
    ours = model.state_dict()
    converted = {}
    for official, name in renamed.items():
        tensor = _as_tensor(state_dict[official]).to(ours[name].dtype)
        if tensor.shape != ours[name].shape:
            raise TreenetsError(f"{official}: shape {tuple(tensor.shape)} does not match {tuple(ours[name].shape)} "
                                f"expected from {arguments}")
        converted[name] = tensor
    model.load_state_dict(converted)

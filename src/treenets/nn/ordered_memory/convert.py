"""The official Ordered Memory logic classifier's weights (yikangshen/Ordered-Memory, `proplog.py`'s `Classifier`)
in treenets' pair classifier with an Ordered Memory encoder."""

from __future__ import annotations

from collections.abc import Mapping

import torch

from treenets.core.errors import TreenetsError
from treenets.nn.official import as_tensor, load_renamed
from treenets.nn.ordered_memory.encoders import OrderedMemoryPairEncoderConfig
from treenets.nn.pair_classifier import PairClassifier, PairClassifierConfig


def classifier_from_official(state_dict: Mapping, ntoken: int, ninp: int, nhid: int, nout: int, nslot: int,
                             dropout: float = 0.2, dropouti: float = 0.1, dropouto: float = 0.3,
                             dropoutm: float = 0.2, **_ignored) -> PairClassifier:
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
    encoder = OrderedMemoryPairEncoderConfig(hidden_size=nhid, slots=nslot, dropout=dropout, dropout_memory=dropoutm,
                                             bidirectional=bidirectional)
    config = PairClassifierConfig(encoder=encoder, emb_size=ninp, dropout=dropout, dropout_input=dropouti,
                                  dropout_output=dropouto)
    model = config.build(ntoken, nout)
    renamed = {"embedding.weight": "embedding.weight"}
    renamed.update({f"mlp.{i}.{k}": f"mlp.{i}.{k}" for i in (1, 4) for k in ("weight", "bias")})
    source, state_dict = getattr(state_dict, "source", None), dict(state_dict)  # (a copy: shared copies dropped)
    for official_direction, ours_direction in (("OM_forward", "forward_memory"), ("OM_backward", "backward_memory")):
        if official_direction == "OM_backward" and not bidirectional:
            continue
        official, ours = f"encoder.{official_direction}", f"encoder.{ours_direction}"
        for kind in ("weight", "bias"):
            norm = f"{official}.input_projection.1.{kind}"
            for copy in (f"{official}.activation.{kind}", f"{official}.cell.activation.{kind}"):
                if copy in state_dict:
                    if norm in state_dict and not torch.equal(as_tensor(state_dict[copy]),
                                                              as_tensor(state_dict[norm])):
                        raise TreenetsError(f"{copy} differs from {norm}: the official model shares one LayerNorm")
                    del state_dict[copy]
        for part, name in (("input_projection.0", "input_projection"), ("input_projection.1", "norm"),
                           ("distribution.query.1", "attention.query"),
                           ("distribution.query.2", "attention.query_norm"),
                           ("distribution.key.1", "attention.key"), ("distribution.key.2", "attention.key_norm"),
                           ("distribution.beta.2", "attention.score"), ("cell.input_t.1", "cell.hidden"),
                           ("cell.input_t.4", "cell.out")):
            renamed.update({f"{official}.{part}.{k}": f"{ours}.{name}.{k}" for k in ("weight", "bias")})
    load_renamed(model, state_dict, renamed, "an official Ordered Memory Classifier state_dict",
                 f"ntoken={ntoken}, ninp={ninp}, nhid={nhid}, nout={nout}", source)
    return model.eval()

"""The weights of the official Tree-LSTM's PyTorch port (dasguptar/treelstm.pytorch, `SimilarityTreeLSTM`) in
treenets' relatedness model."""

from __future__ import annotations

from collections.abc import Mapping

from treenets.nn.official import load_renamed
from treenets.nn.tree_models import RelatednessModel, RelatednessModelConfig
from treenets.nn.treelstm.encoders import ChildSumTreeLSTMConfig


def similarity_from_official(state_dict: Mapping, vocab: int, in_dim: int, mem_dim: int, hidden_dim: int,
                             num_classes: int = 5, **_ignored) -> RelatednessModel:
    """A `RelatednessModel` (Child-Sum Tree-LSTM + similarity head) holding the weights of the official
    PyTorch port's `SimilarityTreeLSTM` (dasguptar/treelstm.pytorch). Its head compares the root c states,
    as the port does (`head_state="c"`).

    Args:
        state_dict: the port's `state_dict` (`emb.weight`, `childsumtreelstm.*`, `similarity.*`).
        vocab, in_dim, mem_dim, hidden_dim, num_classes: the port's constructor arguments.
    """
    config = RelatednessModelConfig(encoder=ChildSumTreeLSTMConfig(mem_size=mem_dim), emb_size=in_dim,
                                    hidden_size=hidden_dim, num_classes=num_classes, head_state="c")
    model = config.build(vocab)
    renamed = {"emb.weight": "emb.weight"}
    for part in ("ioux", "iouh", "fx", "fh"):
        renamed.update({f"childsumtreelstm.{part}.{k}": f"encoder.{part}.{k}" for k in ("weight", "bias")})
    for part in ("wh", "wp"):
        renamed.update({f"similarity.{part}.{k}": f"similarity.{part}.{k}" for k in ("weight", "bias")})
    load_renamed(model, state_dict, renamed, "an official SimilarityTreeLSTM state_dict",
                 f"vocab={vocab}, in_dim={in_dim}, mem_dim={mem_dim}, hidden_dim={hidden_dim}")
    return model.eval()

"""`check-golden`'s `childsum-treelstm-similarity` fixtures: the official port's Child-Sum Tree-LSTM and similarity
head on SICK pairs (shared/golden/README.md)."""

from __future__ import annotations

import numpy as np
import torch

from treenets.nn.official import fixture_arg, fixture_ids
from treenets.nn.treelstm.convert import similarity_from_official
from treenets.trees.parents import parse_parents


def childsum_similarity(config: dict, arrays: dict, path) -> dict[str, np.ndarray]:
    """All pairs in one batch of trees (level by level), compared with the port's tree-at-a-time outputs."""
    args = {k: fixture_arg(config, k, path) for k in ("vocab", "in_dim", "mem_dim", "hidden_dim")}
    model = similarity_from_official(arrays["params"], num_classes=config.get("num_classes", 5), **args).double()
    inputs = arrays["inputs"]
    pairs = sorted(int(key.rsplit("_", 1)[1]) for key in inputs if key.startswith("a_parents_"))
    trees, ids = [], []
    for side in ("a", "b"):
        for k in pairs:
            tokens = fixture_ids(inputs, f"{side}_tokens_{k}", ("words",), args["vocab"], path)
            fixture_ids(inputs, f"{side}_parents_{k}", ("words",), len(tokens) + 1, path)  # (1-based, 0 the root)
            parents = " ".join(str(int(p)) for p in inputs[f"{side}_parents_{k}"])
            trees.append(parse_parents(parents, [str(t) for t in tokens], f"{path.parent} {side}_parents_{k}"))
            ids.append(torch.from_numpy(tokens))
    outputs = {}
    with torch.no_grad():
        roots_h, roots_c = model.sentence_states(trees, ids)
        log_probs = model.compare(roots_c[: len(pairs)], roots_c[len(pairs) :])
    for i, k in enumerate(pairs):
        for side, offset in (("a", 0), ("b", len(pairs))):
            outputs[f"{side}_root_c_{k}"] = roots_c[offset + i : offset + i + 1]
            outputs[f"{side}_root_h_{k}"] = roots_h[offset + i : offset + i + 1]
        outputs[f"log_probs_{k}"] = log_probs[i : i + 1]
    return {name: value.numpy() for name, value in outputs.items()}

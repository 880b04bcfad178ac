"""`check-golden`'s `onlstm-lm` fixtures: the official ON-LSTM language model's outputs (shared/golden/README.md)."""

from __future__ import annotations

import numpy as np
import torch

from treenets.nn.official import fixture_arg, fixture_ids
from treenets.nn.onlstm.convert import from_official


def onlstm_lm(config: dict, arrays: dict, path) -> dict[str, np.ndarray]:
    """The logits of `tokens` (and of `tokens2` from the state they leave), both rows of distances per layer and
    step, and each layer's final state."""
    keys = ("ntoken", "ninp", "nhid", "chunk_size", "nlayers")
    args = {k: fixture_arg(config, k, path) for k in keys}
    optional = ("dropout", "dropouth", "dropouti", "dropoute", "wdrop", "tie_weights")
    args.update({k: config[k] for k in optional if k in config})
    model = from_official(arrays["params"], **args).double()
    inputs, outputs = arrays["inputs"], {}
    tokens = fixture_ids(inputs, "tokens", ("time", "batch"), args["ntoken"], path)  # [T, B]
    tokens2 = fixture_ids(inputs, "tokens2", ("time", "batch"), args["ntoken"], path) if "tokens2" in inputs else None
    with torch.no_grad():
        run = model(torch.from_numpy(tokens))
        outputs["logits"] = model.decoder(run.output)
        outputs["distance_forget"] = run.distances
        outputs["distance_input"] = run.distance_input
        for layer, (h, c) in enumerate(run.state):
            outputs[f"h_final_{layer}"], outputs[f"c_final_{layer}"] = h, c
        if tokens2 is not None:
            outputs["logits2"] = model.decoder(model(torch.from_numpy(tokens2), run.state).output)
    return {name: value.numpy() for name, value in outputs.items()}

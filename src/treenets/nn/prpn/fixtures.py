"""`check-golden`'s `prpn-lm` fixtures: the official PRPN language model's outputs (shared/golden/README.md)."""

from __future__ import annotations

import numpy as np
import torch

from treenets.nn.official import fixture_arg, fixture_ids
from treenets.nn.prpn.convert import from_official


def prpn_lm(config: dict, arrays: dict, path) -> dict[str, np.ndarray]:
    """The logits of `tokens` (and of `tokens2` from the state they leave) and the parsing network's gates."""
    args = {k: fixture_arg(config, k, path) for k in ("ntoken", "ninp", "nhid", "nlayers")}
    optional = ("nslots", "nlookback", "resolution", "dropout", "idropout", "rdropout", "tie_weights", "hard", "res")
    args.update({k: config[k] for k in optional if k in config})
    model = from_official(arrays["params"], **args).double()
    inputs, outputs = arrays["inputs"], {}
    tokens = fixture_ids(inputs, "tokens", ("time", "batch"), args["ntoken"], path)  # [T, B]
    tokens2 = fixture_ids(inputs, "tokens2", ("time", "batch"), args["ntoken"], path) if "tokens2" in inputs else None
    with torch.no_grad():
        run = model(torch.from_numpy(tokens))
        outputs["logits"] = model.decoder(run.output)
        outputs["gates"] = run.distances[0].t()
        if tokens2 is not None:
            outputs["logits2"] = model.decoder(model(torch.from_numpy(tokens2), run.state).output)
    return {name: value.numpy() for name, value in outputs.items()}

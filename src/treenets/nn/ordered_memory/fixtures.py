"""`check-golden`'s `ordered-memory-logic` fixtures: the official Ordered Memory logic classifier's outputs and
trees (shared/golden/README.md)."""

from __future__ import annotations

import torch

from treenets.core.errors import TreenetsError
from treenets.nn.official import fixture_arg, fixture_ids
from treenets.nn.ordered_memory.convert import classifier_from_official


def logic(config: dict, arrays: dict, path) -> dict:
    """The classifier on `tokens` with the trained number of slots and twice as many (as the official evaluation
    tests it); the trees of every sequence from the latter's distances, as `genparse` builds them."""
    args = fixture_arg(config, "args", path)
    model = classifier_from_official(arrays["params"], **args).double()
    pad = config.get("pad", args["ntoken"] - 1)  # the official padding index: the last token id
    vocab = fixture_arg(config, "vocab", path)
    ntoken = fixture_arg(args, "ntoken", path)
    tokens = torch.from_numpy(fixture_ids(arrays["inputs"], "tokens", ("time", "batch"), ntoken, path))  # [T, B]
    if len(vocab) < ntoken - 1:  # (the padding, the last id, has no word)
        raise TreenetsError(f"{path}: vocab has {len(vocab)} symbols; expected one per token id but the padding "
                            f"({ntoken - 1})")
    lengths = (tokens != pad).sum(0)
    outputs = {}
    with torch.no_grad():
        embedded = model.embedding(tokens)
        for suffix, slots in (("", args["nslot"]), ("_2x", 2 * args["nslot"])):
            run = model.encoder(embedded, lengths, slots)
            outputs[f"logits{suffix}"] = model.classify(run.output).numpy()
            outputs[f"probs{suffix}"] = run.probs.numpy()
    outputs["distance_2x"] = run.distances.numpy()
    words = [[vocab[i] for i in tokens[:n, b].tolist()] for b, n in enumerate(lengths.tolist())]
    outputs["trees_2x"] = run.trees(words)  # built from the slots of the twice-as-many run, as `genparse`
    return outputs

"""`check-golden`'s `structformer-mlm` fixtures: the official StructFormer's outputs, trees and heads
(shared/golden/README.md)."""

from __future__ import annotations

import torch

from treenets.core.errors import TreenetsError
from treenets.nn.official import fixture_arg, fixture_ids
from treenets.nn.structformer.convert import from_official
from treenets.trees import tree_from_distances
from treenets.trees.dependencies import heads_from_parents


def structformer_mlm(config: dict, arrays: dict, path) -> dict:
    """The masked language model on the padded batch `tokens` and on `masked` (with its loss against `targets`),
    then each sentence alone, unpadded, as the official `test_phrase_grammar.test` parses it: its distances,
    heights, parent distributions, tree (`build_tree`) and CoNLL heads. The arrays are rounded to float32, the
    reference's precision: the distance of each sentence's last gap is 1e9 less the margin, which float32 holds
    to 64."""
    args = fixture_arg(config, "args", path)
    model = from_official(arrays["params"], **args).double()
    inputs = arrays["inputs"]
    pad, vocab = args.get("pad", 0), fixture_arg(config, "vocab", path)
    ntokens = fixture_arg(args, "ntokens", path)
    if len(vocab) < ntokens:
        raise TreenetsError(f"{path}: vocab has {len(vocab)} words; expected one per token id ({ntokens})")
    tokens = torch.from_numpy(fixture_ids(inputs, "tokens", ("batch", "length"), ntokens, path))  # [B, L]
    outputs, trees, heads = {}, [], []
    with torch.no_grad():
        run = model(tokens)
        outputs["logits"] = model.output_layer(run.hidden).flatten(0, 1)
        outputs.update(distance=run.distance, height=run.height, head=run.parent, block=run.block,
                       cibling=run.sibling, att_mask=run.mask)
        if "masked" in inputs:
            masked = fixture_ids(inputs, "masked", ("batch", "length"), ntokens, path)
            masked = model.output_layer(model(torch.from_numpy(masked)).hidden).flatten(0, 1)
            outputs["masked_logits"] = masked
            if "targets" in inputs:
                targets = fixture_ids(inputs, "targets", ("batch", "length"), ntokens, path)
                outputs["masked_loss"] = torch.nn.functional.cross_entropy(
                    masked, torch.from_numpy(targets).flatten(), ignore_index=pad)
        for i, row in enumerate(tokens):
            sentence = row[row != pad][None]
            alone = model(sentence, alone=True)
            distance, height, parent = alone.distance[0], alone.height[0], alone.parent[0]
            outputs.update({f"distance_single_{i}": distance, f"height_single_{i}": height,
                            f"head_single_{i}": parent})
            words = [vocab[t] for t in sentence[0].tolist()]
            trees.append(tree_from_distances(words, distance.tolist(), "after"))
            heads.append(heads_from_parents(parent, height))
    arrays = {name: value.float().numpy() for name, value in outputs.items()}
    return {**arrays, "trees_single": trees, "heads_single": heads}

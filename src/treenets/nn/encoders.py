"""What an encoder is to the classifiers that read through one (`tree_models`, `pair_classifier`,
`sequence_classifier`), and their configs' `encoder:` section.

An encoder is declared in its model's folder (`treenets/nn/<model>/encoders.py`): a config class with a literal
`name`, defaults for all its fields and `build(in_dim)`, offered to the classifiers of one kind by its folder's
registration (`Model(encoders={"sentences": (...)})`, `treenets.nn.registry.encoder_union`). Its config declares
what the classifiers need to know of it:

- `reads_trees`: it reads the given tree of each input (the Tree-LSTMs); otherwise the tokens in order;
- `induces_trees`: it induces a tree of each input as it reads (Ordered Memory), which the tasks score and draw;
- `out_dim`: the size of the vector it gives each input;
- of sentence encoders, also `cell` (it has a memory cell, so relatedness may compare the sentences' c) and
  `children` (the most children a node of the trees it reads may have; None: any number).

The networks it builds offer, by kind and by what they read:

- sentences (the relatedness and sentiment models), reading trees: `batch(trees, device)`, the batch of the
  trees (with `roots`, `word_inputs(word_ids, embedding)` and the nodes' order), and `forward(batch, inputs, rows)`
  -> the (h, c) states of every node; reading tokens: `forward(embedded [T, B, in], lengths [B])` -> the sentences'
  (h, c) [B, out_dim] (c None without a memory cell), and where it induces trees `encode(embedded, lengths)` ->
  (vectors [B, out_dim], `InducedTrees`);
- pairs and sequences (the logic and ListOps classifiers), reading tokens: `encode(inputs [T, N, in], lengths [N],
  test)` -> (vectors [N, out_dim], `InducedTrees` or None), `test` as the model is tested; reading trees: as the
  sentence encoders that do.
"""

from __future__ import annotations

from typing import Any, get_args

import torch
from pydantic import BaseModel, model_validator

from treenets.core.schema import Section


def union_members(annotation) -> dict[str, type]:
    """Name -> config class of the encoders a classifier's `encoder` field takes (a class, or their union)."""
    members = get_args(annotation) or (annotation,)
    members = get_args(members[0]) or members  # Annotated[A | B, ...]: its union's members
    return {member.model_fields["name"].default: member for member in members}


class ClassifierConfig(Section):
    """A classifier's model section: its own fields, and its encoder's config under `encoder` (a subclass declares
    the field, the union of the encoders it reads through, with a default where the task has one).

    Sections written before encoders were nested (treenets 0.11 and earlier, and configs written for it) held the
    encoder's fields flat beside the classifier's, `name` naming the encoder, and, as saved, every encoder's fields:
    they are read as nested, each field to the section that declares it (to both where both do), the other
    encoders' fields dropped, anything else left to be refused."""

    @model_validator(mode="before")
    @classmethod
    def _nest_a_flat_encoder(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "name" not in data and "encoder" in data:
            return data
        if "encoder" in data:
            raise ValueError("name: the encoder is named by encoder.name (with its fields under encoder:)")
        encoders = union_members(cls.model_fields["encoder"].annotation)
        default = cls.model_fields["encoder"].default
        name = data.get("name", default.name if isinstance(default, BaseModel) else None)
        if name is None and len(encoders) == 1:
            name = next(iter(encoders))
        if name not in encoders:  # the union names the choices
            return {**{k: v for k, v in data.items() if k != "name"}, "encoder": {"name": name}}
        own = set(cls.model_fields) - {"encoder"}
        every_encoders = {key for config in encoders.values() for key in config.model_fields}
        encoder = {key: value for key, value in data.items() if key in encoders[name].model_fields}
        rest = {key: value for key, value in data.items() if key in own or key not in every_encoders}
        return {**rest, "encoder": {**encoder, "name": name}}

    @property
    def name(self) -> str:
        """The encoder's name (how the model is listed)."""
        return self.encoder.name


class LastTokenEncoder:
    """A stack of recurrent layers (whose forward returns `outputs`, one [T, N, H] per layer) as an encoder of token
    sequences: its last layer at each sequence's last token."""

    def encode(self, inputs: torch.Tensor, lengths: torch.Tensor, test: bool = False) -> tuple[torch.Tensor, None]:
        """The last layer at the last token of each right-padded column of `inputs` [T, N, in] (`lengths` [N]):
        [N, hidden]; it induces no trees (None)."""
        return last_states(self(inputs).outputs[-1], lengths), None


def last_states(outputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """The outputs [T, N, H] of a left-to-right encoder at the last token of each right-padded column of `lengths`
    [N]: [N, H]. Padding comes after the last token, so it changes nothing before it."""
    columns = torch.arange(outputs.size(1), device=outputs.device)
    return outputs[lengths.to(outputs.device) - 1, columns]

"""Ordered Memory (Shen et al., NeurIPS 2019): `model.py` the network (an encoder of the logic, ListOps and
sentiment models: `treenets.nn.pair_classifier`, `sequence_classifier`, `tree_models`), `trees.py` the tree it
induces from its memory slots, `convert.py` the official logic classifier's weights, `fixtures.py` the
`ordered-memory-logic` fixtures of `check-golden`, `encoders.py` the encoder it is to those classifiers."""

from treenets.nn.ordered_memory.encoders import (
    OrderedMemoryPairEncoderConfig,
    OrderedMemorySentenceEncoderConfig,
    OrderedMemorySequenceEncoderConfig,
)
from treenets.nn.registry import Model, register

register(Model(
    name="ordered-memory", title="Ordered Memory (Shen et al., NeurIPS 2019)", package=__name__, order=50,
    encoders={"pairs": (OrderedMemoryPairEncoderConfig,), "sequences": (OrderedMemorySequenceEncoderConfig,),
              "sentences": (OrderedMemorySentenceEncoderConfig,)},
    convert="convert:classifier_from_official",
    fixtures={"ordered-memory-logic": "fixtures:logic"},
))

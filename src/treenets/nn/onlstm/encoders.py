"""ON-LSTM layers as the encoder of the logic pair classifier (`treenets.nn.encoders`; the ON-LSTM paper's
section 6.4, the official logic code's options in brackets): a formula's vector is the last layer's state at its
last token."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import model_validator

from treenets.core.schema import PositiveInt, Probability, Section
from treenets.nn.encoders import LastTokenEncoder
from treenets.nn.onlstm.model import ONLSTMStack


class ONLSTMEncoder(LastTokenEncoder, ONLSTMStack):
    """The stack over token sequences, read to each sequence's last token."""


class ONLSTMPairEncoderConfig(Section):
    """ON-LSTM layers over the tokens, with the official logic code's non-inverted DropConnect."""

    name: Literal["onlstm"] = "onlstm"
    hidden_size: PositiveInt = 400  # [nhid] every layer's size
    num_layers: PositiveInt = 1  # [nlayers]
    chunk_size: PositiveInt = 10  # [chunk_size]
    dropout: Probability = 0.2  # [dropout] between layers
    weight_drop: Probability = 0.0  # [wdrop] DropConnect on the hidden-to-hidden weights
    reads_trees: ClassVar[bool] = False
    induces_trees: ClassVar[bool] = False

    @model_validator(mode="after")
    def _sizes_divisible_by_chunk(self):
        if self.hidden_size % self.chunk_size:
            raise ValueError(f"hidden_size={self.hidden_size} is not divisible by chunk_size={self.chunk_size}")
        return self

    @property
    def out_dim(self) -> int:
        return self.hidden_size

    def build(self, in_dim: int) -> ONLSTMEncoder:
        return ONLSTMEncoder([in_dim] + [self.hidden_size] * self.num_layers, self.chunk_size, self.dropout,
                             self.weight_drop)

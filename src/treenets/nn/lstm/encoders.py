"""LSTM layers as the encoder of the logic pair classifier (`treenets.nn.encoders`): the ON-LSTM paper's baseline
(its official logic code's ON-LSTM stack with standard LSTM cells); a formula's vector is the last layer's state
at its last token."""

from __future__ import annotations

from typing import ClassVar, Literal

from treenets.core.schema import PositiveInt, Probability, Section
from treenets.nn.encoders import LastTokenEncoder
from treenets.nn.lstm.model import LSTMStack


class LSTMEncoder(LastTokenEncoder, LSTMStack):
    """The stack over token sequences, read to each sequence's last token."""


class LSTMPairEncoderConfig(Section):
    """LSTM layers over the tokens, with the official logic code's non-inverted DropConnect."""

    name: Literal["lstm"] = "lstm"
    hidden_size: PositiveInt = 400  # [nhid] every layer's size
    num_layers: PositiveInt = 1  # [nlayers]
    dropout: Probability = 0.2  # [dropout] between layers
    weight_drop: Probability = 0.0  # [wdrop] DropConnect on the hidden-to-hidden weights
    reads_trees: ClassVar[bool] = False
    induces_trees: ClassVar[bool] = False

    @property
    def out_dim(self) -> int:
        return self.hidden_size

    def build(self, in_dim: int) -> LSTMEncoder:
        return LSTMEncoder([in_dim] + [self.hidden_size] * self.num_layers, self.dropout, self.weight_drop,
                           weight_drop_inverted=False)

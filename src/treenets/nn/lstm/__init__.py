"""The AWD-LSTM baseline of the ON-LSTM paper (Merity, Keskar & Socher, ICLR 2018): `model.py` the network and its
language model (`torch.nn.LSTM` layers with AWD-LSTM's dropouts), `encoders.py` its layers as the logic pair
classifier's encoder."""

from treenets.nn.lstm.encoders import LSTMPairEncoderConfig
from treenets.nn.lstm.model import LSTMConfig
from treenets.nn.registry import Model, register

register(Model(
    name="lstm", title="AWD-LSTM (Merity et al., ICLR 2018)", package=__name__, order=30,
    encoders={"pairs": (LSTMPairEncoderConfig,)},
    configs={"lm": (LSTMConfig,)},  # the language-model tasks (lm, char-lm, sentence-lm)
))

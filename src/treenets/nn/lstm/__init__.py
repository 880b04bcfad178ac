"""The AWD-LSTM baseline of the ON-LSTM paper (Merity, Keskar & Socher, ICLR 2018): `model.py` the network and its
language model (`torch.nn.LSTM` layers with AWD-LSTM's dropouts)."""

from treenets.nn.lstm.model import LSTMConfig
from treenets.nn.registry import Model, register

register(Model(
    name="lstm", title="AWD-LSTM (Merity et al., ICLR 2018)", package=__name__, order=30,
    configs={"lm": (LSTMConfig,)},  # the language-model tasks (lm, char-lm, sentence-lm)
))

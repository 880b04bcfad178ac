"""ON-LSTM (Shen, Tan, Sordoni & Courville, *Ordered Neurons*, ICLR 2019): `model.py` the network and its word-level
language model, `convert.py` the official weights, `fixtures.py` the `onlstm-lm` fixtures of `check-golden`,
`onlstm_cpu.cpp` its C++ kernels, `encoders.py` its layers as the logic pair classifier's encoder."""

from pathlib import Path

from treenets.nn.onlstm.encoders import ONLSTMPairEncoderConfig
from treenets.nn.onlstm.model import ONLSTMConfig
from treenets.nn.registry import Kernel, Model, register

register(Model(
    name="onlstm", title="ON-LSTM (Shen et al., ICLR 2019)", package=__name__, order=10,
    encoders={"pairs": (ONLSTMPairEncoderConfig,)},
    configs={"lm": (ONLSTMConfig,)},  # the language-model tasks (lm, char-lm, sentence-lm)
    convert="convert:from_official",
    fixtures={"onlstm-lm": "fixtures:onlstm_lm"},
    kernels=(Kernel("onlstm", Path(__file__).with_name("onlstm_cpu.cpp"), mixed_precision=True),),
))

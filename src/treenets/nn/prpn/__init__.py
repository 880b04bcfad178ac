"""PRPN (Shen, Lin, Huang & Courville, *Parsing-Reading-Predict Networks*, ICLR 2018): `model.py` the network and its
language model, `convert.py` the official weights, `fixtures.py` the `prpn-lm` fixtures of `check-golden`,
`prpn_cpu.cpp` its C++ kernels."""

from pathlib import Path

from treenets.nn.prpn.model import PRPNConfig
from treenets.nn.registry import Kernel, Model, register

register(Model(
    name="prpn", title="PRPN (Shen et al., ICLR 2018)", package=__name__, order=20,
    configs={"lm": (PRPNConfig,)},  # the language-model tasks (lm, char-lm, sentence-lm)
    convert="convert:from_official",
    fixtures={"prpn-lm": "fixtures:prpn_lm"},
    kernels=(Kernel("prpn", Path(__file__).with_name("prpn_cpu.cpp"), mixed_precision=True),),
))

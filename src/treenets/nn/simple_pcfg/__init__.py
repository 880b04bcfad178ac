"""SimplePCFG (Liu et al., Findings of EMNLP 2023): `model.py` the neural and compound parameterisations of a PCFG
with independent left and right productions (its dynamic programs are `treenets.nn.chart`'s, with no NT x S x S
rule tensor). No converter and no fixtures: the official checkpoints are not published."""

from treenets.nn.registry import Model, register
from treenets.nn.simple_pcfg.model import SimpleCompoundPCFGConfig, SimpleNeuralPCFGConfig

register(Model(
    name="simple-pcfg", title="SimplePCFG (Liu et al., Findings of EMNLP 2023)", package=__name__, order=90,
    configs={"pcfg": (SimpleNeuralPCFGConfig, SimpleCompoundPCFGConfig)},
))

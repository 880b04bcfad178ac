"""The Neural PCFG (Kim, Dyer & Rush, ACL 2019): `model.py` the neural parameterisation of a PCFG's rules (its
dynamic programs are `treenets.nn.chart`), `convert.py` the official weights, `fixtures.py` the `neural-pcfg`
fixtures of `check-golden`."""

from treenets.nn.neural_pcfg.model import NeuralPCFGConfig
from treenets.nn.registry import Model, register

register(Model(
    name="neural-pcfg", title="Neural PCFG (Kim et al., ACL 2019)", package=__name__, order=70,
    configs={"pcfg": (NeuralPCFGConfig,)},
    convert="convert:from_official",
    fixtures={"neural-pcfg": "fixtures:neural_pcfg"},
    fixture_files=("params.npz",), fixture_inputs=("tokens_", "eps_"),  # the inputs travel in outputs.npz
    # The reference is float32 through inside charts whose log Z reaches hundreds (436 in shared/golden): its -log Z
    # and gradients carry rounding of 1e-5 to 1e-4 (the official code rerun in float64 agrees with treenets to 5e-12
    # and differs from the fixture by as much), so each array is held to 1e-4 of its scale.
    fixture_tolerance=1e-4,
))

"""StructFormer (Shen et al., ACL 2021): `model.py` the masked language model whose parser induces constituency and
dependency structure (and its transformer baseline), `convert.py` the official weights, `fixtures.py` the
`structformer-mlm` fixtures of `check-golden`."""

from treenets.nn.registry import Model, register
from treenets.nn.structformer.model import StructFormerConfig

register(Model(
    name="structformer", title="StructFormer (Shen et al., ACL 2021)", package=__name__, order=60,
    configs={"mlm": (StructFormerConfig,)},
    convert="convert:from_official",
    fixtures={"structformer-mlm": "fixtures:structformer_mlm"},
))

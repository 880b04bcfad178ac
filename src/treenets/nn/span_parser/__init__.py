"""The span parser (the student of `treenets distill`): `model.py` a tree CRF over span scores from a BiLSTM, in
the shape of URNNG's inference network (Kim, Rush et al., NAACL 2019); its dynamic programs are
`treenets.nn.chart`'s (`tree_crf_log_z`). No converter and no fixtures: it has no official checkpoint."""

from treenets.nn.registry import Model, register
from treenets.nn.span_parser.model import SpanParserConfig

register(Model(
    name="span-parser", title="Span parser, a tree CRF (the student of Shayegh et al., ICLR 2024)", package=__name__,
    order=95, configs={"parsing": (SpanParserConfig,)},
))

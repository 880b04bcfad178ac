"""Tree-LSTMs (Tai, Socher & Manning, ACL 2015): `model.py` the Child-Sum and N-ary cells batched level by level
across trees and the paper's sequential baselines, `batch.py` the trees batched by height (`TreeBatch`),
`level_graphs.py` the level loop replayed as CUDA graphs, `convert.py` the official port's weights,
`fixtures.py` the `childsum-treelstm-similarity` fixtures of `check-golden`, `treelstm_cpu.cpp` its C++ kernels,
`encoders.py` the Tree-LSTMs (and the sequential baselines) as the encoders of the relatedness and sentiment models
(`treenets.nn.tree_models`) and of the logic pair classifier (`treenets.nn.pair_classifier`)."""

from pathlib import Path

from treenets.nn.registry import Kernel, Model, register
from treenets.nn.treelstm.encoders import SENTENCE_ENCODERS, TreeLSTMPairEncoderConfig

register(Model(
    name="treelstm", title="Tree-LSTM (Tai et al., ACL 2015)", package=__name__, order=40,
    encoders={"sentences": SENTENCE_ENCODERS, "pairs": (TreeLSTMPairEncoderConfig,)},
    convert="convert:similarity_from_official",
    fixtures={"childsum-treelstm-similarity": "fixtures:childsum_similarity"},
    kernels=(Kernel("treelstm", Path(__file__).with_name("treelstm_cpu.cpp")),),
))

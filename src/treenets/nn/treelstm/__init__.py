"""Tree-LSTMs (Tai, Socher & Manning, ACL 2015): `model.py` the Child-Sum and N-ary cells batched level by level
across trees (`TreeBatch`) and the similarity head, `convert.py` the official port's weights, `fixtures.py` the
`childsum-treelstm-similarity` fixtures of `check-golden`, `treelstm_cpu.cpp` its C++ kernels. The relatedness and
sentiment models that use them as encoders are `treenets.nn.tree_models`."""

from pathlib import Path

from treenets.nn.registry import Kernel, Model, register

register(Model(
    name="treelstm", title="Tree-LSTM (Tai et al., ACL 2015)", package=__name__, order=40,
    convert="convert:similarity_from_official",
    fixtures={"childsum-treelstm-similarity": "fixtures:childsum_similarity"},
    kernels=(Kernel("treelstm", Path(__file__).with_name("treelstm_cpu.cpp")),),
))

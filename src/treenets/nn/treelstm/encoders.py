"""The Tree-LSTMs as encoders of the classifiers (`treenets.nn.encoders`): of sentences, for the relatedness and
sentiment models (Tai et al., 2015, sections 4.1 and 4.2), with the paper's sequential baselines (LSTM, BiLSTM);
and of formulas, for the logic pair classifier (a model given each formula's tree)."""

from __future__ import annotations

from typing import ClassVar, Literal

from treenets.core.schema import PositiveInt, Section
from treenets.nn.treelstm.model import ChildSumTreeLSTM, NaryTreeLSTM, SequenceLSTM


class _SentenceEncoder(Section):
    """What every Tree-LSTM and baseline sentence encoder declares (`treenets.nn.encoders`)."""

    mem_size: PositiveInt = 150  # [mem_dim] the memory size (BiLSTM: per direction)
    reads_trees: ClassVar[bool] = True  # False: it reads the words in order, and of a tree only counts its words
    induces_trees: ClassVar[bool] = False
    cell: ClassVar[bool] = True  # it has a memory cell: a sentence has a c (relatedness may compare it)
    # the most children a node of the trees it reads may have (None: any number, as a dependency tree's nodes)
    children: ClassVar[int | None] = None

    @property
    def out_dim(self) -> int:
        return self.mem_size


class ChildSumTreeLSTMConfig(_SentenceEncoder):
    """Child-Sum Tree-LSTM (section 3.1): a node sums its children's states, so it takes any number of them
    (dependency trees)."""

    name: Literal["childsum-treelstm"] = "childsum-treelstm"

    def build(self, in_dim: int) -> ChildSumTreeLSTM:
        return ChildSumTreeLSTM(in_dim, self.mem_size)


class BinaryTreeLSTMConfig(_SentenceEncoder):
    """N-ary Tree-LSTM with N = 2 (section 3.2): a weight matrix per child position, so at most two children
    (binary constituency trees)."""

    name: Literal["binary-treelstm"] = "binary-treelstm"
    children: ClassVar[int | None] = 2

    def build(self, in_dim: int) -> NaryTreeLSTM:
        return NaryTreeLSTM(in_dim, self.mem_size, 2)


class LSTMEncoderConfig(_SentenceEncoder):
    """The paper's sequential baseline: an LSTM over the words; the sentence is its last state."""

    name: Literal["lstm"] = "lstm"
    reads_trees: ClassVar[bool] = False

    def build(self, in_dim: int) -> SequenceLSTM:
        return SequenceLSTM(in_dim, self.mem_size, bidirectional=False)


class BiLSTMEncoderConfig(_SentenceEncoder):
    """The bidirectional baseline: an LSTM each way; the sentence is both last states side by side."""

    name: Literal["bilstm"] = "bilstm"
    reads_trees: ClassVar[bool] = False

    @property
    def out_dim(self) -> int:
        return 2 * self.mem_size

    def build(self, in_dim: int) -> SequenceLSTM:
        return SequenceLSTM(in_dim, self.mem_size, bidirectional=True)


class TreeLSTMPairEncoderConfig(Section):
    """A binary Tree-LSTM over each formula's tree; the formula's vector is its root's state."""

    name: Literal["binary-treelstm"] = "binary-treelstm"
    hidden_size: PositiveInt = 400  # the memory size
    reads_trees: ClassVar[bool] = True
    induces_trees: ClassVar[bool] = False

    @property
    def out_dim(self) -> int:
        return self.hidden_size

    def build(self, in_dim: int) -> NaryTreeLSTM:
        return NaryTreeLSTM(in_dim, self.hidden_size, 2)


SENTENCE_ENCODERS = (ChildSumTreeLSTMConfig, BinaryTreeLSTMConfig, LSTMEncoderConfig, BiLSTMEncoderConfig)

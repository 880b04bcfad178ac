"""AWD-LSTM (Merity, Keskar & Socher, ICLR 2018): the plain LSTM language model every ON-LSTM table compares with.

The same regularisation as the ON-LSTM language model, on standard LSTM layers:

    embedding dropout (dropoute)    whole words dropped from the embedding matrix
    locked dropout (dropouti)       on the embeddings, one mask per sequence
    LSTM layers, DropConnect (wdrop) on each layer's hidden-to-hidden matrix U_h, one mask per forward pass
    locked dropout (dropouth)       between layers
    locked dropout (dropout)        on the last layer's output, the decoder's input
    AR on the last layer's output after that dropout, TAR before it (the task's loss, `LSTMOutput.ar_input`)

Each layer is a `torch.nn.LSTM` (cuDNN on GPUs, oneDNN/MKL on CPUs): the whole sequence runs inside it, and
DropConnect replaces its `weight_hh_l0` for one call through `torch.func.functional_call`, so the dropped
matrix is part of the graph and the gradient reaches the raw weight (as AWD-LSTM's `WeightDrop`). AWD-LSTM's
DropConnect is inverted (`F.dropout`: kept weights scaled by 1/(1-p) in training, the raw matrix in
evaluation), unlike the official ON-LSTM's; `weight_drop_inverted` chooses.

An LSTM gives no syntactic distances: it scores sentences like any language model, and asking it for trees is
a clear error (`treenets.predictors.LanguageModel`).
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import torch
import torch.nn as nn
from torch.func import functional_call

from treenets.core.schema import PositiveInt, Probability, Section
from treenets.nn.dropout import dropconnect, locked_dropout
from treenets.nn.language_model import RecurrentStackLanguageModel

State = tuple[torch.Tensor, torch.Tensor]  # (h, c) of one layer, each [B, H]


class StackOutput(NamedTuple):
    outputs: list[torch.Tensor]  # each layer's output [T, B, H_l], before dropout
    state: list[State]


class LSTMOutput(NamedTuple):
    output: torch.Tensor  # [T, B, E]: last layer after output dropout, the decoder's input
    state: list[State]
    last_layer: torch.Tensor  # [T, B, E]: last layer before dropout (for TAR)

    @property
    def ar_input(self) -> torch.Tensor:
        """What activation regularisation penalises: AWD-LSTM's AR acts on the last layer after its dropout
        (`dropped_rnn_hs[-1]`), TAR on it before."""
        return self.output


class LSTMConfig(Section):
    """AWD-LSTM language model; the names of AWD-LSTM's `main.py` options are given in brackets."""

    name: Literal["lstm"] = "lstm"
    emb_size: PositiveInt = 400  # [emsize] also the size of the last layer
    hidden_size: PositiveInt = 1150  # [nhid]
    num_layers: PositiveInt = 3  # [nlayers]
    dropout: Probability = 0.4  # [dropout] locked dropout on the last layer's output
    dropout_hidden: Probability = 0.25  # [dropouth] locked dropout between layers (the paper's PTB run)
    dropout_input: Probability = 0.4  # [dropouti] locked dropout on the embeddings (the paper's PTB run)
    dropout_embedding: Probability = 0.1  # [dropoute] drops whole words from the embedding matrix
    weight_drop: Probability = 0.5  # [wdrop] DropConnect on the hidden-to-hidden weights
    weight_drop_inverted: bool = True  # True: AWD-LSTM's (F.dropout) convention
    tie_weights: bool = True

    def build(self, vocab_size: int) -> LSTMLanguageModel:
        """The language model of this config, freshly initialised."""
        return LSTMLanguageModel(vocab_size, **self.model_dump(exclude={"name"}))


class LSTMStack(nn.Module):
    """LSTM layers of sizes `sizes[1:]` on input size `sizes[0]`, run over time-major sequences: DropConnect
    `weight_drop` on each layer's hidden-to-hidden matrix (one mask per forward pass), locked dropout
    `dropout_hidden` between layers."""

    def __init__(self, sizes, dropout_hidden=0.0, weight_drop=0.0, weight_drop_inverted=True):
        super().__init__()
        self.layers = nn.ModuleList(nn.LSTM(n_in, n_out) for n_in, n_out in zip(sizes[:-1], sizes[1:]))
        self.dropout_hidden = dropout_hidden
        self.weight_drop, self.weight_drop_inverted = weight_drop, weight_drop_inverted

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def initial_state(self, batch_size: int) -> list[State]:
        return [(layer.weight_hh_l0.new_zeros(batch_size, layer.hidden_size),) * 2 for layer in self.layers]

    def _run_layer(self, layer: nn.LSTM, x: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        """One layer over the whole sequence, its hidden-to-hidden matrix DropConnect-ed for this call."""
        w_hh = dropconnect(layer.weight_hh_l0, self.weight_drop, self.training, self.weight_drop_inverted)
        h0, c0 = (s.unsqueeze(0) for s in state)  # nn.LSTM wants [num_layers=1, B, H]
        if w_hh is layer.weight_hh_l0:
            output, (h, c) = layer(x, (h0, c0))
        else:
            output, (h, c) = functional_call(layer, {"weight_hh_l0": w_hh}, (x, (h0, c0)))
        # Under bf16 products (treenets.nn.precision) nn.LSTM computes and returns bfloat16: the state carried to
        # the next window (and saved in last.pt) and the output stay in the model's dtype.
        dtype = state[0].dtype
        return output.to(dtype), (h.squeeze(0).to(dtype), c.squeeze(0).to(dtype))

    def forward(self, x: torch.Tensor, state: list[State] | None = None) -> StackOutput:
        state = state if state is not None else self.initial_state(x.size(1))
        outputs, new_state = [], []
        for index, layer in enumerate(self.layers):
            x, layer_state = self._run_layer(layer, x, state[index])
            outputs.append(x)
            new_state.append(layer_state)
            if index < len(self.layers) - 1:
                x = locked_dropout(x, self.dropout_hidden, self.training)
        return StackOutput(outputs, new_state)


class LSTMLanguageModel(RecurrentStackLanguageModel):
    """Embedding -> LSTM layers -> linear decoder, with the AWD-LSTM dropouts (`RecurrentStackLanguageModel`).

    Layer sizes are `[emb] + [hidden] * (num_layers - 1) + [emb]` (as AWD-LSTM with tied weights), so the
    decoder can share the embedding matrix. `forward` returns the decoder's input [T, B, E]; `decoder(output)`
    gives the logits [T, B, V]. Arguments as in `LSTMConfig`.
    """

    def __init__(self, vocab_size, emb_size=400, hidden_size=1150, num_layers=3, dropout=0.4, dropout_hidden=0.25,
                 dropout_input=0.4, dropout_embedding=0.1, weight_drop=0.5, weight_drop_inverted=True,
                 tie_weights=True):
        super().__init__(vocab_size, emb_size, dropout, dropout_input, dropout_embedding)
        sizes = self.stack_sizes(emb_size, hidden_size, num_layers)
        self.rnn = LSTMStack(sizes, dropout_hidden, weight_drop, weight_drop_inverted)
        self._add_decoder(tie_weights, init_range=0.1)

    def forward(self, tokens: torch.Tensor, state: list[State] | None = None) -> LSTMOutput:
        """Run `tokens` [T, B] from `state` (zeros if None)."""
        stack = self.rnn(self.embed(tokens), state)
        last = stack.outputs[-1]
        return LSTMOutput(self.drop_output(last), stack.state, last)

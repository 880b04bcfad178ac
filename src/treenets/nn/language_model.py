"""What the language models (`LSTMLanguageModel`, `ONLSTMLanguageModel`, `PRPNLanguageModel`) share around
their own body: the embedding in, the decoder out, their initialisation, and AWD-LSTM's dropouts.

For tokens w [T, B] over a vocabulary of V words and embeddings of size E::

    e_t      = E[w_t]                   the embedding E [V, E], uniform in ±init_range
    o_t      = body(e_1, ..., e_t)      the model's own ([T, B, E]: the decoder's input)
    logits_t = W o_t + b                the decoder W [V, E], b [V]: W = E when tied, else uniform in
                                        ±init_range; b = 0

A model's `forward(tokens, state)` returns a NamedTuple whose `output` is o [T, B, E]; `decoder(output)` gives
the logits [T, B, V] (the tasks and predictors call the decoder themselves, on the rows they need).
"""

from __future__ import annotations

import torch
import torch.nn as nn

from treenets.nn.dropout import embedding_dropout, locked_dropout


class LanguageModelBase(nn.Module):
    """The embedding (`embedding`, [V, E]) and the decoder (`decoder`, E -> V) of a language model.

    A subclass builds, in this order, so that a seeded run draws its initial weights as it always has: the
    embedding (`super().__init__`), its body, then the decoder with the initialisation of both (`_add_decoder`).
    """

    def __init__(self, vocab_size: int, emb_size: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)

    def _add_decoder(self, tie_weights: bool, init_range: float) -> None:
        """The decoder E -> V, then the initial weights of both ends: the embedding uniform in ±`init_range`, the
        decoder's bias zero, its weight the embedding's own tensor (`tie_weights`) or uniform in ±`init_range`."""
        vocab_size, emb_size = self.embedding.weight.shape
        self.decoder = nn.Linear(emb_size, vocab_size)
        nn.init.uniform_(self.embedding.weight, -init_range, init_range)
        nn.init.zeros_(self.decoder.bias)
        if tie_weights:
            self.decoder.weight = self.embedding.weight
        else:
            nn.init.uniform_(self.decoder.weight, -init_range, init_range)


class RecurrentStackLanguageModel(LanguageModelBase):
    """A language model whose body is a stack of recurrent layers, `rnn` (set by the subclass between
    `super().__init__` and `_add_decoder`), with AWD-LSTM's dropouts (Merity, Keskar & Socher, 2018) around it::

        embedding dropout (dropoute)    whole words dropped from the embedding matrix      `embed`
        locked dropout (dropouti)       on the embeddings, one mask per sequence           `embed`
        the stack                       its own dropouts between layers                    `rnn`
        locked dropout (dropout)        on the last layer's output, the decoder's input    `drop_output`

    The stack's layers have sizes `stack_sizes(...)`: the last one is E wide, so the decoder can share the
    embedding matrix. `rnn` has `num_layers`, `initial_state(batch_size)` and `forward(x [T, B, E], state)`.
    """

    def __init__(self, vocab_size: int, emb_size: int, dropout: float, dropout_input: float,
                 dropout_embedding: float):
        super().__init__(vocab_size, emb_size)
        self.dropout, self.dropout_input, self.dropout_embedding = dropout, dropout_input, dropout_embedding

    @staticmethod
    def stack_sizes(emb_size: int, hidden_size: int, num_layers: int) -> list[int]:
        """The input size, then each layer's: `[emb] + [hidden] * (num_layers - 1) + [emb]` (AWD-LSTM's with
        tied weights)."""
        return [emb_size] + [hidden_size] * (num_layers - 1) + [emb_size]

    @property
    def num_layers(self) -> int:
        """Layers of the stack."""
        return self.rnn.num_layers

    def initial_state(self, batch_size: int) -> list:
        """The stack's zero state: one (h, c) per layer, each [B, H_l]."""
        return self.rnn.initial_state(batch_size)

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens [T, B] -> the stack's input [T, B, E], after embedding dropout and locked input dropout."""
        emb = embedding_dropout(self.embedding.weight, tokens, self.dropout_embedding, self.training)
        return locked_dropout(emb, self.dropout_input, self.training)

    def drop_output(self, last_layer: torch.Tensor) -> torch.Tensor:
        """The last layer's output [T, B, E] -> the decoder's input [T, B, E], after locked dropout."""
        return locked_dropout(last_layer, self.dropout, self.training)

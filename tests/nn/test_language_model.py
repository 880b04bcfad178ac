"""The part the three language models share (treenets.nn.language_model): the embedding and decoder under the
same state_dict keys, their initial weights, a seeded run's order of draws, and AWD-LSTM's dropouts."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from treenets.nn.dropout import embedding_dropout, locked_dropout
from treenets.nn.language_model import LanguageModelBase
from treenets.nn.lstm.model import LSTMLanguageModel, LSTMStack
from treenets.nn.onlstm.model import ONLSTMLanguageModel, ONLSTMStack
from treenets.nn.prpn.model import ParsingNetwork, PredictNetwork, PRPNLanguageModel, ReadingLayer

VOCAB, EMB, HIDDEN = 40, 8, 12


def lstm(tie_weights):
    return LSTMLanguageModel(VOCAB, EMB, HIDDEN, num_layers=2, tie_weights=tie_weights)


def onlstm(tie_weights):
    return ONLSTMLanguageModel(VOCAB, EMB, HIDDEN, num_layers=2, chunk_size=4, tie_weights=tie_weights)


def prpn(tie_weights):
    return PRPNLanguageModel(VOCAB, EMB, HIDDEN, num_layers=2, nslots=3, nlookback=2, tie_weights=tie_weights, res=1)


def lstm_by_hand():
    """The AWD-LSTM model's modules built one by one in the order of draws the models keep: embedding, body,
    decoder, then the uniform initialisation."""
    return [nn.Embedding(VOCAB, EMB), LSTMStack([EMB, HIDDEN, EMB]), nn.Linear(EMB, VOCAB)]


def onlstm_by_hand():
    return [nn.Embedding(VOCAB, EMB), ONLSTMStack([EMB, HIDDEN, EMB], 4), nn.Linear(EMB, VOCAB)]


def prpn_by_hand():
    return [nn.Embedding(VOCAB, EMB), ParsingNetwork(EMB, HIDDEN, 3, 2, 0.1, 0.5, True),
            nn.ModuleList(ReadingLayer(n, HIDDEN, 3, 0.7, 0.5) for n in (EMB, HIDDEN)),
            PredictNetwork(HIDDEN, EMB, 3, 0.5, 1), nn.Linear(EMB, VOCAB)]


MODELS = [(lstm, lstm_by_hand, 0.1), (onlstm, onlstm_by_hand, 0.1), (prpn, prpn_by_hand, 0.01)]


@pytest.mark.parametrize("build,_,init_range", MODELS)
@pytest.mark.parametrize("tie_weights", [True, False])
def test_embedding_and_decoder_keep_their_keys_and_initial_weights(build, _, init_range, tie_weights):
    model = build(tie_weights)
    assert isinstance(model, LanguageModelBase)
    keys = list(model.state_dict())
    assert keys[:1] == ["embedding.weight"] and keys[-2:] == ["decoder.weight", "decoder.bias"]
    assert model.embedding.weight.shape == model.decoder.weight.shape == (VOCAB, EMB)
    assert (model.decoder.weight is model.embedding.weight) == tie_weights
    for weight in (model.embedding.weight, model.decoder.weight):
        assert weight.abs().max() <= init_range and weight.abs().max() > init_range / 2
    assert not model.decoder.bias.any()


@pytest.mark.parametrize("build,by_hand,init_range", MODELS)
@pytest.mark.parametrize("tie_weights", [True, False])
def test_a_seeded_model_draws_embedding_body_decoder_then_the_uniform_inits(build, by_hand, init_range,
                                                                            tie_weights):
    torch.manual_seed(0)
    model = build(tie_weights)
    torch.manual_seed(0)
    embedding, *body, decoder = by_hand()
    nn.init.uniform_(embedding.weight, -init_range, init_range)
    if not tie_weights:
        nn.init.uniform_(decoder.weight, -init_range, init_range)
    expected = [embedding.weight, *(p for module in body for p in module.parameters())]
    expected += [] if tie_weights else [decoder.weight]
    got = list(model.parameters())  # a tied decoder weight is the embedding's, listed once
    assert len(got) == len(expected) + 1 and not got[-1].any()  # the last, the decoder's bias: zeros
    for weight, want in zip(got, expected):
        assert torch.equal(weight, want)


@pytest.mark.parametrize("build", [lstm, onlstm])
def test_awd_dropouts_around_the_stack(build):
    model = build(True).train()
    tokens = torch.randint(0, VOCAB, (5, 3))
    torch.manual_seed(7)
    emb = model.embed(tokens)
    torch.manual_seed(7)  # the same draws, in the same order: the word mask, then the sequence mask
    words = embedding_dropout(model.embedding.weight, tokens, model.dropout_embedding, True)
    torch.testing.assert_close(emb, locked_dropout(words, model.dropout_input, True), rtol=0, atol=0)
    last_layer = torch.randn(5, 3, EMB)
    dropped = model.drop_output(last_layer)
    kept = dropped != 0
    assert (kept == kept[:1]).all() and not kept.all()  # one mask per sequence, shared over time
    torch.testing.assert_close(dropped[kept], last_layer[kept] / (1 - model.dropout))
    model.eval()
    torch.testing.assert_close(model.embed(tokens), model.embedding(tokens), rtol=0, atol=0)
    assert model.drop_output(last_layer) is last_layer
    assert model.num_layers == 2 and len(model.initial_state(3)) == 2

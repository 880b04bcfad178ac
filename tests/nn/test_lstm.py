"""The AWD-LSTM language model: DropConnect on U_h per forward, the AWD-LSTM dropouts, carried state, and
that it scores sentences but refuses to induce trees."""

from __future__ import annotations

import pytest
import torch
import yaml
from helpers import tiny_config, write_corpus

from treenets.cli import main
from treenets.core.errors import TreenetsError
from treenets.nn.lstm.model import LSTMConfig, LSTMLanguageModel
from treenets.predictors import LanguageModel


def small_model(**kwargs) -> LSTMLanguageModel:
    torch.manual_seed(0)
    options = dict(emb_size=6, hidden_size=10, num_layers=3, dropout=0.0, dropout_hidden=0.0, dropout_input=0.0,
                   dropout_embedding=0.0, weight_drop=0.0)
    options.update(kwargs)
    return LSTMLanguageModel(20, **options).double()


def plain_lstm_run(model: LSTMLanguageModel, tokens, hh_weights) -> torch.Tensor:
    """The last layer's output computed with fresh `nn.LSTM`s holding the given hidden-to-hidden matrices."""
    x = model.embedding(tokens)
    for layer, w_hh in zip(model.rnn.layers, hh_weights):
        plain = torch.nn.LSTM(layer.input_size, layer.hidden_size).double()
        plain.load_state_dict(layer.state_dict())
        with torch.no_grad():
            plain.weight_hh_l0.copy_(w_hh)
        x, _ = plain(x)
    return x


def test_layer_sizes_follow_awd_lstm_and_the_decoder_is_tied():
    model = small_model()
    assert [(m.input_size, m.hidden_size) for m in model.rnn.layers] == [(6, 10), (10, 10), (10, 6)]
    assert model.decoder.weight is model.embedding.weight
    assert model.num_layers == 3


def test_without_dropout_it_is_a_stack_of_plain_lstms():
    model = small_model().eval()
    tokens = torch.randint(0, 20, (7, 3))
    expected = plain_lstm_run(model, tokens, [m.weight_hh_l0 for m in model.rnn.layers])
    out = model(tokens)
    torch.testing.assert_close(out.last_layer, expected, rtol=0, atol=1e-12)
    torch.testing.assert_close(out.output, expected, rtol=0, atol=1e-12)


def test_dropconnect_drops_the_hidden_matrix_once_per_forward_inverted_as_awd_lstm():
    p = 0.5
    model = small_model(weight_drop=p).train()
    tokens = torch.randint(0, 20, (7, 3))
    torch.manual_seed(3)
    out = model(tokens)
    torch.manual_seed(3)  # the same draws, in the same order (one mask per layer)
    masks = [(torch.rand_like(m.weight_hh_l0) >= p).double() for m in model.rnn.layers]
    expected = plain_lstm_run(model, tokens, [m.weight_hh_l0 * k / (1 - p) for m, k in zip(model.rnn.layers, masks)])
    torch.testing.assert_close(out.last_layer, expected, rtol=0, atol=1e-12)
    assert 0.3 < float(masks[0].mean()) < 0.7
    # evaluation uses the raw matrices (inverted DropConnect), not scaled ones
    model.eval()
    torch.testing.assert_close(model(tokens).last_layer,
                               plain_lstm_run(model, tokens, [m.weight_hh_l0 for m in model.rnn.layers]),
                               rtol=0, atol=1e-12)


def test_the_official_on_lstm_convention_scales_in_evaluation_instead():
    model = small_model(weight_drop=0.25, weight_drop_inverted=False).eval()
    tokens = torch.randint(0, 20, (5, 2))
    expected = plain_lstm_run(model, tokens, [m.weight_hh_l0 * 0.75 for m in model.rnn.layers])
    torch.testing.assert_close(model(tokens).last_layer, expected, rtol=0, atol=1e-12)


def test_the_gradient_reaches_the_raw_hidden_matrix_through_dropconnect():
    model = small_model(weight_drop=0.5).train()
    model(torch.randint(0, 20, (6, 2))).output.pow(2).sum().backward()
    for layer in model.rnn.layers:
        grad = layer.weight_hh_l0.grad
        assert grad is not None and grad.abs().sum() > 0
        assert (grad == 0).any()  # dropped weights get no gradient


def test_a_carried_state_continues_the_sequence():
    model = small_model().eval()
    tokens = torch.randint(0, 20, (10, 3))
    whole = model(tokens)
    first = model(tokens[:4])
    second = model(tokens[4:], first.state)
    torch.testing.assert_close(torch.cat([first.output, second.output]), whole.output, rtol=0, atol=1e-12)
    for (h, c), (h2, c2) in zip(second.state, whole.state):
        torch.testing.assert_close(h, h2, rtol=0, atol=1e-12)
        torch.testing.assert_close(c, c2, rtol=0, atol=1e-12)


def test_locked_dropout_masks_are_shared_over_time():
    model = small_model(dropout=0.5).train()
    out = model(torch.randint(0, 20, (6, 4)))
    dropped = out.output == 0
    assert dropped.any()
    assert torch.equal(dropped, dropped[:1].expand_as(dropped))


def test_config_builds_the_model_with_the_awd_lstm_defaults():
    config = LSTMConfig()
    assert (config.dropout, config.dropout_hidden, config.dropout_input, config.weight_drop) == (0.4, 0.25, 0.4, 0.5)
    model = config.build(30)
    assert isinstance(model, LSTMLanguageModel) and model.rnn.weight_drop_inverted


@pytest.fixture(scope="module")
def lstm_checkpoint(tmp_path_factory):
    root = tmp_path_factory.mktemp("lstm")
    corpus = write_corpus(root / "corpus")
    config = tiny_config(corpus, train={"epochs": 1})
    config["model"] = {"name": "lstm", "emb_size": 8, "hidden_size": 12, "num_layers": 2, "weight_drop": 0.3}
    (root / "lstm.yaml").write_text(yaml.safe_dump(config))
    assert main(["train", str(root / "lstm.yaml"), "--out", str(root / "run"), "--no-progress"]) == 0
    return root / "run" / "best.pt"


def test_an_lstm_scores_sentences_but_induces_no_trees(lstm_checkpoint, capsys):
    lm = LanguageModel.load(lstm_checkpoint)
    score = lm.score("the cat sat")
    assert len(score.logprobs) == 4 and all(lp < 0 for lp in score.logprobs)
    assert score.unknown == ["sat"]
    with pytest.raises(TreenetsError, match="LSTMLanguageModel gives no syntactic distances"):
        lm.parse("the cat")
    capsys.readouterr()
    assert main(["parse", str(lstm_checkpoint), "the cat"]) == 2
    assert "gives no syntactic distances" in capsys.readouterr().err
    assert main(["eval", str(lstm_checkpoint), "--split", "test"]) == 0
    assert "ppl" in capsys.readouterr().out


def test_ar_acts_after_the_output_dropout_and_tar_before_it_as_awd_lstm():
    from treenets.tasks.lm import LMLossConfig, language_model_loss

    model = small_model(dropout=0.5).train()
    tokens = torch.randint(0, 20, (6, 3))
    out = model(tokens)
    assert not torch.equal(out.output, out.last_layer)  # dropout acted
    logits = model.decoder(out.output)
    target = torch.randint(0, 20, (6, 3))
    xent = torch.nn.functional.cross_entropy(logits.view(-1, 20), target.view(-1))
    loss, _ = language_model_loss(out, logits, target, LMLossConfig(ar=2.0, tar=0.0))
    torch.testing.assert_close(loss, xent + 2.0 * out.output.pow(2).mean())
    loss, _ = language_model_loss(out, logits, target, LMLossConfig(ar=0.0, tar=1.0))
    torch.testing.assert_close(loss, xent + (out.last_layer[1:] - out.last_layer[:-1]).pow(2).mean())

"""The span parser (`treenets.nn.span_parser`, the student of `treenets distill`): its span scores against a plain
computation of the equations (one span at a time), a sentence in a batch is the sentence alone, a word it never saw
is read by its characters, and the binary spans of a tree."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from treenets.nn.span_parser.model import SpanParserConfig, char_ids
from treenets.predictors.parsing import binary_spans


def _parser(seed: int = 0):
    torch.manual_seed(seed)
    net = SpanParserConfig(word_dim=8, char_dim=4, char_channels=5, hidden_dim=6, layers=2, mlp_dim=7,
                           dropout=0.0).build(20).double()
    return net.eval()


def _inputs(sentences, vocab_ids):
    longest = max(len(s) for s in sentences)
    tokens = torch.zeros(len(sentences), longest, dtype=torch.long)
    for b, s in enumerate(sentences):
        tokens[b, : len(s)] = torch.tensor([vocab_ids[w] for w in s])
    return tokens, sentences, torch.tensor([len(s) for s in sentences])


VOCAB = {w: i for i, w in enumerate(["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "<unk>"])}


def test_span_scores_are_the_equations_one_span_at_a_time():
    """s_ij = w^T ReLU(W [f_{j+1} - f_i ; b_{i+1} - b_{j+2}] + c) + d, from the BiLSTM's states."""
    net = _parser()
    sentences = [["the", "cat", "sat", "on", "the", "mat"], ["a", "dog", "ran"]]
    tokens, words, lengths = _inputs(sentences, VOCAB)
    with torch.no_grad():
        scores = net(tokens, words, lengths)
        states = net.states(tokens, char_ids(words, tokens.size(1)), lengths)
    h = net.hidden_dim
    for b, words in enumerate(sentences):
        for i in range(len(words)):
            for j in range(i, len(words)):
                f, bw = states[b, :, :h], states[b, :, h:]
                feature = torch.cat([f[j + 1] - f[i], bw[i + 1] - bw[j + 2]])
                expected = net.span_out(F.relu(net.span_hidden(feature)))
                assert scores[b, i, j].item() == pytest.approx(expected.item(), abs=1e-10)


def test_a_sentence_in_a_batch_is_the_sentence_alone():
    net = _parser(1)
    sentences = [["the", "cat", "sat", "on", "the", "mat"], ["a", "dog"], ["the", "dog", "ran"]]
    with torch.no_grad():
        together = net(*_inputs(sentences, VOCAB))
        for b, words in enumerate(sentences):
            alone = net(*_inputs([words], VOCAB))[0]
            n = len(words)
            torch.testing.assert_close(together[b, :n, :n], alone[:n, :n], rtol=0, atol=1e-12)


def test_a_word_it_never_saw_is_read_by_its_characters():
    """Two unknown words (the same <unk> id) with other characters give other span scores."""
    net = _parser(2)
    tokens, _, lengths = _inputs([["the", "<unk>", "sat"]], VOCAB)
    with torch.no_grad():
        one = net(tokens, [["the", "zebra", "sat"]], lengths)
        two = net(tokens, [["the", "quokka", "sat"]], lengths)
    assert not torch.allclose(one[0, :3, :3].triu(), two[0, :3, :3].triu())


def test_a_words_characters_are_its_first_bytes_of_utf8_between_boundaries():
    ids = char_ids([["naïve", "x" * 25], ["a"]], 2)
    assert ids.shape == (2, 4, 20) and ids.dtype == torch.long
    assert ids[0, 1, :6].tolist() == list("naïve".encode()) and ids[0, 1, 6:].eq(256).all()  # (ï: two bytes)
    assert ids[0, 2].tolist() == [ord("x")] * 20  # its first 20 bytes
    assert ids[:, 0, 0].tolist() == [257, 257] and ids[0, 3, 0] == 257 and ids[1, 2, 0] == 257  # <s>, </s>
    assert ids[1, 3].eq(256).all() and ids[0, 0, 1:].eq(256).all()  # padding past </s>, and after a boundary


def test_binary_spans_group_a_nodes_children_from_the_right():
    assert sorted(binary_spans([["the", "cat"], ["sat", "on", "it"]])) == [(0, 1), (0, 4), (2, 4), (3, 4)]
    assert binary_spans([["a"], "b", "c"]) == [(1, 2), (0, 2)]
    assert binary_spans("word") == []

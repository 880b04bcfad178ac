"""Ordered Memory: hand-checked trees, properties of the split-point distribution and of padded batches, and the
batched network (values and gradients) against the official-style reference loop (tests/reference.py)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import ReferenceMemoryClassifier

from treenets.nn.ordered_memory.convert import classifier_from_official
from treenets.nn.ordered_memory.model import OrderedMemory, OrderedMemoryOutput
from treenets.nn.ordered_memory.trees import tree_from_slots
from treenets.nn.pair_classifier import PairClassifierConfig
from treenets.trees import without


def test_tree_from_slots_by_hand():
    words = ["w0", "w1", "w2", "w3"]
    # each slot one below the last: nothing is merged until the end, the tree branches right
    assert tree_from_slots(words, [9, 5, 4, 3]) == ["w0", ["w1", ["w2", "w3"]]]
    # the same slot: the top two are merged before each word is shifted, the tree branches left
    assert tree_from_slots(words, [9, 3, 3, 3]) == [[["w0", "w1"], "w2"], "w3"]
    # a rise of two slots before w3 merges three times, as far as the stack allows (twice)
    assert tree_from_slots(words, [9, 5, 4, 6]) == [["w0", ["w1", "w2"]], "w3"]
    # the first word's slot is never read
    assert tree_from_slots(words, [0, 5, 4, 6]) == tree_from_slots(words, [11, 5, 4, 6])
    assert tree_from_slots(["a"], [0]) == "a" and tree_from_slots([], []) == []
    with pytest.raises(ValueError, match="2 words but 1 slots"):
        tree_from_slots(["a", "b"], [0])


def test_without_drops_words_and_the_nodes_they_leave_with_one_child():
    tree = [["(", ["a", "("]], [["and", "b"], [")", ")"]]]
    assert without(tree, {"(", ")"}) == ["a", ["and", "b"]]
    assert without(["(", ")"], {"(", ")"}) == [] and without("a", {"("}) == "a"


def _om(bidirectional=False, slots=4, seed=0):
    torch.manual_seed(seed)
    return OrderedMemory(5, 8, slots, bidirectional=bidirectional).double().eval()


@pytest.mark.parametrize("bidirectional", [False, True])
def test_padding_and_the_other_sequences_of_a_batch_change_nothing(bidirectional):
    om = _om(bidirectional)
    lengths = torch.tensor([7, 3, 1, 5, 3])
    x = torch.randn(7, 5, 5, dtype=torch.float64)
    together = om(x, lengths)
    x_other_padding = torch.where(torch.arange(7)[:, None, None] < lengths[:, None], x, torch.randn_like(x) * 9)
    assert torch.equal(om(x_other_padding, lengths).output, together.output)
    for b, n in enumerate(lengths.tolist()):
        alone = om(x[:n, b : b + 1], torch.tensor([n]))
        torch.testing.assert_close(alone.output[0], together.output[b], rtol=0, atol=1e-12)
        torch.testing.assert_close(alone.probs[:, 0], together.probs[:n, b], rtol=0, atol=1e-12)
        assert torch.all(together.probs[n:, b] == 0)
        if bidirectional:
            torch.testing.assert_close(alone.probs_backward[:, 0], together.probs_backward[:n, b], rtol=0, atol=1e-12)
    assert together.output.shape == (5, 16 if bidirectional else 8)


def test_the_backward_direction_is_the_forward_one_on_each_sequence_reversed():
    om = _om(bidirectional=True)
    lengths = torch.tensor([4, 6, 2])
    x = torch.randn(6, 3, 5, dtype=torch.float64)
    both = om(x, lengths)
    for b, n in enumerate(lengths.tolist()):
        reversed_alone = om.backward_memory(x[:n, b : b + 1].flip(0), torch.tensor([n]), om.slots)
        torch.testing.assert_close(both.output[b, 8:], reversed_alone.final[0], rtol=0, atol=1e-12)
        torch.testing.assert_close(both.probs_backward[:n, b], reversed_alone.probs[:, 0].flip(0), rtol=0, atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), slots=st.integers(1, 7))
def test_the_split_point_is_a_distribution_that_rises_at_most_one_slot_a_step(seed, slots):
    om = _om(slots=slots, seed=seed)
    x = torch.randn(9, 3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)) * 3
    probs = om(x, torch.tensor([9, 9, 9])).probs
    assert probs.shape == (9, 3, slots)
    assert torch.all(probs[0] == 0)  # nothing to split before the first step
    torch.testing.assert_close(probs[1:].sum(-1), torch.ones(8, 3, dtype=torch.float64))
    assert torch.all(probs[1, :, -1] == 1)  # the second step writes at the bottom slot
    lowest = (probs > 0).double().argmax(-1)  # the lowest slot with any probability
    assert torch.all(lowest[2:] >= lowest[1:-1] - 1)


def test_distances_are_the_most_probable_slot_per_step_and_the_trees_are_built_from_them():
    probs = torch.tensor([[[0.0, 0.0, 0.0], [0.1, 0.7, 0.2]], [[0.2, 0.3, 0.5], [0.0, 0.0, 0.0]]])  # [T, B, N]
    run = OrderedMemoryOutput(torch.zeros(2, 4), probs, None)
    assert run.distances.tolist() == [[0, 1], [2, 0]] and run.row_name == "slots"
    # column 0 reads two words (slots 0, 2), column 1 one word: its own tree, whatever the padding's slot
    assert run.trees([["a", "b"], ["c"]]) == [["a", "b"], "c"]
    assert run.trees([["a", "b"], ["c"]]) == [tree_from_slots(["a", "b"], [0, 2]), tree_from_slots(["c"], [1])]


# no dropout: the two draw their masks differently
ARGS = dict(ntoken=12, ninp=6, nhid=7, nout=5, nslot=4, dropout=0.0, dropouti=0.0, dropouto=0.0, dropoutm=0.0)


def _reference_pair(bidirectional=False, seed=0):
    """A reference classifier with random weights and ours converted from its state_dict."""
    torch.manual_seed(seed)
    reference = ReferenceMemoryClassifier(**ARGS, bidirectional=bidirectional)
    for p in reference.parameters():
        torch.nn.init.normal_(p, std=0.4)
    reference.double()  # after the draws: the converter gives float32 weights, here the same values
    ours = classifier_from_official(reference.state_dict(), **ARGS).double()
    return reference, ours


def _formulas(seed, count=6, length=9, pad=11, padded=True):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, length + 1, (count,), generator=g) if padded else torch.full((count,), length)
    lengths[0] = length
    tokens = torch.randint(0, pad, (length, count), generator=g)
    tokens[torch.arange(length)[:, None] >= lengths] = pad
    return tokens, lengths


@pytest.mark.parametrize("bidirectional", [False, True])
def test_the_network_and_its_gradients_match_the_reference_loop_in_training(bidirectional):
    reference, ours = _reference_pair(bidirectional)
    tokens, lengths = _formulas(1, padded=not bidirectional)  # the official backward direction reads padding
    reference.train()
    ours.train()
    expected, reference_probs = reference(tokens)
    got_vectors, got_run = ours.encode_inducing(tokens, lengths, None, None)
    got_probs = got_run.probs
    got = ours.classify(got_vectors)
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-10)
    torch.testing.assert_close(got_probs, reference_probs, rtol=0, atol=1e-10)
    weights = torch.randn_like(expected)
    (expected * weights).sum().backward()
    (got * weights).sum().backward()
    # the reference's gradients under our names, converted as weights are (the shared LayerNorm's under its 3
    # names), which rounds them to float32: ours are compared rounded too, to within one unit in the last place
    reference_grads = {name: p.grad for name, p in reference.state_dict(keep_vars=True).items()}
    expected_grads = classifier_from_official(reference_grads, **ARGS).state_dict()
    for name, p in ours.named_parameters():
        torch.testing.assert_close(p.grad.float(), expected_grads[name], rtol=2.5e-7, atol=1e-12, msg=name)


def test_test_time_uses_the_test_slots():
    config = PairClassifierConfig(encoder={"name": "ordered-memory", "hidden_size": 8, "slots": 3}, emb_size=6)
    torch.manual_seed(0)
    model = config.build(12, 7).double().eval()
    tokens, lengths = _formulas(2, count=4)
    trained = model.encode_inducing(tokens, lengths, None, None)[1].probs
    tested = model.encode_inducing(tokens, lengths, None, None, test=True)[1].probs
    assert (trained.size(-1), tested.size(-1)) == (3, 6)
    assert not torch.equal(model(tokens, lengths, None, None), model(tokens, lengths, None, None, test=True))
    encoder = config.encoder.model_copy(update={"test_slots": 5})
    assert config.model_copy(update={"encoder": encoder}).build(12, 7).encoder.test_slots == 5

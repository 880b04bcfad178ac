"""Predictors: one base for loading, saving and predicting; typed results; checkpoints of earlier versions."""

from __future__ import annotations

import re

import pytest
import torch
from helpers import tiny_config

import treenets
from treenets.config import build_config, to_dict
from treenets.core import checkpoint
from treenets.core.errors import TreenetsError
from treenets.core.vocab import Vocab
from treenets.predictors import LanguageModel, Predictor, RelatednessPredictor, SentenceScore
from treenets.workflows.training.trainer import Trainer


@pytest.fixture(scope="module")
def best(tmp_path_factory):
    from helpers import write_corpus

    root = tmp_path_factory.mktemp("predictors")
    config = build_config(tiny_config(write_corpus(root / "corpus"), train={"max_steps": 3}))
    Trainer(config, root / "run", progress=False, log=lambda *_: None).run()
    return root / "run" / "best.pt"


def test_save_then_load_predicts_the_same(best, tmp_path):
    lm = treenets.load(best)
    assert isinstance(lm, LanguageModel) and type(Predictor.load(best)) is LanguageModel
    path = lm.save(tmp_path / "copy.pt")
    again = LanguageModel.load(path)
    assert again.vocab.words == lm.vocab.words and again.config == lm.config
    one, two = lm.predict("the dog of bird"), again.predict("the dog of bird")
    assert isinstance(one, SentenceScore) and one.logprobs == two.logprobs
    assert torch.equal(lm.distances("the dog of bird"), again.distances("the dog of bird"))


def test_the_model_reads_typed_unk_and_eos_as_its_tokens_and_says_what_it_dropped(best):
    # Before: `lm.parse('the <eos> dog')` read the word `eos` (unknown), and what the normaliser dropped went unsaid.
    lm = LanguageModel.load(best)
    parse = lm.parse("the <eos> dog")
    assert parse.words == ["the", "<eos>", "dog"] and parse.unknown == []
    assert torch.equal(parse.distances, lm.distances("the <eos> dog", pretokenized=True))  # the same ids
    score = lm.score("The <unk> dog\u200d, a cat!")
    assert score.tokens == ["the", "<unk>", "dog", "a", "cat"] and score.unknown == []
    assert [(piece.text, piece.start) for piece in score.dropped] == [("\u200d", 13), (",", 14), ("!", 21)]
    assert [piece.text for piece in lm.parse("the dog \ufeff.", pretokenized=True).dropped] == ["\ufeff"]


def test_a_checkpoint_of_another_task_is_refused_by_name(best):
    with pytest.raises(TreenetsError, match="a lm model, not for RelatednessPredictor .it loads as "
                                            "LanguageModel."):
        RelatednessPredictor.load(best)


def test_configs_saved_by_earlier_versions_load(best, tmp_path):
    """treenets 0.1 saved ON-LSTM's `fused` and a flat optimiser section with every optimiser's keys."""
    saved = checkpoint.load(best)
    saved["config"]["model"]["fused"] = True
    saved["config"]["optim"].update(betas=[0.9, 0.999], eps=1e-8)  # an SGD section with Adam's keys
    old = checkpoint.save({k: v for k, v in saved.items() if k not in ("format", "version")}, tmp_path / "old.pt")
    lm = treenets.load(old)
    assert lm.config.optim.name == "sgd" and not hasattr(lm.config.model, "fused")
    assert lm.score("the dog").logprobs == treenets.load(best).score("the dog").logprobs


def test_the_model_reads_text_with_the_normaliser_its_config_names(best):
    # Before: text was split on spaces and lower-cased when the vocabulary had no upper-case word, so
    # `said.`, `2019,` and `3.5%` were unknown words to a model trained on `said`, `N` and no punctuation.
    lm = LanguageModel.load(best)
    assert lm.config.data.normalizer == "ptb" and lm.normalizer.name == "ptb"  # the default of an lm config
    assert lm.tokenize("The Cat saw 3 dogs, didn't it?") == ["the", "cat", "saw", "N", "dogs", "did", "n't", "it"]
    score = lm.score("The dog of bird.")
    assert score.tokens == ["the", "dog", "of", "bird"] and not score.unknown
    # pretokenized (split on white space) or a list of words: only the vocabulary's case and numbers, as before
    assert lm.score("the dog of bird .", pretokenized=True).tokens == ["the", "dog", "of", "bird", "."]
    assert lm.tokenize(["The", "dog"]) == lm.tokenize("The dog", pretokenized=True) == ["the", "dog"]
    assert lm.parse("The dog, of bird.").words == ["the", "dog", "of", "bird"]
    assert lm.distances("The dog.", pretokenized=True).shape == (2, 2)
    cased = LanguageModel(lm.net, lm.vocab, build_config({**to_dict(lm.config), "data": {
        **to_dict(lm.config)["data"], "normalizer": "none"}}))
    assert cased.tokenize("The Cat.") == ["The", "Cat."]
    with pytest.raises(TreenetsError, match=r"sentence '\?!': no word left after the ptb normaliser"):
        lm.score(["the dog", "?!"])
    with pytest.raises(TreenetsError,
                       match="data.normalizer: Input should be 'ptb', 'treebank', 'tokens', 'lower' or 'none'"):
        build_config({**to_dict(lm.config), "data": {**to_dict(lm.config)["data"], "normalizer": "nltk"}})


def test_models_saved_before_the_normaliser_was_recorded_read_as_their_tasks_default(best, tmp_path):
    saved = checkpoint.load(best)
    del saved["config"]["data"]["normalizer"]
    old = checkpoint.save({k: v for k, v in saved.items() if k not in ("format", "version")}, tmp_path / "old.pt")
    assert treenets.load(old).normalizer.name == "ptb"
    assert build_config({"task": "sentence-lm"}).data.normalizer == "treebank"  # trained on treebank words
    assert build_config({"task": "char-lm"}).data.normalizer == "ptb"  # then spelled out


def test_a_text_file_is_evaluated_as_its_sentences_read_one_by_one(best):
    lm = LanguageModel.load(best)
    sentences = ["The dog of bird.", "A fish, a tree!", "the sun"]
    metric = lm.evaluate(sentences, batch_size=2)
    scores = lm.score(sentences)
    logprobs = [value for score in scores for value in score.logprobs]
    assert metric.values()["tokens"] == len(logprobs) == (4 + 1) + (4 + 1) + (2 + 1)  # words and end tokens
    assert metric.values()["loss"] == pytest.approx(-sum(logprobs) / len(logprobs), rel=1e-5)


def test_a_sentiment_tree_deeper_than_the_recursion_limit_is_classified():
    from treenets.config import build_config
    from treenets.core.vocab import Vocab
    from treenets.predictors import SentimentClassifier

    config = build_config({"task": "sentiment", "data": {"path": "sst"},
                           "model": {"name": "binary-treelstm", "emb_size": 4, "mem_size": 3}})
    vocab = Vocab(["<unk>", "a"])
    model = SentimentClassifier(config.model.build(len(vocab), 5), vocab, config)
    tree = "(X a)"
    for _ in range(3000):
        tree = f"(X (X a) {tree})"
    result = model.predict(tree=tree)
    assert len(result.phrases) == 2 * 3001 - 1 and result.phrases[0][0] == " ".join(["a"] * 3001)


@pytest.mark.parametrize("call,error,message", [
    (lambda lm: lm.parse([["the", 5]]), TypeError, "a sentence is a string or a list of word strings, not a list "
                                                   "holding int 5"),
    (lambda lm: lm.parse(["the dog"], batch_size=0), ValueError, "batch_size=0: expected at least 1"),
    (lambda lm: lm.parse(["the dog"], batch_size=-1), ValueError, "batch_size=-1: expected at least 1"),
    (lambda lm: lm.parse(b"the dog"), TypeError, "sentences: expected a string or a list of sentences"),
    (lambda lm: lm.score(5), TypeError, "sentences: expected a string or a list of sentences"),
    (lambda lm: lm.distances(["the dog"], batch_size="8"), TypeError, "batch_size: expected a whole number"),
    (lambda lm: lm.evaluate(["the dog"], batch_size=True), TypeError, "batch_size: expected a whole number"),
])
def test_bad_arguments_of_the_api_raise_errors_naming_them(best, call, error, message):
    # Before: AttributeError ('int' object has no attribute 'lower'), "range() arg 3 must not be zero", ...
    with pytest.raises(error, match=re.escape(message)):
        call(treenets.load(best))


def test_a_list_of_words_keeps_the_words_of_the_vocabulary_as_they_are(best):
    # Before: PTB's number token N was lower-cased into <unk>, also in parse-eval's treebank words; 1987 too.
    lm = treenets.load("onlstm-ptb-small")
    assert lm.tokenize(["The", "N", "1987", "3.5", "%", "1950s"]) == ["the", "N", "N", "N", "N", "1950s"]
    assert lm.parse("in 1987 the cat sat", pretokenized=True).unknown == []
    # a vocabulary of treebank words (`treenets.trees.tree_words`): every digit run as N, N.N kept
    tiny = treenets.load(best)
    treebank_words = Vocab(["<unk>", "<s>", "</s>", "the", "N", "N.N", "%"], unk="<unk>")
    sentence_lm = LanguageModel(tiny.net, treebank_words, build_config({"task": "sentence-lm"}))
    assert sentence_lm.tokenize(["The", "N.N", "3.5", "1950s"]) == ["the", "N.N", "N.N", "Ns"]


def test_a_grammar_parses_long_sentences_in_the_batches_its_memory_allows(monkeypatch):
    """MBR under Kim's rules keeps every width's split stripes (about 3 n^3 NT bytes a sentence,
    `treenets.nn.chart.decode_bytes`): distill's teachers parsed a raw text with a line of 206 words 64 sentences a
    batch and were killed by the system at 22 GB. Batches now hold what `BATCH_BYTES` allows, with the trees of one
    sentence at a time; a sentence that alone would take half the memory is an error naming its length."""
    from treenets.predictors import pcfg

    model = treenets.load("neural-pcfg-ptb")
    words = ["the", "company", "said", "it", "expects", "to", "report", "a", "loss", "for", "the", "third", "quarter"]
    tokens = [model.read(" ".join(words[:n])) for n in (3, 8, 12)] + [model.read(" ".join(words * 5))]
    longest = len(tokens[-1])
    sizes, real = [], pcfg.marginals
    monkeypatch.setattr(pcfg, "marginals",
                        lambda grammar, lengths: sizes.append(len(lengths)) or real(grammar, lengths))
    batched = model.trees_of_tokens(tokens, decode="mbr")
    assert sizes == [4]  # (the default budget: one batch)
    sizes.clear()
    monkeypatch.setattr(pcfg, "BATCH_BYTES", 2 * pcfg.decode_bytes(longest, 30, False, "mbr"))
    assert [spans for spans, _, _ in model.trees_of_tokens(tokens, decode="mbr")] == \
        [spans for spans, _, _ in batched]
    assert sizes == [2, 2]  # each batch sized by its longest possible sentence
    alone = [model.trees_of_tokens([t], decode="mbr")[0] for t in tokens]
    assert [(spans, tags) for spans, tags, _ in alone] == [(spans, tags) for spans, tags, _ in batched]
    monkeypatch.setattr(pcfg, "memory_bytes", lambda: pcfg.decode_bytes(longest, 30, False, "mbr"))
    with pytest.raises(TreenetsError, match=f"a sentence of {longest} words: its mbr chart takes about .* GiB, more "
                                            "than half of this machine's memory .*; --decode viterbi parses it"):
        model.trees_of_tokens(tokens, decode="mbr")
    assert model.trees_of_tokens(tokens[-1:], decode="viterbi")[0][0]  # Viterbi's chart is n^2: it parses

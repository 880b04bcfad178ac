"""Masked language modelling (StructFormer's training): batches of about N tokens as the official `batchify`
makes them, the masking, a tiny model that trains, resumes exactly, loads, parses (trees and heads) and scores."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from helpers import tiny_structformer_config
from hypothesis import given, settings
from hypothesis import strategies as st

import treenets
from treenets.cli import main
from treenets.data.batching import TokenBudgetBatches
from treenets.tasks.mlm import MaskedBatch, mask_tokens


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=1, max_size=60), st.integers(1, 80), st.integers(0, 1000))
def test_token_budget_batches_hold_every_sentence_once_and_stop_at_the_budget(lengths, budget, seed):
    batches = TokenBudgetBatches(lengths, budget, seed)
    for _ in range(2):  # two epochs, each in its own order
        seen = []
        while (rows := batches.next_rows()) is not None:
            seen += rows
        assert sorted(seen) == list(range(len(lengths)))
    for k, rows in enumerate(batches.batches):
        held = sum(lengths[i] for i in rows)
        assert held - lengths[rows[-1]] < budget  # it stopped taking sentences as soon as it held the budget
        assert held >= budget or k == len(batches.batches) - 1  # only the last may hold less
        assert [lengths[i] for i in rows] == sorted(lengths[i] for i in rows)


def test_token_budget_batches_resume_where_they_stopped():
    lengths = [3, 9, 4, 7, 1, 8, 2, 6, 5] * 3
    first, second = TokenBudgetBatches(lengths, 10, seed=4), TokenBudgetBatches(lengths, 10, seed=4)
    for _ in range(len(first) + 3):  # into the second epoch
        first.next_rows()
    second.load_state_dict(first.state_dict())
    assert [first.next_rows() for _ in range(12)] == [second.next_rows() for _ in range(12)]


def test_masking_leaves_pads_and_unknown_words_and_takes_its_share():
    tokens = torch.randint(3, 50, (200, 40))
    tokens[:, 30:] = 0  # pads
    tokens[::7, 5] = 1  # <unk>
    inputs, targets = mask_tokens(tokens, 0.3, mask_id=2, unk_id=1, generator=torch.Generator().manual_seed(0))
    chosen = inputs == 2
    assert torch.equal(chosen, targets != 0) and torch.equal(targets[chosen], tokens[chosen])
    assert torch.equal(inputs[~chosen], tokens[~chosen])
    assert not chosen[:, 30:].any() and not chosen[tokens == 1].any()
    share = chosen.sum().item() / ((tokens != 0) & (tokens != 1)).sum().item()
    assert 0.28 < share < 0.32
    # The loss is summed over the masked tokens (`size`); the network reads every real token (`read`, for speeds)
    batch = MaskedBatch(inputs, targets)
    assert batch.size == chosen.sum().item() and batch.read == 200 * 30


def _config(tmp_path, corpus, **train) -> str:
    path = tmp_path / "mlm.yaml"
    path.write_text(yaml.safe_dump(tiny_structformer_config(corpus, **train)))
    return str(path)


def _weights(path) -> dict:
    return torch.load(path, weights_only=True)["model"]


def test_a_structformer_trains_resumes_exactly_loads_and_parses(tmp_path, corpus, capsys):
    config = _config(tmp_path, corpus)
    assert main(["train", config, "--out", str(tmp_path / "straight"), "--max-steps", "6", "--no-progress"]) == 0
    assert main(["train", config, "--out", str(tmp_path / "resumed"), "--max-steps", "3", "--no-progress"]) == 0
    assert main(["train", "--resume", str(tmp_path / "resumed" / "last.pt"), "--max-steps", "6",
                 "--no-progress"]) == 0
    straight, resumed = _weights(tmp_path / "straight" / "last.pt"), _weights(tmp_path / "resumed" / "last.pt")
    assert all(torch.equal(straight[k], resumed[k]) for k in straight)
    model = treenets.load(str(tmp_path / "straight" / "best.pt"))
    parse = model.parse("The cat saw 3 dogs.")
    assert parse.words == ["the", "cat", "saw", "N", "dogs"]
    assert len(parse.heads) == 5 and parse.heads.count(0) >= 1 and all(0 <= h <= 5 for h in parse.heads)
    batch = model.parse(["The cat saw 3 dogs.", "a dog", "the big old red car of the city"])
    assert batch[0].heads == parse.heads and batch[0].nested == parse.nested  # parsed alone in a batch
    score = model.score("the cat")
    assert len(score.logprobs) == 2 and all(p <= 0 for p in score.logprobs)
    capsys.readouterr()
    assert main(["parse", str(tmp_path / "straight" / "best.pt"), "the dog sat", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["tokens"] == ["the", "dog", "sat"] and len(record["heads"]) == 3
    assert main(["parse", str(tmp_path / "straight" / "best.pt"), "the dog sat"]) == 0
    out = capsys.readouterr().out
    assert "ROOT" in out and "heads (CoNLL, 1-based, 0 the root):" in out


def test_a_structformer_refuses_another_tree_builder(tmp_path, corpus):
    config = _config(tmp_path, corpus)
    assert main(["train", config, "--out", str(tmp_path / "run"), "--max-steps", "1", "--no-progress"]) == 0
    model = treenets.load(str(tmp_path / "run" / "best.pt"))
    with pytest.raises(treenets.TreenetsError, match="split 'before': a StructFormer's trees are built by its own"):
        model.parse("the cat", split="before")


def test_the_evaluation_masks_the_same_tokens_every_time(tmp_path, corpus):
    from treenets.config import load_config
    from treenets.tasks import make_task

    config = load_config(_config(tmp_path, corpus))
    task = make_task(config, splits=("train", "valid"))
    net = task.build_model()
    # every line a sentence as it is, without the `<eos>` the Mikolov reader appends for stream language models
    assert "<eos>" not in task.vocab and [len(s) for s in task.sentences["valid"]] == \
        [len(line.split()) for line in (corpus / "ptb.valid.txt").read_text().splitlines() if line.strip()]
    first, second = task.evaluate(net).values(), task.evaluate(net).values()
    assert first == second and first["tokens"] > 0 and np.isfinite(first["ppl"])


def test_a_typed_pad_is_an_unknown_word_and_a_sentence_too_long_is_refused(tmp_path, corpus):
    config = _config(tmp_path, corpus)
    assert main(["train", config, "--out", str(tmp_path / "run"), "--max-steps", "1", "--no-progress"]) == 0
    model = treenets.load(str(tmp_path / "run" / "best.pt"))
    typed = model.parse("the <pad> cat", pretokenized=True)
    unknown = model.parse("the zebra cat", pretokenized=True)  # `zebra` is not in the tiny vocabulary
    assert typed.unknown == ["<pad>"] and unknown.unknown == ["zebra"]
    assert typed.heads == unknown.heads  # read as <unk>, not as the padding that would end the sentence there
    with pytest.raises(treenets.TreenetsError, match="501 tokens, but the model's position embedding reads at most"):
        model.score(" ".join(["cat"] * 501))
    long = tmp_path / "long"
    long.mkdir()
    for split in ("train", "valid", "test"):
        (long / f"ptb.{split}.txt").write_text(" cat dog \n " + " ".join(["cat"] * 501) + " \n")
    bad = yaml.safe_load(Path(config).read_text())
    bad["data"]["path"] = str(long)
    (tmp_path / "long.yaml").write_text(yaml.safe_dump(bad))
    with pytest.raises(treenets.TreenetsError, match=r"ptb.train.txt:2: a sentence of 501 words; the position "
                                                      r"embedding reads at most 500"):
        from treenets.config import load_config
        from treenets.tasks import make_task

        make_task(load_config(str(tmp_path / "long.yaml")))

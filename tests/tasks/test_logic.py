"""The logic task: its metric by hand, length-bucketed batches, the siamese encoders, and the CLI from training
to the accuracy-by-operators table and plot."""

from __future__ import annotations

import json
import math
import random

import pytest
import torch
import yaml
from helpers import write_logic

from treenets.cli import main
from treenets.config import build_config
from treenets.core.errors import TreenetsError
from treenets.data.batching import ShuffledBatches
from treenets.data.logic import LABELS, LogicBatch, LogicPair, logic_vocab, parse_formula
from treenets.nn.encoders import union_members
from treenets.nn.pair_classifier import PairClassifierConfig
from treenets.nn.registry import encoder_configs
from treenets.predictors import LogicClassifier
from treenets.tasks.metrics import AccuracyByOperators


def test_accuracy_by_operators_by_hand():
    metric = AccuracyByOperators(max_operators=3)
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 3.0], [5.0, 0.0]])
    labels = torch.tensor([0, 0, 0, 1, 1])
    operators = torch.tensor([1, 1, 2, 3, 7])  # 7 counts as "3+"
    metric.add(logits[:2], labels[:2], operators[:2])
    metric.add(logits[2:], labels[2:], operators[2:])
    values = metric.values()
    assert values["accuracy"] == pytest.approx(3 / 5)
    assert (values["accuracy_ops_1"], values["accuracy_ops_2"], values["accuracy_ops_3+"]) == (0.5, 1.0, 0.5)
    assert "accuracy_ops_0" not in values and values["pairs"] == 5
    xent = [math.log(1 + math.exp(-2)), math.log(1 + math.exp(1)), math.log(1 + math.exp(-1)),
            math.log(1 + math.exp(-3)), math.log(1 + math.exp(5))]
    assert values["loss"] == pytest.approx(sum(xent) / 5)
    assert metric.breakdown() == ("operators", {"1": 0.5, "2": 1.0, "3+": 0.5})
    assert AccuracyByOperators.improves(0.6, 0.5) and not AccuracyByOperators.improves(0.4, 0.5)


def test_length_bucketed_batches_cover_every_example_once_and_resume_the_same():
    lengths = [random.Random(i).randint(1, 40) for i in range(1005)]  # not a multiple of the batch size
    batches = ShuffledBatches(1005, 10, seed=3, lengths=lengths)
    batches.BUCKET_BATCHES = 5
    epoch = []
    while (rows := batches.next_rows()) is not None:
        epoch.append(rows)
    assert sorted(i for rows in epoch for i in rows) == list(range(1005))
    assert [len(rows) for rows in epoch] == [10] * 100 + [5]  # the short batch comes last
    # every full batch is one run of a length-sorted window: its lengths span little
    spread = sum(max(lengths[i] for i in rows) - min(lengths[i] for i in rows) for rows in epoch[:-1]) / 100
    assert spread < 10  # windows of 5 sorted batches: about 7; random batches of 10 from 1..40: about 29
    for _ in range(37):  # into the next epoch, then save mid-epoch
        batches.next_rows()
    state = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in batches.state_dict().items()}
    following = [batches.next_rows() for _ in range(80)]  # across the end of the epoch
    restored = ShuffledBatches(1005, 10, seed=99, lengths=lengths)
    restored.BUCKET_BATCHES = 5
    restored.load_state_dict(state)
    assert [restored.next_rows() for _ in range(80)] == following


PAIR_ENCODERS = encoder_configs("pairs")  # every encoder the model may name
# A model section as treenets 0.11 saved it: the encoder's fields flat beside the classifier's, and every encoder's
SAVED_0_11 = {"emb_size": 128, "hidden_size": 20, "num_layers": 1, "chunk_size": 5, "dropout": 0.2,
              "dropout_input": None, "dropout_output": None, "weight_drop": 0.0, "slots": 12, "test_slots": None,
              "dropout_memory": 0.2, "bidirectional": False}


def test_the_model_accepts_exactly_the_encoders_the_models_offer():
    assert union_members(PairClassifierConfig.model_fields["encoder"].annotation) == PAIR_ENCODERS
    assert list(PAIR_ENCODERS) == ["onlstm", "lstm", "binary-treelstm", "ordered-memory"]


@pytest.mark.parametrize("name", PAIR_ENCODERS)
def test_every_encoder_loads_a_saved_config_with_every_field_and_builds_through_its_config(name):
    config = build_config({"task": "logic", "model": {**SAVED_0_11, "name": name}}).model
    encoder = PAIR_ENCODERS[name]
    assert type(config.encoder) is encoder and config.encoder.hidden_size == 20 and config.emb_size == 128
    assert config.encoder == encoder(**{k: v for k, v in SAVED_0_11.items() if k in encoder.model_fields})
    assert type(config.build(12, 7).encoder) is type(config.encoder.build(128))
    odd_chunks = {"task": "logic", "model": {**SAVED_0_11, "name": name, "chunk_size": 7}}
    if "chunk_size" in encoder.model_fields:  # the ON-LSTM's alone: only it refuses a size the chunks do not divide
        with pytest.raises(TreenetsError, match=r"^config: model.encoder: hidden_size=20 is not divisible by "
                                                r"chunk_size=7$"):
            build_config(odd_chunks)
    else:
        build_config(odd_chunks)


@pytest.mark.parametrize("encoder", PAIR_ENCODERS)
def test_a_formula_gets_the_same_vector_alone_and_padded_in_a_batch(encoder):
    torch.manual_seed(0)
    vocab = logic_vocab()
    chunks = {"chunk_size": 5} if "chunk_size" in PAIR_ENCODERS[encoder].model_fields else {}
    config = PairClassifierConfig(encoder={"name": encoder, "hidden_size": 20, **chunks}, emb_size=8)
    model = config.build(len(vocab), 7).double().eval()
    short = LogicPair(0, parse_formula("a", "p"), parse_formula("( not b )", "h"))
    long = LogicPair(1, parse_formula("( ( not c ) ( and ( d ( or e ) ) ) )", "p"), parse_formula("f", "h"))

    def vectors(pairs):
        batch = LogicBatch.build(pairs, vocab)
        return model.encode(batch.tokens, batch.lengths, batch.trees, batch.leaf_ids)

    together = vectors([short, long])
    torch.testing.assert_close(together[[0, 2]], vectors([short]), rtol=0, atol=1e-12)
    torch.testing.assert_close(together[[1, 3]], vectors([long]), rtol=0, atol=1e-12)
    batch = LogicBatch.build([short, long], vocab)
    assert model(batch.tokens, batch.lengths, batch.trees, batch.leaf_ids).shape == (2, 7)


@pytest.fixture(scope="module")
def logic_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("logic")
    folder = write_logic(root / "logic")
    config = {"task": "logic", "data": {"path": str(folder), "max_train_operators": 3, "batch_size": 8},
              "model": {"name": "onlstm", "emb_size": 8, "hidden_size": 10, "chunk_size": 5},
              "train": {"epochs": 2, "log_interval": 2, "threads": 1}}
    (root / "logic.yaml").write_text(yaml.safe_dump(config))
    assert main(["train", str(root / "logic.yaml"), "--out", str(root / "run"), "--no-progress"]) == 0
    return root


def test_the_cli_trains_a_logic_model_and_reports_accuracy_by_operators(logic_run, capsys):
    best = logic_run / "run" / "best.pt"
    plot = logic_run / "acc.png"
    capsys.readouterr()
    assert main(["eval", str(best), str(best), "--split", "test", "--plot", str(plot)]) == 0
    lines = capsys.readouterr().out.splitlines()
    record = json.loads(lines[0])
    assert record["pairs"] == 13 * 12
    assert {f"accuracy_ops_{n}" for n in range(12)} | {"accuracy_ops_12+"} <= set(record)
    table = lines[lines.index(next(line for line in lines if line.strip().startswith("operators"))):]
    assert [row.split()[0] for row in table[1:14]] == [str(n) for n in range(12)] + ["12+"]
    assert float(table[13].split()[1]) == pytest.approx(record["accuracy_ops_12+"], abs=1e-4)
    assert plot.stat().st_size > 1000 and plot.read_bytes()[:4] == b"\x89PNG"
    # A plot drawn into the --output folder is that report's own: the same command writes there again
    report = logic_run / "report"
    again = ["eval", str(best), "--split", "test", "--output", str(report), "--plot", str(report / "acc.png")]
    assert main(again) == 0 and main(again) == 0 and (report / "acc.png").exists()


def test_a_logic_model_predicts_a_relation(logic_run, capsys):
    best = logic_run / "run" / "best.pt"
    model = LogicClassifier.load(best)
    relation = model.predict("( a ( and b ) )", "a")
    assert relation.relation in LABELS and sum(relation.probabilities.values()) == pytest.approx(1, abs=1e-5)
    capsys.readouterr()
    assert main(["predict", str(best), "--pair", "( not a )", "a"]) == 0
    assert json.loads(capsys.readouterr().out)["relation"] in LABELS
    assert main(["predict", str(best), "--pair", "( not a", "a"]) == 2
    assert "premise: formula '( not a': ends at token 3; expected ')' closing the bracket opened at token 1" in \
        capsys.readouterr().err
    # As a person types them: no spaces at the brackets, capitals (before: "unknown token '(a'").
    assert model.predict("(A (AND b))", " a") == relation
    assert main(["predict", str(best), "--pair", "(not a", "a"]) == 2
    assert "premise: formula '( not a': ends at token 3" in capsys.readouterr().err
    assert main(["predict", str(best), "--pair", "(a (and g))", "a"]) == 2
    assert ("premise: formula '( a ( and g ) )': unknown token 'g' at token 5; expected a formula: a variable (a, b, "
            "c, d, e, f) or '('") in capsys.readouterr().err
    # Before: a sentence or a parser beside the pair was ignored without a word.
    assert main(["predict", str(best), "--pair", "( not a )", "a", "--sentence", "a"]) == 2
    assert "a logic model reads --pair PREMISE HYPOTHESIS (bracketed formulas), not --sentence" in \
        capsys.readouterr().err


def test_plot_is_refused_for_a_metric_without_groups(tmp_path, capsys):
    from helpers import train_tiny_lm

    root = train_tiny_lm(tmp_path)
    assert main(["eval", str(root / "run" / "best.pt"), "--plot", str(tmp_path / "x.png")]) == 2
    assert "the metric ppl has no groups" in capsys.readouterr().err


def test_induced_trees_of_formulas_are_scored_against_their_bracketing_by_hand():
    from treenets.nn.ordered_memory.model import OrderedMemoryOutput
    from treenets.tasks.logic import induced_trees

    vocab = logic_vocab()
    pair = LogicPair(0, parse_formula("( a ( and b ) )", "p"), parse_formula("c", "h"))
    batch = LogicBatch.build([pair], vocab)
    falling = torch.tensor([[9, 0], [6, 0], [5, 0], [4, 0], [3, 0], [2, 0], [1, 0]])  # the tree branches right
    level = torch.tensor([[9, 0]] + [[3, 0]] * 6)  # the tree branches left

    def slots(distances):  # an Ordered Memory that wrote each token at these slots
        return OrderedMemoryOutput(None, torch.nn.functional.one_hot(distances, 10).float(), None)

    predicted, gold = induced_trees(batch, slots(falling), vocab)
    assert predicted == [["a", ["and", "b"]], "c"] and gold == [["a", ["and", "b"]], "c"]
    metric = AccuracyByOperators()
    metric.add(torch.tensor([[1.0, 0.0]]), torch.tensor([0]), torch.tensor([1]))
    assert "tree_f1" not in metric.values()
    predicted, gold = induced_trees(batch, slots(level), vocab)
    assert predicted[0] == [["a", "and"], "b"]
    metric.add_trees(predicted, gold)  # "c" has no bracket: left out
    # spans (0,2), (0,3) against (1,3), (0,3): EVALB counts the whole formula's, 1 of 2; per formula without it, 0
    assert metric.trees.summary()["n"] == 1
    assert metric.values()["tree_f1"] == pytest.approx(0.5)
    assert metric.values()["tree_sentence_f1"] == pytest.approx(0.0, abs=1e-6)


def test_ordered_memory_is_tested_with_its_test_slots_and_its_trees_scored(tmp_path):
    from treenets.tasks import make_task

    folder = write_logic(tmp_path / "logic", pairs_per_file=3)
    config = build_config({"task": "logic", "data": {"path": str(folder)},
                           "model": {"name": "ordered-memory", "emb_size": 6, "hidden_size": 8, "slots": 3}})
    task = make_task(config, None, splits=("test",))
    torch.manual_seed(0)
    model = task.build_model()
    calls = []
    model.encoder.register_forward_hook(lambda module, args, output: calls.append(output.probs.size(-1)))
    values = task.evaluate(model, "test").values()
    assert set(calls) == {6} and 0 <= values["tree_f1"] <= 1 and values["pairs"] == 39


def test_parse_draws_the_tree_ordered_memory_induces_of_a_formula(tmp_path, capsys):
    from treenets.data.logic import formula_inputs
    from treenets.nn.ordered_memory.trees import tree_from_slots
    from treenets.trees import without
    from treenets.trees.draw import bracketed

    folder = write_logic(tmp_path / "logic", pairs_per_file=4)
    config = {"task": "logic", "data": {"path": str(folder), "max_train_operators": 2, "batch_size": 8},
              "model": {"name": "ordered-memory", "emb_size": 6, "hidden_size": 8, "slots": 3},
              "train": {"epochs": 1, "log_interval": 2, "threads": 1}}
    (tmp_path / "om.yaml").write_text(yaml.safe_dump(config))
    assert main(["train", str(tmp_path / "om.yaml"), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    best = str(tmp_path / "run" / "best.pt")
    capsys.readouterr()
    assert main(["parse", best, "(A (and B))", "( not c )", "--json", "--distances"]) == 0  # typed as people type
    first, second = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    tokens = first["tokens"]
    assert tokens == ["(", "a", "(", "and", "b", ")", ")"] and first["gold_tree"] == "(X a (X and b))"
    # the slots of the formula read as the model is tested (its 6 test slots), the tree built from them over every
    # token, and without the brackets the tree the task scores
    model = LogicClassifier.load(best)
    _, induced = model.net.encode_inducing(*formula_inputs([parse_formula(" ".join(tokens), "f")], model.vocab),
                                           test=True)
    assert induced.probs.size(-1) == 6
    slots = induced.distances[:, 0].tolist()
    assert first["distances"] == [slots]
    assert first["tree"] == bracketed(tree_from_slots(tokens, slots))
    assert first["scored_tree"] == bracketed(without(tree_from_slots(tokens, slots), {"(", ")"}))
    assert second["tokens"] == ["(", "not", "c", ")"] and second["gold_tree"] == "(X not c)"
    assert main(["parse", best, "( a ( and b ) )"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("[1] ( a ( and b ) )\n(X ") and f"    without ( ): {first['scored_tree']}\n" in out
    assert "    its own tree: (X a (X and b))\n" in out
    assert main(["parse", best, "( a ( and b )"]) == 2
    assert "formula '( a ( and b )': ends at token 6; expected ')' closing the bracket opened at token 1" in \
        capsys.readouterr().err


def test_parse_says_a_logic_model_without_ordered_memory_induces_no_trees(logic_run, capsys):
    capsys.readouterr()
    assert main(["parse", str(logic_run / "run" / "best.pt"), "( a ( and b ) )"]) == 2
    assert ("this logic model's encoder (onlstm) induces no trees: only Ordered Memory (ordered-memory) does"
            in capsys.readouterr().err)


# The inputs the probe of issue 57 found answered (each read as a bracket of two parts), for every shipped logic model.
NOT_FORMULAS = [
    (["and", "a"], "premise: formula 'and': 'and' at token 1; expected a formula"),
    (["( and a )", "a"], "premise: formula '( and a )': 'and' at token 2; expected 'not' or a formula"),
    (["( a b )", "a"], "premise: formula '( a b )': 'b' at token 3; expected '(' opening the operator's part"),
    (["( a ( not b ) )", "a"], "premise: formula '( a ( not b ) )': 'not' at token 4; expected 'and' or 'or'"),
    (["a", "( b ( or c ) ) )"], "hypothesis: formula '( b ( or c ) ) )': ')' at token 8; expected the end of the "
                               "formula"),
]


@pytest.mark.parametrize("name", ["om-logic", "onlstm-logic", "lstm-logic", "treelstm-logic"])
def test_every_shipped_logic_model_refuses_what_is_not_a_formula(name, capsys):
    for pair, message in NOT_FORMULAS:
        assert main(["predict", name, "--pair", *pair]) == 2, pair
        error = capsys.readouterr().err
        assert error.startswith(f"treenets: error: {message}") and len(error.splitlines()) == 1, error
    assert main(["predict", name, "--pair", "( a ( and ( not b ) ) )", "a"]) == 0  # a formula, as before
    assert json.loads(capsys.readouterr().out)["relation"] in LABELS


def test_parse_refuses_what_is_not_a_formula(capsys):
    assert main(["parse", "om-logic", "and"]) == 2
    assert capsys.readouterr() == ("", "treenets: error: formula 'and': 'and' at token 1; expected a formula: a "
                                       "variable (a, b, c, d, e, f) or '('\n")

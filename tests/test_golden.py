"""Fidelity against the official ON-LSTM (golden fixtures) and the generality of `check-golden`."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from treenets.cli import main
from treenets.core.errors import TreenetsError
from treenets.nn.onlstm.convert import from_official
from treenets.nn.onlstm.model import ONLSTMLanguageModel
from treenets.workflows.check_golden import check_golden


def test_official_onlstm_fixture_passes(golden_root, capsys):
    assert main(["check-golden", str(golden_root / "onlstm-lm")]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1] == "PASS 10/10"
    assert out[0].startswith("logits  ")


def _official_state_dict(model, nlayers, tied):
    """Our weights under the official key names (the inverse of `treenets.workflows.convert`)."""
    ours = model.state_dict()
    official = {"encoder.weight": ours["embedding.weight"], "decoder.bias": ours["decoder.bias"],
                "decoder.weight": ours["decoder.weight"]}
    for layer in range(nlayers):
        for kind in ("weight", "bias"):
            official[f"rnn.cells.{layer}.ih.0.{kind}"] = ours[f"rnn.layers.{layer}.ih.{kind}"]
            official[f"rnn.cells.{layer}.hh.{kind}"] = ours[f"rnn.layers.{layer}.hh.{kind}"]
    return {k: v.numpy().astype(np.float32) for k, v in official.items()}


def _write_fixture(folder, nlayers=2, ninp=10, nhid=15, chunk_size=5, wdrop=0.3, tie=False, seed=0):
    """A fixture in the official format for another configuration, with outputs computed independently by
    running the converted model step by step (T separate calls), so that the batch path is what is checked."""
    torch.manual_seed(seed)
    config = {"kind": "onlstm-lm", "ntoken": 23, "ninp": ninp, "nhid": nhid, "chunk_size": chunk_size,
              "nlayers": nlayers, "dropout": 0.1, "dropouth": 0.1, "dropouti": 0.1, "dropoute": 0.1,
              "wdrop": wdrop, "tie_weights": tie}
    params = _official_state_dict(ONLSTMLanguageModel(23, ninp, nhid, nlayers, chunk_size, tie_weights=tie),
                                  nlayers, tie)
    model = from_official(params, **{k: v for k, v in config.items() if k != "kind"})
    tokens = torch.randint(0, 23, (6, 2))
    with torch.no_grad():
        state, logits, dists, inputs = None, [], [], []
        for t in range(6):
            out = model(tokens[t : t + 1], state)
            state = out.state
            logits.append(model.decoder(out.output))
            dists.append(out.distances)
            inputs.append(out.distance_input)
    outputs = {"logits": torch.cat(logits).numpy(), "distance_forget": torch.cat(dists, dim=1).numpy(),
               "distance_input": torch.cat(inputs, dim=1).numpy()}
    for layer, (h, c) in enumerate(state):
        outputs[f"h_final_{layer}"], outputs[f"c_final_{layer}"] = h.numpy(), c.numpy()
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    np.savez(folder / "params.npz", **params)
    np.savez(folder / "inputs.npz", tokens=tokens.numpy())
    np.savez(folder / "outputs.npz", **outputs)
    return folder


@pytest.mark.parametrize("nlayers,chunk,tie,wdrop", [(1, 5, True, 0.0), (2, 5, False, 0.3), (4, 1, True, 0.5)])
def test_other_configurations_are_accepted(tmp_path, nlayers, chunk, tie, wdrop):
    folder = _write_fixture(tmp_path / "fx", nlayers=nlayers, chunk_size=chunk, tie=tie, wdrop=wdrop,
                            ninp=10, nhid=15)
    results = check_golden(folder)
    assert {c.name for c in results} >= {"logits", "distance_forget", f"h_final_{nlayers - 1}"}
    assert all(c.ok for c in results), results


def test_a_wrong_output_fails(tmp_path, capsys):
    folder = _write_fixture(tmp_path / "fx")
    outputs = dict(np.load(folder / "outputs.npz"))
    outputs["logits"][0, 0, 0] += 1e-3
    np.savez(folder / "outputs.npz", **outputs)
    assert main(["check-golden", str(folder)]) == 1
    assert capsys.readouterr().out.strip().splitlines()[-1] == "FAIL 6/7"


def test_unknown_kind_and_missing_files_exit_2(tmp_path, capsys):
    folder = _write_fixture(tmp_path / "fx")
    (folder / "config.json").write_text(json.dumps({"kind": "gru-lm"}))
    assert main(["check-golden", str(folder)]) == 2
    assert "unknown kind 'gru-lm'" in capsys.readouterr().err
    assert main(["check-golden", str(tmp_path / "nowhere")]) == 2


def test_convert_rejects_mismatched_arguments(golden_root):
    params = dict(np.load(golden_root / "onlstm-lm" / "params.npz"))
    config = json.loads((golden_root / "onlstm-lm" / "config.json").read_text())
    args = {k: config[k] for k in ("ntoken", "ninp", "nhid", "chunk_size", "nlayers", "tie_weights")}
    with pytest.raises(TreenetsError, match="shape"):
        from_official(params, **{**args, "nhid": 28})
    with pytest.raises(TreenetsError, match="missing"):
        from_official(params, **{**args, "nlayers": 4})


def test_official_parse_eval_fixture_passes(golden_root, capsys):
    assert main(["check-golden", str(golden_root / "parse-eval-nltk-sample")]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("PASS ") and "all.mean_f1" in "\n".join(out)


def _parse_fixture(folder, data_root, count=60, seed=0):
    """A parse-eval fixture over other trees (WSJ section 24, one tree per line) and other distances."""
    import random

    from treenets.trees import (
        collapse,
        left_branching,
        parse_trees,
        right_branching,
        sentence_prf,
        spans,
        tree_from_distances,
        tree_words,
    )

    rng = random.Random(seed)
    lines = (data_root / "wsj_trees" / "dev_24.LDC99T42").read_text().splitlines()[:count]
    folder.mkdir()
    records, f1s = [], []
    for line in lines:
        tree = parse_trees(line)[0][0]
        words = tree_words(tree)
        distances = [round(rng.random(), 6) for _ in words]
        gold, pred = collapse(tree), tree_from_distances(words, distances)
        prec, reca, f1 = sentence_prf(spans(pred), spans(gold))
        records.append({"tree": line, "words": words, "distances": distances, "gold": gold, "pred": pred,
                        "prec": prec, "reca": reca, "f1": f1,
                        "f1_right_branching": sentence_prf(spans(right_branching(words)), spans(gold))[2],
                        "f1_left_branching": sentence_prf(spans(left_branching(words)), spans(gold))[2]})
        f1s.append(f1)
    (folder / "sentences.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    config = {"kind": "parse-eval", "all": {"n": len(records), "mean_f1": sum(f1s) / len(f1s)}}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_parse_eval_fixtures_of_other_treebanks_pass_and_wrong_ones_fail(tmp_path, data_root, capsys):
    folder = _parse_fixture(tmp_path / "wsj24", data_root)
    assert main(["check-golden", str(folder)]) == 0
    records = [json.loads(line) for line in (folder / "sentences.jsonl").read_text().splitlines()]
    records[3]["f1"] += 1e-6  # a score off by more than 1e-9
    records[5]["words"][0] = "other"  # words that treenets would not produce
    (folder / "sentences.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["check-golden", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "words  1.000e+00" in out and out.strip().splitlines()[-1].startswith("FAIL")


def test_official_ordered_memory_fixture_passes(golden_root, capsys):
    assert main(["check-golden", str(golden_root / "ordered-memory-logic")]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1] == "PASS 6/6"
    assert [line.split()[0] for line in out[:-1]] == ["logits", "probs", "logits_2x", "probs_2x", "distance_2x",
                                                     "trees_2x"]


def _write_memory_fixture(folder, nslot=3, ninp=6, nhid=5, bidirectional=False, seed=0):
    """An `ordered-memory-logic` fixture for another configuration, its outputs from the official-style reference
    loop (tests/reference.py) over the whole padded batch (without padding when bidirectional: the official
    backward direction reads it); its trees from those distances."""
    from reference import ReferenceMemoryClassifier

    from treenets.nn.ordered_memory.trees import tree_from_slots

    torch.manual_seed(seed)
    vocab = ["(", ")", "a", "b", "c", "d", "e", "f", "or", "and", "not"]
    args = {"ntoken": 12, "ninp": ninp, "nhid": nhid, "nout": 7, "nslot": nslot, "dropout": 0.2, "dropouti": 0.1,
            "dropouto": 0.3, "dropoutm": 0.2}
    reference = ReferenceMemoryClassifier(**args, bidirectional=bidirectional)
    for p in reference.parameters():
        torch.nn.init.normal_(p, std=0.4)
    reference.eval()
    lengths = torch.full((6,), 8) if bidirectional else torch.tensor([8, 3, 1, 6, 8, 2])
    tokens = torch.randint(0, 11, (8, 6))
    tokens[torch.arange(8)[:, None] >= lengths] = 11
    outputs = {}
    with torch.no_grad():
        for suffix, slots in (("", nslot), ("_2x", 2 * nslot)):
            reference.encoder.OM_forward.nslot = slots
            if bidirectional:
                reference.encoder.OM_backward.nslot = slots
            logits, probs = reference(tokens)
            outputs[f"logits{suffix}"], outputs[f"probs{suffix}"] = logits.numpy(), probs.numpy()
    distances = probs.argmax(-1)
    outputs["distance_2x"] = distances.numpy()
    trees = [tree_from_slots([vocab[i] for i in tokens[:n, b]], distances[:n, b].tolist())
             for b, n in enumerate(lengths.tolist())]
    folder.mkdir()
    config = {"kind": "ordered-memory-logic", "args": args, "pad": 11, "vocab": vocab, "trees_2x": trees}
    (folder / "config.json").write_text(json.dumps(config))
    np.savez(folder / "params.npz", **{k: v.numpy() for k, v in reference.state_dict().items()})
    np.savez(folder / "inputs.npz", tokens=tokens.numpy())
    np.savez(folder / "outputs.npz", **outputs)
    return folder


@pytest.mark.parametrize("nslot,ninp,nhid,bidirectional", [(3, 6, 5, False), (7, 4, 9, False), (2, 5, 6, True)])
def test_ordered_memory_fixtures_of_other_configurations_pass(tmp_path, nslot, ninp, nhid, bidirectional):
    folder = _write_memory_fixture(tmp_path / "fx", nslot, ninp, nhid, bidirectional)
    results = check_golden(folder)
    assert [c.name for c in results] == ["logits", "probs", "logits_2x", "probs_2x", "distance_2x", "trees_2x"]
    assert all(c.ok for c in results), results


def test_a_wrong_tree_or_a_layer_norm_copy_that_differs_fails(tmp_path, capsys):
    folder = _write_memory_fixture(tmp_path / "fx")
    config = json.loads((folder / "config.json").read_text())
    config["trees_2x"][0] = config["trees_2x"][0][::-1]
    (folder / "config.json").write_text(json.dumps(config))
    assert main(["check-golden", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "trees_2x  1.000e+00" in out and out.strip().splitlines()[-1] == "FAIL 5/6"
    params = dict(np.load(folder / "params.npz"))
    params["encoder.OM_forward.cell.activation.weight"] = params["encoder.OM_forward.cell.activation.weight"] + 1
    np.savez(folder / "params.npz", **params)
    assert main(["check-golden", str(folder)]) == 2
    assert "encoder.OM_forward.cell.activation.weight differs from encoder.OM_forward.input_projection.1.weight" in \
        capsys.readouterr().err


def test_an_empty_archive_in_a_fixture_is_a_clear_error(tmp_path, capsys):
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    (fixture / "config.json").write_text('{"kind": "structformer-mlm", "args": {}}')
    for name in ("params", "inputs", "outputs"):
        (fixture / f"{name}.npz").write_bytes(b"")
    assert main(["check-golden", str(fixture)]) == 2
    assert "params.npz: not a readable .npz archive" in capsys.readouterr().err


def _broken_copy(golden_root, tmp_path, name, change_config=None, change_inputs=None):
    import shutil

    folder = tmp_path / name
    shutil.copytree(golden_root / name, folder)
    if change_config:
        config = json.loads((folder / "config.json").read_text())
        change_config(config)
        (folder / "config.json").write_text(json.dumps(config))
    if change_inputs:
        with np.load(folder / "inputs.npz") as archive:
            inputs = dict(archive)
        change_inputs(inputs)
        np.savez(folder / "inputs.npz", **inputs)
    return folder


@pytest.mark.parametrize(("name", "change_config", "change_inputs", "message"), [
    ("onlstm-lm", None, lambda i: i.update(tokens=i["tokens"] + 10_000), "inputs.npz: tokens: ids from"),
    ("onlstm-lm", None, lambda i: i.update(tokens=i["tokens"][:, 0]), "tokens: 1-D [11]; expected 2-D token ids "
     "[time, batch]"),
    ("structformer-mlm", None, lambda i: i.update(tokens=i["tokens"][0]), "tokens: 1-D [13]; expected 2-D token ids "
     "[batch, length]"),
    ("onlstm-lm", lambda c: c.pop("nhid"), None, "missing key 'nhid'"),
    ("structformer-mlm", lambda c: c.update(vocab=c["vocab"][:3]), None, "vocab has 3 words"),
    ("ordered-memory-logic", lambda c: c.update(vocab=c["vocab"][:2]), None, "vocab has 2 symbols"),
    ("structformer-mlm", lambda c: c["args"].pop("hidden_size"), None, "hidden_size"),
])
def test_a_fixture_that_does_not_fit_its_config_is_a_clear_error(golden_root, tmp_path, capsys, name, change_config,
                                                                 change_inputs, message):
    """Token ids past the vocabulary, a config without an argument, a vocabulary shorter than the ids, tokens of
    another shape: each named (file, array or field, what was expected), exit 2, no traceback (issue 65)."""
    folder = _broken_copy(golden_root, tmp_path, name, change_config, change_inputs)
    assert main(["check-golden", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err and message in err, err


def test_a_grammar_fixture_whose_tokens_are_1d_says_the_shape_expected(golden_root, tmp_path, capsys):
    """A Compound PCFG fixture keeps its token ids in outputs.npz, a [batch, length] array per batch (issue 65)."""
    import shutil

    folder = tmp_path / "compound-pcfg"
    shutil.copytree(golden_root / "compound-pcfg", folder)
    with np.load(folder / "outputs.npz") as archive:
        outputs = dict(archive)
    outputs["tokens_1"] = outputs["tokens_1"][0]
    np.savez(folder / "outputs.npz", **outputs)
    assert main(["check-golden", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err == f"treenets: error: {folder / 'outputs.npz'}: tokens_1: 1-D [5]; expected 2-D token ids [batch, " \
                  "length]\n", err


@pytest.mark.parametrize(("array", "change", "message"), [
    ("outputs", lambda a: a.pop("eps_0"), "outputs.npz: eps_0: missing (expected floats [batch 2, z_dim 4])"),
    ("params", lambda a: a["t_emb"].__setitem__((0, 0), np.nan), "params.npz: t_emb holds 1 NaN or infinite value(s); "
     "expected finite weights"),
])
def test_a_grammar_fixture_without_its_noise_or_with_nan_weights_is_named(golden_root, tmp_path, capsys, array, change,
                                                                         message):
    """Before: "does not fit kind 'compound-pcfg': 'eps_0'" (a KeyError's text) and "list index out of range" (the
    Viterbi trees of NaN scores), naming neither file nor array (issue 65)."""
    import shutil

    folder = tmp_path / "compound-pcfg"
    shutil.copytree(golden_root / "compound-pcfg", folder)
    with np.load(folder / f"{array}.npz") as archive:
        arrays = dict(archive)
    change(arrays)
    np.savez(folder / f"{array}.npz", **arrays)
    assert main(["check-golden", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err == f"treenets: error: {folder}/{message}\n", err


@pytest.mark.parametrize(("array", "change", "message"), [
    ("outputs", lambda a: a.pop("grad.t_emb"), "outputs.npz: grad.t_emb: missing (expected an array of shape [7, 16]: "
     "kind 'compound-pcfg' compares every output it gives)"),
    ("params", lambda a: a.update(t_emb=a["t_emb"].astype(np.int64)), "params.npz: t_emb: int64 [7, 16]; expected "
     "floats (weights: t_emb is float32)"),
    ("outputs", lambda a: a.update(tokens_0=a["tokens_0"][:, :0]), "outputs.npz: tokens_0: shape [2, 0], no token "
     "(length 0); expected 2-D token ids [batch, length], each axis at least 1"),
])
def test_a_grammar_fixture_lacking_an_output_or_with_integer_weights_or_no_token_is_named(golden_root, tmp_path,
                                                                                          capsys, array, change,
                                                                                          message):
    """Before: a fixture without one of its gradients passed (an array it lacks went unchecked), int64 weights were
    cast and failed 17 of 74 outputs, blaming the model, and tokens of length 0 gave PyTorch's "Expected sequence
    length to be larger than 0 in RNN"."""
    import shutil

    folder = tmp_path / "compound-pcfg"
    shutil.copytree(golden_root / "compound-pcfg", folder)
    with np.load(folder / f"{array}.npz") as archive:
        arrays = dict(archive)
    change(arrays)
    np.savez(folder / f"{array}.npz", **arrays)
    assert main(["check-golden", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err == f"treenets: error: {folder}/{message}\n", err


def test_every_list_of_trees_a_kind_builds_is_required(golden_root, tmp_path, capsys):
    folder = _broken_copy(golden_root, tmp_path, "compound-pcfg", lambda c: c.pop("viterbi_tags"))
    assert main(["check-golden", str(folder)]) == 2
    assert f"{folder / 'config.json'}: viterbi_tags: missing (expected a list of 4" in capsys.readouterr().err

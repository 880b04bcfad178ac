"""`treenets serve`: the JSON API (Starlette's TestClient), its errors, the command line, and the page in
headless Chromium against the app served in-process on a free port."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time

import pytest

pytest.importorskip("starlette", reason="treenets serve needs Starlette and uvicorn (pip install -e '.[serve]')")
pytest.importorskip("uvicorn", reason="treenets serve needs Starlette and uvicorn (pip install -e '.[serve]')")
pytest.importorskip("httpx2", reason="Starlette's TestClient needs httpx2 (pip install -e '.[dev]')")

import uvicorn  # noqa: E402
from helpers import needs_cpu_bfloat16  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

import treenets  # noqa: E402
from treenets.cli import main  # noqa: E402
from treenets.core.errors import TreenetsError  # noqa: E402
from treenets.report import tree_json  # noqa: E402
from treenets.workflows import serve as serve_module  # noqa: E402
from treenets.workflows.serve import MAX_CHARACTERS, MAX_WORDS, RequestDeadline, bind, create_app, load_models  # noqa: E402

SENTENCE = "The cat sees a big zebra of the city"
WORDS = SENTENCE.lower().split()  # as the model reads it: its vocabulary is lower-case


@pytest.fixture(scope="module")
def models(tiny_run) -> list[str]:
    return [str(tiny_run / "best.pt"), str(tiny_run / "last.pt")]


@pytest.fixture(scope="module")
def app(models):
    return create_app(load_models(models))


@pytest.fixture(scope="module")
def client(app):
    with TestClient(app) as client:
        yield client


def test_parse_gives_every_layer_both_splits_and_surprisal(client, models):
    answer = client.post("/api/parse", json={"sentence": SENTENCE, "models": models})
    assert answer.status_code == 200
    first, second = answer.json()["results"]
    assert [first["model"], second["model"]] == models
    words = WORDS
    assert first["tokens"] == words and first["unknown"] == ["sees", "zebra"]
    assert first["layers"] == ["1", "2", "mean"] and first["default_layer"] == "2"
    assert len(first["distances"]) == 2 and all(len(row) == len(words) for row in first["distances"])
    assert len(first["surprisal"]) == len(words) + 1 and first["end_token"] == "<eos>"  # and the closing token
    assert all(value > 0 for value in first["surprisal"])

    def leaves(tree):
        return [leaf for child in tree for leaf in leaves(child)] if isinstance(tree, list) else [tree]

    for split in ("official", "before"):
        assert set(first["trees"][split]) == {"1", "2", "mean"}
        assert all(leaves(tree) == list(range(len(words))) for tree in first["trees"][split].values())
    # One model by default; a one-word sentence is a tree of one leaf.
    one = client.post("/api/parse", json={"sentence": "dog"}).json()["results"]
    assert len(one) == 1 and one[0]["trees"]["official"]["2"] == 0


@needs_cpu_bfloat16
def test_parse_in_bf16_answers_from_bfloat16_products(models, app):
    """`serve --precision bf16`: the products run in bfloat16 in the threads that answer, so the same model gives
    the same words and a slightly different perplexity."""
    body = {"sentence": SENTENCE, "models": models[:1]}
    with TestClient(app) as fp32, TestClient(create_app(load_models(models[:1]), "bf16")) as bf16:
        exact, low = (client.post("/api/parse", json=body).json()["results"][0] for client in (fp32, bf16))
    assert low["tokens"] == exact["tokens"]
    assert low["perplexity"] != exact["perplexity"]
    assert low["perplexity"] == pytest.approx(exact["perplexity"], rel=0.02)
    with pytest.raises(TreenetsError, match="unknown precision 'fp16'"):
        create_app(load_models(models[:1]), "fp16")


@pytest.mark.parametrize(("body", "status", "message"), [
    ({"sentence": "   "}, 400, "the sentence is empty: type at least one word"),
    ({"sentence": "a" * (MAX_CHARACTERS + 1)}, 400, f"the sentence has 2,001 characters: at most {MAX_CHARACTERS:,}"),
    ({"sentence": "dog " * (MAX_WORDS + 1)}, 400, f"the sentence has 201 words: at most {MAX_WORDS}"),
    ({"sentence": 3}, 400, '"sentence" must be a string'),
    ({"sentence": "?! ..."}, 400, "sentence '?! ...': no word left after the ptb normaliser"),
    ({"sentence": "a dog", "pretokenized": "yes"}, 400, '"pretokenized" must be true or false'),
    ({"sentence": "a dog", "models": "best.pt"}, 400, '"models" must be a list of model names'),
    ({"sentence": "a dog", "models": ["nope.pt"]}, 404, "unknown model 'nope.pt': this server has "),
    (["a dog"], 400, "expected a JSON object"),
    ({"sentence": "a" * 70_000}, 413, "bytes: at most 64,000"),
    ({"sentence": "\u200b\ufeff \u200b"}, 400, "the sentence is empty"),  # invisible characters only
])
def test_parse_refuses_bad_requests_clearly(client, body, status, message):
    answer = client.post("/api/parse", json=body)
    assert answer.status_code == status and message in answer.json()["error"]


def test_parse_reads_the_sentence_as_the_training_text_unless_it_is_pretokenized(client):
    answer = client.post("/api/parse", json={"sentence": "The cat, a\u200d dog."}).json()
    read = answer["results"][0]
    assert read["tokens"] == ["the", "cat", "a", "dog"] and read["unknown"] == []
    # what it read nothing from (before: the zero-width joiner was dropped before the model saw the sentence)
    assert answer["sentence"] == "The cat, a\u200d dog." and read["dropped"] == [
        {"text": ",", "start": 7, "why": "punctuation or symbol"},
        {"text": "\u200d", "start": 10, "why": "invisible: U+200D ZERO WIDTH JOINER"},
        {"text": ".", "start": 15, "why": "punctuation or symbol"}]
    given = client.post("/api/parse", json={"sentence": "the cat .", "pretokenized": True}).json()["results"][0]
    assert given["tokens"] == ["the", "cat", "."] and given["unknown"] == ["."]
    assert "text read as ptb" in client.get("/api/models").json()["models"][0]["description"]


def test_parse_refuses_what_is_not_json(client):
    answer = client.post("/api/parse", content=b"sentence=a dog", headers={"Content-Type": "text/plain"})
    assert answer.status_code == 400 and "the request is not JSON" in answer.json()["error"]
    nested = client.post("/api/parse", content=b"[" * 30_000 + b"]" * 30_000)  # 60 kB, deeper than json can go
    assert nested.status_code == 400 and "the request is not JSON" in nested.json()["error"]
    undecodable = client.post("/api/parse", content=b'{"sentence": "a \xff dog"}')
    assert undecodable.status_code == 400
    surrogate = client.post("/api/parse", content=b'{"sentence": "a \\ud800 dog"}')  # valid JSON, no text
    assert surrogate.status_code == 400 and "not text" in surrogate.json()["error"]


def test_a_body_over_the_limit_is_refused_while_it_is_read(app, client):
    """A chunked body declares no length: the server answers 413 once the limit is passed, while the client is
    still sending (the body is never held whole)."""
    with serving(app) as address, socket.create_connection(("127.0.0.1", int(address.rsplit(":", 1)[1][:-1]))) as c:
        c.sendall(b"POST /api/parse HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        for _ in range(3):  # 192 kB of an endless body
            c.sendall(b"%x\r\n%s\r\n" % (64_000, b" " * 64_000))
        c.settimeout(30)
        assert c.recv(100).startswith(b"HTTP/1.1 413")
    declared = client.post("/api/parse", content=b"{}", headers={"Content-Length": "99999999"})
    assert declared.status_code in (400, 413)


def test_a_client_that_never_finishes_its_headers_is_cut_off(app, monkeypatch):
    monkeypatch.setattr(serve_module, "REQUEST_SECONDS", 0.5)
    with serving(app) as address:
        port = int(address.rsplit(":", 1)[1].strip("/"))
        with socket.create_connection(("127.0.0.1", port)) as slow:
            slow.sendall(b"POST /api/parse HTTP/1.1\r\nHost: x\r\n")  # and nothing more
            slow.settimeout(10)
            start = time.monotonic()
            assert slow.recv(100) == b""  # closed by the server
            assert time.monotonic() - start < 5
        with socket.create_connection(("127.0.0.1", port)) as prompt:  # a whole request is answered as before
            body = b'{"sentence": "the cat"}'
            prompt.sendall(b"POST /api/parse HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            prompt.settimeout(30)
            assert prompt.recv(20).startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_serve_refuses_a_port_that_is_none(port, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "onlstm-ptb-small", "--port", port])
    assert exit_info.value.code == 2 and "argument --port" in capsys.readouterr().err


def test_page_models_and_reports(client, models, tiny_run):
    page = client.get("/")
    assert page.status_code == 200 and "<title>treenets serve</title>" in page.text and "https://" not in page.text
    listed = client.get("/api/models").json()
    assert [m["id"] for m in listed["models"]] == models
    assert listed["limits"] == {"characters": MAX_CHARACTERS, "words": MAX_WORDS}
    # Both checkpoints share the run folder, hence its report; each link names one file found at start-up.
    assert [m["reports"] for m in listed["models"]] == [[{"name": "parse-eval/index.html", "url": "reports/0"}],
                                                        [{"name": "parse-eval/index.html", "url": "reports/1"}]]
    report = client.get("/reports/0")
    assert report.status_code == 200 and report.text == (tiny_run / "parse-eval" / "index.html").read_text()
    assert client.get("/reports/2").status_code == 404
    assert client.get("/reports/..%2F..%2Fbest.pt").status_code == 404  # only numbers: no path reaches a file


def test_serve_command_says_when_the_port_is_taken(models, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", models[0], "--port", str(port)]) == 2
    assert f"treenets: error: serve: cannot listen on 127.0.0.1:{port} (Address already in use)" in \
        capsys.readouterr().err


@contextlib.contextmanager
def serving(app):
    """`app` served by uvicorn in a thread, on a free port of 127.0.0.1: its address."""
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", http=RequestDeadline))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "the server did not start"
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture
def live(app):
    with serving(app) as address:
        yield address


@pytest.mark.usefixtures("browser")  # first: without one, skipped before the model is trained
def test_page_parses_a_typed_sentence_in_a_browser(live, open_page, tiny_run, models):
    page = open_page(tiny_run / "screenshots")
    tab = page.tab
    tab.goto(live)
    assert tab.locator("#model-a option").all_inner_texts() == models
    assert tab.input_value("#model-b") == models[1]  # two models side by side from the start
    tab.fill("#sentence", SENTENCE)
    tab.press("#sentence", "Enter")
    tab.wait_for_selector(".panel svg")
    panels = tab.locator(".panel")
    assert panels.count() == 2
    words = WORDS
    for k in range(2):
        # The first drawing of a panel: the default layer's tree over the words, then the bars.
        svg = panels.nth(k).locator("svg").first
        assert svg.locator("text.word").all_text_contents() == words
        assert svg.locator("line.edge").count() == 2 * (len(words) - 1)  # a binary tree's edges
        assert svg.locator("rect.bar").count() == 3 * len(words)  # 2 layers of distances, surprisal
        assert panels.nth(k).locator(".layers svg").count() == 3
    assert panels.nth(0).locator("a", has_text="parse-eval/index.html").get_attribute("href") == "reports/0"
    page.screenshot("serve-two-models")
    tab.select_option("#split", "before")
    assert "split before" in panels.nth(0).locator("svg .caption").first.text_content()
    assert page.errors == []
    # A report opens from its link; an empty sentence gets the API's error, shown in the page.
    with tab.context.expect_page() as opened:
        panels.nth(0).locator("a", has_text="parse-eval/index.html").click()
    opened.value.wait_for_selector("table.scores")
    assert "treenets parse-eval" in opened.value.title()
    opened.value.close()
    tab.fill("#sentence", "  ")
    tab.click("#parse-button")
    tab.wait_for_selector("#error:not([hidden])")
    assert tab.inner_text("#error") == "the sentence is empty: type at least one word"
    assert tab.locator(".panel").count() == 0
    page.screenshot("serve-error", full_page=False)
    # The browser reports the refused request (status 400) as a console error, and nothing else.
    assert all("status of 400" in e for e in page.errors)


@pytest.fixture(scope="module")
def sentiment_client(models):
    with TestClient(create_app(load_models(["treelstm-sst", models[0]]))) as client:
        yield client


def test_a_sentiment_model_gives_the_class_of_the_sentence_and_of_every_phrase_of_its_tree(sentiment_client):
    answer = sentiment_client.post("/api/parse", json={"sentence": "A dull, lifeless film.",
                                                       "models": ["treelstm-sst"]})
    assert answer.status_code == 200
    (result,) = answer.json()["results"]
    assert result["kind"] == "sentiment" and result["parser"] == "onlstm-ptb-small"
    assert result["tokens"] == ["A", "dull", ",", "lifeless", "film", "."] and result["label"] <= 1
    # A binary tree over 6 tokens has 5 phrases, each with a class; every word has one too.
    assert len(result["labels"]) == 5 and result["labels"]["0-6"] == result["label"]
    assert len(result["word_labels"]) == 6 and all(0 <= label < 5 for label in result["word_labels"])

    def leaves(tree):
        return [leaf for child in tree for leaf in leaves(child)] if isinstance(tree, list) else [tree]

    assert leaves(result["tree"]) == list(range(6))
    # Brackets among pretokenized words are words (before: the tree text read back refused them).
    bracketed = sentiment_client.post("/api/parse", json={"sentence": "a good ( fun ) film", "pretokenized": True,
                                                          "models": ["treelstm-sst"]})
    assert bracketed.status_code == 200 and bracketed.json()["results"][0]["tokens"][2] == "("
    info = sentiment_client.get("/api/models").json()["models"][0]
    assert info["kind"] == "sentiment" and len(info["classes"]) == 5
    refused = sentiment_client.post("/api/parse", json={"sentence": "?!", "models": ["treelstm-sst"]})
    assert refused.status_code == 400 and "finds no word in it" in refused.json()["error"]


def test_a_model_that_reads_neither_one_input_nor_two_is_refused(monkeypatch):
    """A ListOps model (a sequence of operations; none ships) is refused when the server starts, naming what
    `treenets predict` reads of it."""
    from types import SimpleNamespace

    listops = SimpleNamespace(config=SimpleNamespace(task="listops"), reads="a ListOps model reads --sentence")
    monkeypatch.setattr(treenets, "load", lambda spec, device="cpu": listops)
    with pytest.raises(TreenetsError) as refused:
        load_models(["my-listops"])
    assert str(refused.value) == ("serve: my-listops is a listops model: serve shows models that read one sentence "
                                  "(language models and grammars, sentiment models, ensembles of models that induce "
                                  "trees) or a pair (relatedness and logic models); a ListOps model reads --sentence: "
                                  "try treenets predict my-listops")


@pytest.fixture(scope="module")
def pair_client():
    with TestClient(create_app(load_models(["treelstm-sick", "om-logic", "treelstm-sick-dependency",
                                            "lstm-logic"]))) as client:
        yield client


def test_a_relatedness_model_scores_the_two_sentences_as_predict_does(pair_client):
    """Before: `serve treelstm-sick` was refused ("serve shows models that read one sentence")."""
    a, b = "A man is playing a guitar.", "A person plays an instrument."
    answer = pair_client.post("/api/parse", json={"sentence": a, "second": b, "models": ["treelstm-sick"]})
    assert answer.status_code == 200
    (found,) = answer.json()["results"]
    expected = treenets.load("treelstm-sick").predict(a, b)
    assert found["kind"] == "relatedness" and found["score"] == pytest.approx(expected.score)
    assert found["distribution"] == expected.distribution and found["tokens"] == expected.tokens
    assert found["scale"] == "1 (completely unrelated) to 5 (very related)" and found["parser"] == "onlstm-ptb-small"
    info = {m["id"]: m for m in pair_client.get("/api/models").json()["models"]}
    assert info["treelstm-sick"]["kind"] == "relatedness" and info["treelstm-sick"]["second"] == "second sentence"
    assert not info["treelstm-sick"]["parents"] and info["treelstm-sick-dependency"]["parents"]
    # a dependency Tree-LSTM reads each sentence's parents, given as SICK's files give them
    parents = ["2 0 4 2", "2 0"]
    answer = pair_client.post("/api/parse", json={"sentence": "A man plays guitar", "second": "people play",
                                                  "parents": parents, "models": ["treelstm-sick-dependency"]})
    expected = treenets.load("treelstm-sick-dependency").predict("A man plays guitar", "people play", *parents)
    assert answer.status_code == 200 and answer.json()["results"][0]["score"] == pytest.approx(expected.score)
    assert answer.json()["results"][0]["parser"] == "given"


def test_a_logic_model_gives_the_relation_and_ordered_memory_its_trees_of_both_formulas(pair_client):
    premise, hypothesis = "(A (and (not B)))", "a"
    answer = pair_client.post("/api/parse", json={"sentence": premise, "second": hypothesis,
                                                  "models": ["om-logic", "lstm-logic"]})
    assert answer.status_code == 200
    om, lstm = answer.json()["results"]
    for found, name in ((om, "om-logic"), (lstm, "lstm-logic")):
        expected = treenets.load(name).predict(premise, hypothesis)
        assert found["kind"] == "logic" and (found["relation"], found["name"]) == (expected.relation, expected.name)
        assert found["probabilities"] == expected.probabilities
    assert lstm["formulas"] is None  # an LSTM induces no trees
    parse = treenets.load("om-logic").parse(premise)
    assert om["formulas"][0] == {"tokens": ["a", "and", "not", "b"], "tree": json.loads(tree_json(parse.scored)),
                                 "own": [0, [1, [2, 3]]]}
    assert om["formulas"][1] == {"tokens": ["a"], "tree": 0, "own": 0}


@pytest.mark.parametrize(("query", "message"), [
    ({"sentence": "a man", "models": ["treelstm-sick"]}, 'treelstm-sick reads two inputs: give "second", a second '
                                                          "sentence"),
    ({"sentence": "(a)", "models": ["lstm-logic"]}, 'lstm-logic reads two inputs: give "second", a hypothesis'),
    ({"sentence": "a man", "second": 3, "models": ["treelstm-sick"]}, '"second" must be a string'),
    ({"sentence": "a man", "second": " ", "models": ["treelstm-sick"]}, "the second input is empty"),
    ({"sentence": "a man", "second": "a dog", "models": ["treelstm-sick-dependency"]},
     'treelstm-sick-dependency reads each sentence over its dependency tree, which treenets cannot induce: give '
     '"parents"'),
    ({"sentence": "a man", "second": "a dog", "parents": ["2 0"], "models": ["treelstm-sick-dependency"]},
     '"parents" must be two strings'),
    ({"sentence": "(a)", "second": "(b)", "parents": ["0", "0"], "models": ["om-logic"]}, "om-logic takes no parents"),
    ({"sentence": "a man", "second": "a dog", "parents": ["2 0 9", "2 0"], "models": ["treelstm-sick-dependency"]},
     "parents of sentence a"),
    ({"sentence": "(a (and", "second": "a", "models": ["om-logic"]}, "premise"),
])
def test_a_pair_that_cannot_be_read_is_refused_naming_what_is_wrong(pair_client, query, message):
    answer = pair_client.post("/api/parse", json=query)
    assert answer.status_code == 400 and message in answer.json()["error"], answer.json()


def _ensemble_folder(folder, members, mode="generative"):
    folder.mkdir()
    (folder / "ensemble.json").write_text(json.dumps({"members": members, "mode": mode}))
    return str(folder)


def test_an_ensemble_gives_its_tree_and_each_members_with_its_agreement(models, tmp_path):
    """Before: an ensemble stopped the server at its start (`'EnsembleParser' object has no attribute 'config'`,
    in the message refusing it)."""
    ensemble = _ensemble_folder(tmp_path / "ensemble", models, "selective")
    with TestClient(create_app(load_models([ensemble, models[0]]))) as client:
        answer = client.post("/api/parse", json={"sentence": SENTENCE, "models": [ensemble, models[0]]})
        assert answer.status_code == 200
        found, onlstm = answer.json()["results"]
        info = client.get("/api/models").json()["models"]
        (one,) = client.post("/api/parse", json={"sentence": "dog", "models": [ensemble]}).json()["results"]
    parse = treenets.load(ensemble).parse(SENTENCE)
    assert found["kind"] == "ensemble" and found["tokens"] == WORDS and found["mode"] == "selective"
    assert found["unknown"] == ["sees", "zebra"] and onlstm["trees"] is not None
    assert found["tree"] == json.loads(tree_json(parse.nested))
    assert [m["model"] for m in found["members"]] == models
    for member, (_, tree, agreement) in zip(found["members"], parse.members):
        assert member["tree"] == json.loads(tree_json(tree)) and member["agreement"] == pytest.approx(agreement)
    # selective: one member's tree is the ensemble's
    assert max(m["agreement"] for m in found["members"]) == pytest.approx(1.0)
    assert info[0]["kind"] == "ensemble" and info[0]["mode"] == "selective"
    assert [m["model"] for m in info[0]["members"]] == models and [m["weight"] for m in info[0]["members"]] == [1, 1]
    assert info[0]["description"].startswith("ensemble (selective: the member's tree that agrees most with the "
                                             "others') of 2 models: ")
    assert one["tokens"] == ["dog"] and one["tree"] == 0


def test_a_zoo_ensemble_is_served_beside_a_grammar():
    """`treenets serve compound-pcfg-ptb ptb-small-ensemble`, the issue's command."""
    with TestClient(create_app(load_models(["compound-pcfg-ptb", "ptb-small-ensemble"]))) as client:
        answer = client.post("/api/parse", json={"sentence": "The cat sat on the mat.",
                                                 "models": ["compound-pcfg-ptb", "ptb-small-ensemble"]})
        assert answer.status_code == 200
        grammar, ensemble = answer.json()["results"]
    assert grammar["kind"] == "decoded" and ensemble["kind"] == "ensemble"
    assert ensemble["tokens"] == ["the", "cat", "sat", "on", "the", "mat"]
    assert [m["model"] for m in ensemble["members"]] == ["onlstm-ptb-small", "prpn-up-small", "structformer-ptb-small"]
    assert all(0 <= m["agreement"] <= 1 for m in ensemble["members"])


@pytest.mark.usefixtures("browser")
def test_page_draws_the_class_of_every_phrase_in_a_browser(open_page, tiny_run, models):
    with serving(create_app(load_models(["treelstm-sst", models[0]]))) as address:
        page = open_page(tiny_run / "screenshots")
        tab = page.tab
        tab.goto(address)
        tab.fill("#sentence", "It is a moving film.")
        tab.press("#sentence", "Enter")
        tab.wait_for_selector(".panel svg")
        panel = tab.locator(".panel").first
        assert panel.locator(".verdict").inner_text().split(" (p = ")[0] in ("positive", "very positive")
        svg = panel.locator("svg").first
        assert svg.locator("text.word").all_text_contents() == ["It", "is", "a", "moving", "film", "."]
        assert svg.locator("text.label").count() == 5  # the class of each of the 5 phrases
        assert svg.locator("rect.bar").count() == 6  # and of each word
        page.screenshot("serve-sentiment")
        assert page.errors == []


@pytest.fixture(scope="module")
def structformer(structformer_run) -> str:
    return str(structformer_run / "best.pt")


def test_a_structformer_gives_its_heads_and_its_own_trees_beside_an_onlstm(structformer, models):
    """The StructFormer's heads and tree are those its predictor gives (its own builder, the one split); an
    ON-LSTM beside it has no heads and both splits."""
    with TestClient(create_app(load_models([structformer, models[0]]))) as client:
        answer = client.post("/api/parse", json={"sentence": SENTENCE, "models": [structformer, models[0]]})
        assert answer.status_code == 200
        mlm, onlstm = answer.json()["results"]
        info = client.get("/api/models").json()["models"]
    parse = treenets.load(structformer).parse(SENTENCE)
    assert mlm["tokens"] == parse.words == WORDS
    assert mlm["heads"] == parse.heads and len(mlm["heads"]) == len(WORDS)
    # The distance of the gap after the last word is read by no tree (a StructFormer's is 1e9): none.
    assert mlm["distances"] == [[*parse.distances[0, :-1].tolist(), None]]
    assert mlm["splits"] == ["official"] and list(mlm["trees"]) == ["official"]
    assert mlm["layers"] == ["1"] and mlm["trees"]["official"]["1"] == json.loads(tree_json(parse.nested))
    assert onlstm["heads"] is None and onlstm["splits"] == ["official", "before"]
    assert set(onlstm["trees"]) == {"official", "before"}
    assert [m["splits"] for m in info] == [["official"], ["official", "before"]]


def test_a_structformer_served_alone(structformer):
    with TestClient(create_app(load_models([structformer]))) as client:
        answer = client.post("/api/parse", json={"sentence": "the dog"})
        assert answer.status_code == 200
        (result,) = answer.json()["results"]
    assert result["tokens"] == ["the", "dog"] and len(result["heads"]) == 2 and 0 in result["heads"]


@pytest.mark.usefixtures("browser")
def test_page_draws_a_structformers_arcs_beside_an_onlstm_in_a_browser(open_page, structformer, models, tiny_run):
    heads = treenets.load(structformer).parse(SENTENCE).heads
    with serving(create_app(load_models([structformer, models[0]]))) as address:
        page = open_page(tiny_run / "screenshots")
        tab = page.tab
        tab.goto(address)
        assert tab.locator("#split").is_visible()  # the ON-LSTM builds both
        tab.fill("#sentence", SENTENCE)
        tab.press("#sentence", "Enter")
        tab.wait_for_selector(".panel svg")
        mlm, onlstm = tab.locator(".panel").nth(0), tab.locator(".panel").nth(1)
        arcs = mlm.locator("svg.arcs")
        assert arcs.count() == 1 and arcs.locator("text.word").all_text_contents() == WORDS
        assert arcs.locator("path.arc").count() == sum(head != 0 for head in heads)  # an arc per non-root word
        assert arcs.locator("polygon.arrow").count() == len(WORDS)  # an arrowhead at every word, the root's too
        assert arcs.locator("text.root").count() == heads.count(0)
        assert mlm.locator("svg").first.locator("rect.bar").count() == len(WORDS) - 1 + len(WORDS)  # and surprisal
        assert onlstm.locator("svg.arcs").count() == 0
        page.screenshot("serve-structformer")
        # Split before: the ON-LSTM's trees change; the StructFormer keeps its own, and says so.
        tab.select_option("#split", "before")
        assert "split before" in onlstm.locator("svg .caption").first.text_content()
        assert "split official (its only one)" in mlm.locator("svg .caption").first.text_content()
        assert mlm.locator("svg.arcs path.arc").count() == sum(head != 0 for head in heads)
        assert page.errors == []
    with serving(create_app(load_models([structformer]))) as address:  # alone: no split to choose
        tab.goto(address)
        assert not tab.locator("#split").is_visible()
        tab.fill("#sentence", "the dog")
        tab.press("#sentence", "Enter")
        tab.wait_for_selector(".panel svg.arcs")
        assert page.errors == []


@pytest.fixture(scope="module")
def grammar(grammar_run) -> str:
    return str(grammar_run / "best.pt")


def test_a_grammar_gives_its_labelled_tree_by_each_decoder_beside_an_onlstm(grammar, models):
    """A grammar's answer: its trees by Viterbi and by MBR, each node's nonterminal and each word's preterminal,
    as its `parse` gives them; the ON-LSTM beside it answers as before."""
    with TestClient(create_app(load_models([grammar, models[0]]))) as client:
        answer = client.post("/api/parse", json={"sentence": SENTENCE, "models": [grammar, models[0]]})
        assert answer.status_code == 200
        found, onlstm = answer.json()["results"]
        info = client.get("/api/models").json()["models"]
    assert found["kind"] == "decoded" and found["tokens"] == WORDS and found["decoders"] == ["viterbi", "mbr"]
    assert found["perplexity"] > 1 and onlstm["trees"] is not None and info[0]["kind"] == "decoded"
    for decoder in ("viterbi", "mbr"):
        parse = treenets.load(grammar).parse(SENTENCE, decode=decoder)
        drawn = found["trees"][decoder]
        assert drawn["tree"] == json.loads(tree_json(parse.nested))
        assert drawn["labels"] == {f"{s}-{e + 1}": f"NT-{label}" for s, e, label in parse.spans}
        assert drawn["word_labels"] == [f"T-{tag}" for tag in parse.tags]
    with TestClient(create_app(load_models([grammar]))) as client:  # one word: no tree of two, no perplexity
        (one,) = client.post("/api/parse", json={"sentence": "dog"}).json()["results"]
    assert one["perplexity"] is None and one["trees"]["viterbi"]["tree"] == 0
    assert one["trees"]["viterbi"]["labels"] == {} and len(one["trees"]["mbr"]["word_labels"]) == 1


@pytest.mark.usefixtures("browser")
def test_page_draws_a_grammars_labelled_trees_in_a_browser(open_page, grammar, tiny_run):
    with serving(create_app(load_models([grammar]))) as address:
        page = open_page(tiny_run / "screenshots")
        tab = page.tab
        tab.goto(address)
        tab.fill("#sentence", SENTENCE)
        tab.press("#sentence", "Enter")
        tab.wait_for_selector(".panel svg")
        figures = tab.locator(".panel svg")
        assert figures.count() == 2  # Viterbi, then MBR
        for k in range(2):
            assert figures.nth(k).locator("text.word").all_text_contents() == WORDS
            assert figures.nth(k).locator("text.label").count() == len(WORDS) - 1  # every node of two words or more
            assert len(figures.nth(k).locator("text.tag").all_text_contents()) == len(WORDS)  # every word's tag
        page.screenshot("serve-grammar")
        assert page.errors == []


@pytest.mark.usefixtures("browser")
def test_page_draws_an_ensembles_tree_and_its_members_in_a_browser(open_page, models, tiny_run, tmp_path):
    ensemble = _ensemble_folder(tmp_path / "ensemble", models)
    with serving(create_app(load_models([ensemble]))) as address:
        page = open_page(tiny_run / "screenshots")
        tab = page.tab
        tab.goto(address)
        tab.fill("#sentence", SENTENCE)
        tab.press("#sentence", "Enter")
        tab.wait_for_selector(".panel svg")
        figures = tab.locator(".panel svg")
        assert figures.count() == 1 + len(models)  # the ensemble's tree, then each member's
        for k in range(figures.count()):
            assert figures.nth(k).locator("text.word").all_text_contents() == WORDS
        assert "the ensemble's tree (generative)" in figures.nth(0).locator(".caption").first.text_content()
        assert "agreement" in figures.nth(1).locator(".caption").first.text_content()
        page.screenshot("serve-ensemble")
        assert page.errors == []


@pytest.mark.usefixtures("browser")
def test_page_asks_for_the_second_input_of_a_pair_model_and_draws_its_answer_in_a_browser(open_page, tiny_run):
    with serving(create_app(load_models(["om-logic", "treelstm-sick-dependency"]))) as address:
        page = open_page(tiny_run / "screenshots")
        tab = page.tab
        tab.goto(address)
        assert tab.is_visible("#second") and tab.is_visible("#parents-a")  # the dependency model is the right one
        tab.select_option("#model-b", "")
        assert tab.is_visible("#second") and not tab.is_visible("#parents-a")
        assert tab.get_attribute("#sentence", "placeholder") == "premise (a formula)"
        tab.fill("#sentence", "(A (and (not B)))")
        tab.fill("#second", "a")
        tab.press("#second", "Enter")
        tab.wait_for_selector(".panel svg")
        assert tab.inner_text(".panel .verdict").startswith("< forward entailment (p = ")
        figures = tab.locator(".panel svg")
        assert figures.count() == 4  # each formula's induced tree beside its brackets'
        assert figures.nth(0).locator("text.word").all_text_contents() == ["a", "and", "not", "b"]
        page.screenshot("serve-logic")
        tab.select_option("#model-a", "treelstm-sick-dependency")
        tab.fill("#sentence", "A man plays guitar")
        tab.fill("#second", "people play")
        tab.fill("#parents-a", "2 0 4 2")
        tab.fill("#parents-b", "2 0")
        tab.click("#parse-button")
        panel = ".panel[data-model='treelstm-sick-dependency']"  # (the logic panel is there until the answer comes)
        tab.wait_for_selector(f"{panel} .distribution")
        assert tab.inner_text(f"{panel} .verdict").startswith("relatedness ")
        assert tab.inner_text(f"{panel} .verdict").endswith("on 1 (completely unrelated) to 5 (very related)")
        page.screenshot("serve-relatedness")
        assert page.errors == []

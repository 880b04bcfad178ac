"""`treenets serve`: a local web page where you type a sentence and see what models make of it, side by side:
for a language model the tree of every layer (split official or before, where the model builds both), the
syntactic distances under the words, each word's surprisal, and for a model that induces dependencies
(StructFormer) their arcs; for a grammar its labelled tree by each decoder; for a sentiment model (SST) the class of
the sentence and, for a Tree-LSTM, of every phrase of the tree it read (induced by its parser); for an ensemble
(`treenets ensemble`, a zoo `*-ensemble`) its combined tree and each member's, with its agreement; for a model that
reads two inputs, the second typed below the first, a relatedness model's score of the two sentences (with each
sentence's parents for a dependency Tree-LSTM) and a logic model's relation of two formulas (with the trees Ordered
Memory induces of them). Models that read neither (ListOps: a sequence of operations) are refused when the server
starts, naming what `treenets predict` reads of them. A Starlette app run by uvicorn; the page (`report/serve.html`,
drawing with the report's `trees.js`) asks `POST /api/parse`.

The page reads nothing from the file system: the models are loaded when the server starts, and the only files
it serves are the reports (`index.html`) found then in the models' run folders.
"""

from __future__ import annotations

import json
import math
import socket
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import h11
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from uvicorn.protocols.http.h11_impl import H11Protocol

import treenets
from treenets.core.console import note
from treenets.core.errors import TreenetsError
from treenets.data.sst import CLASS_NAMES, NUM_CLASSES
from treenets.nn.precision import autocast, check_precision
from treenets.predictors.ensemble import EnsembleParser
from treenets.predictors.lm import LanguageModel
from treenets.predictors.logic import LogicClassifier
from treenets.predictors.relatedness import RelatednessPredictor
from treenets.predictors.sentiment import SentimentClassifier
from treenets.report import render_page, tree_json
from treenets.text import checked_text
from treenets.trees.parents import from_spans, to_nested

MAX_CHARACTERS = 2000
MAX_WORDS = 200
MAX_BODY = 64_000  # bytes of a request: a sentence at the limit, JSON-escaped, fits with room to spare
REQUEST_SECONDS = 20.0  # for a client to send a whole request (`RequestDeadline`)


@dataclass
class ServedModel:
    id: str  # the model as given on the command line: the page and the API name it so
    lm: LanguageModel | SentimentClassifier | EnsembleParser | RelatednessPredictor | LogicClassifier  # the predictor
    reports: list[Path] = field(default_factory=list)


def find_reports(spec: str) -> list[Path]:
    """The reports of a model's run: `index.html` in the folder of a checkpoint (or in a model folder) and in
    its subfolders (`parse-eval RUN/best.pt --output RUN/parse-eval`). None for a zoo name."""
    path = Path(spec)
    folder = path.parent if path.is_file() else path if path.is_dir() else None
    if folder is None:
        return []
    return [p for p in [folder / "index.html", *sorted(folder.glob("*/index.html"))] if p.is_file()]


SERVED = (LanguageModel, SentimentClassifier, EnsembleParser)  # what reads one sentence, and what the page draws
PAIRS = (RelatednessPredictor, LogicClassifier)  # what reads two: the first input and the second


def load_models(specs: list[str], device: str = "cpu") -> list[ServedModel]:
    """Each model given (once) through `treenets.load`: a language model or grammar, a sentiment model or an
    ensemble; a relatedness or logic model (two inputs); a model that reads neither (ListOps) is refused, naming its
    task and what it reads."""
    models = []
    for spec in dict.fromkeys(specs):
        lm = treenets.load(spec, device=device)
        if not isinstance(lm, SERVED + PAIRS):
            task = getattr(getattr(lm, "config", None), "task", None) or type(lm).__name__
            reads = getattr(lm, "reads", "")
            raise TreenetsError(f"serve: {spec} is a {task} model: serve shows models that read one sentence "
                                "(language models and grammars, sentiment models, ensembles of models that induce "
                                "trees) or a pair (relatedness and logic models)"
                                + (f"; {reads}: try treenets predict {spec}" if reads else ""))
        models.append(ServedModel(spec, lm, find_reports(spec)))
    return models


def device_of(predictor):
    """Where a served model computes: its device, an ensemble's first member's."""
    if isinstance(predictor, EnsembleParser):
        return device_of(next(iter(predictor.members.values())))
    return predictor.device


class Refused(Exception):
    """A request the API answers with an error: its HTTP status and a message for the person."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def check_sentence(sentence, field: str = "sentence") -> str:
    """The sentence of a request (its `field`: "sentence", or "second", a pair's second input), as sent (the models
    say what of it they drop), or why it is refused: not text, nothing but white space and invisible characters,
    or more than the limits."""
    the = "the sentence" if field == "sentence" else "the second input"
    if not isinstance(sentence, str):
        raise Refused(400, f'expected {{"sentence": "...", "models": [...]}}: "{field}" must be a string')
    try:
        visible = checked_text(sentence, the)  # invisible characters dropped: zero-width only is empty
    except TreenetsError as exc:
        raise Refused(400, str(exc)) from None
    if not visible.strip():
        raise Refused(400, f"{the} is empty: type at least one word")
    if len(sentence) > MAX_CHARACTERS:
        raise Refused(400, f"{the} has {len(sentence):,} characters: at most {MAX_CHARACTERS:,}")
    words = len(visible.split())
    if words > MAX_WORDS:
        raise Refused(400, f"{the} has {words} words: at most {MAX_WORDS}")
    return sentence


async def read_body(request: Request) -> bytes:
    """The request's body, read only up to `MAX_BODY` bytes: a larger one is refused (413) as soon as its
    declared length or the bytes received pass the limit, so that a huge or endless (chunked) body is never
    held in memory."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY):
        raise Refused(413, f"the request declares {declared[:20]} bytes: at most {MAX_BODY:,}")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY:
                raise Refused(413, f"the request has more than {MAX_BODY:,} bytes")
            chunks.append(chunk)
    except ClientDisconnect:  # e.g. closed by `RequestDeadline` half-way through the body: nobody to answer
        raise Refused(400, "the client went away before sending the whole request") from None
    return b"".join(chunks)


class RequestDeadline(H11Protocol):
    """uvicorn's HTTP/1.1 protocol (h11) with a deadline: a connection that has not sent a whole request, headers
    and body, within `REQUEST_SECONDS` of opening (or of its last answer) is closed. uvicorn's own timeout covers
    only the idle time between requests, restarted by every byte, so a client sending headers slowly, or never
    finishing them, would hold its connection open for ever."""

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._arm()

    def _arm(self) -> None:
        self._deadline = self.loop.call_later(REQUEST_SECONDS, self._expire)

    def _expire(self) -> None:
        if self.conn.their_state not in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED) and not self.transport.is_closing():
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED):
            self._deadline.cancel()  # the whole request is in: answering it may take as long as it takes

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._deadline.cancel()
        self._arm()  # the next request on this connection (keep-alive) gets its own deadline

    def connection_lost(self, exc) -> None:
        self._deadline.cancel()
        super().connection_lost(exc)


def _needs_parents(lm) -> bool:
    """Whether a model of two inputs reads each sentence over dependency parents it must be given."""
    return (isinstance(lm, RelatednessPredictor) and not lm.net.sequential
            and getattr(lm.config.data, "trees", None) == "dependency")


def check_pair(model: ServedModel, second, parents) -> None:
    """Why a request cannot be answered by `model`, a model of two inputs: no second input, or parents that are
    not two strings, or parents for a model that takes none."""
    lm = model.lm
    what = "a second sentence" if isinstance(lm, RelatednessPredictor) else "a hypothesis (a second formula)"
    if second is None:
        raise Refused(400, f'{model.id} reads two inputs: give "second", {what}')
    check_sentence(second, "second")
    if parents is None and _needs_parents(lm):
        raise Refused(400, f"{model.id} reads each sentence over its dependency tree, which treenets cannot induce: "
                           'give "parents", two strings of each word\'s parent (as SICK\'s .parents files)')
    if parents is not None:
        if not isinstance(lm, RelatednessPredictor) or lm.net.sequential:
            raise Refused(400, f'{model.id} takes no parents: "parents" are a relatedness Tree-LSTM\'s')
        if not (isinstance(parents, list) and len(parents) == 2 and all(isinstance(p, str) for p in parents)):
            raise Refused(400, '"parents" must be two strings, each sentence\'s parents as SICK\'s files give them')


def analyse(model: ServedModel, sentence: str, precision: str = "fp32", pretokenized: bool = False,
            second: str | None = None, parents: list[str] | None = None) -> dict:
    """One model's reading of a sentence (normalised as its training text, or with `pretokenized` split on
    white space): tokens, what of the sentence was dropped (`dropped`: each piece's text, start and why; a
    sentiment model's too), surprisal in bits of each token and of the closing boundary token, perplexity, and
    when the model gives distances, every layer's distances (None for one no tree reads: `Parse.read_distances`)
    and every layer's tree for each split it builds (`splits`: both for an ON-LSTM, a StructFormer's own only;
    trees over token positions, as the page draws them), with the dependency heads of a model that induces them
    (`heads`, CoNLL's: 1-based, 0 for the root; None for the others). With `precision` bf16 the model's products
    run in bfloat16 (a block opened here: autocast holds for the thread that opens it, and requests are answered
    in worker threads). A model of two inputs reads `sentence` and `second` (`_relatedness`, `_logic`)."""
    lm = model.lm
    with autocast(precision, device_of(lm)):
        if isinstance(lm, RelatednessPredictor):
            return _relatedness(model, lm, sentence, second, parents, pretokenized)
        if isinstance(lm, LogicClassifier):
            return _logic(model, lm, sentence, second)
        if isinstance(lm, SentimentClassifier):
            return _sentiment(model, lm, sentence, pretokenized)
        if isinstance(lm, EnsembleParser):
            return _ensemble(model, lm, sentence, pretokenized)
        if lm.decoders:  # a model that decodes labelled trees (a grammar)
            return _decoded(model, lm, sentence, pretokenized)
        return _analyse(model, lm, sentence, pretokenized)


def _relatedness(model: ServedModel, predictor: RelatednessPredictor, a: str, b: str, parents: list[str] | None,
                 pretokenized: bool) -> dict:
    """How related two sentences are: the expected score on the model's scale and its distribution over the scale's
    points, the tokens it read of each sentence and where their trees came from (`parser`: a language model, a
    shape, or "given" parents)."""
    a_parents, b_parents = parents or (None, None)
    result = predictor.predict(a, b, a_parents, b_parents, pretokenized=pretokenized)
    return {"model": model.id, "kind": "relatedness", "score": result.score, "scale": result.scale,
            "distribution": result.distribution, "tokens": result.tokens, "unknown": result.unknown,
            "parser": result.parser, "dropped": [[asdict(piece) for piece in side] for side in result.dropped]}


def _logic(model: ServedModel, classifier: LogicClassifier, premise: str, hypothesis: str) -> dict:
    """The relation of two formulas (its symbol, name and every relation's probability) and, for a model that
    induces trees (Ordered Memory), each formula's induced tree over its tokens without brackets beside the tree
    its brackets give (`own`)."""
    result = classifier.predict(premise, hypothesis)
    answer = {"model": model.id, "kind": "logic", "relation": result.relation, "name": result.name,
              "probabilities": result.probabilities, "formulas": None}
    if classifier.net.induces_trees:
        parses = [classifier.parse(text) for text in (premise, hypothesis)]
        answer["formulas"] = [{"tokens": [w for w in p.words if w not in p.left_out],
                               "tree": json.loads(tree_json(p.scored)), "own": json.loads(tree_json(p.own))}
                              for p in parses]
    return answer


def _sentiment(model: ServedModel, classifier: SentimentClassifier, sentence: str, pretokenized: bool) -> dict:
    """The class of the sentence, and for a Tree-LSTM the tree it read (over token positions, as the page draws
    it) with the class of every node: `labels` maps a phrase's span `"start-end"` to its class, `word_labels`
    gives each word's."""
    result = classifier.predict(sentence, pretokenized=pretokenized)
    answer = {"model": model.id, "kind": "sentiment", "tokens": result.tokens, "unknown": result.unknown,
              "dropped": [asdict(piece) for piece in result.dropped], "label": result.label,
              "probabilities": result.probabilities, "parser": result.parser,
              "tree": None, "labels": None, "word_labels": None, "heads": None}
    if result.spans is not None:
        answer.update(tree=json.loads(tree_json(to_nested(from_spans([(s, e) for s, e, _ in result.spans],
                                                                        result.tokens)))),
                      labels={f"{s}-{e}": label for s, e, label in result.spans if e - s > 1},
                      word_labels=[label for s, e, label in result.spans if e - s == 1])
    return answer


def _decoded(model: ServedModel, lm: LanguageModel, sentence: str, pretokenized: bool) -> dict:
    """A model that decodes its trees (a grammar, a span parser: `TreeInducer.decoders`): its probability of the
    sentence where it gives one (perplexity per word and closing boundary; a parser: none) and its tree by every
    decoder (over token positions, as the page draws it), each node's label in `labels` (`"start-end"`) and each
    word's in `word_labels`, as the parse declares them (`Parse.labels`; none for an unlabelled tree)."""
    parses = {decoder: lm.parse(sentence, pretokenized=pretokenized, decode=decoder) for decoder in lm.decoders}
    first = next(iter(parses.values()))
    perplexity = None
    if lm.scores_sentences:
        perplexity = lm.score(sentence, pretokenized).perplexity
    result = {"model": model.id, "kind": "decoded", "tokens": first.words, "unknown": first.unknown,
              "dropped": [asdict(piece) for piece in first.dropped],
              "perplexity": perplexity if perplexity is not None and math.isfinite(perplexity) else None,
              "decoders": list(lm.decoders), "trees": {}}
    for decoder, parse in parses.items():
        labels, word_labels = parse.labels() or ({}, [])
        result["trees"][decoder] = {"tree": json.loads(tree_json(parse.nested)), "labels": labels,
                                    "word_labels": word_labels,  # (a one-word sentence's score: none)
                                    "score": parse.record_fields().get("score")}
    return result


def _ensemble(model: ServedModel, ensemble: EnsembleParser, sentence: str, pretokenized: bool) -> dict:
    """An ensemble's tree of the sentence (over token positions, as the page draws it) and each member's, with its
    agreement with the ensemble's (official sentence F1, 0 to 1; None where it has none)."""
    parse = ensemble.parse(sentence, pretokenized=pretokenized)

    def finite(value):
        return value if value is not None and math.isfinite(value) else None

    return {"model": model.id, "kind": "ensemble", "tokens": parse.words, "unknown": parse.unknown,
            "dropped": [asdict(piece) for piece in parse.dropped], "mode": parse.mode,
            "tree": json.loads(tree_json(parse.nested)),
            "members": [{"model": name, "tree": json.loads(tree_json(tree)), "agreement": finite(agree)}
                        for name, tree, agree in parse.members]}


def _analyse(model: ServedModel, lm: LanguageModel, sentence: str, pretokenized: bool) -> dict:
    score = lm.score(sentence, pretokenized)
    result = {"model": model.id, "tokens": score.tokens, "unknown": score.unknown,
              "dropped": [asdict(piece) for piece in score.dropped], "end_token": lm.eos,
              "surprisal": [-value / math.log(2) for value in score.logprobs], "perplexity": score.perplexity,
              "layers": [], "default_layer": None, "distances": None, "splits": [], "trees": None, "heads": None}
    if lm.num_distance_rows:
        parse = lm.parse(sentence, pretokenized=pretokenized)
        layers = lm.layers("all")
        # The official split is the parse's own rule (a StructFormer's splits after its gaps); the others are
        # rebuilt from the same distances.
        by_split = {split: parse if split == "official" else replace(parse, split=split) for split in lm.splits}
        result.update(layers=[str(layer) for layer in layers], default_layer=str(lm.default_layer),
                      distances=[[None if math.isnan(v) else v for v in row] for row in parse.read_distances.tolist()],
                      splits=list(lm.splits), heads=parse.heads,
                      trees={split: {str(layer): json.loads(tree_json(split_parse.at(layer).nested))
                                     for layer in layers} for split, split_parse in by_split.items()})
    return result


def describe(model: ServedModel, first_report: int) -> dict:
    """What the page shows of a model; its reports are numbered from `first_report` (`/reports/N`)."""
    lm = model.lm
    if isinstance(lm, PAIRS):
        relatedness = isinstance(lm, RelatednessPredictor)
        parents = _needs_parents(lm)
        over = ("" if not relatedness and not lm.net.induces_trees else
                ", inducing each formula's tree" if not relatedness else
                ", reading the words in order" if lm.net.sequential else
                ", over each sentence's dependency tree (its parents given)" if parents else
                f", over each sentence's tree induced by {lm.config.data.parser}")
        return {"id": model.id, "kind": "relatedness" if relatedness else "logic", "reports": [],
                "first": "first sentence" if relatedness else "premise (a formula)",
                "second": "second sentence" if relatedness else "hypothesis (a formula)", "parents": parents,
                "description": f"{lm.config.model.name} ({lm.config.task}){over}"}
    if isinstance(lm, SentimentClassifier):
        classes = NUM_CLASSES[lm.config.data.classes]
        trees = "" if lm.net.sequential else (
            f", over {lm.config.data.trees} trees in training and typed sentences over trees induced by "
            f"{lm.config.data.parser}" if lm.config.data.trees in ("gold", "induced") else
            f", over {lm.config.data.trees} trees")
        return {"id": model.id, "kind": "sentiment", "classes": list(CLASS_NAMES[lm.config.data.classes]),
                "unit": "token",
                "description": f"{lm.config.model.name} (sentiment, {classes} classes){trees}; text read as "
                               f"{lm.config.data.normalizer}",
                "reports": []}
    reports = [{"name": str(path.relative_to(path.parent.parent)), "url": f"reports/{first_report + k}"}
               for k, path in enumerate(model.reports)]
    if isinstance(lm, EnsembleParser):
        members = [{"model": name, "weight": weight, "description": _member(member)}
                   for (name, member), weight in zip(lm.members.items(), lm.weights)]
        how = ("the binary tree that agrees most with its members' trees" if lm.mode == "generative" else
               "the member's tree that agrees most with the others'")
        shown = ", ".join(f"{m['model']} ({m['description']}, weight {m['weight']:g})" for m in members)
        return {"id": model.id, "kind": "ensemble", "unit": "word", "splits": [], "reports": reports,
                "mode": lm.mode, "members": members,
                "description": f"ensemble ({lm.mode}: {how}) of {len(members)} models: {shown}"}
    rows = lm.num_distance_rows
    kind = (f"{lm.config.model.name} ({lm.config.task}), {len(lm.vocab):,} tokens in its vocabulary, text read as "
            f"{lm.normalizer.name} ({lm.normalizer.summary})")
    if lm.decoders:
        return {"id": model.id, "kind": "decoded", "unit": lm.token_unit, "splits": [], "reports": [],
                "description": f"{kind}; trees decoded by {' and '.join(lm.decoders)}"}
    distances = f", {rows} row{'s' if rows > 1 else ''} of distances" if rows else ", no distances"
    return {"id": model.id, "kind": "lm", "description": kind + distances,
            "unit": lm.token_unit, "splits": list(lm.splits) if rows else [], "reports": reports}


def _member(member) -> str:
    """An ensemble member's model in a few words: its network and task."""
    config = getattr(member, "config", None)
    return f"{config.model.name}, {config.task}" if config is not None else type(member).__name__


def create_app(models: list[ServedModel], precision: str = "fp32") -> Starlette:
    """The web app serving `models` in `precision` (fp32 or bf16; see the module's docstring for what it
    exposes)."""
    if not models:
        raise TreenetsError("serve: give at least one model")
    for model in models:
        check_precision(precision, device_of(model.lm))  # an unknown precision, or bf16 where it is not native: now
    known = {m.id: m for m in models}
    reports, infos = [], []
    for model in models:
        infos.append(describe(model, len(reports)))
        reports.extend(model.reports)
    limits = {"characters": MAX_CHARACTERS, "words": MAX_WORDS}
    page = render_page("serve.html", "treenets serve", ["trees.js", "serve.js"], {"models": infos, "limits": limits})

    async def index(request: Request) -> Response:
        return HTMLResponse(page)

    async def list_models(request: Request) -> Response:
        return JSONResponse({"models": infos, "limits": limits})

    async def parse(request: Request) -> Response:
        try:
            body = await read_body(request)
            try:
                query = json.loads(body)
            except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested deeper than any request should be
                raise Refused(400, 'the request is not JSON: expected {"sentence": "...", "models": [...]}') from None
            if not isinstance(query, dict):
                raise Refused(400, 'expected a JSON object: {"sentence": "...", "models": [...]}')
            sentence = check_sentence(query.get("sentence"))
            second, parents = query.get("second"), query.get("parents")
            pretokenized = query.get("pretokenized", False)
            if not isinstance(pretokenized, bool):
                raise Refused(400, '"pretokenized" must be true or false')
            names = query.get("models") or [models[0].id]
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise Refused(400, '"models" must be a list of model names')
            unknown = [n for n in names if n not in known]
            if unknown:
                raise Refused(404, f"unknown model {unknown[0]!r}: this server has {', '.join(known)}")
            for name in names:
                if isinstance(known[name].lm, PAIRS):
                    check_pair(known[name], second, parents)
            # The models run outside the event loop, which goes on answering other requests meanwhile.
            answers = await run_in_threadpool(
                lambda: [analyse(known[n], sentence, precision, pretokenized, second, parents)
                         for n in dict.fromkeys(names)])
        except Refused as refused:
            return JSONResponse({"error": str(refused)}, status_code=refused.status)
        except TreenetsError as exc:  # e.g. a character-level model and a character it never saw
            return JSONResponse({"error": str(exc)}, status_code=400)
        return JSONResponse({"sentence": sentence, "results": answers})

    async def report(request: Request) -> Response:
        number = request.path_params["number"]
        try:
            return HTMLResponse(reports[number].read_text(encoding="utf-8"))
        except (IndexError, OSError):  # no such number, or the file went away since the server started
            return JSONResponse({"error": f"no report {number}"}, status_code=404)

    return Starlette(routes=[
        Route("/", index, methods=["GET"]),
        Route("/api/models", list_models, methods=["GET"]),
        Route("/api/parse", parse, methods=["POST"]),
        Route("/reports/{number:int}", report, methods=["GET"]),
    ])


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to `host:port` (port 0: a free one) for uvicorn to listen on, or a clear error when the
    address cannot be had (taken, or not this machine's)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise TreenetsError(f"serve: cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    return sock


def serve(specs: list[str], host: str = "127.0.0.1", port: int = 8000, device: str = "cpu",
          precision: str = "fp32") -> int:
    """`treenets serve`: bind, load the models, answer until Ctrl-C."""
    import uvicorn

    sock = bind(host, port)
    app = create_app(load_models(specs, device), precision)
    address = f"[{host}]" if ":" in host else host
    print(f"treenets serve: {len(specs)} model(s) at http://{address}:{sock.getsockname()[1]}/ (Ctrl-C to stop)")
    if host not in ("127.0.0.1", "localhost", "::1"):
        note(f"note: listening on {host}, so other machines that reach it can use the page too")
    uvicorn.Server(uvicorn.Config(app, log_level="warning", http=RequestDeadline)).run(sockets=[sock])
    return 0

"""`treenets serve`: a local web page of the models' trees, distances and surprisal (`treenets.workflows.serve`)."""

from __future__ import annotations

from treenets.commands import Command, register
from treenets.commands.options import MODEL_HELP, add_device, add_precision, add_threads, port_number
from treenets.core.errors import TreenetsError


@register
class Serve(Command):
    name, order = "serve", 150
    autocast = False  # the threads that answer requests open the block: autocast holds for one thread
    help = "a local web page: type a sentence, see the models' trees, distances and surprisal"
    description = ("Serve a web page where you type a sentence and see, for one model or two side by side, the tree "
                   "of every layer (split official or before), the syntactic distances under the words, each "
                   "word's surprisal, a grammar's labelled trees, an ensemble's tree and its members', a sentiment "
                   "model's classes, a relatedness model's score of two sentences, a logic model's relation of "
                   "two formulas, and links to the reports found in the models' run folders. The page uses the "
                   "JSON API POST /api/parse ({\"sentence\": ..., \"models\": [...]}; a pair's \"second\"). "
                   "Ctrl-C stops it.")

    def add_options(self, parser):
        parser.add_argument("checkpoints", nargs="+", metavar="MODEL",
                            help="language models, grammars, sentiment, relatedness or logic models, or "
                                 "ensembles: " + MODEL_HELP)
        parser.add_argument("--host", default="127.0.0.1",
                            help="address to listen on (default: 127.0.0.1, this machine only)")
        parser.add_argument("--port", type=port_number, default=8000,
                            help="port to listen on (default: 8000; 0: a free one)")
        add_device(parser, default="cpu", default_text="cpu")
        add_precision(parser)
        add_threads(parser)

    def run(self, args):
        try:
            from treenets.workflows.serve import serve
        except ImportError as exc:  # Starlette and uvicorn are the optional extra `serve`
            raise TreenetsError(f"serve: {exc.name} is not installed (pip install 'treenets[serve]')") from None
        return serve(args.checkpoints, args.host, args.port, args.device, args.precision)

"""`treenets predict`: a model's prediction for the user's own input (`treenets.predictors`)."""

from __future__ import annotations

from dataclasses import asdict

from treenets.commands import Command, register
from treenets.commands.options import MODEL_HELP, add_device, add_precision, add_pretokenized, add_threads
from treenets.core.files import json_text


@register
class Predict(Command):
    name, order = "predict", 90
    help = ("score a sentence pair (relatedness), classify a sentence (sentiment) or a formula pair (logic), or score "
            "a sentence (LM)")
    description = ("Use a checkpoint on your own input; prints one JSON object: a class with its name (sentiment: "
                   "very negative ... very positive, or negative, positive; logic: the relation), a relatedness "
                   "score with its scale (SICK: 1, completely unrelated, to 5, very related), or a sentence's "
                   "log-probabilities.")

    def add_options(self, parser):
        parser.add_argument("checkpoint", metavar="MODEL", help="a relatedness, sentiment, logic or language model: "
                            + MODEL_HELP)
        parser.defer(_add_inputs_and_settings)

    def run(self, args):
        from treenets.predictors import Predictor, prediction_inputs

        given = {spec.name: getattr(args, spec.name) for spec in prediction_inputs()
                 if getattr(args, spec.name) is not None}
        result = Predictor.load(args.checkpoint, device=args.device).predict_inputs(given, args.pretokenized)
        print(json_text({k: v for k, v in asdict(result).items() if v is not None}))
        return 0


def _add_inputs_and_settings(parser) -> None:
    """The inputs the predictors declare (`Predictor.inputs`), each an option, then how to read and run."""
    from treenets.predictors import prediction_inputs

    for spec in prediction_inputs():
        parser.add_argument(spec.option, nargs=spec.values if spec.values > 1 else None, metavar=spec.metavar,
                            help=spec.help)
    parser.add_argument("--json", action="store_true",
                        help="print JSON: what predict prints in any case (one object), as parse --json does")
    add_pretokenized(parser)
    add_precision(parser)
    add_device(parser, default="cpu", default_text="cpu")
    add_threads(parser)

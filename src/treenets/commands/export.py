"""`treenets export`: a trained model written as a model folder with its card
(`treenets.workflows.export.export_model`)."""

from __future__ import annotations

from treenets.commands import Command, register
from treenets.commands.options import add_data_root, add_device, add_threads


@register
class Export(Command):
    name, order, long_job = "export", 110, True
    help = "write a trained model as a model folder (config.json, model.safetensors, vocab.txt, card)"
    description = ("Write a checkpoint as a model folder in the Hugging Face layout, loadable with "
                   "treenets.load(FOLDER) and by every command: config.json, model.safetensors, vocab.txt, "
                   "metrics.json and a README.md model card. The card holds the run's training figures; with "
                   "--measure it is filled with figures measured on the written files (every held-out split; for "
                   "a language model that parses, every layer on the NLTK sample, WSJ 22 and WSJ 24 and their "
                   "WSJ10 subsets beside the baselines).")

    def add_options(self, parser):
        parser.add_argument("checkpoint", metavar="MODEL", help="a checkpoint (best.pt) or model folder")
        parser.add_argument("out", metavar="DIR", help="the folder to write: a new or empty folder (or, with "
                                                       "--overwrite, a model folder)")
        parser.add_argument("--overwrite", action="store_true",
                            help="replace the model files of an existing model folder (config.json, "
                                 "model.safetensors, vocab.txt, metrics.json, README.md); other files in it are kept")
        parser.add_argument("--name", help="the model's name in its card (default: the folder's name)")
        parser.add_argument("--summary", default="", help="one line for the card: what the model is")
        parser.add_argument("--notes", metavar="MD", help="a markdown file for the card's Training section (recipe, "
                                                          "hardware, time, the command that reproduces it)")
        parser.add_argument("--config", metavar="YAML", help="the config file that reproduces the model, written as "
                                                             "the folder's config in place of the run's (only its "
                                                             "`train` section may differ: time limits of resumed "
                                                             "runs)")
        parser.add_argument("--half", action="store_true", help="store the weights in float16 (half the size)")
        parser.add_argument("--measure", action="store_true", help="measure the card's figures on the written files")
        add_device(parser, default="cpu", default_text="cpu")
        add_threads(parser)
        add_data_root(parser)

    def run(self, args):
        from treenets.workflows.export import export_model

        export_model(args.checkpoint, args.out, args.name, args.summary, args.notes, args.half, args.measure,
                     args.device, args.data, args.overwrite, config_file=args.config)
        return 0

"""`treenets train`: train a model from a YAML config (`treenets.workflows.train.run_training`)."""

from __future__ import annotations

from treenets.commands import Command, register
from treenets.commands.options import add_data_root, add_device, add_precision, path_name, positive_int
from treenets.core.schema import BACKENDS


@register
class Train(Command):
    name, order, long_job = "train", 10, True
    sets_threads = autocast = False  # --threads, --precision and --device are config values (train.threads, ...)
    help = "train a model from a YAML config"
    description = ("Train a model from a YAML config file, or a config shipped with treenets given by its name "
                   "(`treenets configs` lists them). Writes last.pt (resumable state), "
                   "best.pt (best validation weights), metrics.jsonl and config.yaml to the run folder. "
                   "SIGINT/SIGTERM save last.pt before exiting. Runs under `torchrun --nproc_per_node=N "
                   "-m treenets train ...` with DistributedDataParallel.")

    def add_options(self, parser):
        parser.add_argument("config", nargs="?", help="YAML config file or a shipped config's name (onlstm-ptb-small); "
                                                      "optional with --resume or --init (the saved config is used)")
        parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                            help="override a config value, e.g. --set optim.lr=10 (repeatable; values are YAML)")
        parser.add_argument("--out", type=path_name, metavar="DIR",
                            help="run folder (default: runs/<config name>; with --init and no "
                                                         "config, runs/<model>-init)")
        parser.add_argument("--resume", nargs="?", const="", metavar="CHECKPOINT",
                            help="continue from a last.pt (default: <run folder>/last.pt)")
        parser.add_argument("--init", metavar="MODEL",
                            help="start from the weights and vocabulary of a trained model (a checkpoint, a model "
                                 "folder or a zoo name), with a fresh optimizer and counters, under CONFIG or the "
                                 "model's own: fine-tuning, or more epochs for a shipped model")
        parser.add_argument("--overwrite", action="store_true",
                            help="start from scratch even if the run folder already holds a checkpoint")
        parser.add_argument("--max-steps", type=positive_int, metavar="N",
                            help="stop after N optimizer steps in all, resumed ones included (train.max_steps)")
        parser.add_argument("--max-minutes", type=float, metavar="M",
                            help="stop after M minutes of this run (train.max_minutes)")
        parser.add_argument("--threads", type=positive_int, metavar="N",
                            help="compute on N threads (train.threads; default: $TREENETS_THREADS, else every core)")
        parser.add_argument("--embeddings", metavar="FILE",
                            help="word vectors for relatedness/sentiment: a GloVe-format text file, or a .pth matrix "
                                 "in vocabulary order (data.embeddings)")
        parser.add_argument("--freeze-embeddings", action="store_true",
                            help="keep the word vectors fixed (model.freeze_embeddings)")
        parser.add_argument("--backend", choices=BACKENDS,
                            help="kernels: the C++ CPU kernels where they apply (auto), PyTorch only, the C++ "
                                 "kernels required, or steps fused by torch.compile (for GPUs) (train.backend)")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")
        add_precision(parser, default=None, default_text="train.precision of the config, fp32")
        add_device(parser, default=None, default_text="train.device of the config, auto")
        add_data_root(parser)

    def run(self, args):
        from treenets.workflows.train import run_training

        overrides = list(args.overrides)  # the options that stand for a config key, after --set
        for option, key in ((args.max_steps, "train.max_steps"), (args.max_minutes, "train.max_minutes"),
                            (args.threads, "train.threads"), (args.device, "train.device"),
                            (args.backend, "train.backend"), (args.precision, "train.precision"),
                            (args.embeddings, "data.embeddings"),
                            (args.freeze_embeddings or None, "model.freeze_embeddings")):
            if option is not None:
                overrides.append(f"{key}={option}")
        return run_training(args.config, overrides, args.out, args.resume, args.overwrite, args.data,
                            progress=not args.no_progress, init=args.init)

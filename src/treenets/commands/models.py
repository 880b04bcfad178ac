"""`treenets models`: the model zoo, listed or installed (`treenets.zoo`)."""

from __future__ import annotations

from treenets.commands import Command, register


@register
class Models(Command):
    name, order = "models", 120
    help = "list the trained models that ship with treenets, or install them"
    description = ("The model zoo: each model's name, task, headline figures, and where it is (the source "
                   "checkout's models/, the cache, or to download); `treenets models download` installs them.")

    def add_options(self, parser):
        parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
        actions = parser.add_subparsers(dest="models_command", metavar="ACTION")
        download = actions.add_parser(
            "download", help="install zoo models into the cache, verifying their sha256",
            description="Download zoo models into the cache ($TREENETS_CACHE, default ~/.cache/treenets), where "
                        "every command finds them by name, each file checked against its sha256 and the folder "
                        "renamed into place only when whole; a damaged copy in the cache is replaced. Prints each "
                        "model's folder.")
        download.add_argument("names", nargs="*", metavar="NAME", help="models to install (default: all)")
        download.add_argument("--from", dest="source", metavar="DIR|URL",
                              help="a copy of treenets' models/ folder (NAME/FILE under it): a folder, or a URL "
                                   "serving one (default: $TREENETS_MODELS_URL, else the URLs of the registry)")

    def run(self, args):
        from treenets.zoo import registry as zoo

        if args.models_command == "download":
            zoo.download(args.names or None, args.source)
        else:
            zoo.print_models(args.json)
        return 0

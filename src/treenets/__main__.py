"""`python -m treenets`, also how `torchrun ... -m treenets train` starts each of its processes."""

import os
import sys

from treenets.cli import main

code = main()
if int(os.environ.get("WORLD_SIZE", "1")) > 1:
    # A torchrun process whose work is over (its files written and closed, the process group left) ends here,
    # without the interpreter's teardown, where Gloo's threads can still abort it ("terminate called without an
    # active exception", pytorch/pytorch#190489: 1 of about 10 two-process runs on 2 busy cores after `close`).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
raise SystemExit(code)

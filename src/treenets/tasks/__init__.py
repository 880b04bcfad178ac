"""Tasks, one file each, and the one registry from task name to task class.

A task (a subclass of `treenets.tasks.base.Task`, decorated with `@register`) declares everything about
itself in its file: its name, config schema, data reading and batching, network builder, loss, metric and
the predictor that wraps a trained network. The config schema union, the training loop, `treenets.load`,
the CLI and `check-golden` all read this registry; adding a task is adding a module to this package (it is
found and imported by `all_tasks`) and a YAML config.

The layers below the tasks (the config schema, the predictors) import nothing from here: the registry hands
itself down to them when it is imported (`treenets.config.use_task_registry`), and the package imports it
first of all (`treenets/__init__.py`), so that they know the tasks whichever module a program imports.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from treenets.config import use_task_registry
from treenets.core.errors import TreenetsError

_TASKS: dict[str, type] = {}


def register(task: type) -> type:
    """Class decorator: add `task` to the registry under `task.name` (also from outside this package: the
    config schema, built from the registry, then includes it)."""
    if task.name in _TASKS and _TASKS[task.name] is not task:
        raise ValueError(f"two tasks are named {task.name!r}: {_TASKS[task.name]} and {task}")
    _TASKS[task.name] = task
    return task


@cache
def _import_task_modules() -> None:
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        importlib.import_module(f"{__name__}.{module.name}")


def all_tasks() -> dict[str, type]:
    """Task name -> task class, for every task module of this package, by name."""
    _import_task_modules()
    return dict(sorted(_TASKS.items()))


use_task_registry(all_tasks)


def make_task(config, vocab=None, root=None, device=None, rank=0, world=1, splits=None):
    """The task object for `config.task` (see `treenets.tasks.base.Task` for the arguments)."""
    return task_class(config.task)(config, vocab=vocab, root=root, device=device, rank=rank, world=world,
                                   splits=splits)


def task_class(name: str) -> type:
    """The task class registered as `name`."""
    tasks = all_tasks()
    if name not in tasks:
        raise TreenetsError(f"unknown task {name!r} (expected one of: {', '.join(tasks)})")
    return tasks[name]

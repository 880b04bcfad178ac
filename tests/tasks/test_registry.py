"""The task registry: one declaration per task, read by the config schema, the trainer and `treenets.load`."""

from __future__ import annotations

import pytest

from treenets.config import build_config, task_configs
from treenets.core.errors import TreenetsError
from treenets.predictors import LanguageModel, LogicClassifier, RelatednessPredictor, SentimentClassifier
from treenets.tasks import all_tasks, register, task_class
from treenets.tasks.base import Task
from treenets.tasks.metrics import AccuracyByOperators, BitsPerCharacter, Correlation, Perplexity, SentimentAccuracy


def test_every_task_declares_itself_once():
    tasks = all_tasks()
    expected = {"lm": (Perplexity, LanguageModel), "sentence-lm": (Perplexity, LanguageModel),
                "char-lm": (BitsPerCharacter, LanguageModel), "logic": (AccuracyByOperators, LogicClassifier),
                "relatedness": (Correlation, RelatednessPredictor), "sentiment": (SentimentAccuracy,
                                                                                   SentimentClassifier)}
    assert set(expected) <= set(tasks)  # the papers' tasks (a task added later declares itself the same way)
    for name, task in tasks.items():
        assert issubclass(task, Task) and task.name == name
        if name in expected:
            assert (task.Metric, task.Predictor) == expected[name]
        assert task.Config.model_fields["task"].annotation.__args__ == (name,)  # Literal[name]
    assert [c.__name__ for c in task_configs()] == [t.Config.__name__ for t in tasks.values()]


def test_unknown_task_is_a_clear_error():
    with pytest.raises(TreenetsError, match=f"unknown task 'mt' \\(expected one of: {', '.join(all_tasks())}\\)"):
        task_class("mt")


def test_a_second_task_of_the_same_name_is_refused():
    class Impostor(Task):
        name = "lm"

    with pytest.raises(ValueError, match="two tasks are named 'lm'"):
        register(Impostor)
    assert task_class("lm") is not Impostor


def test_the_config_union_is_built_from_the_registry():
    for name, task in all_tasks().items():
        config = build_config({"task": name})
        assert isinstance(config, task.Config)


@pytest.mark.parametrize(("program", "printed"), [
    ("from treenets.config import build_config; print(type(build_config({'task': 'logic'})).__name__)",
     "LogicConfig"),
    ("from treenets.predictors.base import prediction_inputs; print(*(i.name for i in prediction_inputs()))",
     "sentence pair parents parser tree"),
    ("from treenets.predictors import LanguageModel; print(LanguageModel.load('onlstm-ptb-small').bos)", "<eos>"),
])
def test_the_layers_below_the_tasks_know_them_whichever_module_a_program_imports(program, printed):
    """The config schema and the predictors import nothing from the tasks, which sit above them: the registry
    hands itself down to them, imported by the package itself, so that a program that imports only them knows
    every task (a program of its own: nothing this suite imported first stands in)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert (done.returncode, done.stdout.strip()) == (0, printed), done.stderr[-2000:]


def test_a_task_refuses_splits_it_does_not_have(tmp_path):
    config = build_config({"task": "sentence-lm", "data": {"train": [], "valid": []}})
    with pytest.raises(TreenetsError, match="task sentence-lm has the splits train, valid, not 'test'"):
        task_class("sentence-lm")(config, splits=("test",))


def test_a_task_declared_in_one_place_trains_evaluates_and_loads(tmp_path, corpus, monkeypatch):
    """A new task is its own class and config, nothing else: here a language model on the tiny corpus that
    reads every line backwards. Registering it makes its config valid, and the trainer, `treenets.load` and
    the predictor read it from the registry."""
    from typing import Literal

    import treenets
    from treenets import tasks
    from treenets.config import TrainConfig
    from treenets.core.optim import OptimConfig, SGDConfig
    from treenets.core.schema import Section
    from treenets.tasks.lm import LanguageModelConfig, LMLossConfig, LMTask, PTBDataConfig
    from treenets.workflows.training.trainer import Trainer

    class BackwardsConfig(Section):
        task: Literal["backwards-lm"]
        data: PTBDataConfig = PTBDataConfig()
        model: LanguageModelConfig
        loss: LMLossConfig = LMLossConfig()
        optim: OptimConfig = SGDConfig()
        train: TrainConfig = TrainConfig()

    class BackwardsLMTask(LMTask):
        name, Config = "backwards-lm", BackwardsConfig

        def __init__(self, config, **kwargs):
            super().__init__(config, **kwargs)
            self.streams = {split: stream[::-1] for split, stream in self.streams.items()}
            if "train" in self.splits:
                self.train_stream.columns = self._cut_train(0)

    monkeypatch.setattr(tasks, "_TASKS", dict(tasks._TASKS))  # the registry is restored afterwards
    register(BackwardsLMTask)
    try:
        from helpers import tiny_config

        raw = tiny_config(corpus, train={"max_steps": 2})
        config = build_config(dict(raw, task="backwards-lm"))
        assert isinstance(config, BackwardsConfig)
        result = Trainer(config, tmp_path / "run", progress=False, log=lambda *_: None).run()
        assert result.reason == "max_steps" and result.valid.key == "ppl"
        lm = treenets.load(tmp_path / "run" / "best.pt")
        assert isinstance(lm, LanguageModel) and lm.config.task == "backwards-lm" and lm.eos == "<eos>"
    finally:
        monkeypatch.undo()
    with pytest.raises(TreenetsError, match="task: unknown 'backwards-lm'"):
        build_config({"task": "backwards-lm"})


REVERSE_LM = """\"\"\"A language model that reads every line backwards: the whole task.\"\"\"
from typing import Literal

from treenets.tasks import register
from treenets.tasks.lm import LMConfig, LMTask


class ReverseLMConfig(LMConfig):
    task: Literal["reverse-lm"]


@register
class ReverseLMTask(LMTask):
    name, Config = "reverse-lm", ReverseLMConfig

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        self.streams = {split: stream[::-1] for split, stream in self.streams.items()}
        if "train" in self.splits:
            self.train_stream.columns = self._cut_train(0)
"""


def test_adding_a_task_is_one_file_and_one_config(tmp_path, corpus, monkeypatch, capsys):
    """A module dropped into the tasks package is found, and `train`, `eval` and `predict` run it from its
    config; no other file changes (here the package's path is extended to a temporary folder, so that the
    source tree is not touched)."""
    import yaml
    from helpers import tiny_config

    from treenets import tasks
    from treenets.cli import main

    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "reverse_lm.py").write_text(REVERSE_LM)
    config = tmp_path / "reverse-lm.yaml"
    config.write_text(yaml.safe_dump({**tiny_config(corpus, train={"max_steps": 3}), "task": "reverse-lm"}))
    monkeypatch.setattr(tasks, "_TASKS", dict(tasks._TASKS))  # the registry and the path are restored afterwards
    monkeypatch.setattr(tasks, "__path__", [*tasks.__path__, str(tmp_path / "more")])
    tasks._import_task_modules.cache_clear()
    try:
        assert "reverse-lm" in all_tasks()
        assert main(["train", str(config), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
        assert main(["eval", str(tmp_path / "run" / "best.pt"), "--split", "test"]) == 0
        assert main(["predict", str(tmp_path / "run" / "best.pt"), "--sentence", "the cat"]) == 0
        assert '"tokens": ["the", "cat"]' in capsys.readouterr().out
    finally:
        monkeypatch.undo()
        tasks._import_task_modules.cache_clear()
        import sys

        sys.modules.pop("treenets.tasks.reverse_lm", None)
    assert "reverse-lm" not in all_tasks()


def test_an_evaluation_reports_the_units_it_announced(corpus, data_root):
    """`eval_units` is the total of an evaluation's progress bar: it must equal what `evaluate` reports."""
    from helpers import tiny_config

    import treenets
    from treenets.tasks import make_task

    config = build_config(tiny_config(corpus))
    for task, net, split in [(make_task(config), None, "valid"),
                             (make_task(treenets.load("treelstm-sst").config, treenets.load("treelstm-sst").vocab,
                                        splits=("valid",)), treenets.load("treelstm-sst").net, "valid")]:
        net = net if net is not None else task.build_model()
        for batch_size in (None, 3):
            reported = []
            task.evaluate(net, split, batch_size=batch_size, progress=reported.append)
            assert task.eval_units(split, batch_size) == sum(reported)

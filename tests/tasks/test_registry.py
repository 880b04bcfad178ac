"""The task registry: one declaration per task, read by the config schema, the trainer and `treenets.load`."""

from __future__ import annotations

import pytest

from treenets.config import build_config, task_configs
from treenets.errors import TreenetsError
from treenets.predictors import LanguageModel, LogicClassifier, RelatednessPredictor, SentimentClassifier
from treenets.tasks import all_tasks, register, task_class
from treenets.tasks.base import Task
from treenets.tasks.metrics import AccuracyByOperators, BitsPerCharacter, Correlation, Perplexity, SentimentAccuracy


def test_every_task_declares_itself_once():
    tasks = all_tasks()
    assert sorted(tasks) == ["char-lm", "lm", "logic", "relatedness", "sentence-lm", "sentiment"]
    expected = {"lm": (Perplexity, LanguageModel), "sentence-lm": (Perplexity, LanguageModel),
                "char-lm": (BitsPerCharacter, LanguageModel), "logic": (AccuracyByOperators, LogicClassifier),
                "relatedness": (Correlation, RelatednessPredictor), "sentiment": (SentimentAccuracy,
                                                                                   SentimentClassifier)}
    for name, task in tasks.items():
        assert issubclass(task, Task) and task.name == name
        assert (task.Metric, task.Predictor) == expected[name]
        assert task.Config.model_fields["task"].annotation.__args__ == (name,)  # Literal[name]
    assert [c.__name__ for c in task_configs()] == [t.Config.__name__ for t in tasks.values()]


def test_unknown_task_is_a_clear_error():
    with pytest.raises(TreenetsError, match="unknown task 'mt' \\(expected one of: char-lm, lm, logic, "):
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
    from treenets.optim import OptimConfig, SGDConfig
    from treenets.schema import Section
    from treenets.tasks.lm import LanguageModelConfig, LMLossConfig, LMTask, PTBDataConfig
    from treenets.train import Trainer

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
            self.streams = {split: stream.flip(0) for split, stream in self.streams.items()}
            if "train" in self.splits:
                self.train_stream.batched = self._cut_train(0)

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
        from treenets.config import schema_changed

        schema_changed()
    with pytest.raises(TreenetsError, match="task: unknown 'backwards-lm'"):
        build_config({"task": "backwards-lm"})

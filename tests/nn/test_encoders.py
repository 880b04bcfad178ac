"""A classifier's `encoder:` section (`treenets.nn.encoders.ClassifierConfig`): nested as written, and a section
of treenets 0.11 (the encoder's fields flat beside the classifier's) read as nested, each field to the section that
declares it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from treenets.config import build_config
from treenets.core.errors import TreenetsError
from treenets.nn.pair_classifier import PairClassifierConfig
from treenets.tasks.logic import LogicModelSection
from treenets.tasks.sentiment import SentimentModelSection


def test_a_flat_section_is_read_as_the_nested_one():
    flat = SentimentModelSection(name="ordered-memory", emb_size=6, mem_size=5, slots=4, dropout=0.3)
    nested = SentimentModelSection(encoder={"name": "ordered-memory", "mem_size": 5, "slots": 4}, emb_size=6,
                                   dropout=0.3)
    assert flat == nested and flat.encoder.slots == 4 and flat.dropout == 0.3 and flat.name == "ordered-memory"


def test_a_field_both_declare_goes_to_both_and_the_other_encoders_fields_are_dropped():
    # as 0.11 saved a logic model: `dropout` the ON-LSTM's between layers and the classifier's; `slots` Ordered
    # Memory's, which an ON-LSTM never read
    config = PairClassifierConfig(name="onlstm", emb_size=6, hidden_size=8, chunk_size=4, dropout=0.3, slots=12)
    assert (config.dropout, config.encoder.dropout, config.encoder.hidden_size) == (0.3, 0.3, 8)
    assert "slots" not in config.encoder.model_dump() and "slots" not in config.model_dump()


def test_a_flat_section_without_a_name_takes_the_tasks_default_encoder():
    assert LogicModelSection(emb_size=6, hidden_size=8, chunk_size=4).encoder.name == "onlstm"
    assert SentimentModelSection().encoder.name == "binary-treelstm"
    with pytest.raises(ValidationError, match="encoder"):  # the classifier alone has no default
        PairClassifierConfig(emb_size=6)


def test_what_no_section_declares_is_refused_and_name_beside_encoder_too():
    with pytest.raises(TreenetsError, match=r"unknown key 'model.colour'"):
        build_config({"task": "logic", "model": {"name": "lstm", "colour": "red"}})
    with pytest.raises(TreenetsError, match=r"unknown 'transformer' \(expected one of: onlstm, lstm, "
                                            r"binary-treelstm, ordered-memory\)"):
        build_config({"task": "logic", "model": {"name": "transformer"}})
    with pytest.raises(TreenetsError, match=r"name: the encoder is named by encoder.name"):
        build_config({"task": "logic", "model": {"name": "lstm", "encoder": {"name": "lstm"}}})
    with pytest.raises(TreenetsError, match=r"unknown key 'model.encoder.chunk_size'"):  # the LSTM has no chunks
        build_config({"task": "logic", "model": {"encoder": {"name": "lstm", "chunk_size": 4}}})

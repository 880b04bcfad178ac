"""A network is built only when it fits (`treenets.nn.utils.check_fits`): a config that asks too much is an error
naming where it came from; the check builds on the meta device, costing neither random draws nor the second that
`normal_`'s meta kernel takes to import torch._dynamo (every command that loads a model pays it at its start)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from treenets.core.errors import TreenetsError
from treenets.nn.utils import build_within_memory, check_fits


def test_a_network_larger_than_half_the_memory_is_refused_naming_where():
    with pytest.raises(TreenetsError, match=r"models/x/config.json: the model has 1,000,000,000,000 parameters"):
        check_fits(lambda: torch.nn.Linear(10**6, 10**6, bias=False), "models/x/config.json")


def test_the_check_draws_nothing_from_the_generator():
    torch.manual_seed(0)
    checked = build_within_memory(lambda: torch.nn.Embedding(7, 3), "config").weight
    torch.manual_seed(0)
    torch.testing.assert_close(checked, torch.nn.Embedding(7, 3).weight, rtol=0, atol=0)


def test_the_check_imports_no_compiler():
    code = ("import sys, torch\nfrom treenets.nn.utils import check_fits\n"
            "check_fits(lambda: torch.nn.Sequential(torch.nn.Embedding(50, 8), torch.nn.LSTM(8, 8)), 'config')\n"
            "assert 'torch._dynamo' not in sys.modules, 'torch._dynamo imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True)

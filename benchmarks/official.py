"""The official ON-LSTM and PRPN code, imported from folders the user names, run as their training scripts run it.

    git clone https://github.com/yikangshen/Ordered-Neurons   # model.py, ON_LSTM.py, splitcross.py, ...
    git clone https://github.com/yikangshen/PRPN              # model_PRPN.py, ReadingNetwork.py, ...
    python benchmarks/lm_throughput.py --device cuda --official-onlstm Ordered-Neurons --official-prpn PRPN

Nothing of theirs is copied here or committed. Their step is that of their `main.py` / `main_LM.py`: the hidden
state detached, `zero_grad`, the forward, the loss (the ON-LSTM's `SplitCrossEntropyLoss` with AR and TAR,
PRPN's cross-entropy), `backward`, `clip_grad_norm_`, the optimiser's step (SGD; PRPN's Adam with betas (0,
0.999)); their evaluation runs the forward and the loss with autograd on, as their `evaluate()` does.

Their code was written for PyTorch 0.4; on today's PyTorch three things of it fail, and `load` mends them without
changing what is computed: the ON-LSTM's DropConnect mask is drawn as uint8, which `masked_fill` no longer
takes (drawn as bool here, the same Bernoulli draw); PRPN's `LSTMCell` derives from `RNNCellBase` with no
arguments, which its constructor now requires (it derives from `nn.Module` here: it defines its own weights
and forward), and reads the name `torch` from `from torch.nn.modules.rnn import *`, which no longer exports it.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

ONLSTM_FILES = ("model.py", "ON_LSTM.py", "splitcross.py", "locked_dropout.py", "embed_regularize.py")
PRPN_FILES = ("model_PRPN.py", "ParsingNetwork.py", "ReadingNetwork.py", "PredictNetwork.py", "LSTMCell.py",
              "blocks.py")


def _import(folder: str | Path, files: tuple[str, ...], names: tuple[str, ...]):
    folder = Path(folder).resolve()
    missing = [name for name in files if not (folder / name).is_file()]
    if missing:
        sys.exit(f"official code: {folder} lacks {', '.join(missing)} (a clone of the official repository expected)")
    sys.path.insert(0, str(folder))
    return [importlib.import_module(name) for name in names]


def _boolean_dropconnect_mask(self):
    """The official `LinearDropConnect.sample_mask` with a bool mask (the same draw)."""
    if self.dropout == 0.0:
        self._weight = self.weight
    else:
        mask = self.weight.new_empty(self.weight.size(), dtype=torch.bool).bernoulli_(self.dropout)
        self._weight = self.weight.masked_fill(mask, 0.0)


def _repackage(hidden):
    if isinstance(hidden, torch.Tensor):
        return hidden.detach()
    return type(hidden)(_repackage(h) for h in hidden)


class OfficialONLSTM:
    """The official ON-LSTM language model (`RNNModel`) and its training and evaluation steps."""

    def __init__(self, folder, vocab, emb, hid, layers, chunk, dropout, dropouth, dropouti, dropoute, wdrop, device):
        model, on_lstm, splitcross = _import(folder, ONLSTM_FILES, ("model", "ON_LSTM", "splitcross"))
        on_lstm.LinearDropConnect.sample_mask = _boolean_dropconnect_mask
        self.model = model.RNNModel("LSTM", vocab, emb, hid, chunk, layers, dropout, dropouth, dropouti, dropoute,
                                    wdrop, tie_weights=True).to(device)
        self.criterion = splitcross.SplitCrossEntropyLoss(emb, splits=[], verbose=False).to(device)
        self.params = list(self.model.parameters()) + list(self.criterion.parameters())
        self.optimizer = torch.optim.SGD(self.params, lr=30.0, weight_decay=1.2e-6)

    def train_step(self, tokens, targets):
        model = self.model
        model.train()
        hidden = _repackage(model.init_hidden(tokens.size(1)))
        self.optimizer.zero_grad()
        output, hidden, rnn_hs, dropped_rnn_hs = model(tokens, hidden, return_h=True)
        raw_loss = self.criterion(model.decoder.weight, model.decoder.bias, output, targets.reshape(-1))
        last = rnn_hs[-1]
        loss = raw_loss + 2.0 * dropped_rnn_hs[-1].pow(2).mean() + 1.0 * (last[1:] - last[:-1]).pow(2).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.params, 0.25)
        self.optimizer.step()

    def eval_step(self, tokens, targets):
        model = self.model
        model.eval()
        hidden = model.init_hidden(tokens.size(1))
        output, hidden = model(tokens, hidden)
        return len(tokens) * self.criterion(model.decoder.weight, model.decoder.bias, output, targets.reshape(-1)).data


class OfficialPRPN:
    """The official PRPN language model and its training and evaluation steps (main_LM.py)."""

    def __init__(self, folder, vocab, emb, hid, layers, nslots, nlookback, dropout, idropout, rdropout, device):
        lstm_cell, = _import(folder, PRPN_FILES, ("LSTMCell",))
        lstm_cell.LSTMCell.__bases__ = (torch.nn.Module,)
        lstm_cell.torch = torch
        model_prpn, = _import(folder, PRPN_FILES, ("model_PRPN",))
        self.model = model_prpn.PRPN(vocab, emb, hid, layers, nslots, nlookback, 0.1, dropout, idropout, rdropout,
                                     True, True, 0).to(device)
        self.vocab = vocab
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=0.003, betas=(0.0, 0.999), eps=1e-9,
                                          weight_decay=1e-6)

    def train_step(self, tokens, targets):
        model = self.model
        model.train()
        hidden = _repackage(model.init_hidden(tokens.size(1)))
        self.optimizer.zero_grad()
        output, hidden = model(tokens, hidden)
        loss = F.cross_entropy(output.view(-1, self.vocab), targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()

    def eval_step(self, tokens, targets):
        model = self.model
        model.eval()
        hidden = model.init_hidden(tokens.size(1))
        output, hidden = model(tokens, hidden)
        return len(tokens) * F.cross_entropy(output.view(-1, self.vocab), targets.reshape(-1)).data

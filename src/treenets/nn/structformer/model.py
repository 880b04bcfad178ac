"""StructFormer (Shen, Tay, Zheng, Bahri, Metzler & Courville, ACL 2021: "StructFormer: Joint Unsupervised Induction
of Dependency and Constituency Structure from Masked Language Modeling"): a transformer whose self-attention is
gated by a dependency graph that a parser induces from syntactic distances and heights.

Notation: a batch of B sentences of L tokens (padded with `pad`), embeddings e_i of size D, H heads.

Parser (section 4.1), on the token embeddings alone::

    g  = tanh(LN(Conv(g)))  n_parser_layers times, from g = e (pads zeroed before each convolution)
    d_i = W_d tanh(LN(Conv_2(g_i, g_{i+1})))      distance of the gap after word i (the last word's: +1e9)
    h_i = W_h tanh(LN(W g_i + b))                  height of word i (pads: -1e9)

Distances are calibrated to the heights (eq. 9): they are lowered by the largest margin by which a gap beside a
span stands above the span's highest word, so that the word of greatest height has the greatest distance around
it and becomes the root. The official code takes that margin over the whole batch in its forward; its
evaluation parses one sentence at a time, where the margin is the sentence's own (`alone=True`).

Soft constituents (eq. 5-7): word l's constituent extends left over the gap k < l with probability
`gamma_lk = sigmoid((h_l - d_k) * tau_0)` (tau = `exp(_scaler)`); the left boundary is at i with probability
`p_left[l, i] = min_{i<=k<l} gamma_lk - min_{i-1<=k<l} gamma_lk` (a cumulative minimum: "every gap inside is
below the word"), the right one likewise (`p_right[l, j]`). `block[l, k]` is the probability that word k is inside
word l's constituent.

Parents (eq. 10-11): the head of a span [i, j] is word k in it with probability `softmax_{k in [i,j]}(h_k tau_1)`;
word l's parent distribution is the head of its constituent's parent span, marginalised over the constituent's
boundaries::

    parent[l, k] = sum_{i <= min(k, l), j >= max(k, l)} p_left[l, i] p_right[l, j] exp(h_k tau_1) / Z[i, j]

with `Z[i, j] = sum_{m=i..j} exp(h_m tau_1)`, and the diagonal set to 0 (a word is not its own parent). The
official code builds the `[B, L, L, L]` boundary and head tensors and sums them in an `L^4` einsum; here the sum
over j is one reverse `logcumsumexp` in log space and the sum over i one reduction, `L^3` operations in all, and
every term `exp(h_k tau_1) / Z[i, j]` is a probability (at most 1), so no exponential overflows whatever the
heights. `child = parent^T`; `sibling = parent child` (diagonal 0; the official code names it `cibling`).

Attention (section 4.2): layer n, head m mixes the relations with weights `softmax_r(_rel_weight[n, m])` (or a
sigmoid each, `weight_act`) into a dependency mask `M`, and attends with `sigmoid(q k^T / sqrt(D/H)) * M` in place of
a softmax (keys at pads get 0). With no relations it is the transformer baseline: a softmax attention over the
tokens. Each layer is pre-norm: `x + Attn(LN(x))`, then `y + FF(y)` with `FF = Linear(LeakyReLU(Linear(LN(y))))`.
The output layer shares the embedding's weights and has its own bias.

Parameter names are the official `state_dict`'s (`emb`, `layers.{n}.self_attn.q_proj`, `feedforward.{0,1,4}`,
`parser_layers.{i}.0.conv`, `distance_ff`, `height_ff`, `_rel_weight`, `_scaler`, ...), so an official checkpoint's
`state_dict` loads as it is (`convert.py`: `from_official`).
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from pydantic import Field, field_validator

from treenets.core.schema import PositiveInt, Probability, Section

RELATIONS = ("parent", "child", "sibling")
OFFICIAL_RELATIONS = {"head": "parent", "child": "child", "cibling": "sibling"}  # the official names -> ours
MAX_POSITIONS = 500  # rows of the positional embedding (the official size): the longest sentence it reads
_FAR = 1e9  # the official code's "infinitely" far distance, and height of a pad


class StructFormerOutput(NamedTuple):
    """What a forward pass gives. B sentences, L tokens, D features.

    hidden: [B, L, D] the output layer's input (after the final layer norm and dropout).
    distance: [B, L] each gap's distance (after word i; the last word's and pads' are 1e9 - margin).
    height: [B, L] each word's height (pads: -1e9).
    parent: [B, L, L] each word's parent distribution (`head` in the official code; rows of pads as it gives them).
    block: [B, L, L] the probability that word k is in word l's constituent.
    sibling: [B, L, L] `parent @ parent^T`, diagonal 0.
    mask: [layers, B * H, L, L] the dependency mask of each layer's attention (None for the transformer baseline).
    """

    hidden: torch.Tensor
    distance: torch.Tensor | None = None
    height: torch.Tensor | None = None
    parent: torch.Tensor | None = None
    block: torch.Tensor | None = None
    sibling: torch.Tensor | None = None
    mask: torch.Tensor | None = None


class Conv1d(nn.Module):
    """A convolution over the sequence that keeps its length: [B, L, D] -> [B, L, D]. An odd kernel is centred on
    each position; an even one (`2k`) reads positions i-k+1 .. i+k (the official code pads k on both sides and drops
    the first output)."""

    def __init__(self, size: int, kernel: int):
        super().__init__()
        self.shift = kernel % 2 == 0
        self.conv = nn.Conv1d(size, size, kernel, padding=kernel // 2 if self.shift else (kernel - 1) // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x.transpose(1, 2)).transpose(1, 2)
        return y[:, 1:] if self.shift else y


class Attention(nn.Module):
    """Multi-head self-attention: a softmax over the keys (the transformer), or, given a dependency mask, the
    StructFormer's `sigmoid(score) * mask`. `relative_bias`: a learned bias per head and distance |i - j|."""

    def __init__(self, size: int, heads: int, dropout: float, relative_bias: bool):
        super().__init__()
        if size % heads:
            raise ValueError(f"hidden_size {size} is not divisible by num_heads {heads}")
        self.heads = heads
        self.drop = nn.Dropout(dropout)
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(size, size) for _ in range(4))
        for linear in (self.q_proj, self.k_proj, self.v_proj, self.out_proj):
            nn.init.xavier_uniform_(linear.weight)
            nn.init.zeros_(linear.bias)
        # The official layout: 512 distances, |i - j| at column |i - j| + 256.
        self.relative_bias = nn.Parameter(torch.zeros(heads, 512)) if relative_bias else None

    def forward(self, x: torch.Tensor, key_bias: torch.Tensor, mask: torch.Tensor | None,
                alone: bool) -> torch.Tensor:
        """x [B, L, D]; key_bias [B, 1, 1, L] (0, or -inf at pads); mask [B, H, L, L] or None. -> [B, L, D]."""
        B, L, D = x.shape
        H = self.heads

        def split(t):  # [B, L, D] -> [B, H, L, D/H]
            return t.view(B, L, H, D // H).transpose(1, 2)

        q, k, v = split(self.q_proj(x) * (D // H) ** -0.5), split(self.k_proj(x)), split(self.v_proj(x))
        scores = q @ k.transpose(-1, -2) + key_bias  # [B, H, L, L]
        if self.relative_bias is not None:
            pos = torch.arange(L, device=x.device)
            bias = self.relative_bias[:, (pos[:, None] - pos[None, :]).abs() + 256]  # [H, L, L]
            if not alone and B > 1:
                # The official code adds the bias of head (b H + m) // B to head m of sentence b (it lays the heads
                # out sentence-major but repeats the biases head-major); a model it trained learned with that, so
                # the batch forward keeps it. A sentence alone (B = 1, the official evaluation) gets its own heads'.
                bias = bias[torch.arange(B * H, device=x.device) // B].view(B, H, L, L)
            scores = scores + bias
        weights = torch.softmax(scores, -1) if mask is None else torch.sigmoid(scores) * mask
        out = (self.drop(weights) @ v).transpose(1, 2).reshape(B, L, D)
        return self.out_proj(out)


class Layer(nn.Module):
    """A pre-norm transformer layer: `y = x + Drop(Attn(LN(x)))`, `y + Drop(FF(y))`, FF with a layer norm first."""

    def __init__(self, size: int, heads: int, dropout: float, dropout_attention: float, relative_bias: bool):
        super().__init__()
        self.self_attn = Attention(size, heads, dropout_attention, relative_bias)
        self.feedforward = nn.Sequential(nn.LayerNorm(size), nn.Linear(size, 4 * size), nn.LeakyReLU(),
                                         nn.Dropout(dropout), nn.Linear(4 * size, size))
        self.norm = nn.LayerNorm(size)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, key_bias, mask, alone):
        y = x + self.drop(self.self_attn(self.norm(x), key_bias, mask, alone))
        return y + self.drop(self.feedforward(y))


def calibrate(distance: torch.Tensor, height: torch.Tensor, real: torch.Tensor, alone: bool) -> torch.Tensor:
    """Distances lowered by the margin of eq. 9 (the batch's largest, or each sentence's own with `alone`).

    For every span [i, j] of real words, with `top` the greatest height in it, the margin is how far both gaps
    around the span stand above `top` (the smaller of `d_{i-1} - top` and `d_j - top`, at least 0; the gap before
    the first word is +1e9). distance [B, L], height [B, L] (pads -1e9), real [B, L] bool."""
    B, L = distance.shape
    upper = torch.ones(L, L, dtype=torch.bool, device=distance.device).triu()
    # top[b, i, j]: the greatest height over words i..j (j >= i).
    top = torch.cummax(height[:, None, :].expand(B, L, L).masked_fill(~upper, -_FAR), dim=-1).values
    before = F.pad(distance[:, :-1], (1, 0), value=_FAR)  # the gap before word i
    margin = torch.minimum(torch.relu(before[:, :, None] - top), torch.relu(distance[:, None, :] - top))
    # Spans over real words only; spans from the first word must also end before the last (its gap is +1e9).
    last = F.pad(real[:, 1:], (0, 1), value=False)
    counted = torch.cat([last[:, None, :], real[:, None, :].expand(B, L - 1, L)], dim=1) & upper
    margin = margin.masked_fill(~counted, 0)
    margin = margin.flatten(1).max(dim=1).values[:, None] if alone else margin.max()
    return distance - margin


def boundaries(distance: torch.Tensor, height: torch.Tensor, tau: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`p_left[b, l, i]` and `p_right[b, l, j]` [B, L, L]: the distributions of the left and right boundary of word
    l's constituent (eq. 5-7), from `gamma[l, k] = sigmoid((h_l - d_k) tau)`, the probability that gap k is below
    word l, and its cumulative minimum away from l."""
    L = distance.size(1)
    gamma = torch.sigmoid((height[:, :, None] - distance[:, None, :]) * tau)  # [B, l, k]
    ones = torch.ones_like(gamma)
    before = torch.ones(L, L, dtype=torch.bool, device=gamma.device).tril(-1)  # [l, k]: gap k is before word l
    # inside_left[l, i]: every gap k in [i, l) is below word l (1 for i >= l)
    inside_left = torch.where(before, gamma, ones).flip(-1).cummin(-1).values.flip(-1)
    p_left = (inside_left - F.pad(inside_left[..., :-1], (1, 0))).tril()
    # inside_right[l, j]: every gap k in [l, j) is below word l (1 for j <= l)
    gaps_after = F.pad(torch.where(before, ones, gamma)[..., :-1], (1, 0), value=1.0)
    inside_right = gaps_after.cummin(-1).values
    p_right = (inside_right - F.pad(inside_right[..., 1:], (0, 1))).triu()
    return p_left, p_right


def parents(p_left: torch.Tensor, p_right: torch.Tensor, logits: torch.Tensor, real: torch.Tensor,
            in_logs: bool = False) -> torch.Tensor:
    """Each word's parent distribution [B, L, L] (eq. 10-11; see the module's doc), in `L^3` operations.

    p_left, p_right [B, L, L] (`boundaries`); logits [B, L] the heights times tau_1 (pads: -1e9 tau_1); real [B, L].

    The sum over j, `V[l, i, k] = sum_{j >= k} p_right[l, j] / Z[i, j]`, is a cumulative sum (over j reversed, so
    that no `L^3` tensor is flipped), and the sum over i a batched product: `parent[l, k] = exp(s_k) sum_{i <= k}
    p_left[l, i] V[l, i, k]`. Every exponent is shifted by the sentence's greatest s, `exp(s_k - c)` and
    `exp(c - log Z[i, j])`, which holds all digits while `c - log Z` stays within 60 (float32; 600 in float64); where
    it does not (heights times tau_1 that far apart), or with `in_logs`, the same sums run in log space
    (`logcumsumexp`), where every term is a probability, at several times the cost.

    The rows of pads are what the official code gives them: their constituent is the pad alone, whose head
    distribution puts `-1e9 tau_1` on the pad and the fill `-1e9` on every other word."""
    B, L = logits.shape
    device, dtype = logits.device, logits.dtype
    index = torch.arange(L, device=device)
    upper = index[:, None] <= index[None, :]  # [i, j]: i <= j
    # Left out of a log-sum-exp: a finite "minus infinity", so that no gradient meets -inf - (-inf).
    never = -1e30
    # log Z[i, j] = log sum_{m=i..j} exp(s_m), for j >= i (a cumulative log-sum-exp along j; [B, L, L]).
    log_z = torch.logcumsumexp(logits[:, None, :].expand(B, L, L).masked_fill(~upper, never), dim=-1)
    usable = upper & real[:, None, :]  # [B, i, j]: spans ending on a real word
    top = logits.masked_fill(~real, never).max(dim=1, keepdim=True).values  # c, the greatest s of each sentence
    shift = (top[:, :, None] - log_z).masked_fill(~usable, never)  # c - log Z[i, j]
    if not in_logs and shift.max() <= (60.0 if dtype != torch.float64 else 600.0):
        # reversed along j: v[l, i, k'] = sum_{j' <= k'} p_right[l, L-1-j'] exp(c - log Z[i, L-1-j'])
        v = (p_right.flip(-1)[:, :, None, :] * torch.exp(shift).flip(-1)[:, None, :, :]).cumsum(-1)
        v = v.masked_fill(~upper.flip(-1)[None, None], 0.0)  # i <= k = L-1-k'
        inside = (p_left[:, :, None, :] @ v).squeeze(2).flip(-1)  # sum over i, [B, l, k]
        parent = torch.exp(logits - top)[:, None, :] * inside
    else:
        log_right = torch.log(p_right.clamp_min(torch.finfo(dtype).tiny))
        terms = (log_right[:, :, None, :] - log_z[:, None, :, :]).masked_fill(~usable[:, None], never)
        log_v = torch.logcumsumexp(terms.flip(-1), dim=-1).flip(-1)  # log V[l, i, k]
        exponent = (logits[:, None, None, :] + log_v).masked_fill(~upper[None, None], -torch.inf)  # each <= 0
        parent = (p_left[..., None] * torch.exp(exponent)).sum(dim=2)
    if L > 1:
        # Rows of pads: the softmax over (-1e9 tau_1 at the pad, -1e9 at each of the L - 1 others), as the official
        # code computes it in the model's dtype: 1 / (L - 1 + exp(gap)) for each other word, with `gap` the pad's
        # logit above the fill (the difference of two floats near -1e9 is exact), written as a sigmoid so that no
        # gradient meets an infinity.
        gap = (logits + _FAR).masked_fill(real, 0.0)
        each_other = torch.sigmoid(math.log(L - 1) - gap) / (L - 1)  # [B, L]
        parent = torch.where(real[:, :, None], parent, each_other[:, :, None].expand(B, L, L))
    return parent.masked_fill(torch.eye(L, dtype=torch.bool, device=device), 0.0)


def _float32_at_least(x: torch.Tensor) -> torch.Tensor:
    """`x` in float32 when a bf16 block made it bfloat16 (the structure is computed in float32 at least; a float64
    model stays float64)."""
    return x.to(torch.promote_types(x.dtype, torch.float32))


class StructFormer(nn.Module):
    """The StructFormer masked language model (or, with no `relations`, the transformer baseline).

    Args (official names in brackets):
        vocab_size [ntokens]: rows of the embedding and outputs of the output layer.
        hidden_size [hidden_size]: D, the size of embeddings and hidden states.
        num_layers [nlayers], num_heads [nhead]: transformer layers, attention heads (D divisible by it).
        dropout [dropout]: on each layer's residual branches, inside the feed-forward network and on the output.
        dropout_attention [dropatt]: on the attention weights.
        relative_bias [relative_bias]: a learned attention bias per head and distance.
        position_embedding [pos_emb]: learned position embeddings added to the token embeddings.
        pad [pad]: the padding token's id.
        parser_layers [n_parser_layers], conv_size [conv_size]: the parser's convolutions.
        relations [relations]: the relations each layer's attention mixes (`parent`, `child`, `sibling`); none: the
            transformer.
        relation_activation [weight_act]: `softmax` over a head's relations, or a `sigmoid` each.
    """

    def __init__(self, vocab_size: int, hidden_size: int = 512, num_layers: int = 8, num_heads: int = 8,
                 dropout: float = 0.1, dropout_attention: float = 0.0, relative_bias: bool = False,
                 position_embedding: bool = True, pad: int = 0, parser_layers: int = 3, conv_size: int = 9,
                 relations: tuple[str, ...] = ("parent", "child"), relation_activation: str = "softmax"):
        super().__init__()
        unknown = [r for r in relations if r not in RELATIONS]
        if unknown:
            raise ValueError(f"relations {unknown}: expected some of {RELATIONS}")
        self.pad, self.num_layers, self.num_heads = pad, num_layers, num_heads
        self.relations, self.relation_activation = tuple(relations), relation_activation
        self.drop = nn.Dropout(dropout)
        self.emb = nn.Embedding(vocab_size, hidden_size)
        self.longest = MAX_POSITIONS if position_embedding else None  # the longest sentence it reads (None: any)
        if position_embedding:
            self.pos_emb = nn.Embedding(MAX_POSITIONS, hidden_size)
        self.layers = nn.ModuleList(Layer(hidden_size, num_heads, dropout, dropout_attention, relative_bias)
                                    for _ in range(num_layers))
        self.norm = nn.LayerNorm(hidden_size)
        self.output_layer = nn.Linear(hidden_size, vocab_size)
        self.output_layer.weight = self.emb.weight
        nn.init.uniform_(self.emb.weight, -0.1, 0.1)
        if position_embedding:
            nn.init.uniform_(self.pos_emb.weight, -0.1, 0.1)
        nn.init.zeros_(self.output_layer.bias)
        if self.relations:
            self.parser_layers = nn.ModuleList(
                nn.Sequential(Conv1d(hidden_size, conv_size), nn.LayerNorm(hidden_size, elementwise_affine=False),
                              nn.Tanh()) for _ in range(parser_layers))
            self.distance_ff = nn.Sequential(Conv1d(hidden_size, 2),
                                             nn.LayerNorm(hidden_size, elementwise_affine=False), nn.Tanh(),
                                             nn.Linear(hidden_size, 1))
            self.height_ff = nn.Sequential(nn.Linear(hidden_size, hidden_size),
                                           nn.LayerNorm(hidden_size, elementwise_affine=False), nn.Tanh(),
                                           nn.Linear(hidden_size, 1))
            self._rel_weight = nn.Parameter(torch.empty(num_layers, num_heads, len(self.relations)).normal_(0, 0.1))
            self._scaler = nn.Parameter(torch.zeros(2))  # log tau_0 (constituents), log tau_1 (heads)

    @property
    def induces_structure(self) -> bool:
        """Whether it parses (a StructFormer) or not (the transformer baseline)."""
        return bool(self.relations)

    def relation_weights(self) -> torch.Tensor:
        """[layers, heads, relations]: how much each head of each layer attends along each relation."""
        if self.relation_activation == "sigmoid":
            return torch.sigmoid(self._rel_weight)
        return torch.softmax(self._rel_weight, dim=-1)

    def parse(self, tokens: torch.Tensor, alone: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """The parser: distances and heights [B, L] of tokens [B, L], calibrated (`calibrate`)."""
        real = tokens != self.pad
        g = self.emb(tokens)
        for layer in self.parser_layers:
            g = layer(g.masked_fill(~real[..., None], 0.0))
        height = _float32_at_least(self.height_ff(g).squeeze(-1)).masked_fill(~real, -_FAR)
        last = F.pad(real[:, 1:], (0, 1), value=False)
        distance = _float32_at_least(self.distance_ff(g).squeeze(-1)).masked_fill(~last, _FAR)
        return calibrate(distance, height, real, alone), height

    def structure(self, tokens: torch.Tensor, distance: torch.Tensor, height: torch.Tensor):
        """Soft constituents and dependencies: `(parent, block, sibling)` [B, L, L] each."""
        real = tokens != self.pad
        tau = _float32_at_least(self._scaler).exp()
        p_left, p_right = boundaries(distance, height, tau[0])
        parent = parents(p_left, p_right, height * tau[1], real)
        eye = torch.eye(tokens.size(1), dtype=torch.bool, device=tokens.device)
        sibling = (parent @ parent.transpose(1, 2)).masked_fill(eye, 0.0)
        # block[l, k]: k <= l inside if the left boundary is at or before k; k > l if the right one is at or after k.
        block = p_left.cumsum(-1).tril() + p_right.flip(-1).cumsum(-1).flip(-1).triu(1)
        return parent, block, sibling

    def forward(self, tokens: torch.Tensor, alone: bool = False) -> StructFormerOutput:
        """tokens [B, L] (batch-major, right-padded with `pad`) -> `StructFormerOutput`; the logits are
        `output_layer(out.hidden)`. `alone`: every sentence parsed as if it were alone in its batch (the official
        evaluation, a batch of one) instead of as the official forward computes a batch (its margin over the
        batch, its relative biases)."""
        B, L = tokens.shape
        if L > MAX_POSITIONS and hasattr(self, "pos_emb"):
            raise ValueError(f"a sentence of {L} tokens: the position embedding has {MAX_POSITIONS} rows")
        key_bias = torch.zeros(B, 1, 1, L, device=tokens.device).masked_fill(
            (tokens == self.pad)[:, None, None, :], -torch.inf)
        x = self.emb(tokens)
        if hasattr(self, "pos_emb"):
            x = x + self.pos_emb(torch.arange(L, device=tokens.device))[None]
        structure = {}
        masks = [None] * self.num_layers
        if self.relations:
            distance, height = self.parse(tokens, alone)
            parent, block, sibling = self.structure(tokens, distance, height)
            relation = {"parent": parent, "child": parent.transpose(1, 2), "sibling": sibling}
            stacked = torch.stack([relation[r] for r in self.relations], dim=1)  # [B, R, L, L]
            mask = torch.einsum("nhr,brij->nbhij", self.relation_weights().to(stacked.dtype), stacked)
            masks = list(mask)
            structure = dict(distance=distance, height=height, parent=parent, block=block, sibling=sibling,
                             mask=mask.reshape(self.num_layers, B * self.num_heads, L, L))
        for layer, mask in zip(self.layers, masks):
            x = layer(x, key_bias, mask, alone)
        return StructFormerOutput(self.drop(self.norm(x)), **structure)


class StructFormerConfig(Section):
    """StructFormer (or, with `relations: []`, the transformer baseline); the official `main.py` option in
    brackets, its defaults the paper's PTB configuration."""

    name: Literal["structformer"] = "structformer"
    hidden_size: PositiveInt = 512  # [nhid]
    num_layers: PositiveInt = 8  # [nlayers]
    num_heads: PositiveInt = 8  # [nheads]
    dropout: Probability = 0.1  # [dropout]
    dropout_attention: Probability = 0.0  # [dropatt]
    relative_bias: bool = False  # [relative_bias]
    position_embedding: bool = True  # [pos_emb] (the paper's PTB runs set it)
    parser_layers: PositiveInt = 3  # [n_parser_layers]
    conv_size: PositiveInt = 9  # [conv_size]
    relations: tuple[Literal["parent", "child", "sibling"], ...] = ("parent", "child")  # [relations]; () transformer
    relation_activation: Literal["softmax", "sigmoid"] = "softmax"  # [weight_act]
    mask_rate: Probability = Field(0.3, gt=0.0)  # [mask_rate]: the share of real tokens masked in training

    @field_validator("relations")
    @classmethod
    def _distinct(cls, value):
        if len(set(value)) != len(value):
            raise ValueError(f"relations {list(value)}: each relation once")
        return value

    @property
    def longest(self) -> int | None:
        """The longest sentence the network reads: the position embedding's rows (None without one: any)."""
        return MAX_POSITIONS if self.position_embedding else None

    def build(self, vocab_size: int, pad: int = 0) -> StructFormer:
        """The network of this config, freshly initialised."""
        return StructFormer(vocab_size, pad=pad, **self.model_dump(exclude={"name", "mask_rate"}))

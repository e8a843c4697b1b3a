"""A retrieval task trained with and without 1/sqrt(d_k), over seeds: the engine of benchmarks/bench_saturation.py.

The chapter itself (notebooks/05_saturation_bug.ipynb) trains the simpler ``toy`` on the page.

Task. Each example is a sequence of ``seq_len`` random key tokens x_j (d_model,
unit variance per component) carrying random labels y_j in 0..n_classes-1, and
``seq_len`` queries: the same tokens in a shuffled order. Query i must find its
own token among the keys and answer that token's label.

Model. One attention layer whose only learnable parameters are W_q and W_k
(d_model, d_k). The value of key j is its label as a one-hot vector, so the
attention output is "how much weight sits on each label"; a fixed readout
(``readout_gain`` times that) gives the class logits and a cross-entropy loss.
The loss therefore sits *behind* the softmax, as in a real network, and every
gradient reaching W_q and W_k must pass through the softmax Jacobian.

Training is torch (float32, CPU, ``torch.optim.Adam``, or plain ``torch.optim.SGD`` with
``optimizer="sgd"``), seeded and single-threaded,
so a run is bit-for-bit reproducible. Results come back as numpy arrays. The config
is validated and the row diagnostics (score spread, entropy, max weight) are
computed by the numpy core (``qkv_viz.core``), so there is one source of truth.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import torch
import torch.nn.functional as F

from qkv_viz.core.attention import resolve_scale
from qkv_viz.core.diagnostics import entropy, max_weight, score_std
from qkv_viz.core.validate import positive_int, positive_number

# The chapter's runs, by name, each at the learning rate matched to the scaled run's
# (``matched_lr``), so they differ only in where the scores start. "small init" (also
# accepted by ``config_for``) is the control: no factor, W_q, W_k started small enough
# that the scores start with std about 1; at the matched rate it *is* the scaled run.
RUNS = ("scaled", "unscaled", "over-scaled")
OPTIMIZERS = {"adam": torch.optim.Adam, "sgd": torch.optim.SGD}


def matched_lr(lr: float, factor: float, d_k: int) -> float:
    """The Adam learning rate at which a run with score factor ``factor`` moves like the scaled run at ``lr``.

    A factor c on q . k is the same as multiplying W_q and W_k by sqrt(c / c0) each,
    with c0 = 1/sqrt(d_k). Adam moves every parameter by about lr per step whatever its
    gradient's size, so the parameters a = sqrt(c0 / c) times larger need a learning
    rate a times larger: lr * sqrt(c0 / c). Unscaled (c = 1): lr / d_k^(1/4).
    """
    positive_number("lr", lr)
    positive_number("factor", factor)
    d_k = positive_int("d_k", d_k)
    return lr * math.sqrt(1.0 / (math.sqrt(d_k) * factor))


def control_init_std(d_model: int, d_k: int) -> float:
    """Init std of W_q, W_k that gives *unscaled* scores a std of about 1 at step 0.

    With unit-variance inputs, q = x W_q has entries of variance d_model * std^2,
    and q . k has variance d_k * (d_model * std^2)^2. Setting that to 1 gives
    std = 1 / (sqrt(d_model) * d_k^(1/4)): the usual 1/sqrt(d_model) shrunk by
    d_k^(1/4) on each of W_q and W_k, i.e. 1/sqrt(d_k) on their product.
    """
    d_model, d_k = positive_int("d_model", d_model), positive_int("d_k", d_k)
    return 1.0 / (math.sqrt(d_model) * d_k ** 0.25)


@dataclass(frozen=True)
class SaturationConfig:
    """One training run. ``scale``: True (1/sqrt(d_k)), False/None (none) or a finite number > 0.

    Every field is checked with the core's validators (``positive_int``,
    ``positive_number``, ``resolve_scale``), so this config accepts exactly
    what the numpy maths accepts.
    """

    d_k: int = 512
    scale: object = True
    d_model: int = 64
    seq_len: int = 16
    n_classes: int = 8
    batch_size: int = 8
    steps: int = 150
    lr: float = 1e-3
    init_std: float | None = None  # None -> 1/sqrt(d_model), so q and k have unit variance
    readout_gain: float = 6.0
    seed: int = 0
    optimizer: str = "adam"  # "adam" or "sgd" (plain gradient steps: lr times the gradient)

    def __post_init__(self):
        for name in ("d_k", "d_model", "seq_len", "n_classes", "batch_size", "steps"):
            positive_int(name, getattr(self, name))
        if self.n_classes < 2 or self.steps < 3:
            raise ValueError(f"need n_classes >= 2 and steps >= 3, got {self.n_classes}, {self.steps}")
        positive_number("lr", self.lr)
        positive_number("readout_gain", self.readout_gain)
        if self.init_std is not None:
            positive_number("init_std", self.init_std)
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)):
            raise TypeError(f"seed must be an int, got {type(self.seed).__name__}: {self.seed!r}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0 (torch.Generator.manual_seed), got {self.seed}")
        if not isinstance(self.optimizer, str) or self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {sorted(OPTIMIZERS)}, got {self.optimizer!r}")
        self.factor  # validates scale

    @cached_property
    def factor(self) -> float:
        """The number multiplying q . k: the core's ``resolve_scale(scale, d_k)`` (computed once)."""
        return float(resolve_scale(self.scale, self.d_k))


@dataclass
class SaturationResult:
    """Per-step records (numpy, length ``steps``) and attention snapshots of a probe example.

    grad_norm_q/k: norm of the batch gradient on W_q/W_k (what the optimiser sees).
    grad_q_median: median over the batch's queries of the norm of each query's
    *own* gradient on W_q (the typical example's contribution).
    entropy (nats) and max_weight are means over all attention rows.
    snapshots: {step: (scores (T, T), weights (T, T))} of one fixed probe example;
    targets (T,): the key index each query of the probe should attend to.
    """

    config: SaturationConfig
    steps: np.ndarray
    loss: np.ndarray
    acc: np.ndarray
    grad_norm_q: np.ndarray
    grad_norm_k: np.ndarray
    grad_q_median: np.ndarray
    entropy: np.ndarray
    max_weight: np.ndarray
    score_std: np.ndarray
    snapshots: dict = field(default_factory=dict)
    targets: np.ndarray | None = None
    init_grad_per_query: np.ndarray | None = None  # (B*T,) per-query |grad W_q| at step 0

    def final_acc(self, window: int = 20) -> float:
        """Mean training accuracy over the last ``window`` steps (fresh data every step)."""
        return self.acc_at(len(self.acc), min(window, len(self.acc)))

    def acc_at(self, step: int, window: int = 20) -> float:
        """Mean training accuracy over the ``window`` steps before ``step``."""
        if not window <= step <= len(self.acc):
            raise ValueError(f"need window <= step <= {len(self.acc)}, got step={step}, window={window}")
        return float(self.acc[step - window:step].mean())

    def steps_to(self, acc: float = 0.9, window: int = 10) -> int | None:
        """First step at which the ``window``-step running accuracy reaches ``acc`` (None: never)."""
        running = np.convolve(self.acc, np.ones(window) / window, mode="valid")
        hits = np.flatnonzero(running >= acc)
        return int(hits[0] + window - 1) if hits.size else None


@contextmanager
def _single_threaded_torch(threads: int = 1):
    """One torch thread for the duration of a run, so runs repeat bit for bit.

    Every op here (matmul, softmax, gather, cross-entropy and their backward) is
    deterministic on the CPU with one thread; tests/chapters/ch05_saturation checks
    that a run repeats exactly.
    """
    old_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(old_threads)


def make_batch(gen: torch.Generator, cfg: SaturationConfig):
    """One batch: keys x (B, T, d_model), labels (B, T), queries (B, T, d_model), targets (B, T).

    targets[b, i] is the key index query i must attend to; queries are the keys shuffled.
    """
    B, T = cfg.batch_size, cfg.seq_len
    x = torch.randn(B, T, cfg.d_model, generator=gen)  # (B, T, d_model), unit variance
    labels = torch.randint(0, cfg.n_classes, (B, T), generator=gen)  # (B, T)
    targets = torch.argsort(torch.rand(B, T, generator=gen), dim=-1)  # (B, T) random permutations
    queries = torch.gather(x, 1, targets[..., None].expand(-1, -1, cfg.d_model))  # (B, T, d_model)
    return x, labels, queries, targets


def init_qk_params(cfg: SaturationConfig):
    """W_q, W_k (d_model, d_k) with std ``init_std`` (default 1/sqrt(d_model)), seeded."""
    gen = torch.Generator().manual_seed(cfg.seed)
    std = cfg.init_std if cfg.init_std is not None else 1.0 / math.sqrt(cfg.d_model)
    W_q = torch.randn(cfg.d_model, cfg.d_k, generator=gen) * std
    W_k = torch.randn(cfg.d_model, cfg.d_k, generator=gen) * std
    return W_q.requires_grad_(), W_k.requires_grad_()


def forward(W_q, W_k, batch, cfg: SaturationConfig):
    """Scores, weights, logits and loss for one batch (all torch)."""
    x, labels, queries, targets = batch
    q = queries @ W_q  # (B, T, d_model) @ (d_model, d_k) -> (B, T, d_k)
    k = x @ W_k  # (B, T, d_model) @ (d_model, d_k) -> (B, T, d_k)
    scores = (q @ k.transpose(-1, -2)) * cfg.factor  # (B, T, d_k) @ (B, d_k, T) -> (B, T, T)
    weights = torch.softmax(scores, dim=-1)  # (B, T, T)
    values = F.one_hot(labels, cfg.n_classes).float()  # (B, T, C)
    mass = weights @ values  # (B, T, T) @ (B, T, C) -> (B, T, C): weight on each label
    logits = cfg.readout_gain * mass
    answer = torch.gather(labels, 1, targets)  # (B, T): label of the key each query seeks
    loss = F.cross_entropy(logits.reshape(-1, cfg.n_classes), answer.reshape(-1))  # (B*T, C)
    acc = (logits.argmax(-1) == answer).float().mean()
    return dict(q=q, k=k, scores=scores, weights=weights, logits=logits, answer=answer,
                loss=loss, acc=acc)


def per_query_grad_norms(out: dict, queries, cfg: SaturationConfig) -> torch.Tensor:
    """Norm of each query's own gradient on W_q, (B*T,), from d loss / d scores.

    Query (b, i) touches W_q only through q_bi = x_bi W_q, so its gradient is the
    outer product x_bi^T (factor * sum_j dL/ds_bij k_bj); the norm of an outer
    product is the product of the two norms. Multiplied by B*T to undo the mean
    in the loss, so it is the gradient of that query's own loss.
    """
    d_scores = out["scores"].grad  # (B, T, T)
    g_q = (d_scores @ out["k"].detach()) * cfg.factor  # (B, T, T) @ (B, T, d_k) -> (B, T, d_k)
    n = cfg.batch_size * cfg.seq_len
    return (queries.norm(dim=-1) * g_q.norm(dim=-1)).reshape(-1) * n  # (B*T,)


def train_retrieval(cfg: SaturationConfig, snapshot_steps=None) -> SaturationResult:
    """Train W_q, W_k with Adam (or SGD, ``cfg.optimizer``) on fresh batches; record every step (see SaturationResult).

    The data stream depends only on ``cfg.seed``, so runs differing only in ``scale``
    see the same batches from the same initial weights. Snapshots are taken on one
    fixed probe example, so start, middle and end show the same sequence.
    """
    if snapshot_steps is None:
        snapshot_steps = (0, cfg.steps // 2, cfg.steps - 1)
    with _single_threaded_torch():
        W_q, W_k = init_qk_params(cfg)
        opt = OPTIMIZERS[cfg.optimizer]([W_q, W_k], lr=cfg.lr)
        gen = torch.Generator().manual_seed(10_000 + cfg.seed)
        probe = make_batch(torch.Generator().manual_seed(20_000 + cfg.seed), replace(cfg, batch_size=1))
        rec, snaps, init_grads = {k: [] for k in _RECORDED}, {}, None
        for step in range(cfg.steps):
            batch = make_batch(gen, cfg)
            out = forward(W_q, W_k, batch, cfg)
            out["scores"].retain_grad()
            opt.zero_grad()
            out["loss"].backward()
            per_query = per_query_grad_norms(out, batch[2], cfg)  # (B*T,)
            _record(rec, out, W_q, W_k, per_query)
            if step == 0:
                init_grads = _np(per_query)
            if step in snapshot_steps:
                snaps[step] = _snapshot(W_q, W_k, probe, cfg)
            opt.step()
    arrays = {k: np.asarray(v, dtype=np.float64) for k, v in rec.items()}
    return SaturationResult(cfg, np.arange(cfg.steps), snapshots=snaps, targets=probe[3][0].numpy().copy(),
                            init_grad_per_query=init_grads, **arrays)


def _snapshot(W_q, W_k, probe, cfg: SaturationConfig):
    """(scores (T, T), weights (T, T)) of the probe example with the current weights."""
    with torch.no_grad():
        out = forward(W_q, W_k, probe, cfg)
    return _np(out["scores"][0]), _np(out["weights"][0])


_RECORDED = ("loss", "acc", "grad_norm_q", "grad_norm_k", "grad_q_median",
             "entropy", "max_weight", "score_std")


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().double().numpy().copy()


def _record(rec: dict, out: dict, W_q, W_k, per_query: torch.Tensor):
    """Append one step's numbers; the row diagnostics come from the numpy core (one source of truth)."""
    weights = _np(out["weights"])  # (B, T, T); the three diagnostics are means over all B*T rows
    values = (out["loss"].item(), out["acc"].item(), W_q.grad.norm().item(),
              W_k.grad.norm().item(), per_query.median().item(),
              float(entropy(weights).mean()), float(max_weight(weights).mean()),
              float(score_std(_np(out["scores"])).mean()))
    for key, value in zip(_RECORDED, values):
        rec[key].append(value)


def config_for(name: str, base: SaturationConfig, matched: bool = True) -> SaturationConfig:
    """The config of one of the chapter's named runs (``RUNS`` or "small init"), built from ``base``.

    scaled: factor 1/sqrt(d_k); unscaled: factor 1; over-scaled: factor 1/d_k
    (scores too small); small init: factor 1 and W_q, W_k drawn with
    ``control_init_std`` so the step-0 scores equal the scaled run's. With
    ``matched`` (default) every run but the scaled one gets ``matched_lr(base.lr, ...)``;
    otherwise all keep ``base.lr``.
    """
    if name == "scaled":
        cfg = replace(base, scale=True, init_std=None)
    elif name == "unscaled":
        cfg = replace(base, scale=False, init_std=None)
    elif name == "over-scaled":
        cfg = replace(base, scale=1.0 / base.d_k, init_std=None)
    elif name == "small init":
        cfg = replace(base, scale=False, init_std=control_init_std(base.d_model, base.d_k))
    else:
        raise ValueError(f"run name must be one of {RUNS + ('small init',)}, got {name!r}")
    return replace(cfg, lr=matched_lr(base.lr, cfg.factor, base.d_k)) if matched else cfg


def run_named(names=RUNS, d_k: int = 512, seed: int = 0, matched: bool = True, **overrides) -> dict:
    """Train each named run (same data, same seed) at one d_k: {name: SaturationResult}.

    ``matched``: each run at the learning rate matched to the scaled run's (``matched_lr``).
    """
    base = SaturationConfig(d_k=d_k, seed=seed, **overrides)
    return {name: train_retrieval(config_for(name, base, matched)) for name in names}


def seed_sweep(seeds=(0, 1, 2), d_k: int = 512, steps: int = 60, **overrides) -> list:
    """Scaled, unscaled and the small-init control for several seeds: one dict per seed.

    All three at the same nominal learning rate (``matched=False``), so the control's
    head start is Adam's larger effective step. Keys: seed; scaled_acc, unscaled_acc, small_init_acc (mean accuracy of the last
    20 of ``steps``); scaled_to_90, unscaled_to_90, small_init_to_90 (steps to 90 %
    accuracy, None if not reached); grad_ratio (batch |grad W_q| at step 0, scaled /
    unscaled) and median_grad_ratio (the same for the median query).
    """
    rows = []
    for seed in seeds:
        runs = run_named(("scaled", "unscaled", "small init"), d_k, seed, matched=False, steps=steps,
                         **overrides)
        s, u, c = runs["scaled"], runs["unscaled"], runs["small init"]
        rows.append(dict(seed=seed, scaled_acc=s.final_acc(), unscaled_acc=u.final_acc(),
                         small_init_acc=c.final_acc(),
                         scaled_to_90=s.steps_to(0.9), unscaled_to_90=u.steps_to(0.9),
                         small_init_to_90=c.steps_to(0.9),
                         grad_ratio=s.grad_norm_q[0] / u.grad_norm_q[0],
                         median_grad_ratio=s.grad_q_median[0] / u.grad_q_median[0]))
    return rows

"""The shape of an attention layer, validated like HF's BertConfig."""
from __future__ import annotations

from dataclasses import dataclass

from .validate import as_bool, positive_int


@dataclass(frozen=True)
class AttentionConfig:
    """Sizes of one multi-head attention layer.

    d_model: width of the token vectors X (n, d_model).
    n_heads: number of heads. d_k / d_v: per-head query-key and value widths;
    by default ``d_model // n_heads`` (which then must divide exactly).
    n_layers: how many such layers the model stacks (for whole-model counts).
    bias: whether the projections carry bias vectors (True or False; a string
    such as "False" is refused, since Python would read it as true).
    """

    d_model: int = 768
    n_heads: int = 12
    d_k: int | None = None
    d_v: int | None = None
    n_layers: int = 1
    bias: bool = True

    def __post_init__(self):
        object.__setattr__(self, "bias", as_bool("bias", self.bias))
        for name in ("d_model", "n_heads", "n_layers"):  # numpy ints become Python ints
            object.__setattr__(self, name, positive_int(name, getattr(self, name)))
        if self.d_k is None or self.d_v is None:
            if self.d_model % self.n_heads:
                raise ValueError(
                    f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}: "
                    f"each head gets d_model / n_heads = {self.d_model / self.n_heads:.3g} "
                    f"columns. Pick n_heads among the divisors of d_model "
                    f"(e.g. {_divisors_near(self.d_model, self.n_heads)}) or give d_k and d_v.")
        if self.d_k is None:
            object.__setattr__(self, "d_k", self.d_model // self.n_heads)
        if self.d_v is None:
            object.__setattr__(self, "d_v", self.d_model // self.n_heads)
        object.__setattr__(self, "d_k", positive_int("d_k", self.d_k))
        object.__setattr__(self, "d_v", positive_int("d_v", self.d_v))

    @property
    def d_head_total(self) -> int:
        """Width of all heads' queries side by side: n_heads * d_k."""
        return self.n_heads * self.d_k


def as_config(config, name: str = "config") -> AttentionConfig:
    """Return ``config`` if it is an ``AttentionConfig``, else raise a ``TypeError`` saying how to build one."""
    if not isinstance(config, AttentionConfig):
        raise TypeError(
            f"{name} must be an AttentionConfig, got {type(config).__name__}: {config!r:.80}. "
            f"Build one with AttentionConfig(d_model=..., n_heads=...)"
            + (f", e.g. AttentionConfig(**{name})" if isinstance(config, dict) else ""))
    return config


def _divisors_near(n: int, target: int) -> list:
    divs = [d for d in range(1, n + 1) if n % d == 0]
    return sorted(divs, key=lambda d: abs(d - target))[:3]


BERT_BASE = AttentionConfig(d_model=768, n_heads=12, n_layers=12, bias=True)
"""BERT-base: d_model 768, 12 heads of 64, 12 layers, projections with biases."""

"""Chapter 10's live figure: move the query's position m and the key's position n, watch q_m . k_n.

``rope_widget()`` builds and returns the figure; the notebook displays it. It is
drawn in the browser (``qkv_viz/viz/js/positions.js``, the adjacent pairing of
``qkv_viz.core.positions``): every slider step turns q and k and recomputes the
dot product in the page, with or without a kernel.
"""
from __future__ import annotations

import numpy as np
import traitlets
from matplotlib.figure import Figure

from qkv_viz.chapters.ch10_positions.figures import plot_offset_curve, plot_pair_parts, plot_turning
from qkv_viz.chapters.ch10_positions.toy import WIDGET_D_K_MAX, WIDGET_SEED, widget_vectors
from qkv_viz.core.positions import apply_rope, rope_dot, rope_dots_by_offset
from qkv_viz.core.validate import index_int
from qkv_viz.viz import style
from qkv_viz.viz.canvas import f64_bytes, figure_png, module_source
from qkv_viz.viz.traits import CheckedFigure, Number, Whole, integer, one_of

D_KS = (2, 4, 8, 16, 32, 64)                       # the d_k slider's stops (positions.js: ROPE_D_KS)
BASES = (10.0, 100.0, 1000.0, 10000.0, 100000.0, 1000000.0)  # the base slider's (ROPE_BASES)


class RopeFigure(CheckedFigure):
    """Sliders m, n (0 .. t_max-1), "keep n - m fixed", d_k, base and the pair drawn; a plane
    with the pair of q and k turning, the curve q_m . k_n against n - m, readouts.

    Traits: ``q``, ``k`` (64 float64 each; the first d_k are used), ``m``, ``n``, ``d_k``,
    ``base``, ``pair``, ``lock``, ``t_max``. ``dot`` is the core's q_m . k_n for what is on
    screen. CSS classes: ``qkv-rope``, ``qkv-rope-m``, ``qkv-rope-n``, ``qkv-rope-lock``,
    ``qkv-rope-dk``, ``qkv-rope-base``, ``qkv-rope-pair``, ``qkv-rope-plane``,
    ``qkv-rope-curve`` (canvases), ``qkv-rope-readouts``, ``qkv-message``. ``m``, ``n``,
    ``d_k``, ``base`` and ``pair`` refuse what the sliders cannot show (a ``TraitError``
    naming the trait; a smaller d_k brings ``pair`` into range, as the page does);
    ``q``, ``k`` and ``t_max`` are fixed when the figure is built.
    """

    _esm = module_source("positions.js")
    _fixed = ("q", "k", "t_max")
    _builder = "rope_widget(...)"
    q = traitlets.Bytes(b"").tag(sync=True)
    k = traitlets.Bytes(b"").tag(sync=True)
    m = Whole(2).tag(sync=True)
    n = Whole(5).tag(sync=True)
    d_k = Whole(8).tag(sync=True)
    base = Number(10000.0).tag(sync=True)
    pair = Whole(0).tag(sync=True)
    lock = traitlets.Bool(False).tag(sync=True)
    t_max = traitlets.Int(32).tag(sync=True)

    def __init__(self, m: int = 2, n: int = 5, d_k: int = 8, base: float = 10000.0, pair: int | None = None,
                 t_max: int = 32, seed: int = WIDGET_SEED):
        """``pair=None`` draws the pair with the largest part of q_m . k_n at the starting m, n."""
        t_max = index_int("t_max", t_max)
        if not 2 <= t_max <= 512:
            raise ValueError(f"t_max must be 2..512, got {t_max}")
        for name, value in (("m", m), ("n", n)):
            if not 0 <= index_int(name, value) < t_max:
                raise ValueError(f"{name} must be a position 0..{t_max - 1}, got {value}")
        if d_k not in D_KS:
            raise ValueError(f"d_k must be one of {D_KS}, got {d_k!r}")
        if float(base) not in BASES:
            raise ValueError(f"base must be one of {BASES}, got {base!r}")
        self._q, self._k = widget_vectors(seed, WIDGET_D_K_MAX)
        if pair is None:
            pair = int(np.abs(pair_parts(self._q[:d_k], self._k[:d_k], m, n, base)).argmax())
        if not 0 <= index_int("pair", pair) < d_k // 2:
            raise ValueError(f"pair must be 0..{d_k // 2 - 1} for d_k = {d_k}, got {pair}")
        super().__init__(q=f64_bytes(self._q), k=f64_bytes(self._k), m=int(m), n=int(n), d_k=int(d_k),
                         base=float(base), pair=int(pair), t_max=t_max)
        self.observe(self._keep_pair, names="d_k")

    @traitlets.validate("m", "n")
    def _valid_position(self, proposal):
        name = proposal["trait"].name
        return integer(name, proposal["value"], 0, self.t_max - 1, f"the positions are 0..t_max-1 = {self.t_max - 1}")

    @traitlets.validate("d_k")
    def _valid_d_k(self, proposal):
        return one_of("d_k", proposal["value"], D_KS, "the d_k slider has these stops")

    @traitlets.validate("base")
    def _valid_base(self, proposal):
        return one_of("base", proposal["value"], BASES, "the base slider has these stops")

    @traitlets.validate("pair")
    def _valid_pair(self, proposal):
        return integer("pair", proposal["value"], 0, self.d_k // 2 - 1, f"d_k = {self.d_k} has {self.d_k // 2} pairs")

    def _keep_pair(self, change):
        """A smaller d_k has fewer pairs: the drawn pair becomes the last one (positions.js does the same)."""
        self.pair = min(self.pair, change["new"] // 2 - 1)

    @property
    def dot(self) -> float:
        """q_m . k_n of the first d_k coordinates, by the math core (``rope_dot``)."""
        return rope_dot(self._q[:self.d_k], self._k[:self.d_k], self.m, self.n, self.base)

    def static_controls(self) -> list[tuple]:
        """The live figure's controls (positions.js) with this still's values."""
        last = max(1, self.t_max - 1)
        pairs = max(1, self.d_k // 2 - 1)
        return [("slider", "query position m", (self.m / last, str(self.m))),
                ("slider", "key position n", (self.n / last, str(self.n))),
                ("check", "keep n \u2212 m fixed", bool(self.lock)),
                ("slider", "d_k", (D_KS.index(self.d_k) / (len(D_KS) - 1), str(self.d_k))),
                ("slider", "base", (BASES.index(self.base) / (len(BASES) - 1), f"{self.base:g}")),
                ("slider", "pair drawn", (self.pair / pairs, str(self.pair)))]

    def static_png(self) -> bytes:
        fig = Figure(figsize=style.figsize(0.95, 0.55), dpi=style.DPI, layout="constrained")
        grid = fig.add_gridspec(2, 2, width_ratios=[1, 1.5], height_ratios=[1.6, 1])
        ax1, ax2, ax3 = fig.add_subplot(grid[:, 0]), fig.add_subplot(grid[0, 1]), fig.add_subplot(grid[1, 1])
        q, k = self._q[:self.d_k], self._k[:self.d_k]
        plot_turning(q, k, self.m, self.n, self.base, self.pair, ax=ax1)
        plot_offset_curve(q, k, self.base, self.t_max, self.m, self.n, ax=ax2)
        plot_pair_parts(pair_parts(q, k, self.m, self.n, self.base), self.pair, ax=ax3)
        offset = rope_dots_by_offset(q, k, [self.n - self.m], self.base)[0]
        fig.suptitle(f"d_k = {self.d_k}, key = the query: q_m · k_n = {self.dot:.3f} "
                     f"(from n − m alone: {offset:.3f})", fontsize=style.ANNOTATION_PT)
        return figure_png(fig)


def pair_parts(q, k, m: int, n: int, base: float) -> np.ndarray:
    """Each pair's part of q_m . k_n (adjacent pairing), shape (d_k/2,); they add up to q_m . k_n."""
    qm, kn = apply_rope(q[None], [m], base)[0], apply_rope(k[None], [n], base)[0]   # (d_k,) each
    return (qm * kn).reshape(-1, 2).sum(axis=1)                                    # (d_k,) -> (d_k/2, 2) -> (d_k/2,)


def rope_widget(**kwargs):
    """The live RoPE figure (see :class:`RopeFigure`); end a notebook cell with it."""
    return RopeFigure(**kwargs)

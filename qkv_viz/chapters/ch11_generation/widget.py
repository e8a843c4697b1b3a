"""Chapter 11's generation stepper: the page's trained model writes its sentence one token
per step; the K and V caches grow, the new query's row of weights fills the causal matrix, and
the new token's logits choose the next word. A control for how many K/V heads the two query
heads share (2: multi-head, 1: multi-query, keys and values averaged).

Drawn in the browser (``qkv_viz/viz/js/generation.js``): Python sends the embeddings and the
layer's projections once; the page runs the generation loop (argmax of output @ E.T, appended
and fed back) for every setting, so every control works without a kernel.
"""
from __future__ import annotations

import numpy as np
import traitlets
from matplotlib.figure import Figure

from qkv_viz.chapters.ch11_generation.figures import plot_generation_step
from qkv_viz.chapters.ch11_generation.generation import PROMPT, VOCAB, trained_writer, shared_kv, write
from qkv_viz.core.kv_cache import GQAParams, generate
from qkv_viz.core.validate import as_array
from qkv_viz.viz import style
from qkv_viz.viz.canvas import f64_bytes, figure_png, module_source
from qkv_viz.viz.traits import CheckedFigure, Whole, integer, one_of


class GenerationFigure(CheckedFigure):
    """Step through a greedy generation; the K/V caches, the new query's weights, its logits.

    Traits: ``vocab``, ``prompt`` (word ids), ``stop`` (id ending the sentence), ``max_tokens``,
    ``d_model``, ``n_heads``; ``E`` (V x d_model), ``W_q``, ``W_k``, ``W_v`` (d_model x n_heads d_k,
    multi-head), ``W_o`` as float64 buffers; ``step`` (the new token), ``head`` (query head shown),
    ``n_kv_heads`` (a divisor of n_heads). CSS classes: ``qkv-generation``, ``qkv-gen-step``
    (slider), ``qkv-gen-next`` (button), ``qkv-gen-head``, ``qkv-gen-kv`` (selects),
    ``qkv-gen-map`` (canvas), ``qkv-gen-readout``. ``step``, ``head`` and ``n_kv_heads``
    refuse what cannot be shown (a ``TraitError`` naming the trait; fewer K/V heads may
    write a shorter sentence, and ``step`` then moves to its last token, as the page does);
    the model and the prompt are fixed when the figure is built.
    """

    _esm = module_source("generation.js")
    _fixed = ("vocab", "prompt", "stop", "max_tokens", "d_model", "n_heads", "E", "W_q", "W_k", "W_v", "W_o")
    _builder = "generation_widget(...)"
    vocab = traitlets.List(traitlets.Unicode()).tag(sync=True)
    prompt = traitlets.List(traitlets.Int()).tag(sync=True)
    stop = traitlets.Int(-1).tag(sync=True)
    max_tokens = traitlets.Int(10).tag(sync=True)
    d_model = traitlets.Int(1).tag(sync=True)
    n_heads = traitlets.Int(1).tag(sync=True)
    E = traitlets.Bytes(b"").tag(sync=True)
    W_q = traitlets.Bytes(b"").tag(sync=True)
    W_k = traitlets.Bytes(b"").tag(sync=True)
    W_v = traitlets.Bytes(b"").tag(sync=True)
    W_o = traitlets.Bytes(b"").tag(sync=True)
    step = Whole(0).tag(sync=True)
    head = Whole(0).tag(sync=True)
    n_kv_heads = Whole(1).tag(sync=True)

    def __init__(self, vocab, E, params: GQAParams, prompt, step: int = 0, head: int = 0,
                 n_kv_heads: int | None = None, stop: str = ".", max_tokens: int = 10):
        self._E = as_array("E", E, ndim=2)
        if not isinstance(params, GQAParams) or params.n_kv_heads != params.n_heads:
            raise ValueError("params must be a multi-head GQAParams (n_kv_heads == n_heads); "
                             "the figure shares the K/V heads itself")
        if len(vocab) != len(self._E) or self._E.shape[1] != params.W_q.shape[0]:
            raise ValueError(f"E {self._E.shape} needs one row per word of vocab ({len(vocab)}) and "
                             f"d_model = {params.W_q.shape[0]} columns")
        self._vocab, self._params, self._stop, self._max = [str(w) for w in vocab], params, stop, int(max_tokens)
        self._prompt = [str(w) for w in prompt]
        H = params.n_heads
        n_kv_heads = H if n_kv_heads is None else int(n_kv_heads)
        if n_kv_heads < 1 or H % n_kv_heads:
            raise ValueError(f"n_kv_heads must divide n_heads={H}, got {n_kv_heads}")
        if not 0 <= int(head) < H:
            raise ValueError(f"head must lie in 0..{H - 1}, got {head}")
        T = len(write(self._E, shared_kv(params, n_kv_heads), self._vocab, self._prompt, stop, max_tokens)[0])
        if not 0 <= int(step) < T:
            raise ValueError(f"step must lie in 0..{T - 1} (the sentence has {T} tokens), got {step}")
        ids = {w: i for i, w in enumerate(self._vocab)}
        super().__init__(vocab=self._vocab, prompt=[ids[w] for w in self._prompt], stop=ids.get(stop, -1),
                         max_tokens=self._max, d_model=self._E.shape[1], n_heads=H, E=f64_bytes(self._E),
                         W_q=f64_bytes(params.W_q), W_k=f64_bytes(params.W_k), W_v=f64_bytes(params.W_v),
                         W_o=f64_bytes(params.W_o), step=int(step), head=int(head), n_kv_heads=n_kv_heads)
        self.observe(self._keep_step, names="n_kv_heads")

    def _kv_choices(self) -> tuple:
        H = self._params.n_heads
        return tuple(g for g in range(1, H + 1) if H % g == 0)

    @traitlets.validate("n_kv_heads")
    def _valid_n_kv_heads(self, proposal):
        return one_of("n_kv_heads", proposal["value"], self._kv_choices(),
                      f"the K/V heads must divide n_heads = {self._params.n_heads}")

    @traitlets.validate("head")
    def _valid_head(self, proposal):
        H = self._params.n_heads
        return integer("head", proposal["value"], 0, H - 1, f"there are {H} query heads")

    @traitlets.validate("step")
    def _valid_step(self, proposal):
        T = len(self.words)
        return integer("step", proposal["value"], 0, T - 1, f"the sentence has {T} tokens")

    def _keep_step(self, change):
        """Fewer K/V heads may write a shorter sentence: the step stays on it (generation.js does the same)."""
        self.step = min(self.step, len(self.words) - 1)

    def _layer(self) -> GQAParams:
        return shared_kv(self._params, self.n_kv_heads)

    def run(self):
        """(words, weights (H, T, T), logits (T, V)) for the current K/V heads (``write``)."""
        return write(self._E, self._layer(), self._vocab, self._prompt, self._stop, self._max)

    @property
    def words(self) -> list:
        return self.run()[0]

    @property
    def weights(self) -> np.ndarray:
        """The new query's weights on screen, (step+1,): head ``head``."""
        return self.run()[1][self.head, self.step, :self.step + 1]

    @property
    def logits(self) -> np.ndarray:
        """The new token's output @ E.T, (V,): its argmax is the next word."""
        return self.run()[2][self.step]

    @property
    def cache(self):
        """The ``KVCache`` after ``step`` (tokens 0..step), computed by the core."""
        ids = {w: i for i, w in enumerate(self._vocab)}
        x = self._E[[ids[w] for w in self.words[:self.step + 1]]]
        return generate(x, self._layer())[1]

    @property
    def cache_numbers(self) -> int:
        """Numbers the K and V caches hold after ``step``."""
        c = self.cache
        return c.k.size + c.v.size

    def static_controls(self) -> list[tuple]:
        """The live figure's controls (generation.js) with this still's values."""
        H, g = self._params.n_heads, self.n_kv_heads
        kind = "multi-head" if g == H else "multi-query" if g == 1 else "grouped-query"
        last = max(1, len(self.words) - 1)
        return [("slider", "step: the new token", (self.step / last, f"{self.step}: {self.words[self.step]!r}")),
                ("button", "next token \u25b6", None),
                ("menu", "query head", f"head {self.head}"), ("menu", "K/V heads", f"{g} ({kind})")]

    def static_png(self) -> bytes:
        """The step on screen, as the live figure draws it (``figures.plot_generation_step``)."""
        fig = Figure(figsize=style.figsize(1.0, 0.62), dpi=style.DPI, layout="constrained")
        words, weights, logits = self.run()
        plot_generation_step(words, weights, logits, self.cache, self._vocab, self.step, self.head,
                             len(self._prompt), fig=fig)
        return figure_png(fig)


def generation_widget(E=None, projections=None, n_heads: int = 2, vocab=VOCAB, prompt=PROMPT,
                      step: int = 0, head: int = 0, n_kv_heads: int | None = None):
    """The stepper on a model: embeddings E (V, d_model) and projections (W_q, W_k, W_v, W_o) of
    ``n_heads`` heads; default: the chapter's trained writer (see :class:`GenerationFigure`)."""
    if (E is None) != (projections is None):
        raise ValueError("give both E and projections (W_q, W_k, W_v, W_o), or neither (the chapter's model)")
    if E is None:
        E, params = trained_writer()
    else:
        if len(projections) != 4:
            raise ValueError(f"projections must be (W_q, W_k, W_v, W_o), got {len(projections)} arrays")
        params = GQAParams(*projections, n_heads=n_heads, n_kv_heads=n_heads)
    return GenerationFigure(vocab, E, params, prompt, step=step, head=head, n_kv_heads=n_kv_heads)

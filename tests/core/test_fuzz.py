"""Fuzz the whole public core (issue 16, item 5).

Hypothesis draws shapes (consistent, slightly off, empty), dtypes (float16/32/64,
ints, bool, object), values (normal, 0, negative, NaN, inf, 1e300) and argument
types (None, strings, dicts, floats where ints belong, bools, ...) for every name
in ``qkv_viz.core.__all__``. Every call must end in one of two ways:

- a finite result of the right shape, equal to what torch computes (float64, CPU)
  where torch has the operation, or to the documented formula where it has not;
- a ``ValueError``/``TypeError`` raised by our own checks (the raising frame is in
  ``qkv_viz/core``), never one leaked from numpy, and never another exception type.

Numpy ``RuntimeWarning`` (overflow, invalid value) is turned into an error: a learner
should see our message, not a warning followed by a NaN.

Deterministic: the profile below derandomizes and keeps no example database.
"""
from __future__ import annotations

import math
import traceback
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qkv_viz.core as core

settings.register_profile(
    "qkv-fuzz", derandomize=True, deadline=None, max_examples=40, database=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
FUZZ = settings.get_profile("qkv-fuzz")
FUZZ_MORE = settings(FUZZ, max_examples=80)  # for the functions whose clean path is rarer
CORE_DIR = Path(core.__file__).parent

SPECIAL = [0.0, -0.0, -1.0, 1e300, -1e300, np.nan, np.inf, -np.inf, 1e-300, -7.5]
JUNK = [None, "abc", "1", {"a": 1}, [1, [2, 3]], 1.5, -1, 0, True, np.nan, 1 + 2j, object(),
        np.array([], dtype=float), np.array(["x"]), np.array([1.0, 2.0], dtype=object)]
OUTCOMES = {}  # name -> [results, refusals]; test_every_public_name_is_fuzzed checks both happen


# --- strategies -------------------------------------------------------------------------------

class Draw:
    """``data.draw`` plus a mode: a clean example (every argument valid, so the result is
    checked against torch) or a nasty one (each argument may be broken)."""

    def __init__(self, data):
        self.data = data
        self.clean = data.draw(st.booleans())
        # a quarter of the nasty examples make every array huge, so that products overflow
        self.big = 0.0 if self.clean else data.draw(st.sampled_from([0.0, 0.0, 0.0, 1e160, 1e200, 1e300]))

    def __call__(self, strategy):
        return self.data.draw(strategy)


@st.composite
@np.errstate(all="ignore")  # float16 casts of 1e300 overflow to inf on purpose
def arrays(draw, shape, clean=False, big=0.0):
    """An array of ``shape`` with a mostly-sane, sometimes-nasty dtype and values
    (times ``big`` if given)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.integers(0, 14 if clean else 19))
    x = rng.normal(size=shape) * (big or 1.0)
    if kind == 12:
        return x.astype(np.float32)
    if kind == 13:
        return x.astype(np.float16)
    if kind == 14:
        return (3 * x).astype(np.int64 if rng.random() < 0.5 else np.int32)
    if kind == 15:
        return np.zeros(shape)
    if kind == 16 and x.size:  # one or a few special values
        flat = x.ravel()
        flat[rng.integers(0, x.size, size=rng.integers(1, 3))] = rng.choice(SPECIAL)
        return flat.reshape(shape)
    if kind == 17:
        return x * rng.choice([1e300, 1e150, 1e-300, -1.0, 1e6])
    if kind == 18:
        return x > 0
    if kind == 19:
        return x.astype(object)
    return x


def prob_rows(draw, shape):
    """Rows of probabilities as softmax makes them: sometimes peaked, sometimes float32."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    p = core.softmax(rng.normal(size=shape) * draw(st.sampled_from([1.0, 30.0, 1e-3])))
    return p.astype(np.float32) if draw(st.integers(0, 4)) == 0 else p


def shape_near(draw, shape):
    """``shape`` itself most of the time; else one axis changed, dropped, added or emptied."""
    if getattr(draw, "clean", False):
        return tuple(shape)
    shape = list(shape)
    r = draw(st.integers(0, 9))
    if r == 0 and shape:
        shape[draw(st.integers(0, len(shape) - 1))] += draw(st.sampled_from([-1, 1, 2]))
    elif r == 1 and shape:
        shape.pop(0)
    elif r == 2:
        shape.insert(0, draw(st.integers(1, 3)))
    elif r == 3 and shape:
        shape[draw(st.integers(0, len(shape) - 1))] = 0
    return tuple(max(s, 0) for s in shape)


def maybe_junk(draw, value):
    """``value`` most of the time, else something of the wrong type or meaning."""
    if getattr(draw, "clean", False):
        return value
    return draw(st.sampled_from(JUNK)) if draw(st.integers(0, 9)) == 0 else value


def arr_near(draw, shape):
    return maybe_junk(draw, draw(arrays(shape_near(draw, shape), getattr(draw, "clean", False),
                                        getattr(draw, "big", 0.0))))


def lead_shape(draw):
    return tuple(draw(st.lists(st.integers(1, 3), max_size=2)))


def small_int(draw, lo=1, hi=6):
    if getattr(draw, "clean", False):
        return draw(st.sampled_from([draw(st.integers(lo, hi)), np.int64(draw(st.integers(lo, hi)))]))
    return maybe_junk(draw, draw(st.sampled_from([draw(st.integers(lo, hi)), np.int64(draw(st.integers(lo, hi))),
                                                  draw(st.integers(-2, 0))])))


GOOD_SCALES = [True, False, None, np.True_, np.False_, 1, 0.5, np.float32(2.0)]
GOOD_TEMPERATURES = [1.0, 0.5, 3, 1e-300, 1e300]


def scale_value(draw):
    bad = [] if getattr(draw, "clean", False) else [0, -1.0, np.nan, np.inf, 1e300, "True", [0.5]]
    return draw(st.sampled_from(GOOD_SCALES + bad))


def temperature_value(draw):
    bad = [] if getattr(draw, "clean", False) else [0.0, -1.0, np.nan, np.inf, "1", None, True]
    return draw(st.sampled_from(GOOD_TEMPERATURES + bad))


def pick(draw, good, bad):
    """One of ``good``, or in a nasty example one of ``good + bad``."""
    return draw(st.sampled_from(list(good) + ([] if getattr(draw, "clean", False) else list(bad))))


def mask_for(draw, scores_shape):
    r = draw(st.integers(0, 7))
    if r <= 1:
        return None
    shape = {2: scores_shape[-2:], 3: scores_shape[-1:], 4: scores_shape}.get(r, shape_near(draw, scores_shape))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    m = rng.random(shape) < 0.7
    if getattr(draw, "clean", False):
        return m
    return m.astype(float) if draw(st.integers(0, 15)) == 0 else maybe_junk(draw, m)


# --- the judge --------------------------------------------------------------------------------

def call(fn, *args, **kwargs):
    """Run ``fn``; return its result, or None if it refused with our own ValueError/TypeError."""
    tally = OUTCOMES.setdefault(fn.__name__, [0, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            result = fn(*args, **kwargs)
            tally[0] += 1
            return result
        except (ValueError, TypeError) as exc:
            tally[1] += 1
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            assert Path(frame.filename).resolve().is_relative_to(CORE_DIR.resolve()), (
                f"{type(exc).__name__} leaked from {frame.filename}:{frame.lineno}: {exc}")
            assert str(exc), "an error without a message"
            return None


def finite(result, shape):
    assert isinstance(result, (np.ndarray, np.float64)) and result.dtype == np.float64, type(result)
    assert result.shape == tuple(shape), (result.shape, shape)
    assert np.all(np.isfinite(result)), "non-finite result"
    return result


def f64(a):
    return np.asarray(a).astype(np.float64)


def t64(a):
    return torch.tensor(f64(a))


def check_attention(res, out_shape, weights_shape, reference):
    """(output, weights) finite and of the right shapes; output equal to torch's where torch's is finite."""
    out, weights = res
    finite(out, out_shape)
    finite(weights, weights_shape)
    np.testing.assert_allclose(weights.sum(-1)[weights.any(-1)], 1.0, atol=1e-12)
    if torch.all(torch.isfinite(reference)):
        close(out, reference.numpy(), rtol=1e-7)


def close(ours, ref, rtol=1e-9):
    ref = np.asarray(ref, dtype=np.float64)
    scale = max(1.0, float(np.max(np.abs(ref)))) if ref.size else 1.0
    np.testing.assert_allclose(ours, ref, rtol=rtol, atol=rtol * scale)


# --- softmax ----------------------------------------------------------------------------------

@FUZZ_MORE
@given(st.data())
def test_softmax(data):
    d = Draw(data)
    shape = tuple(d(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    x = arr_near(d, shape)
    axis = maybe_junk(d, d(st.integers(-4, 3)))
    t = temperature_value(d)
    out = call(core.softmax, x, axis=axis, temperature=t)
    if out is not None:
        finite(out, np.shape(x))
        with torch.no_grad():
            ref = torch.softmax(t64(x) / float(t), dim=int(axis)).numpy()
        if np.all(np.isfinite(ref)):
            close(out, ref)
        np.testing.assert_allclose(out.sum(axis=int(axis)), 1.0, atol=1e-12)


@FUZZ
@given(st.data())
def test_naive_softmax_is_right_until_it_overflows(data):
    d = Draw(data)
    x = arr_near(d, tuple(d(st.lists(st.integers(1, 5), min_size=1, max_size=2))))
    axis = maybe_junk(d, d(st.integers(-2, 1)))
    out = call(core.naive_softmax, x, axis=axis)
    if out is not None:  # its job is to show the NaN of overflow, so only small logits must be right
        assert out.shape == np.shape(x)
        if np.max(np.abs(f64(x))) < 50:
            close(out, torch.softmax(t64(x), dim=int(axis)).numpy())


@FUZZ
@given(st.data())
def test_softmax_jacobian(data):
    d = Draw(data)
    shape = tuple(d(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    p = prob_rows(d, shape) if d(st.booleans()) else arr_near(d, shape)
    out = call(core.softmax_jacobian, p)
    if out is not None:
        finite(out, np.shape(p) + np.shape(p)[-1:])
        tp = t64(p)
        close(out, (torch.diag_embed(tp) - tp[..., :, None] * tp[..., None, :]).numpy())
        s = torch.log(tp[(0,) * (tp.dim() - 1)].clamp_min(1e-300))  # one row: autograd of softmax
        jac = torch.autograd.functional.jacobian(lambda z: torch.softmax(z, -1), s)
        close(out[(0,) * (tp.dim() - 1)], jac.numpy(), rtol=1e-6)


# --- attention --------------------------------------------------------------------------------

def factor_of(scale, d_k):
    if isinstance(scale, (bool, np.bool_)):
        return 1 / math.sqrt(d_k) if scale else 1.0
    return 1.0 if scale is None else float(scale)


@FUZZ
@given(st.data())
def test_resolve_scale(data):
    d = Draw(data)
    scale, d_k = scale_value(d), small_int(d, 1, 600)
    out = call(core.resolve_scale, scale, d_k)
    if out is not None:
        assert isinstance(out, float) and math.isfinite(out) and out > 0
        assert out == pytest.approx(factor_of(scale, d_k), rel=1e-15)


def qkv_shapes(d):
    lead, T, S = lead_shape(d), d(st.integers(1, 5)), d(st.integers(1, 5))
    d_k, d_v = d(st.integers(1, 6)), d(st.integers(1, 4))
    return lead, T, S, d_k, d_v


@FUZZ
@given(st.data())
def test_attention_scores(data):
    d = Draw(data)
    lead, T, S, d_k, _ = qkv_shapes(d)
    q, k, scale = arr_near(d, lead + (T, d_k)), arr_near(d, lead + (S, d_k)), scale_value(d)
    out = call(core.attention_scores, q, k, scale)
    if out is not None:
        ref = (t64(q) @ t64(k).transpose(-1, -2)) * factor_of(scale, np.shape(q)[-1])
        finite(out, tuple(ref.shape))
        close(out, ref.numpy())


def torch_masked_softmax(scores, mask, t):
    s = t64(scores)
    if mask is None:
        return torch.softmax(s / float(t), dim=-1).numpy()
    m = torch.tensor(np.asarray(mask)).expand(s.shape)
    ref = torch.softmax(s.masked_fill(~m, float("-inf")) / float(t), dim=-1)
    return torch.where(m.any(-1, keepdim=True), ref, 0.0).numpy()  # a fully masked row -> 0, as documented


@FUZZ
@given(st.data())
def test_masked_softmax(data):
    d = Draw(data)
    shape = lead_shape(d) + (d(st.integers(1, 5)), d(st.integers(1, 5)))
    scores, mask, t = arr_near(d, shape), mask_for(d, shape), temperature_value(d)
    out = call(core.masked_softmax, scores, mask, t)
    if out is not None:
        finite(out, np.shape(scores))
        ref = torch_masked_softmax(scores, mask, t)
        if np.all(np.isfinite(ref)):
            close(out, ref)


@FUZZ_MORE
@given(st.data())
def test_scaled_dot_product_attention(data):
    d = Draw(data)
    lead, T, S, d_k, d_v = qkv_shapes(d)
    q, k, v = arr_near(d, lead + (T, d_k)), arr_near(d, lead + (S, d_k)), arr_near(d, lead + (S, d_v))
    mask, scale = mask_for(d, lead + (T, S)), scale_value(d)
    t = temperature_value(d) if d(st.integers(0, 4)) == 0 else 1.0
    res = call(core.scaled_dot_product_attention, q, k, v, mask=mask, scale=scale, temperature=t)
    if res is not None:
        T_, S_ = np.shape(q)[-2], np.shape(k)[-2]
        batch = np.broadcast_shapes(np.shape(q)[:-2], np.shape(k)[:-2], np.shape(v)[:-2])
        m = None if mask is None else torch.tensor(np.asarray(mask))
        factor = factor_of(scale, np.shape(q)[-1]) / float(t)
        check_attention(res, batch + (T_, np.shape(v)[-1]), batch + (T_, S_),
                        F.scaled_dot_product_attention(t64(q), t64(k), t64(v), attn_mask=m, scale=factor))


@FUZZ
@given(st.data())
def test_causal_mask(data):
    d = Draw(data)
    T = small_int(d)
    S = None if d(st.booleans()) else small_int(d)
    out = call(core.causal_mask, T, S)
    if out is not None:
        S_ = T if S is None else S
        assert out.dtype == bool and out.shape == (T, S_)
        ref = torch.ones(int(T), int(S_)).tril(diagonal=int(S_) - int(T)).bool().numpy()
        np.testing.assert_array_equal(out, ref)
        assert out.any(axis=-1).all(), "a query with no key"


@FUZZ
@given(st.data())
def test_padding_mask(data):
    d = Draw(data)
    S = small_int(d)
    n = d(st.integers(0, 4))
    lengths = maybe_junk(d, d(st.lists(st.integers(-1, 7), min_size=n, max_size=n)))
    ndim = pick(d, [3, 3, 4, 5], [2, 0, 3.0])
    out = call(core.padding_mask, lengths, S, scores_ndim=ndim)
    if out is not None:
        B = len(lengths)
        assert out.dtype == bool and out.shape == (B,) + (1,) * (ndim - 2) + (S,)
        ref = (torch.arange(int(S))[None, :] < torch.tensor(lengths)[:, None]).numpy()
        np.testing.assert_array_equal(out.reshape(B, S), ref)


# --- projections ------------------------------------------------------------------------------

@FUZZ
@given(st.data())
def test_init_projection(data):
    d = Draw(data)
    d_in, d_out = small_int(d), small_int(d)
    std = d(st.sampled_from([None, None, 0.5, 0] + ([] if d.clean else [1e300, 1e308, -1.0, np.nan, np.inf, "1", True])))
    seed = d(st.sampled_from([None, 0, 3, np.random.default_rng(1)] + ([] if d.clean else [-1, 1.5, "0", True])))
    out = call(core.init_projection, d_in, d_out, seed=seed, std=std)
    if out is not None:
        finite(out, (d_in, d_out))
        if std == 0:
            assert not out.any()


@FUZZ
@given(st.data())
def test_project(data):
    d = Draw(data)
    n, d_in, d_out = d(st.integers(1, 4)), d(st.integers(1, 5)), d(st.integers(1, 5))
    x, W = arr_near(d, lead_shape(d) + (n, d_in)), arr_near(d, (d_in, d_out))
    b = None if d(st.booleans()) else arr_near(d, (d_out,))
    out = call(core.project, x, W, b)
    if out is not None:
        ref = F.linear(t64(x), t64(W).T, None if b is None else t64(b))
        finite(out, tuple(ref.shape))
        close(out, ref.numpy())


@FUZZ
@given(st.data())
def test_qkv_projections_and_fused(data):
    d = Draw(data)
    n, d_model, d_k, d_v = (d(st.integers(1, 5)) for _ in range(4))
    x = arr_near(d, (n, d_model))
    W_q, W_k, W_v = arr_near(d, (d_model, d_k)), arr_near(d, (d_model, d_k)), arr_near(d, (d_model, d_v))
    res = call(core.qkv_projections, x, W_q, W_k, W_v)
    if res is not None:
        for ours, W in zip(res, (W_q, W_k, W_v)):
            ref = t64(x) @ t64(W)
            close(finite(ours, tuple(ref.shape)), ref.numpy())
    W_qkv = call(core.fuse_qkv, W_q, W_k, W_v)
    if W_qkv is not None:
        ref = torch.cat([t64(W_q), t64(W_k), t64(W_v)], dim=1)
        close(finite(W_qkv, tuple(ref.shape)), ref.numpy())
    W_f = W_qkv if W_qkv is not None and d(st.booleans()) else arr_near(d, (d_model, 2 * d_k + d_v))
    dk, dv = small_int(d, d_k, d_k), pick(d, [None, d_v] if d_v == d_k else [d_v], [None, 0, 2.0])
    fused = call(core.fused_qkv_projections, x, W_f, dk, dv)
    if fused is not None:
        parts = torch.split(t64(x) @ t64(W_f), [dk, dk, dk if dv is None else dv], dim=-1)
        for ours, ref in zip(fused, parts):
            close(finite(ours, tuple(ref.shape)), ref.numpy())


# --- heads ------------------------------------------------------------------------------------

@FUZZ
@given(st.data())
def test_split_merge_and_head_columns(data):
    d = Draw(data)
    n, H, dh = d(st.integers(1, 4)), d(st.integers(1, 4)), d(st.integers(1, 3))
    x = arr_near(d, lead_shape(d) + (n, H * dh))
    heads = small_int(d, 1, 5)
    out = call(core.split_heads, x, heads)
    if out is not None:
        ref = t64(x).unflatten(-1, (int(heads), -1)).transpose(-2, -3)  # (..., n, H, d) -> (..., H, n, d)
        close(finite(out, tuple(ref.shape)), ref.numpy())
        close(finite(call(core.merge_heads, out), np.shape(x)), f64(x))
    y = arr_near(d, (H, n, dh))
    merged = call(core.merge_heads, y)
    if merged is not None:
        ref = t64(y).transpose(-2, -3).flatten(-2)
        close(finite(merged, tuple(ref.shape)), ref.numpy())
    W = arr_near(d, (d(st.integers(1, 3)), H * dh))
    h = maybe_junk(d, d(st.integers(-1, 4)))
    cols = call(core.head_columns, W, h, heads)
    if cols is not None:
        ref = torch.chunk(t64(W), int(heads), dim=1)[h]
        close(finite(cols, tuple(ref.shape)), ref.numpy())
        assert len(torch.chunk(t64(W), int(heads), dim=1)) == heads and cols.shape[1] * heads == np.shape(W)[1]


def config_kwargs(d):
    H = d(st.integers(1, 4))
    kw = dict(d_model=maybe_junk(d, H * d(st.integers(1, 4)) + pick(d, [0], [0, 0, 1])),
              n_heads=small_int(d, H, H))
    if d(st.booleans()):
        kw["d_k"] = small_int(d, 1, 4)
    if d(st.booleans()):
        kw["d_v"] = small_int(d, 1, 4)
    if d(st.booleans()):
        kw["n_layers"] = small_int(d, 1, 3)
    if d(st.booleans()):
        kw["bias"] = pick(d, [True, False, np.True_], ["False", 0, None])
    return kw


def make_config(d):
    kw = config_kwargs(d)
    try:
        return core.AttentionConfig(**kw)
    except (ValueError, TypeError):
        return maybe_junk(d, core.AttentionConfig(d_model=8, n_heads=2))


@FUZZ
@given(st.data())
def test_config_and_sizes(data):
    d = Draw(data)
    c = call(core.AttentionConfig, **config_kwargs(d))
    if c is not None:
        assert c.d_k >= 1 and c.d_v >= 1 and isinstance(c.bias, bool)
    c = c if c is not None and d(st.booleans()) else make_config(d)
    bias = pick(d, [None, None, True, False], ["yes", 1])
    include_output, per_head = pick(d, [True, False, np.False_], ["no"]), pick(d, [False, True], [0])
    count = call(core.param_count, c, bias=bias, include_output=include_output, per_head=per_head)
    if count is not None:
        b = c.bias if bias is None else bool(bias)
        H = 1 if per_head else c.n_heads
        mods = [torch.nn.Linear(c.d_model, H * w, bias=b) for w in (c.d_k, c.d_k, c.d_v)]
        if include_output and not per_head:
            mods.append(torch.nn.Linear(c.n_heads * c.d_v, c.d_model, bias=b))
        assert isinstance(count, int) and count == sum(p.numel() for m in mods for p in m.parameters())
    total = call(core.model_param_count, c, bias=bias, include_output=include_output, per_head=per_head)
    assert (total is None) == (count is None)
    if total is not None:
        assert total == c.n_layers * count
    T, S = small_int(d, 1, 64), None if d(st.booleans()) else small_int(d, 1, 64)
    flops = call(core.projection_flops, c, T)
    if flops is not None:
        assert flops == 2 * T * c.d_model * c.n_heads * (2 * c.d_k + c.d_v)
    parts = call(core.attention_flops, c, T, S)
    if parts is not None:
        S_ = T if S is None else S
        assert parts["scores"] == 2 * c.n_heads * T * S_ * c.d_k
        assert parts["total"] == sum(v for key, v in parts.items() if key != "total") > 0


def torch_mha(x_q, x_kv, p, H, mask, factor):
    """The same layer written with torch ops: linear, split, F.scaled_dot_product_attention, merge, linear."""
    lin = [F.linear(t64(x), t64(W).T, None if b is None else t64(b))
           for x, W, b in ((x_q, p.W_q, p.b_q), (x_kv, p.W_k, p.b_k), (x_kv, p.W_v, p.b_v))]
    q, k, v = (a.unflatten(-1, (H, -1)).transpose(-2, -3) for a in lin)  # (..., n, H*d) -> (..., H, n, d)
    m = None
    if mask is not None:
        m = torch.tensor(np.asarray(mask))
        m = m.unsqueeze(-3) if m.dim() >= 3 and m.dim() == np.ndim(x_q) else m
    heads = F.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=factor)
    return F.linear(heads.transpose(-2, -3).flatten(-2), t64(p.W_o).T, None if p.b_o is None else t64(p.b_o))


@FUZZ_MORE
@given(st.data())
def test_multi_head_attention(data):
    d = Draw(data)
    c = make_config(d)
    seed, d_kv = pick(d, [0, 1, None], [-1, "s"]), pick(d, [None, None, 3], [0, 2.5])
    params = call(core.init_multihead_params, c, seed=seed, d_kv=d_kv)
    if params is None:
        return
    H = c.n_heads
    assert params.n_heads == H and params.W_q.shape == (c.d_model, H * c.d_k)
    bare = call(core.MultiHeadParams, params.W_q, params.W_k, params.W_v, params.W_o,
                n_heads=pick(d, [None, H], [0, 1.5, "2", True]))  # built by hand, head count maybe unknown
    if bare is not None and d(st.integers(0, 3)) == 0:
        params = bare
    params = maybe_junk(d, params)
    lead, T, S = lead_shape(d), d(st.integers(1, 4)), d(st.integers(1, 4))
    x_q = arr_near(d, lead + (T, c.d_model))
    x_kv = arr_near(d, lead + (S, np.shape(params.W_k)[0] if isinstance(params, core.MultiHeadParams) else 1))
    n_heads = pick(d, [None, H, H], [H + 1, 0, 1.0])
    mask = mask_for(d, lead + (H, T, S)) if d(st.booleans()) else mask_for(d, lead + (T, S))
    scale = scale_value(d)
    res = call(core.multi_head_attention, x_q, x_kv, params, n_heads, mask=mask, scale=scale)
    if res is not None:
        H_, T_, S_ = params.n_heads or n_heads, np.shape(x_q)[-2], np.shape(x_kv)[-2]
        batch = np.broadcast_shapes(np.shape(x_q)[:-2], np.shape(x_kv)[:-2])
        check_attention(res, batch + (T_, c.d_model), batch + (H_, T_, S_),
                        torch_mha(x_q, x_kv, params, H_, mask, factor_of(scale, np.shape(params.W_q)[1] // H_)))


# --- diagnostics ------------------------------------------------------------------------------

@FUZZ
@given(st.data())
def test_diagnostics(data):
    d = Draw(data)
    shape = lead_shape(d) + (d(st.integers(1, 5)),)
    scores = arr_near(d, shape)
    w = prob_rows(d, shape) if d(st.integers(0, 2)) else arr_near(d, shape)
    ent = call(core.entropy, w)
    if ent is not None:
        finite(ent, np.shape(w)[:-1])
        close(ent, torch.distributions.Categorical(probs=t64(w)).entropy().numpy(), rtol=1e-4)
        close(finite(call(core.effective_tokens, w), np.shape(w)[:-1]), np.exp(ent))
        close(finite(call(core.max_weight, w), np.shape(w)[:-1]), t64(w).amax(-1).numpy())
        tw = t64(w)
        jac = torch.diag_embed(tw) - tw[..., :, None] * tw[..., None, :]
        close(finite(call(core.softmax_grad_norm, w), np.shape(w)[:-1]),
              torch.linalg.matrix_norm(jac).numpy(), rtol=1e-6)
    else:
        for fn in (core.effective_tokens, core.max_weight, core.softmax_grad_norm):
            assert call(fn, w) is None
    std = call(core.score_std, scores)
    if std is not None:
        finite(std, np.shape(scores)[:-1])
        ts = t64(scores)
        top = ts.abs().amax(-1, keepdim=True).clamp_min(1e-300)
        close(std, (torch.std(ts / top, dim=-1, unbiased=False) * top[..., 0]).numpy())
    summary = call(core.summarize, scores, w)
    if summary is not None:
        assert set(summary) == {"score_std", "max_weight", "entropy", "effective_tokens", "grad_norm"}
        assert all(isinstance(v, float) and math.isfinite(v) for v in summary.values())
        assert summary["entropy"] == pytest.approx(float(np.mean(ent)))


def test_every_public_name_is_fuzzed():
    """Runs after the fuzz tests above (file order): every public name both computed
    something and refused something, so neither path went untested."""
    if not OUTCOMES:
        pytest.skip("run with the fuzz tests above")
    names = set(core.__all__) - {"BERT_BASE"}  # a constant, nothing to call
    print({n: OUTCOMES.get(n) for n in sorted(names)})
    assert not names - set(OUTCOMES), f"never called: {sorted(names - set(OUTCOMES))}"
    assert all(ok > 0 for ok, _ in OUTCOMES.values()), f"never succeeded: {OUTCOMES}"
    assert all(no > 0 for _, no in OUTCOMES.values()), f"never refused: {OUTCOMES}"

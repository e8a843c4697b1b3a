"""Driving chapter 10's RoPE figure in a page (Jupyter or the web edition): read what the
browser computed, move its sliders, and compare with the math core (used by
tests/test_browser_ch10.py and tests/test_site_ch10.py)."""
from __future__ import annotations

import pytest

from qkv_viz.chapters.ch10_positions.toy import WIDGET_SEED, widget_vectors
from qkv_viz.core.positions import apply_rope, rope_dot, rope_dots_by_offset

READ_JS = """(node) => {
  const q = node.closest('.qkv-figure').parentElement.qkv;
  return {settings: q.settings, dot: q.dot, dotOffset: q.dotOffset, plain: q.plain, pairDot: q.pairDot,
          parts: q.parts, curve: q.curve, offsets: q.offsets, angle: q.angle};
}"""
CANVASES_JS = "(root) => [...root.querySelectorAll('canvas')].map(c => c.toDataURL())"
SET_RANGE_JS = "(node, v) => { node.value = String(v); node.dispatchEvent(new Event('input', {bubbles: true})); }"


def read(fig) -> dict:
    return fig.evaluate(READ_JS)


def assert_equals_core(out: dict, seed: int = WIDGET_SEED) -> None:
    """The browser's q_m . k_n, its offset-only twin and its curve equal the core's to 1e-6."""
    s = out["settings"]
    q, k = (v[:s["dK"]] for v in widget_vectors(seed))
    want = rope_dot(q, k, s["m"], s["n"], s["base"])
    assert out["dot"] == pytest.approx(want, abs=1e-6), s
    assert out["dotOffset"] == pytest.approx(want, abs=1e-6), s
    assert out["plain"] == pytest.approx(float(q @ k), abs=1e-6), s
    a, b = 2 * s["pair"], 2 * s["pair"] + 1
    qm, kn = apply_rope(q[None], [s["m"]], s["base"])[0], apply_rope(k[None], [s["n"]], s["base"])[0]
    assert out["pairDot"] == pytest.approx(qm[a] * kn[a] + qm[b] * kn[b], abs=1e-6), s
    parts = (qm * kn).reshape(-1, 2).sum(axis=1)                     # each pair's part, (d_k/2,)
    assert max(abs(x - y) for x, y in zip(out["parts"], parts)) <= 1e-6 and len(out["parts"]) == len(parts), s
    curve = rope_dots_by_offset(q, k, out["offsets"], s["base"])
    assert max(abs(a - b) for a, b in zip(out["curve"], curve)) <= 1e-6, s


def canvases(fig) -> list:
    return fig.evaluate(CANVASES_JS)


def press(page, control, key: str, times: int = 1) -> None:
    control.focus()
    for _ in range(times):
        page.keyboard.press(key)
    page.wait_for_timeout(100)


def exercise_figure(page, fig) -> list:
    """Move every control of the figure; check pictures, readouts and numbers after each.
    Returns short notes of what was seen (for the failure message)."""
    notes = []
    readouts = fig.locator(".qkv-rope-readouts")
    out0 = read(fig)
    assert_equals_core(out0)
    assert (out0["settings"]["m"], out0["settings"]["n"]) == (2, 5)
    shares = [abs(p) for p in out0["parts"]]
    assert out0["settings"]["pair"] == shares.index(max(shares)), "the drawn pair is not the largest part"
    assert abs(out0["pairDot"]) > 0.5 * abs(out0["dot"]), out0   # the picture explains most of the number

    def moved(what, act):
        pictures, text = canvases(fig), readouts.inner_text()
        act()
        after = read(fig)
        assert canvases(fig) != pictures, f"{what}: the picture did not change"
        assert readouts.inner_text() != text or what.startswith("lock"), f"{what}: readouts did not change"
        assert_equals_core(after)
        notes.append(f"{what}: {after['settings']} dot {after['dot']:.4f}")
        return after

    m_slider, n_slider = fig.locator(".qkv-rope-m"), fig.locator(".qkv-rope-n")
    out = moved("m slider, ArrowRight x3", lambda: press(page, m_slider, "ArrowRight", 3))
    assert out["settings"]["m"] == 5 and out["settings"]["n"] == 5
    out = moved("n slider, ArrowRight x4", lambda: press(page, n_slider, "ArrowRight", 4))
    assert out["settings"]["n"] == 9
    fig.locator(".qkv-rope-lock").click()
    locked = read(fig)
    assert locked["settings"]["lock"] is True
    before_dot, offset = locked["dot"], locked["settings"]["n"] - locked["settings"]["m"]
    out = moved("lock on, m slider ArrowRight x6", lambda: press(page, m_slider, "ArrowRight", 6))
    assert out["settings"]["m"] == 11 and out["settings"]["n"] == 11 + offset
    assert out["dot"] == pytest.approx(before_dot, abs=1e-9), "fixed offset, yet the dot product moved"
    assert out["angle"] == pytest.approx(locked["angle"], abs=1e-6), "fixed offset, yet the angle moved"
    out = moved("lock on, n slider End", lambda: press(page, n_slider, "End"))
    assert out["settings"]["n"] == out["settings"]["tMax"] - 1
    assert out["settings"]["n"] - out["settings"]["m"] == offset
    assert out["dot"] == pytest.approx(before_dot, abs=1e-9)
    fig.locator(".qkv-rope-lock").click()
    out = moved("d_k slider, ArrowRight", lambda: press(page, fig.locator(".qkv-rope-dk"), "ArrowRight"))
    assert out["settings"]["dK"] == 16
    out = moved("base slider, ArrowLeft x2", lambda: press(page, fig.locator(".qkv-rope-base"), "ArrowLeft", 2))
    assert out["settings"]["base"] == 100
    pair = out["settings"]["pair"]
    out = moved("pair slider, ArrowRight x2", lambda: press(page, fig.locator(".qkv-rope-pair"), "ArrowRight", 2))
    assert out["settings"]["pair"] == pair + 2
    out = moved("d_k slider, Home", lambda: press(page, fig.locator(".qkv-rope-dk"), "Home"))
    assert out["settings"]["dK"] == 2 and out["settings"]["pair"] == 0
    fig.locator(".qkv-rope-m").evaluate(SET_RANGE_JS, 0)
    assert_equals_core(read(fig))
    assert fig.locator(".qkv-message").inner_text().strip() == ""
    return notes

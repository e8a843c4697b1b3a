"""Chapter 1 checkers: right answers pass, wrong ones get a hint without the answer."""
import numpy as np

from qkv_viz.chapters.ch01_library import exercises as ch01
from qkv_viz.chapters.ch01_library.library import DEMO_QUERY, demo_library, hard_lookup, soft_lookup


def test_hard_pick():
    lib = demo_library()
    best = hard_lookup(DEMO_QUERY, lib)
    assert ch01.check_hard_pick(best)
    assert ch01.check_hard_pick(lib.titles[best].upper())
    for wrong in [i for i in range(lib.n_books) if i != best] + ["no such book", 2.5]:
        fb = ch01.check_hard_pick(wrong)
        assert not fb and lib.titles[best] not in fb.message


def test_hot_weight():
    assert ch01.check_hot_weight(1 / demo_library().n_books)
    for wrong in (0.0, 0.5, 1.0, "x"):
        fb = ch01.check_hot_weight(wrong)
        assert not fb and "0.2" not in fb.message


def test_blend():
    out = soft_lookup(DEMO_QUERY, demo_library(), 1.0)[0]
    assert ch01.check_blend(np.round(out, 3))
    fb = ch01.check_blend(demo_library().values.mean(axis=0))
    assert not fb and f"{out[0]:.2f}" not in fb.message
    assert not ch01.check_blend([1.0, 2.0])


def test_none_asks_for_an_answer():
    for check in (ch01.check_hard_pick, ch01.check_hot_weight, ch01.check_blend):
        fb = check(None)
        assert not fb and "Replace None" in fb.message

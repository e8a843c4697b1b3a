"""Chapter 3's triangle: each output's barycentric coordinates are its row of weights, so
every output lies inside the triangle of the values (the page's picture shows it live)."""
import numpy as np
import pytest

import qkv_viz as qv
from qkv_viz.chapters.ch03_toy.figures import barycentric
from qkv_viz.chapters.ch03_toy.toy import TOY_K, TOY_Q, TOY_V


def test_outputs_recover_their_weights_and_lie_inside_the_triangle():
    out, weights = qv.scaled_dot_product_attention(TOY_Q, TOY_K, TOY_V)
    for o, w in zip(out, weights):
        coords = barycentric(o, TOY_V)
        np.testing.assert_allclose(coords, w)
        assert np.all(coords >= 0)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="corners"):
        barycentric([0.1, 0.2], np.ones((4, 2)))

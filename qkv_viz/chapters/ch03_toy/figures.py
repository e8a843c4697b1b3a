"""Chapter 3's geometry: an attention output is a point inside the triangle of the values.

The picture itself is live (``vector_move.py``); this module keeps the one
computation it needs in reverse, a point's barycentric coordinates.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.validate import as_array


def barycentric(point, corners) -> np.ndarray:
    """Barycentric coordinates (3,) of ``point`` (2,) in the triangle ``corners`` (3, 2).

    Solves lambda_1 c_1 + lambda_2 c_2 + lambda_3 c_3 = point with sum(lambda) = 1.
    """
    corners = as_array("corners", corners, ndim=2)
    point = as_array("point", point, ndim=1)
    if corners.shape != (3, 2) or point.shape != (2,):
        raise ValueError(f"need corners (3, 2) and point (2,), got {corners.shape} and {point.shape}")
    A = np.vstack([corners.T, np.ones(3)])  # (3, 3): rows x, y, 1
    return np.linalg.solve(A, np.append(point, 1.0))

"""Chapter 0's printed tables: a matrix with a name for each row and each column."""
from __future__ import annotations

import numpy as np


def print_table(name, rows, columns, M, width=14):
    """Print ``M`` (len(rows), len(columns)) under a header: ``name`` then the column names, then one
    line per row, its name then its numbers (``%g``, so 2.0 prints as 2), and a blank line."""
    M = np.asarray(M, dtype=float)
    if M.shape != (len(rows), len(columns)):
        raise ValueError(f"M must be ({len(rows)}, {len(columns)}) for the names given, got {M.shape}")
    print(f"{name:10s}" + "".join(f"{c:>{width}s}" for c in columns))
    for row, m in zip(rows, M):
        print(f"{row:10s}" + "".join(f"{x:{width}g}" for x in m))
    print()

"""Chapter 2's printed tables: a matrix with a name for each row and each column, and what the rows
and the columns are (chapter 0's tables, with both axes named)."""
from __future__ import annotations

import numpy as np


def print_table(name, rows, columns, M, rows_are, columns_are, width=15):
    """Print ``M`` (len(rows), len(columns)) as a labelled table.

    Line 1: ``name`` then ``columns_are →``; line 2: ``rows_are ↓`` then the column names; then one
    line per row, its name then its numbers (``%g``, so 2.0 prints as 2); then a blank line."""
    M = np.asarray(M, dtype=float)
    if M.shape != (len(rows), len(columns)):
        raise ValueError(f"M must be ({len(rows)}, {len(columns)}) for the names given, got {M.shape}")
    left = max(len(name), len(rows_are) + 2, *(len(r) for r in rows)) + 2
    width = max(width, *(len(c) + 2 for c in columns))
    lines = [f"{name:{left}s}{columns_are} →",
             f"{rows_are + ' ↓':{left}s}" + "".join(f"{c:>{width}s}" for c in columns)]
    lines += [f"{r:{left}s}" + "".join(f"{x + 0.0:{width}g}" for x in m) for r, m in zip(rows, M)]
    print("\n".join(lines) + "\n")

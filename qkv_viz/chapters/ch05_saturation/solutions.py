"""Worked solutions to chapter 5's exercises (outside the reading flow; the tests run each
one through its checker)."""
from __future__ import annotations

import numpy as np


# 1. One Adam step: running means of g and g^2, corrected for their zero start, then a step of
#    lr * m_hat / sqrt(v_hat). At t = 1, m_hat = g and v_hat = g^2, so every entry moves by lr * sign(g).
def adam_step(w, g, m, v, t, lr):
    """w, g, m, v arrays of one shape; t the step number (1, 2, ...). Returns (new w, new m, new v)."""
    m = 0.9 * m + 0.1 * g
    v = 0.999 * v + 0.001 * g ** 2
    m_hat = m / (1 - 0.9 ** t)
    v_hat = v / (1 - 0.999 ** t)
    return w - lr * m_hat / (np.sqrt(v_hat) + 1e-8), m, v


# 2. Var(q . k) = d_k * (d_model * std^2)^2 = 1  =>  std = 1 / (sqrt(d_model) * d_k ** 0.25)
#    = 1 / (8 * 128 ** 0.25) ~ 0.0372 for d_model = 64, d_k = 128.
CONTROL_INIT_STD_128 = float(1 / (np.sqrt(64) * 128 ** 0.25))

# 3. The scores' rows have a std of a few thousandths (tiny init, std 0.01): every weight is
#    about 1/16, the rows are uniform.
MYSTERY = "uniform"

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


# 2. With inputs of variance 4, an entry of q = x W_q has variance d_model * 4 * std^2, so
#    Var(q . k) = d_k * (4 * d_model * std^2)^2 = 1  =>  std = 1 / (2 * sqrt(d_model) * d_k ** 0.25)
#    = 1 / (2 * 8 * 128 ** 0.25) ~ 0.0186 for d_model = 64, d_k = 128 (half the unit-input answer).
CONTROL_INIT_STD_128 = float(1 / (2 * np.sqrt(64) * 128 ** 0.25))

# 3. The scores' rows have a std of a few thousandths (tiny init, std 0.01): every weight is
#    about 1/16, the rows are uniform.
MYSTERY = "uniform"

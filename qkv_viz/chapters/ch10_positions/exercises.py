"""Chapter 10 exercises: write RoPE (Llama's pairing), compute a rotated dot product from the
offset alone, and tell which pairing turned a vector.

Each ``check_*`` takes the reader's function first (``fn``) and returns a ``Feedback``
(``qkv_viz.chapters.feedback``) saying precisely what is wrong; ``None`` means "no
answer yet". Worked solutions: ``qkv_viz.chapters.ch10_positions.solutions``.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.feedback import Feedback, check_function, no_answer
from qkv_viz.core.positions import apply_rope, rope_dot, rope_frequencies

BASES = (10.0, 100.0, 10000.0)


# ---------------------------------------------------------------- exercise 1: RoPE, "half" pairing
def rope_cases(seed=None, n_cases: int = 6) -> list:
    """Random (x (T, d_k), base): T in 3..8, d_k in {4, 6, 8, 12}, entries N(0, 1)."""
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(int(rng.integers(3, 9)), int(rng.choice([4, 6, 8, 12])))),
             float(rng.choice(BASES))) for _ in range(n_cases)]


def _half_rope_with(x, angle):
    """x (T, d_k) with pair (i, i + d_k/2) turned by angle (T, d_k/2)."""
    h = x.shape[1] // 2
    a, b = x[:, :h], x[:, h:]
    return np.concatenate([a * np.cos(angle) - b * np.sin(angle), a * np.sin(angle) + b * np.cos(angle)], axis=1)


def _diagnose_rope(got, want, case) -> str | None:
    x, base = case
    T, d_k = x.shape
    pos = np.arange(T)[:, None]
    theta = rope_frequencies(d_k, base)[None, :]
    suspects = {
        "you turned ADJACENT pairs (0, 1), (2, 3), ...; this exercise pairs coordinate i with i + d_k/2 "
        "(Llama's rotate_half).": apply_rope(x, base=base, pairing="adjacent"),
        "you turned every pair the wrong way (by -m theta_i): the first coordinate of a pair becomes "
        "a cos - b sin, the second a sin + b cos.": _half_rope_with(x, -pos * theta),
        "your positions start at 1; the first row is position 0, which is not turned at all.":
            _half_rope_with(x, (pos + 1) * theta),
        "your frequencies are base ** (-i / d_k); they are base ** (-2 i / d_k), i = 0 .. d_k/2 - 1.":
            _half_rope_with(x, pos * base ** (-np.arange(d_k // 2)[None, :] / d_k)),
        "your output is x unchanged: nothing was turned.": x,
    }
    for message, wrong in suspects.items():
        if np.allclose(got, wrong) and not np.allclose(wrong, want):
            return message
    return None


def check_rope_half(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(x, base)`` turns x (T, d_k) at positions 0..T-1, pairs (i, i + d_k/2)."""
    return check_function(fn, lambda x, base: apply_rope(x, base=base, pairing="half"), rope_cases(seed),
                          name="rope_half", diagnose=_diagnose_rope, atol=1e-9,
                          praise="Your rope_half gives apply_rope(x, base=base, pairing='half') on every "
                                 "case: the pairing of GPT-NeoX and Hugging Face's Llama.")


# ---------------------------------------------------------------- exercise 2: from the offset alone
def offset_cases(seed=None, n_cases: int = 8) -> list:
    """Random (q (d_k,), k (d_k,), offset, base) with offsets of both signs."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n_cases):
        d_k = int(rng.choice([4, 8, 16]))
        offset = int(rng.integers(1, 40)) * (1 if i % 2 else -1)
        cases.append((rng.normal(size=d_k), rng.normal(size=d_k), offset, float(rng.choice(BASES))))
    return cases


def _both_turned(q, k, offset, base, rng=np.random.default_rng(7)):
    """q_m . k_n with n - m = offset at a random m (any m gives the same number)."""
    m = int(rng.integers(0, 1000))
    return np.float64(rope_dot(q, k, m, m + offset, base))


def _diagnose_offset(got, want, case) -> str | None:
    q, k, offset, base = case
    if np.isclose(got, rope_dot(q, k, 0, -offset, base)) and not np.isclose(got, want):
        return ("your number is the dot product at offset -offset: the key is `offset` positions AFTER "
                "the query (n - m = offset), so k is turned by +offset relative to q.")
    if np.isclose(got, q @ k) and not np.isclose(got, want):
        return "your number is q . k without any turning."
    return None


def check_relative_dot(fn, seed=None) -> Feedback:
    """Exercise 2: ``fn(q, k, offset, base)`` = q_m . k_n for n - m = offset, without m or n.

    Each case is compared with q and k both turned, q to a random position m and k to m + offset.
    """
    return check_function(fn, _both_turned, offset_cases(seed), name="relative_dot",
                          diagnose=_diagnose_offset, atol=1e-9,
                          praise="From the offset alone you get q_m . k_n for any m: the checker "
                                 "turned q to a random m and k to m + offset, and the numbers agree.")


# ---------------------------------------------------------------- exercise 3: which pairing?
PAIRINGS = ("adjacent", "half")


def pairing_cases(seed=None, n_cases: int = 8) -> list:
    """(x (T, d_k), rotated (T, d_k)): rotated with an unknown base, unknown positions, one pairing.
    Half of the cases use each pairing."""
    rng = np.random.default_rng(seed)
    order = rng.permutation([i % 2 for i in range(n_cases)])
    cases = []
    for which in order:
        T, d_k = int(rng.integers(2, 7)), int(rng.choice([4, 8, 16]))
        x = rng.normal(size=(T, d_k))
        rotated = apply_rope(x, positions=rng.uniform(1, 60, size=T), base=float(rng.uniform(50, 50000)),
                             pairing=PAIRINGS[which])
        cases.append((x, rotated))
    return cases


def _true_pairing(x, rotated) -> float:
    """0.0 for adjacent, 1.0 for half: which pairs kept their length (a rotation keeps each pair's)."""
    h = x.shape[1] // 2
    kept = [np.allclose(np.hypot(x[:, f], x[:, s]), np.hypot(rotated[:, f], rotated[:, s]))
            for f, s in ((np.arange(0, 2 * h, 2), np.arange(1, 2 * h, 2)), (np.arange(h), np.arange(h, 2 * h)))]
    return 0.0 if kept[0] else 1.0


def check_which_pairing(fn, seed=None) -> Feedback:
    """Exercise 3: ``fn(x, rotated)`` returns "adjacent" or "half", the pairing that turned x."""
    if fn is None:
        return no_answer()
    if not callable(fn):
        return Feedback(False, f"which_pairing should be a function (def ...), got {type(fn).__name__}.")
    cases = pairing_cases(seed)
    answers = []  # what the reader said, case by case (diagnose is asked about the latest)

    def as_code(x, rotated):  # the reader's string as a number check_function can compare
        said = fn(x, rotated)
        answers.append(said)
        if said is None:
            return None
        if isinstance(said, (str, np.str_)) and str(said).strip().lower() in PAIRINGS:
            return np.float64(PAIRINGS.index(str(said).strip().lower()))
        return np.float64(-1.0)  # not an answer: diagnose says so

    def diagnose(got, want, case):
        said = answers[-1]
        if not (isinstance(said, (str, np.str_)) and str(said).strip().lower() in PAIRINGS):
            return f'which_pairing returned {said!r}; return the string "adjacent" or "half".'
        if got != want:
            return (f'which_pairing said "{PAIRINGS[int(got)]}" but this vector was turned with the '
                    f'"{PAIRINGS[int(want)]}" pairing. The base and the positions are unknown: look for '
                    f"what a rotation keeps.")
        return None

    return check_function(as_code, _true_pairing, cases, name="which_pairing", diagnose=diagnose,
                          praise="Right on every case, whatever the base and the positions: a rotation "
                                 "keeps each pair's length, so the pairs whose lengths survived are the "
                                 "pairs that were turned.")


# ---------------------------------------------------------------- exercise 4: add or concatenate?
def concat_cases(seed=None, n_cases: int = 6) -> list:
    """(x_m, p_m, x_n, p_n, W_q, W_k): word parts (d_x,), position parts (d_p,), W_q, W_k (d_x + d_p, d_k).
    d_x and d_p differ, so a split at the wrong row changes the shapes' meaning."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(n_cases):
        d_x, d_p, d_k = int(rng.integers(3, 7)), int(rng.integers(2, 5)), int(rng.integers(2, 6))
        x_m, x_n = rng.normal(size=(2, d_x))
        p_m, p_n = rng.normal(size=(2, d_p))
        W_q, W_k = rng.normal(size=(2, d_x + d_p, d_k))
        cases.append((x_m, p_m, x_n, p_n, W_q, W_k))
    return cases


def _concat_terms(x_m, p_m, x_n, p_n, W_q, W_k):
    """The four terms from the blocks W_q = [A; B], W_k = [C; D] (rows for x, then for p)."""
    d_x = len(x_m)
    A, B, C, D = W_q[:d_x], W_q[d_x:], W_k[:d_x], W_k[d_x:]
    return np.array([(x_m @ A) @ (x_n @ C), (x_m @ A) @ (p_n @ D),
                     (p_m @ B) @ (x_n @ C), (p_m @ B) @ (p_n @ D)])


def _diagnose_concat(got, want, case) -> str | None:
    x_m, p_m, x_n, p_n, W_q, W_k = case
    whole = (np.concatenate([x_m, p_m]) @ W_q) @ (np.concatenate([x_n, p_n]) @ W_k)
    if np.allclose(got, want[[0, 2, 1, 3]]):
        return ("word-position and position-word are swapped: word-position is the query's word part "
                "against the key's position part, (x_m A) . (p_n D).")
    if np.isclose(got[0], whole) and np.allclose(got[1:], 0):
        return ("your first number is the whole score [x_m, p_m] W_q . [x_n, p_n] W_k; split it into four, "
                "one for each pair of blocks.")
    if np.isclose(got.sum(), whole):
        return ("your four numbers add up to the whole score, but they are not the four terms: word-word "
                "uses only x_m, x_n and the blocks A, C; position-position only p_m, p_n, B and D.")
    return None


def check_concat_terms(fn, seed=None) -> Feedback:
    """Exercise 4: ``fn(x_m, p_m, x_n, p_n, W_q, W_k)`` -> the four terms (4,) of [x_m, p_m] W_q . [x_n, p_n] W_k."""
    return check_function(fn, _concat_terms, concat_cases(seed), name="concat_terms",
                          diagnose=_diagnose_concat, atol=1e-9,
                          praise="Right on every case, and the four terms are all there: [x_m, p_m] W_q "
                                 "= x_m A + p_m B, so appending p_m is adding p_m B, a learned projection "
                                 "of it, and words and positions meet in q . k as before. Concatenating "
                                 "only costs width (longer vectors everywhere), which is why the original "
                                 "Transformer adds. RoPE is what keeps positions out of the word terms: "
                                 "it turns q and k instead of adding anything.")

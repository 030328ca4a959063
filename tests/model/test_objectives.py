"""Known values of the test functions of sgmc.objectives (Dong & Tong, Sec. 3), each computed
by hand from the paper's formulas."""

import math

import numpy as np
import pytest

from sgmc.objectives import (
    GaussianWells,
    gaussian_wells,
    griewank,
    kde_wells,
    rastrigin,
    wells_regulariser,
)


def test_rastrigin_known_values():
    # 10 d + Σ (x_i² − 10 cos 2π x_i): at (0.5, 0.5), 20 + 2 (0.25 + 10) = 40.5.
    assert float(rastrigin(np.array([0.5, 0.5]))) == pytest.approx(40.5, rel=1e-6)
    assert float(rastrigin(np.zeros(5))) == pytest.approx(0.0, abs=1e-5)
    # x = (1, 0, 0): 30 + (1 − 10) − 10 − 10 = 1.
    assert float(rastrigin(np.array([1.0, 0.0, 0.0]))) == pytest.approx(1.0, abs=1e-4)


def test_griewank_known_values():
    # 1 + Σ x_i²/4000 − Π cos(x_i/√i): at (0, π√2), 1 + 2π²/4000 − cos 0 · cos π = 2 + π²/2000.
    x = np.array([0.0, math.pi * math.sqrt(2.0)])
    assert float(griewank(x)) == pytest.approx(2.0 + math.pi ** 2 / 2000.0, rel=1e-6)
    assert float(griewank(np.zeros(50))) == pytest.approx(0.0, abs=1e-6)
    # d = 1 at x = π: 1 + π²/4000 + 1.
    assert float(griewank(np.array([math.pi]))) == pytest.approx(2 + math.pi ** 2 / 4000,
                                                                  rel=1e-6)


def test_wells_at_a_centre_and_regulariser():
    # F(x) = −Σ w_i N(x; m_i, 0.1 I) + L(x) (eq. (7)–(8)); two wells, evaluated at the first
    # centre: −[0.25 + 0.75 exp(−1/0.2)] / (2π · 0.1).
    w = GaussianWells([0.25, 0.75], [[0.0, 0.0], [1.0, 0.0]])
    want = -(0.25 + 0.75 * math.exp(-5.0)) / (0.2 * math.pi)
    assert float(w(np.zeros(2))) == pytest.approx(want, rel=1e-6)
    assert float(w.numpy_value(np.zeros(2))) == pytest.approx(want, rel=1e-12)
    # L(x) = Σ (x_i + 1)² 1{x_i < −1} + (x_i − 5)² 1{x_i > 5}: at (−2, 6), 1 + 1.
    assert float(wells_regulariser(np.array([-2.0, 6.0]))) == pytest.approx(2.0)
    assert float(wells_regulariser(np.array([0.0, 4.0]))) == 0.0
    # The default wells: 25 centres on {0..4}², weights summing to 1.
    g = gaussian_wells(seed=2)
    assert g.centers.shape == (25, 2) and np.isclose(g.weights.sum(), 1.0)


def test_kde_kernel_parameter_is_a_variance():
    """κ_σ(x, s) = (2πσ)^{-1} exp(−‖x − s‖²/(2σ)) in d = 2 with σ = 0.12 a variance (Dong &
    Tong, Sec. 3.1.3). At ‖x − s‖ = 0.5 from the one datum:
    −exp(−0.25/0.24)/(0.24π) = −0.4684 (the old standard-deviation reading gave −1.90e−3)."""
    w = GaussianWells([1.0], [[2.0, 2.0]])
    kde = kde_wells(w, num_samples=1, seed=0)
    s = np.asarray(kde.data, np.float64).reshape(2)
    x = s + np.array([0.3, 0.4])
    want = -math.exp(-0.25 / (2 * 0.12)) / (2 * math.pi * 0.12)
    assert float(kde.full_energy(x.astype(np.float32))) == pytest.approx(want, rel=1e-5)
    # At the datum itself: −1/(2π σ), and another variance is honoured.
    kde2 = kde_wells(w, num_samples=1, kernel_variance=0.5, seed=0)
    s2 = np.asarray(kde2.data).reshape(2)
    assert float(kde2.full_energy(s2)) == pytest.approx(-1 / math.pi, rel=1e-5)
    # The mean over data: two draws.
    kde3 = kde_wells(w, num_samples=2, seed=1)
    data = np.asarray(kde3.data, np.float64)
    d2 = np.sum((data - 2.0) ** 2, axis=-1)
    want3 = -np.mean(np.exp(-d2 / 0.24)) / (0.24 * math.pi)
    assert float(kde3.full_energy(np.full(2, 2.0, np.float32))) == pytest.approx(want3,
                                                                                 rel=1e-5)
    with pytest.raises(ValueError, match="kernel_variance"):
        kde_wells(w, kernel_variance=0.0)

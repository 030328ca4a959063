import jax.numpy as jnp
import numpy as np
import pytest

from sgmc import schedules


def test_constant_polynomial_cyclical_values():
    assert float(schedules.constant(0.1)(jnp.int32(50))) == pytest.approx(0.1)
    dec = schedules.polynomial_decay(1.0, b=10.0, gamma=0.5)
    assert float(dec(jnp.int32(90))) == pytest.approx(0.1)
    assert dec.max_value() == pytest.approx(10 ** -0.5)
    cyc = schedules.cyclical(0.2, cycle_length=100)
    vals = np.array([float(cyc(jnp.int32(t))) for t in (0, 50, 99, 100)])
    np.testing.assert_allclose(vals, [0.2, 0.1, 0.2 * 0.5 * (np.cos(np.pi * 0.99) + 1), 0.2],
                               rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("make, match", [
    (lambda: schedules.constant(0.0), "step_size must lie in"),
    (lambda: schedules.polynomial_decay(1.0, gamma=2.0), "gamma must lie in"),
    (lambda: schedules.cyclical(0.1, cycle_length=0), "cycle_length"),
])
def test_bad_schedules(make, match):
    with pytest.raises(ValueError, match=match):
        make()

import jax
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


def test_cyclical_phase_is_exact_past_2_to_the_24():
    """The phase t mod L is taken in integers: at t = 2²⁴ + 3 (float32 rounds it to 2²⁴ + 4)
    the value is the one at t mod L, bitwise, as for sgmc.cyclical; below 2²⁴ nothing
    changed (the float32 phase was exact there)."""
    cyc = schedules.cyclical(0.2, cycle_length=100)
    for t in (2 ** 24 + 3, 2 ** 31 - 1):
        assert float(cyc(jnp.int32(t))) == float(cyc(jnp.int32(t % 100)))
    old = lambda t: 0.5 * 0.2 * (jnp.cos(jnp.pi * (jnp.mod(jnp.float32(t), 100.0) / 100.0))
                                 + 1.0)
    assert float(old(2 ** 24 + 3)) != float(cyc(jnp.int32(2 ** 24 + 3)))   # the float32 bug
    ts = jnp.arange(0, 5000, 7, dtype=jnp.int32)
    np.testing.assert_array_equal(np.asarray(cyc(ts)), np.asarray(jax.vmap(old)(ts)))
    # The schedule passed into a compiled program (its L a traced leaf), as samplers do.
    traced = jax.jit(lambda s, t: s(t))(cyc, ts)
    np.testing.assert_array_equal(np.asarray(traced), np.asarray(jax.vmap(old)(ts)))
    late = jax.jit(lambda s, t: s(t))(cyc, jnp.int32(2 ** 24 + 3))
    assert float(late) == float(cyc(jnp.int32((2 ** 24 + 3) % 100)))


@pytest.mark.parametrize("make, match", [
    (lambda: schedules.constant(0.0), "step_size must lie in"),
    (lambda: schedules.polynomial_decay(1.0, gamma=2.0), "gamma must lie in"),
    (lambda: schedules.cyclical(0.1, cycle_length=0), "cycle_length"),
])
def test_bad_schedules(make, match):
    with pytest.raises(ValueError, match=match):
        make()

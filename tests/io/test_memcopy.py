"""sgmc.io.memcopy: a block's copy into the sink, split over threads, equals plain assignment."""

import numpy as np
import pytest

from sgmc.io import memcopy
from sgmc.io.sinks import MemorySink


@pytest.fixture
def four_threads(monkeypatch):
    """Four threads, and pieces of any size, so that small arrays are split."""
    monkeypatch.setattr(memcopy, "threads", lambda: 4)
    monkeypatch.setattr(memcopy, "MIN_PIECE_BYTES", 64)


@pytest.mark.parametrize("shape, where", [
    ((1, 7, 3000), np.s_[:, 2:3]),        # one chain, one draw: its row is split
    ((2, 9, 50, 7), np.s_[:, 1:8]),        # two chains: each chain's rows split
    ((6, 5, 40), np.s_[:, 0:5]),          # more chains than threads: split by chain
    ((100_000,), np.s_[13:77_013]),        # one axis
])
def test_copy_equals_assignment(four_threads, shape, where):
    rng = np.random.default_rng(0)
    got, want = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
    src = rng.normal(size=want[where].shape).astype(np.float32)
    want[where] = src
    memcopy.copy_into(got[where], src)
    np.testing.assert_array_equal(got, want)


def test_copy_from_a_strided_source(four_threads):
    """A source that is not contiguous (a transposed view) is copied element by element."""
    src = np.arange(2 * 5 * 300, dtype=np.float64).reshape(300, 5, 2).T  # (2, 5, 300)
    dst = np.zeros((2, 8, 300))
    memcopy.copy_into(dst[:, 3:8], src)
    np.testing.assert_array_equal(dst[:, 3:8], src)
    assert not dst[:, :3].any()


def test_memory_sink_stores_blocks_through_it(four_threads):
    rng = np.random.default_rng(1)
    blocks = [rng.normal(size=(2, n, 33, 4)).astype(np.float32) for n in (3, 1, 4)]
    sink = MemorySink(8)
    steps = 0
    for b in blocks:
        sink.append({"w": b}, {}, np.arange(steps, steps + b.shape[1]))
        steps += b.shape[1]
    samples, _, got_steps = sink.arrays()
    np.testing.assert_array_equal(samples["w"], np.concatenate(blocks, axis=1))
    np.testing.assert_array_equal(got_steps, np.arange(8))

"""The interval ``make bench`` gives each ratio of its overhead table
(``bench.ratio_interval``): where the ratio of medians falls when the
run's pairs are resampled."""

import os
import random
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import bench  # noqa: E402


def pairs(shift, noise, count=41, seed=1):
    draw = random.Random(seed)
    stock = [0.160 + draw.gauss(0, noise) for _ in range(count)]
    fastio = [x * shift + draw.gauss(0, noise / 4) for x in stock]
    return stock, fastio


def test_interval_holds_the_ratio_and_is_repeatable():
    stock, fastio = pairs(1.02, 0.004)
    low, high = bench.ratio_interval(stock, fastio)
    ratio = statistics.median(fastio) / statistics.median(stock)
    assert low <= ratio <= high
    # a 2% overhead shows, and the interval is narrower than the noise
    assert 1.0 < low < 1.02 < high < 1.04
    assert bench.ratio_interval(stock, fastio) == (low, high)


def test_interval_widens_with_the_noise():
    quiet = bench.ratio_interval(*pairs(1.0, 0.001))
    noisy = bench.ratio_interval(*pairs(1.0, 0.010))
    assert quiet[0] < 1.0 < quiet[1]
    assert noisy[0] < 1.0 < noisy[1]
    assert noisy[1] - noisy[0] > 3 * (quiet[1] - quiet[0])

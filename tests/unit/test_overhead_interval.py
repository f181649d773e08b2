"""The interval ``make bench`` gives each ratio of its overhead table
(``fixtures/intervals.py``): where the ratio of medians falls when the
run's pairs are resampled."""

import random
import statistics

import intervals


def pairs(shift, noise, count=41, seed=1):
    draw = random.Random(seed)
    stock = [0.160 + draw.gauss(0, noise) for _ in range(count)]
    fastio = [x * shift + draw.gauss(0, noise / 4) for x in stock]
    return stock, fastio


def test_interval_holds_the_ratio_and_is_repeatable():
    stock, fastio = pairs(1.02, 0.004)
    low, high = intervals.ratio_interval(stock, fastio)
    ratio = statistics.median(fastio) / statistics.median(stock)
    assert low <= ratio <= high
    # a 2% overhead shows, and the interval is narrower than the noise
    assert 1.0 < low < 1.02 < high < 1.04
    assert intervals.ratio_interval(stock, fastio) == (low, high)


def test_interval_widens_with_the_noise():
    quiet = intervals.ratio_interval(*pairs(1.0, 0.001))
    noisy = intervals.ratio_interval(*pairs(1.0, 0.010))
    assert quiet[0] < 1.0 < quiet[1]
    assert noisy[0] < 1.0 < noisy[1]
    assert noisy[1] - noisy[0] > 3 * (quiet[1] - quiet[0])

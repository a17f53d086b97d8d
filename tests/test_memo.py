"""The byte-bounded caches of derived arrays: least recently used entries go first, the total stays under
the budget, and an entry larger than the budget is computed but not kept."""

import numpy as np

from furiosa_opt.memo import ByteLru, bytes_cache, nbytes


def test_the_least_recently_used_entry_goes_first_and_the_total_stays_bounded():
    cache = ByteLru(3000)
    for key in "abc":
        cache.put(key, np.zeros(1000, np.uint8))
    assert cache.get("a") is not None  # now the most recent
    cache.put("d", np.zeros(1000, np.uint8))
    assert cache.get("b") is None and all(cache.get(k) is not None for k in "acd")
    assert cache.held == 3000 == sum(nbytes(cache.get(k)) for k in "acd")
    cache.put("huge", np.zeros(4000, np.uint8))
    assert cache.get("huge") is None and len(cache) == 3


def test_a_decorated_function_computes_once_per_kept_argument():
    calls = []

    @bytes_cache(10_000)
    def ramp(n: int) -> np.ndarray:
        calls.append(n)
        return np.arange(n, dtype=np.int64)

    assert ramp(10) is ramp(10) and calls == [10]
    ramp(2000)  # 16 kB: larger than the budget, never kept
    ramp(2000)
    assert calls == [10, 2000, 2000]
    ramp.cache_clear()
    ramp(10)
    assert calls == [10, 2000, 2000, 10]


def test_nbytes_counts_arrays_inside_tuples_and_dataclasses():
    from furiosa_opt.fold import ContractionPlan

    plan = ContractionPlan(np.zeros(3, np.int64), 2, np.zeros(6, np.int64), np.zeros(6, np.int64))
    assert nbytes((plan, np.zeros(4, np.int8), "x")) == 24 + 48 + 48 + 4

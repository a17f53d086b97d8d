"""Caches of derived arrays (index maps, contraction plans), bounded by the bytes they hold.

Such results are worth keeping while a kernel runs again and again, but one entry of a large kernel can
weigh hundreds of megabytes, so a bound on the number of entries (`functools.lru_cache(maxsize=…)`)
lets a long-lived process — a test session, a host program launching many kernels — keep gigabytes of
them. These caches drop their least recently used entries once the total passes a byte budget.

    @bytes_cache(256 << 20)
    def index_map(src, dst) -> np.ndarray: ...
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np


def nbytes(value: object) -> int:
    """The array bytes a cached value holds: arrays, and arrays inside tuples, lists and dataclasses."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, tuple | list):
        return sum(nbytes(item) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(nbytes(getattr(value, f.name)) for f in dataclasses.fields(value))
    return 0


class ByteLru:
    """A least-recently-used map whose values' `nbytes` add up to at most `budget` (an entry larger than
    the whole budget is not kept at all)."""

    def __init__(self, budget: int):
        self.budget, self.held = budget, 0
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Hashable) -> Any:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: Hashable, value: Any) -> None:
        size = nbytes(value)
        with self._lock:
            if key in self._items:
                self.held -= self._items.pop(key)[1]
            if size > self.budget:
                return
            self._items[key] = (value, size)
            self.held += size
            while self.held > self.budget:
                self.held -= self._items.popitem(last=False)[1][1]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.held = 0


def bytes_cache(budget: int) -> Callable[[Callable], Callable]:
    """Memoise a function of hashable arguments in a `ByteLru` of `budget` bytes (`.cache_clear()`
    empties it, as with `functools.lru_cache`)."""

    def wrap(function: Callable) -> Callable:
        cache = ByteLru(budget)

        @functools.wraps(function)
        def cached(*args: Hashable) -> Any:
            hit = cache.get(args)
            if hit is None:
                hit = function(*args)
                cache.put(args, hit)
            return hit

        cached.cache = cache  # type: ignore[attr-defined]
        cached.cache_clear = cache.clear  # type: ignore[attr-defined]
        return cached

    return wrap

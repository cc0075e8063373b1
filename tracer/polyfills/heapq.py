"""``heapq`` and ``bisect`` in pure Python: the list stays a traced list changed in place, and the
items are compared with ``<`` in the order the C functions compare them."""

from __future__ import annotations

import bisect
import heapq

from .registry import polyfill


def _less(a, b):
    return a < b


def _greater(a, b):
    return b < a  # a max heap compares with ``<`` too, operands swapped (as CPython's)


def _sift_up(heap, start, pos, before=_less):
    """Move ``heap[pos]`` towards ``start`` while it goes ``before`` its parent."""
    item = heap[pos]
    while pos > start:
        parent = (pos - 1) >> 1
        if before(item, heap[parent]):
            heap[pos] = heap[parent]
            pos = parent
        else:
            break
    heap[pos] = item


def _sift_down(heap, pos, before=_less):
    """Move the first child up until a leaf, then put ``heap[pos]``'s item back in place."""
    end, start, item = len(heap), pos, heap[pos]
    child = 2 * pos + 1
    while child < end:
        right = child + 1
        if right < end and not before(heap[child], heap[right]):
            child = right
        heap[pos] = heap[child]
        pos = child
        child = 2 * pos + 1
    heap[pos] = item
    _sift_up(heap, start, pos, before)


@polyfill(heapq._heapify_max)
def heapify_max(heap):
    """``heapq._heapify_max`` (used by ``heapq.nsmallest``)."""
    for pos in reversed(range(len(heap) // 2)):
        _sift_down(heap, pos, _greater)


@polyfill(heapq._heapreplace_max)
def heapreplace_max(heap, item):
    """``heapq._heapreplace_max`` (used by ``heapq.nsmallest``)."""
    top = heap[0]
    heap[0] = item
    _sift_down(heap, 0, _greater)
    return top


@polyfill(heapq.heappush)
def heappush(heap, item):
    """``heapq.heappush``."""
    heap.append(item)
    _sift_up(heap, 0, len(heap) - 1)


@polyfill(heapq.heappop)
def heappop(heap):
    """``heapq.heappop``."""
    last = heap.pop()
    if not heap:
        return last
    top = heap[0]
    heap[0] = last
    _sift_down(heap, 0)
    return top


@polyfill(heapq.heapify)
def heapify(heap):
    """``heapq.heapify``."""
    for pos in reversed(range(len(heap) // 2)):
        _sift_down(heap, pos)


@polyfill(heapq.heappushpop)
def heappushpop(heap, item):
    """``heapq.heappushpop``."""
    if heap and heap[0] < item:
        item, heap[0] = heap[0], item
        _sift_down(heap, 0)
    return item


@polyfill(heapq.heapreplace)
def heapreplace(heap, item):
    """``heapq.heapreplace``."""
    top = heap[0]
    heap[0] = item
    _sift_down(heap, 0)
    return top


@polyfill(bisect.bisect_right)
def bisect_right(a, x, lo=0, hi=None, *, key=None):
    """``bisect.bisect_right`` (``bisect.bisect``)."""
    hi = len(a) if hi is None else hi
    while lo < hi:
        mid = (lo + hi) // 2
        if x < (a[mid] if key is None else key(a[mid])):
            hi = mid
        else:
            lo = mid + 1
    return lo


@polyfill(bisect.bisect_left)
def bisect_left(a, x, lo=0, hi=None, *, key=None):
    """``bisect.bisect_left``."""
    hi = len(a) if hi is None else hi
    while lo < hi:
        mid = (lo + hi) // 2
        if (a[mid] if key is None else key(a[mid])) < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@polyfill(bisect.insort_right)
def insort_right(a, x, lo=0, hi=None, *, key=None):
    """``bisect.insort_right`` (``bisect.insort``)."""
    a.insert(bisect_right(a, x if key is None else key(x), lo, hi, key=key), x)


@polyfill(bisect.insort_left)
def insort_left(a, x, lo=0, hi=None, *, key=None):
    """``bisect.insort_left``."""
    a.insert(bisect_left(a, x if key is None else key(x), lo, hi, key=key), x)

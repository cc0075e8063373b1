"""``itertools`` in pure Python, after the "roughly equivalent" code of the CPython documentation.

Each polyfill makes its items when they are taken, in CPython's order: a function with side
effects passed to ``accumulate`` or ``starmap`` runs exactly when the C version would run it. What
the C version does when it is called happens when the polyfill is called: its arguments are checked
and its sources turned into iterators then (``iter()`` may run user code, and an iterator over a
dict made then fails once the dict changes), and ``product``, ``permutations`` and the
combinations read their pools into tuples then, so items added to a source afterwards are not
seen. Such a polyfill returns a generator of an inner function (``generator_of``) taking what
the C function would take at that point.
"""

from __future__ import annotations

import itertools
import operator
import sys

from .registry import generator_of, polyfill
from .slots import has_slot

_MISSING = object()


def _chain(rest: tuple) -> itertools.chain:
    return itertools.chain(rest)


def _islice(rest: tuple) -> itertools.islice:
    return itertools.islice(rest, None)


@polyfill(itertools.chain, rebuild=_chain)
def chain(*iterables):
    """``itertools.chain``."""
    for iterable in iterables:
        yield from iterable


@polyfill(itertools.chain.from_iterable)
def chain_from_iterable(iterables):
    """``itertools.chain.from_iterable``."""
    return _chain_from_iterable(iter(iterables))


@generator_of(itertools.chain.from_iterable, rebuild=_chain)
def _chain_from_iterable(iterables):
    for iterable in iterables:
        yield from iterable


def _count_from(state: dict) -> tuple | None:
    """The ``count`` going on from ``state``: the next number is ``n + step`` once one was given
    (None: a number that is no constant)."""
    numbers = [state[k] for k in ("n", "start", "step") if k in state]
    if not all(isinstance(v, (int, float, complex)) for v in numbers):
        return None
    start = state["n"] + state["step"] if "n" in state else state["start"]
    return itertools.count, (start, state["step"])


@polyfill(itertools.count)
def count(start=0, step=1):
    """``itertools.count``: both arguments must be numbers; counting by an int 1 from an int
    that fits a C ``ssize_t``, CPython counts in C integers, so it gives plain ints
    (``count(True)`` starts at 1)."""
    if not (_is_number(start) and _is_number(step)):
        raise TypeError("a number is required")
    if isinstance(start, int) and type(step) in (int, bool) and step == 1:
        if -sys.maxsize - 1 <= start < sys.maxsize:
            start = int(start)
    return _count(start, step)


def _is_number(value) -> bool:
    """CPython's ``PyNumber_Check``: a complex, or a type with ``__index__``, ``__int__`` or
    ``__float__``."""
    kind = type(value)
    return isinstance(value, complex) or any(
        hasattr(kind, name) for name in ("__index__", "__int__", "__float__")
    )


@generator_of(itertools.count, resume=_count_from)
def _count(start, step):
    n = start
    while True:
        yield n
        n += step


@polyfill(itertools.repeat)
def repeat(obj, times=None):
    """``itertools.repeat``."""
    if times is None:
        while True:
            yield obj
    else:
        for _ in range(times):
            yield obj


@polyfill(itertools.cycle)
def cycle(iterable):
    """``itertools.cycle``."""
    return _cycle(iter(iterable))


@generator_of(itertools.cycle)
def _cycle(iterator):
    saved = []
    for element in iterator:
        yield element
        saved.append(element)
    while saved:
        yield from saved


@polyfill(itertools.accumulate)
def accumulate(iterable, func=None, *, initial=None):
    """``itertools.accumulate``."""
    return _accumulate(iter(iterable), func, initial=initial)


@generator_of(itertools.accumulate)
def _accumulate(it, func=None, *, initial=None):
    total = initial
    if initial is None:
        total = next(it, _MISSING)
        if total is _MISSING:
            return
    yield total
    for element in it:
        total = total + element if func is None else func(total, element)
        yield total


_ISLICE_STOP = "Stop argument for islice() must be None or an integer: 0 <= x <= sys.maxsize."
_ISLICE_INDEX = "Indices for islice() must be None or an integer: 0 <= x <= sys.maxsize."
_ISLICE_STEP = "Step for islice() must be a positive integer or None."


def _islice_bound(value, message):
    """An ``islice`` bound as CPython reads it: None, or a non-negative integer."""
    if value is None:
        return None
    index = operator.index(value) if has_slot(type(value), "__index__") else -1
    if index < 0:
        raise ValueError(message)
    return index


@polyfill(itertools.islice)
def islice(iterable, *args):
    """``itertools.islice``: its bounds checked, and the source made an iterator, when called."""
    if not args:
        raise TypeError("islice expected at least 2 arguments, got 1")
    if len(args) > 3:
        raise TypeError(f"islice expected at most 4 arguments, got {len(args) + 1}")
    start, stop, step = (None, args[0], None) if len(args) == 1 else (*args, None)[:3]
    stop = _islice_bound(stop, _ISLICE_STOP)
    start = _islice_bound(start, _ISLICE_INDEX)
    step = _islice_bound(step, _ISLICE_STEP)
    if step == 0:
        raise ValueError(_ISLICE_STEP)
    return _islice_of(iter(iterable), start or 0, stop, step or 1)


@generator_of(itertools.islice, rebuild=_islice)
def _islice_of(it, start, stop, step):
    """Takes from the source exactly the items CPython takes."""
    for _ in range(start):
        if next(it, _MISSING) is _MISSING:
            return
    i = start
    while stop is None or i < stop:
        element = next(it, _MISSING)
        if element is _MISSING:
            return
        yield element
        i += 1
        for _ in range(step - 1):
            if stop is not None and i >= stop:
                return
            if next(it, _MISSING) is _MISSING:
                return
            i += 1


@polyfill(itertools.product)
def product(*iterables, repeat=1):
    """``itertools.product``: the pools are read when it is called, as in CPython."""
    if operator.index(repeat) < 0:
        raise ValueError("repeat argument cannot be negative")
    return _product(*([tuple(pool) for pool in iterables] * repeat))


@generator_of(itertools.product)
def _product(*pools):
    result = [()]
    for pool in pools:
        result = [x + (y,) for x in result for y in pool]
    yield from result


def _pool_and_r(iterable, r):
    """The pool read into a tuple, then ``r`` checked, as CPython's combinatorics do."""
    pool = tuple(iterable)
    if r is None:
        return pool, len(pool)
    if not has_slot(type(r), "__index__"):
        raise TypeError("Expected int as r")
    r = operator.index(r)
    if r < 0:
        raise ValueError("r must be non-negative")
    return pool, r


@polyfill(itertools.permutations)
def permutations(iterable, r=None):
    """``itertools.permutations``."""
    return _permutations(*_pool_and_r(iterable, r))


@generator_of(itertools.permutations)
def _permutations(pool, r):
    n = len(pool)
    for indices in product(range(n), repeat=r):
        if len(set(indices)) == r:
            yield tuple(pool[i] for i in indices)


@polyfill(itertools.combinations)
def combinations(iterable, r):
    """``itertools.combinations``."""
    return _combinations(*_pool_and_r(iterable, r))


@generator_of(itertools.combinations)
def _combinations(pool, r):
    yield from _in_order(pool, permutations(range(len(pool)), r))


@polyfill(itertools.combinations_with_replacement)
def combinations_with_replacement(iterable, r):
    """``itertools.combinations_with_replacement``."""
    return _combinations_with_replacement(*_pool_and_r(iterable, r))


@generator_of(itertools.combinations_with_replacement)
def _combinations_with_replacement(pool, r):
    yield from _in_order(pool, product(range(len(pool)), repeat=r))


def _in_order(pool, candidates):
    """The items of ``pool`` at each of ``candidates`` (index tuples) whose indices are sorted."""
    for indices in candidates:
        if sorted(indices) == list(indices):
            yield tuple(pool[i] for i in indices)


@polyfill(itertools.zip_longest)
def zip_longest(*iterables, fillvalue=None):
    """``itertools.zip_longest``."""
    return _zip_longest(*[iter(it) for it in iterables], fillvalue=fillvalue)


@generator_of(itertools.zip_longest)
def _zip_longest(*iterators, fillvalue=None):
    iterators = list(iterators)
    active = len(iterators)
    if not active:
        return
    while True:
        values = []
        for i, it in enumerate(iterators):
            value = next(it, _MISSING)
            if value is _MISSING:
                active -= 1
                if not active:
                    return
                iterators[i] = repeat(fillvalue)
                value = fillvalue
            values.append(value)
        yield tuple(values)


@polyfill(itertools.pairwise)
def pairwise(iterable):
    """``itertools.pairwise``."""
    return _pairwise(iter(iterable))


@generator_of(itertools.pairwise)
def _pairwise(it):
    a = next(it, _MISSING)
    if a is _MISSING:
        return
    for b in it:
        yield a, b
        a = b


if hasattr(itertools, "batched"):  # the running Python has it (3.12+; ``strict`` 3.13+)
    _BATCHED_STRICT = "strict" in (itertools.batched.__text_signature__ or "")

    @polyfill(itertools.batched)
    def batched(iterable, n, *, strict=_MISSING):
        """``itertools.batched``: ``n`` read as a C ``Py_ssize_t`` and ``strict`` as a truth
        value, then ``n`` checked and the source made an iterator, when called."""
        if strict is not _MISSING and not _BATCHED_STRICT:
            raise TypeError("batched() got an unexpected keyword argument 'strict'")
        n = operator.index(n)
        if not -sys.maxsize - 1 <= n <= sys.maxsize:
            raise OverflowError("Python int too large to convert to C ssize_t")
        strict = strict is not _MISSING and bool(strict)
        if n < 1:
            raise ValueError("n must be at least one")
        return _batched(iter(iterable), n, strict)

    @generator_of(itertools.batched)
    def _batched(it, n, strict):
        """A short batch does not end it: the next batch asks the source again, as CPython
        does; an empty one does."""
        while True:
            batch = []
            while len(batch) < n:
                item = next(it, _MISSING)
                if item is _MISSING:
                    break
                batch.append(item)
            if not batch:
                return
            if strict and len(batch) < n:
                raise ValueError("batched(): incomplete batch")
            yield tuple(batch)


@polyfill(itertools.starmap)
def starmap(function, iterable):
    """``itertools.starmap``."""
    return _starmap(function, iter(iterable))


@generator_of(itertools.starmap)
def _starmap(function, iterator):
    for args in iterator:
        yield function(*args)


@polyfill(itertools.takewhile)
def takewhile(predicate, iterable):
    """``itertools.takewhile``."""
    return _takewhile(predicate, iter(iterable))


@generator_of(itertools.takewhile)
def _takewhile(predicate, iterator):
    for x in iterator:
        if not predicate(x):
            return
        yield x


@polyfill(itertools.dropwhile)
def dropwhile(predicate, iterable):
    """``itertools.dropwhile``."""
    return _dropwhile(predicate, iter(iterable))


@generator_of(itertools.dropwhile)
def _dropwhile(predicate, it):
    for x in it:
        if not predicate(x):
            yield x
            break
    yield from it


@polyfill(itertools.filterfalse)
def filterfalse(predicate, iterable):
    """``itertools.filterfalse``."""
    return _filterfalse(predicate, iter(iterable))


@generator_of(itertools.filterfalse)
def _filterfalse(predicate, iterator):
    for x in iterator:
        if not (bool(x) if predicate is None else predicate(x)):
            yield x


@polyfill(itertools.compress)
def compress(data, selectors):
    """``itertools.compress``."""
    return _compress(iter(data), iter(selectors))


@generator_of(itertools.compress)
def _compress(data, selectors):
    for d, s in zip(data, selectors, strict=False):
        if s:
            yield d


@polyfill(itertools.tee)
def tee(iterable, n=2):
    """``itertools.tee``: each copy keeps the items the others took and it has not."""
    iterator = iter(iterable)
    buffers = [[] for _ in range(n)]

    def copy(mine):
        while True:
            if not mine:
                value = next(iterator, _MISSING)
                if value is _MISSING:
                    return
                for buffer in buffers:
                    buffer.append(value)
            yield mine.pop(0)

    return tuple(copy(buffer) for buffer in buffers)


@polyfill(itertools.groupby)
def groupby(iterable, key=None):
    """``itertools.groupby``: a group is only valid until the next one is taken."""
    return _groupby(iter(iterable), key)


@generator_of(itertools.groupby)
def _groupby(iterator, key=None):
    keyfunc = (lambda x: x) if key is None else key
    state = [next(iterator, _MISSING), None, False]  # current value, its key, exhausted
    if state[0] is _MISSING:
        return
    state[1] = keyfunc(state[0])

    def grouper(target):
        yield state[0]
        for value in iterator:
            state[0] = value
            state[1] = keyfunc(value)
            if state[1] != target:
                return
            yield value
        state[2] = True

    while not state[2]:
        target = state[1]
        group = grouper(target)
        yield state[1], group
        if state[1] == target:
            for _ in group:
                pass

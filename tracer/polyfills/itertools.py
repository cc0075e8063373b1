"""``itertools`` in pure Python, after the "roughly equivalent" code of the CPython documentation.

Each polyfill is a generator (or returns generators), so items are made when they are taken, in
CPython's order: a function with side effects passed to ``accumulate`` or ``starmap`` runs exactly
when the C version would run it.
"""

from __future__ import annotations

import itertools

from .registry import polyfill

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


@polyfill(itertools.chain.from_iterable, rebuild=_chain)
def chain_from_iterable(iterables):
    """``itertools.chain.from_iterable``."""
    for iterable in iterables:
        yield from iterable


def _count_from(state: dict) -> tuple:
    """The ``count`` going on from ``state``: the next number is ``n + step`` once one was given."""
    start = state["n"] + state["step"] if "n" in state else state["start"]
    return itertools.count, (start, state["step"])


@polyfill(itertools.count, resume=_count_from)
def count(start=0, step=1):
    """``itertools.count``."""
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
    saved = []
    for element in iterable:
        yield element
        saved.append(element)
    while saved:
        yield from saved


@polyfill(itertools.accumulate)
def accumulate(iterable, func=None, *, initial=None):
    """``itertools.accumulate``."""
    it = iter(iterable)
    total = initial
    if initial is None:
        total = next(it, _MISSING)
        if total is _MISSING:
            return
    yield total
    for element in it:
        total = total + element if func is None else func(total, element)
        yield total


@polyfill(itertools.islice, rebuild=_islice)
def islice(iterable, *args):
    """``itertools.islice``: takes from the source exactly the items CPython takes."""
    s = slice(*args)
    start, stop, step = s.start or 0, s.stop, s.step or 1
    it = iter(iterable)
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
    """``itertools.product``: the pools are read first, as in CPython."""
    pools = [tuple(pool) for pool in iterables] * repeat
    result = [()]
    for pool in pools:
        result = [x + (y,) for x in result for y in pool]
    yield from result


@polyfill(itertools.permutations)
def permutations(iterable, r=None):
    """``itertools.permutations``."""
    pool = tuple(iterable)
    n = len(pool)
    r = n if r is None else r
    for indices in product(range(n), repeat=r):
        if len(set(indices)) == r:
            yield tuple(pool[i] for i in indices)


@polyfill(itertools.combinations)
def combinations(iterable, r):
    """``itertools.combinations``."""
    pool = tuple(iterable)
    n = len(pool)
    for indices in permutations(range(n), r):
        if sorted(indices) == list(indices):
            yield tuple(pool[i] for i in indices)


@polyfill(itertools.combinations_with_replacement)
def combinations_with_replacement(iterable, r):
    """``itertools.combinations_with_replacement``."""
    pool = tuple(iterable)
    n = len(pool)
    for indices in product(range(n), repeat=r):
        if sorted(indices) == list(indices):
            yield tuple(pool[i] for i in indices)


@polyfill(itertools.zip_longest)
def zip_longest(*iterables, fillvalue=None):
    """``itertools.zip_longest``."""
    iterators = [iter(it) for it in iterables]
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
    it = iter(iterable)
    a = next(it, _MISSING)
    if a is _MISSING:
        return
    for b in it:
        yield a, b
        a = b


@polyfill(itertools.starmap)
def starmap(function, iterable):
    """``itertools.starmap``."""
    for args in iterable:
        yield function(*args)


@polyfill(itertools.takewhile)
def takewhile(predicate, iterable):
    """``itertools.takewhile``."""
    for x in iterable:
        if not predicate(x):
            return
        yield x


@polyfill(itertools.dropwhile)
def dropwhile(predicate, iterable):
    """``itertools.dropwhile``."""
    it = iter(iterable)
    for x in it:
        if not predicate(x):
            yield x
            break
    yield from it


@polyfill(itertools.filterfalse)
def filterfalse(predicate, iterable):
    """``itertools.filterfalse``."""
    for x in iterable:
        if not (bool(x) if predicate is None else predicate(x)):
            yield x


@polyfill(itertools.compress)
def compress(data, selectors):
    """``itertools.compress``."""
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
    keyfunc = (lambda x: x) if key is None else key
    iterator = iter(iterable)
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

"""``re``'s substitution with a function as the replacement (``pattern.sub(fn, s)``,
``string.Template.substitute``'s ``convert``), in pure Python as ``_sre``'s ``pattern_subx`` does
it. The tracer computes the matches on constants (``matches``, a call of kind fold) and inlines
``subn``, so the user's function is traced on each match, in CPython's order, and its effects
happen on every call, not once at trace time.
"""

from __future__ import annotations

import re
from typing import Any


def matches(sub: Any, where: int | str, /, *args: Any, **kwargs: Any) -> list[re.Match]:
    """The match objects ``sub(*args, **kwargs)`` (``re.sub``, ``Pattern.subn``...) calls its
    replacement on, in order: found by the call itself, its arguments as the program gave them
    (CPython binds them, and warns where it does), with a function that only records the matches
    in the replacement's place, position or keyword ``where``."""
    found: list[re.Match] = []

    def record(match: re.Match) -> None:
        found.append(match)

    if isinstance(where, str):
        kwargs[where] = record
    else:
        args = (*args[:where], record, *args[where + 1 :])
    sub(*args, **kwargs)
    return found


def subn(found, repl, string, with_count):
    """``pattern.subn(repl, string)`` of a callable ``repl`` whose matches are ``found``: the text
    before each match, then ``repl``'s result (None adds nothing), then the text after the last,
    joined by the string type's ``join`` (its TypeError for a result of another type).
    ``with_count``: ``subn``'s pair, else ``sub``'s new string alone."""
    pieces = []
    end = 0
    for match in found:
        start = match.start()
        if end < start:
            pieces.append(string[end:start])
        item = repl(match)
        if item is not None:
            pieces.append(item)
        end = match.end()
    if end < len(string):
        pieces.append(string[end:])
    new = string[:0].join(pieces)
    return (new, len(found)) if with_count else new

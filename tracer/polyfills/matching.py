"""Structural pattern matching (``match``) in pure Python: what ``MATCH_CLASS`` and ``MATCH_KEYS``
do in CPython (``Python/ceval.c``: ``match_class``, ``match_keys``). The opcode handlers
(``tracer/opcodes/matching.py``) trace these, so attribute reads (properties), ``isinstance``
(``__instancecheck__``) and ``get`` of dict subclasses run as user code would.
"""

from __future__ import annotations

_MISSING = object()


def match_class(subject, cls, nargs, names, match_self):
    """``MATCH_CLASS``: the tuple of attributes of ``subject`` a class pattern ``cls(...)`` binds
    (``nargs`` positional sub-patterns, then the keyword ones in ``names``), or None when it does
    not match. ``match_self``: the class has ``MATCH_SELF`` (read by the handler)."""
    if not isinstance(cls, type):
        raise TypeError("called match pattern must be a class")
    if not isinstance(subject, cls):
        return None
    seen = []
    attrs = []
    if nargs:
        match_args = getattr(cls, "__match_args__", _MISSING)
        if match_args is not _MISSING:
            if type(match_args) is not tuple:
                raise TypeError(
                    f"{cls.__name__}.__match_args__ must be a tuple "
                    f"(got {type(match_args).__name__})"
                )
            allowed = len(match_args)
            match_self = False
        else:
            match_args = ()
            allowed = 1 if match_self else 0
        if allowed < nargs:
            plural = "" if allowed == 1 else "s"
            raise TypeError(
                f"{cls.__name__}() accepts {allowed} positional sub-pattern{plural} ({nargs} given)"
            )
        if match_self:
            attrs.append(subject)
        else:
            for i in range(nargs):
                name = match_args[i]
                if not isinstance(name, str):
                    raise TypeError(
                        f"__match_args__ elements must be strings (got {type(name).__name__})"
                    )
                if name in seen:
                    raise TypeError(
                        f"{cls.__name__}() got multiple sub-patterns for attribute {name!r}"
                    )
                seen.append(name)
                attr = getattr(subject, name, _MISSING)
                if attr is _MISSING:
                    return None
                attrs.append(attr)
    for name in names:
        if name in seen:
            raise TypeError(f"{cls.__name__}() got multiple sub-patterns for attribute {name!r}")
        seen.append(name)
        attr = getattr(subject, name, _MISSING)
        if attr is _MISSING:
            return None
        attrs.append(attr)
    return tuple(attrs)


def match_keys(subject, keys):
    """``MATCH_KEYS``: the values of ``keys`` in the mapping ``subject`` (read with its ``get``,
    as CPython does), or None when one is missing."""
    values = []
    seen = []
    get = subject.get
    for key in keys:
        if key in seen:
            raise ValueError(f"mapping pattern checks duplicate key ({key!r})")
        seen.append(key)
        value = get(key, _MISSING)
        if value is _MISSING:
            return None
        values.append(value)
    return tuple(values)

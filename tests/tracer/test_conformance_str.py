"""Strings under the tracer behave as in CPython (random operation sequences, see
``tests/conformance.py``): methods, slicing, formatting (``%``, ``format``, f-strings of shapes and
dtypes), iteration, errors of ``index`` and bad indices."""

from __future__ import annotations

from conformance import Op, check_conformance

OPS = [
    Op("s = s + '{w}'"),
    Op("s[{i}]", value=True, raises=True),
    Op("s[{a}:{b}]", value=True),
    Op("s.upper() + s.lower()", value=True),
    Op("s.split('{c}')", value=True),
    Op("'{c}'.join(s.split('{c}'))", value=True),
    Op("s.replace('{c}', '{w}')", value=True),
    Op("s.find('{c}')", value=True),
    Op("s.index('{c}')", value=True, raises=True),
    Op("s.count('{c}')", value=True),
    Op("s.startswith('{w}') or s.endswith('{c}')", value=True),
    Op("s.strip('{c}')", value=True),
    Op("s.partition('{c}')", value=True),
    Op("s.zfill({n}) + s.center({n}, '*')", value=True),
    Op("'%s-%d' % (s, {n})", value=True),
    Op("'{{}}:{{}}'.format(s, x.shape[0])", value=True),
    Op("f'{{s}}_{{x.dtype}}_{{x.shape}}'", value=True),
    Op("[ord(c) for c in s]", value=True),
    Op("''.join(reversed(s))", value=True),
    Op("'{c}' in s", value=True),
    Op("len(s) * x", value=True),
    Op("s.isdigit() or s.isalpha()", value=True),
    Op("s = s * {n}"),
    Op("sorted(set(s))", value=True),
]


def _fill(rng):
    return {
        "w": rng.choice(["ab", "x", "", "12", "a.b"]),
        "c": rng.choice(["a", ".", "b", "x"]),
        "i": rng.choice(["0", "-1", "3", "10"]),
        "a": rng.randint(-3, 3),
        "b": rng.randint(-3, 6),
        "n": rng.randint(0, 4),
    }


def test_str_operations_match_cpython():
    check_conformance(OPS, _fill, setup="s = 'a.b'", finals="s", seed=19)

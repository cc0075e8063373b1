"""Pure C functions and methods computed at trace time on values known there: the ``re`` module's
functions and the methods of its immutable objects (``re.Pattern``, ``re.Match``), the functions
of pure C modules (``struct``, ``unicodedata``, ``binascii``, ``cmath``), ``os.fspath`` and the
``os.path`` functions over it, a constant's C method read unbound (``str.lower``) or bound to a
global (``keyword.iskeyword``). Each is compared with eager (values, exceptions) and with
torch.compile's break count; none breaks."""

from __future__ import annotations

import binascii
import cmath
import copy
import fnmatch
import fractions
import hashlib
import json
import keyword
import os.path
import re
import string
import struct
import unicodedata
import warnings
import zlib

import pytest
import torch

import bytegraph
from bytegraph.explain import Recorder
from tests.difftest import assert_same, break_count, check, check_breaks, compile_counted
from tests.dynamo_baseline import assert_no_more_breaks

PATTERN = re.compile(r"(?P<name>\w+)\.(?P<index>\d+)")
MATCH = PATTERN.match("layer.3")


def re_match(t):
    m = re.match(r"(\w+)\.(\d+)", "layer.3")
    return t * int(m.group(2)), m.group(1), m.groups(), m.span(2), m.start(), m.end(1)


def re_match_flags(t):
    m = re.match("LAYER", "layer.7", re.IGNORECASE)
    return t + (m is not None), m.group(), m[0]


def re_no_match(t):
    m = re.fullmatch(r"\d+", "12a")
    return t + (m is None), m


def re_search_dict(t):
    m = re.search(r"(?P<a>\d)(?P<b>\d)?", "x5")
    return t + int(m["a"]), m.groupdict(), m.groupdict("none"), m.lastindex, m.lastgroup


def re_sub_split_findall(t):
    subbed, n = re.subn(r"\d", "#", "a1b22")
    return (
        t + len(re.findall(r"\d", "a1b2c3")),
        re.sub(r"(\w)(\d)", r"\2\1", "a1 b2"),
        subbed,
        n,
        re.split(r"[,;]", "a,b;c"),
        re.findall(r"(\w)=(\d)", "a=1 b=2"),
        re.escape("a.b*c"),
    )


def global_pattern(t):
    m = PATTERN.search("head: block.12")
    return t + int(m.group("index")), m.group("name"), PATTERN.pattern, PATTERN.groups


def global_pattern_methods(t):
    return (
        t + len(PATTERN.findall("a.1 b.2")),
        PATTERN.sub(r"\g<index>", "a.1 b.2"),
        PATTERN.split("x a.1 y"),
        PATTERN.fullmatch("a.1").end(),
        PATTERN.groupindex["index"],
    )


def global_match(t):
    return t * int(MATCH.group(2)), MATCH.group("name"), MATCH.re is PATTERN, MATCH.string


def compiled_in_trace(t):
    p = re.compile(r"(\d+)-(\d+)")
    lo, hi = p.match("3-9").groups()
    return t + int(hi) - int(lo), p.pattern, p is re.compile(r"(\d+)-(\d+)")


def match_copy_is_itself(t):
    m = re.match("a", "ab")
    return t + 1, copy.copy(m) is m, copy.deepcopy(m) is m


def match_returned(t):
    return t + 1, re.match(r"(\w)(\w)", "xy")


#: cases torch.compile compiles no graph for, and why
NO_BASELINE = {
    "re_search_dict": "torch.compile fails on m.groupdict(): an unsupported return type",
    "match_copy_is_itself": "torch.compile fails on copy.copy of a match",
    "struct_error": "torch.compile fails on struct.error (an internal error)",
}

RE_CASES = [
    re_match,
    re_match_flags,
    re_no_match,
    re_search_dict,
    re_sub_split_findall,
    global_pattern,
    global_pattern_methods,
    global_match,
    compiled_in_trace,
    match_copy_is_itself,
]


@pytest.mark.parametrize("fn", RE_CASES, ids=lambda f: f.__name__)
def test_re_on_constants_is_computed(fn):
    bytegraph.reset()
    check(fn, torch.ones(2), graphs=1, breaks=0)
    assert_no_more_breaks(0, fn, torch.ones(2), baseline_missing=NO_BASELINE.get(fn.__name__, ""))


def test_match_made_in_trace_is_returned():
    """A match made in the trace comes back with its groups and its pattern."""
    bytegraph.reset()
    t, m = bytegraph.compile(match_returned)(torch.ones(2))
    assert type(m) is re.Match and m.groups() == ("x", "y") and m.re.pattern == r"(\w)(\w)"
    torch.testing.assert_close(t, torch.ones(2) + 1)


def test_pattern_not_compiled_before():
    """A pattern the ``re`` cache has never seen: computed whole, not traced through the
    compiler."""
    source = r"(q{2})(\d{3})_unseen"
    re.purge()

    def fn(t):
        return t + int(re.search(source, "aqq123_unseen").group(2))

    bytegraph.reset()
    check(fn, torch.ones(2), graphs=1, breaks=0)


def re_error(t):
    try:
        re.compile("(")
    except re.error as e:
        return t + 1, e.msg
    return t, None


def re_type_error(t):
    try:
        re.match(r"\d", 5)
    except TypeError as e:
        return t + 1, str(e)
    return t, None


def match_group_error(t):
    try:
        re.match("a", "a").group(3)
    except IndexError as e:
        return t + 1, str(e)
    return t, None


@pytest.mark.parametrize("fn", [re_type_error, match_group_error], ids=lambda f: f.__name__)
def test_re_errors_are_cpythons(fn):
    bytegraph.reset()
    check(fn, torch.ones(2), graphs=1, breaks=0)


def test_re_error_is_cpythons():
    """``re.error`` (an exception whose class takes more than its arguments) is CPython's."""
    bytegraph.reset()
    assert bytegraph.compile(re_error)(torch.ones(2))[1] == re_error(torch.ones(2))[1]


def re_finditer(t):
    return t + sum(1 for _ in re.finditer(r"\d", "a1b2"))


def test_finditer_is_not_folded():
    """``finditer`` gives an iterator, not a value: it is not computed as a constant (its count
    stays right, whatever the trace does with it)."""
    bytegraph.reset()
    out = bytegraph.compile(re_finditer)(torch.ones(2))
    torch.testing.assert_close(out, re_finditer(torch.ones(2)))


def pure_modules(t):
    packed = struct.pack("<iH", 3, 7)
    return (
        t + struct.unpack("<iH", packed)[1],
        packed,
        struct.calcsize("<iq"),
        unicodedata.category("a"),
        unicodedata.normalize("NFKD", "ﬁ"),
        binascii.hexlify(b"ab"),
        binascii.crc32(b"ab"),
        zlib.crc32(b"ab"),
        cmath.sqrt(-4),
    )


def path_functions(t):
    return (
        t + len(os.path.join("a", "b", "c.txt")),
        os.path.basename("/x/y.pt"),
        os.path.splitext("model.ckpt.pt"),
        os.path.dirname("/x/y/z"),
        os.fspath("p"),
        os.path.normpath("a//b/../c"),
    )


def name_patterns(t):
    """``fnmatch``: a cached ``re.compile(p).match`` (a pattern's bound method), called."""
    return (
        t + fnmatch.fnmatch("layer.1.weight", "*.weight"),
        fnmatch.fnmatch("layer.1.bias", "*.weight"),
        fnmatch.filter(["a.weight", "b.bias"], "*.bias"),
    )


def constant_methods_unbound(t):
    return (
        t + sorted(["b", "A", "c"], key=str.lower).index("A"),
        string.capwords("hello big world"),
        list(map(str.upper, ("a", "b"))),
        int.bit_length(255),
        keyword.iskeyword("for"),
        keyword.iskeyword("x"),
    )


def struct_error(t):
    try:
        struct.pack("<i", "x")
    except struct.error as e:
        return t + 1, str(e)
    return t, None


@pytest.mark.parametrize(
    "fn",
    [pure_modules, path_functions, name_patterns, constant_methods_unbound, struct_error],
    ids=lambda f: f.__name__,
)
def test_pure_c_functions_on_constants(fn):
    bytegraph.reset()
    check(fn, torch.ones(2), graphs=1, breaks=0)
    assert_no_more_breaks(0, fn, torch.ones(2), baseline_missing=NO_BASELINE.get(fn.__name__, ""))


def test_unbound_str_method_on_wrong_type():
    """``str.lower(5)``: the method's own TypeError, as CPython raises it."""

    def fn(t):
        try:
            str.lower(5)
        except TypeError as e:
            return t + 1, str(e)
        return t, None

    bytegraph.reset()
    check(fn, torch.ones(2), graphs=1, breaks=0)


def test_struct_pack_into_a_buffer_is_not_folded():
    """``struct.pack_into`` writes its buffer: the write happens."""
    buf = bytearray(4)

    def fn(t):
        struct.pack_into("<i", buf, 0, 5)
        return t + 1

    bytegraph.reset()
    bytegraph.compile(fn)(torch.ones(2))
    assert bytes(buf) == struct.pack("<i", 5)


def test_a_function_given_to_a_pure_c_call_runs_on_every_call():
    """``re.sub(p, fn, s)`` and ``pattern.sub(fn, s)`` call ``fn`` back: never computed at trace
    time, where ``fn``'s effects would happen once only."""
    calls = []

    def upper(m):
        calls.append(m.group())
        return m.group().upper()

    def fn(t):
        return t + 1, re.sub("a", upper, "aba"), PATTERN.sub(upper, "x.1")

    bytegraph.reset()
    compiled = bytegraph.compile(fn)
    for _ in range(2):
        got = compiled(torch.ones(2))
        assert got[1:] == ("AbA", "X.1")
    assert calls == ["a", "a", "x.1"] * 2


def test_a_python_key_runs_on_every_call():
    """``sorted``/``min``/``max`` of constants with a Python ``key=``: the key is traced, not
    called at trace time only (its effects happen on every call)."""
    calls = []

    def key(v):
        calls.append(v)
        return -v

    def fn(t):
        return t + 1, sorted([1, 2], key=key), max([1, 2], key=key), min(3, 4, key=key)

    bytegraph.reset()
    compiled = bytegraph.compile(fn)
    for _ in range(2):
        assert compiled(torch.ones(2))[1:] == ([2, 1], 1, 4)
    assert calls == [1, 2, 1, 2, 3, 4] * 2


CALLBACK_LOG: list = []


def _logged_upper(m):
    CALLBACK_LOG.append((m.group(), m.span()))
    return m.group().upper()


def _odd_only(m):
    CALLBACK_LOG.append(m.group())
    return None if int(m.group()) % 2 == 0 else f"<{m.group()}>"


def re_sub_with_callback(t):
    return (
        t + 1,
        re.sub("a", _logged_upper, "abca"),
        re.subn(r"\d", _odd_only, "a1b2c3", count=2),
        PATTERN.sub(_logged_upper, "x.1 y.2"),
        PATTERN.subn(_logged_upper, "z.3", count=1),
        re.sub(b"b", lambda m: m.group() * 2, b"abc"),
        re.sub("x*", lambda m: "-", "abc"),
        re.sub("[a-c]", lambda m: m.group() * t.shape[0], "abcd", flags=re.I),
    )


def re_sub_callback_bad_result(t):
    return t + 1, re.sub("a", lambda m: 1, "bab")


def re_sub_callback_raises(t):
    return t + 1, re.sub("a", lambda m: {}["missing"], "bab")


def template_substitute(t):
    words = {"who": "world"}
    text = string.Template("hello $who, ${n}x $$").substitute(words, n=t.shape[0])
    safe = string.Template("$who $missing").safe_substitute(who="me")
    return t + len(text), text, safe


def template_missing_key(t):
    return t + 1, string.Template("$who").substitute(other=1)


#: (function, breaks): a function raising in the substitution breaks where it raises, as any
#: uncaught error does, and the same error comes out
SUB_CASES = [
    (re_sub_with_callback, 0),
    (template_substitute, 0),
    (re_sub_callback_bad_result, 1),
    (re_sub_callback_raises, 1),
    (template_missing_key, 1),
]
NO_BASELINE["template_substitute"] = "torch.compile runs it in Python: pattern.sub(convert, ...)"
NO_BASELINE["template_missing_key"] = NO_BASELINE["template_substitute"]
NO_BASELINE["re_sub_callback_bad_result"] = "torch.compile fails with the error (internal error)"
NO_BASELINE["re_sub_callback_raises"] = NO_BASELINE["re_sub_callback_bad_result"]


@pytest.mark.parametrize(("fn", "breaks"), SUB_CASES, ids=lambda c: getattr(c, "__name__", c))
def test_substitution_with_a_function_is_traced(fn, breaks):
    """``re.sub(p, fn, s)``, ``pattern.sub(fn, s)`` and ``string.Template.substitute`` (whose
    ``convert`` is such a function) on constants: the matches are computed, the function is
    traced on each, in CPython's order, with its effects and errors on every call."""
    bytegraph.reset()

    def observe():
        logged = list(CALLBACK_LOG)
        CALLBACK_LOG.clear()
        return logged

    check_breaks(fn, lambda: (torch.ones(2),), graphs=1, breaks=breaks, calls=3, observe=observe)
    CALLBACK_LOG.clear()
    assert_breaks_at_most_dynamos(fn, breaks)
    CALLBACK_LOG.clear()


def assert_breaks_at_most_dynamos(fn, breaks):
    """``assert_no_more_breaks`` on ``fn(torch.ones(2))``; where torch.compile raises the error
    eager raises (it ran the code in Python), it gives no count to compare with."""
    try:
        fn(torch.ones(2))
        eager_error = None
    except Exception as e:  # noqa: BLE001 (compared below)
        eager_error = type(e)
    baseline = NO_BASELINE.get(fn.__name__, "")
    try:
        assert_no_more_breaks(breaks, fn, torch.ones(2), baseline_missing=baseline)
    except Exception as e:
        if eager_error is None or type(e) is not eager_error:
            raise


CONFIG = {"width": 4, "names": ["a", "b"], "scale": 0.5, "on": True, "none": None}


def json_dumps_constants(t):
    text = json.dumps({"b": [1, 2.5, None], "a": (True, "x")})
    pretty = json.dumps([1, {"k": "v"}], indent=2, sort_keys=True, separators=(",", ": "))
    return t + len(text), text, pretty, json.dumps("é", ensure_ascii=False)


def json_dumps_global(t):
    return t * CONFIG["scale"], json.dumps(CONFIG, sort_keys=True)


def json_loads_constants(t):
    d = json.loads('{"a": [1, 2], "b": 3.5, "c": null}')
    d["a"].append(3)  # a new dict and list, as eager's
    return t * d["b"], d, json.loads(b"[1, 2]")


def json_errors(t):
    return t + 1, json.dumps({(1, 2): 1})


def json_decode_error(t):
    return t + 1, json.loads("{bad")


JSON_CASES = [
    (json_dumps_constants, 0),
    (json_dumps_global, 0),
    (json_loads_constants, 0),
    (json_errors, 1),
    (json_decode_error, 1),
]
NO_BASELINE["json_errors"] = "torch.compile fails with the error (internal error)"
NO_BASELINE["json_decode_error"] = NO_BASELINE["json_errors"]


@pytest.mark.parametrize(("fn", "breaks"), JSON_CASES, ids=lambda c: getattr(c, "__name__", c))
def test_json_on_plain_data_is_computed(fn, breaks):
    """``json.dumps``/``json.loads`` of plain data known at trace time (constants, a guarded
    global) are computed, their errors raised as CPython's."""
    bytegraph.reset()
    check_breaks(fn, lambda: (torch.ones(2),), graphs=1, breaks=breaks, calls=2)
    assert_breaks_at_most_dynamos(fn, breaks)


def test_json_of_a_changed_global_is_recomputed():
    """A global read into ``json.dumps`` is guarded: changing it gives eager's text."""
    bytegraph.reset()
    compiled = bytegraph.compile(json_dumps_global)
    assert compiled(torch.ones(2))[1] == json_dumps_global(torch.ones(2))[1]
    CONFIG["names"].append("c")
    try:
        assert compiled(torch.ones(2))[1] == json_dumps_global(torch.ones(2))[1]
    finally:
        CONFIG["names"].pop()


def test_json_with_a_function_is_not_computed():
    """A ``default=`` function is called back by the encoder: never computed at trace time, where
    its effects would happen once only."""
    calls = []

    def default(o):
        calls.append(o)
        return str(o)

    def fn(t):
        return t + 1, json.dumps({"a": {1, 2}}, default=default)

    bytegraph.reset()
    compiled = bytegraph.compile(fn)
    for _ in range(2):
        assert compiled(torch.ones(2))[1] == fn(torch.ones(2))[1]
    assert len(calls) == 4


THIRD = fractions.Fraction(1, 3)


def fraction_arithmetic(t):
    f = fractions.Fraction(1, 3) + 1
    g = (f * 3 - THIRD) / 2
    return (
        t * float(f),
        f,
        g,
        f == fractions.Fraction(4, 3),
        f < 2,
        f.numerator,
        f.limit_denominator(1),
        fractions.Fraction("2/6"),
        fractions.Fraction(0.25),
        round(g, 1),
        str(g),
        hash(f) == hash(fractions.Fraction(4, 3)),
        f + 0.5,
    )


def fraction_returned_twice(t):
    f = fractions.Fraction(2, 4)
    return t + 1, f, f, [f]


def fraction_error(t):
    return t + 1, fractions.Fraction(1, 0)


FRACTION_CASES = [(fraction_arithmetic, 0), (fraction_returned_twice, 0), (fraction_error, 1)]
NO_BASELINE["fraction_error"] = "torch.compile fails with the error (internal error)"


@pytest.mark.parametrize(("fn", "breaks"), FRACTION_CASES, ids=lambda c: getattr(c, "__name__", c))
def test_fractions_are_values(fn, breaks):
    """``fractions.Fraction``s (made in the trace or a guarded global) are constants: made,
    operated on and their methods computed at trace time; one given back is a new object on each
    call (its slots can be written), the same object where eager gives one object twice."""
    bytegraph.reset()
    compiled, _, _ = check_breaks(fn, lambda: (torch.ones(2),), graphs=1, breaks=breaks)
    assert_breaks_at_most_dynamos(fn, breaks)
    if fn is fraction_returned_twice:
        first, second = compiled(torch.ones(2)), compiled(torch.ones(2))
        assert first[1] is first[2] is first[3][0] and first[1] is not second[1]


def test_a_changed_global_fraction_is_seen():
    """A global fraction is guarded by value: written through its slot, the next call sees it."""
    global THIRD
    bytegraph.reset()
    compiled = bytegraph.compile(fraction_arithmetic)
    compiled(torch.ones(2))
    saved = THIRD
    THIRD = fractions.Fraction(1, 5)
    try:
        assert compiled(torch.ones(2))[2] == fraction_arithmetic(torch.ones(2))[2]
        THIRD._numerator = 2  # noqa: SLF001 (a program can write it)
        assert compiled(torch.ones(2))[2] == fraction_arithmetic(torch.ones(2))[2]
    finally:
        THIRD = saved


def global_fraction_returned(t):
    return t + 1, THIRD


def test_a_global_fraction_given_back_is_itself():
    bytegraph.reset()
    assert bytegraph.compile(global_fraction_returned)(torch.ones(2))[1] is THIRD


def hash_digests(t):
    key = hashlib.sha256(b"model-" + str(t.shape[0]).encode()).hexdigest()
    h = hashlib.new("sha1", b"a")
    copied = h.copy()
    return (
        t + len(key),
        key,
        hashlib.md5(b"abc").digest(),
        hashlib.blake2b(b"z", digest_size=8).hexdigest(),
        hashlib.shake_128(b"q").hexdigest(4),
        copied.hexdigest(),
    )


def hash_given_back(t):
    h = hashlib.md5(b"abc")
    return t + 1, h, [h], id(h)


def hash_updated(t):
    h = hashlib.sha1(b"a")
    before = h.hexdigest()
    h.update(b"b")  # changes it: a break, on the copy the call gives back
    return t + 1, before, h.hexdigest(), h  # read after the break: another break


HASH_CASES = [(hash_digests, 0), (hash_given_back, 0), (hash_updated, 2)]


def _digests(value):
    """Hash objects (compared by state and identity of their own) as their digests."""
    if isinstance(value, (tuple, list)):
        return type(value)(map(_digests, value))
    return ("digest", value.hexdigest()) if hasattr(value, "hexdigest") else value


@pytest.mark.parametrize(("fn", "breaks"), HASH_CASES, ids=lambda c: getattr(c, "__name__", c))
def test_hashes_of_values_are_computed(fn, breaks):
    """``hashlib``'s hashes of values are computed at trace time (a hash object made from values
    is read there: digest, hexdigest, copy); one given back is a new copy on each call, one
    object within a call (``id`` and the list agree), which code after a break may change."""
    bytegraph.reset()
    compiled = bytegraph.compile(fn)
    results = []
    for _ in range(3):
        got, expected = compiled(torch.ones(2)), fn(torch.ones(2))
        kept = 3 if fn is hash_given_back else len(got)  # not the id: another object's
        assert_same(_digests(got[:kept]), _digests(expected[:kept]))
        results.append(got)
    if fn is hash_given_back:
        first, second = results[0], results[1]
        assert first[1] is first[2][0] and id(first[1]) == first[3]
        assert first[1] is not second[1]
        first[1].update(b"more")  # the caller changes its copy: the next call's is eager's
        assert compiled(torch.ones(2))[1].hexdigest() == fn(torch.ones(2))[1].hexdigest()
    if fn is hash_updated:
        assert results[0][3] is not results[1][3]
    assert _explain_breaks(fn) == breaks
    assert_breaks_at_most_dynamos(fn, breaks)


def _explain_breaks(fn):
    bytegraph.reset()
    return bytegraph.explain(fn)(torch.ones(2)).graph_break_count


def _warns_on_positional_count() -> bool:
    """Whether this Python's ``re.sub`` warns on a count given by position (3.13 does)."""
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        re.sub("a", "b", "a", 1)  # noqa: B034
    return bool(warned)


def re_arguments_by_position(t):
    return (
        t + 1,
        re.sub(r"\d", "#", "a1b2c3", 2),  # noqa: B034
        re.sub("[a-c]", "#", "aBcd", 0, re.I),  # noqa: B034
        re.subn(r"\d", "#", "a1b2c3", 1),  # noqa: B034
        re.split(",", "a,b,c", 1),  # noqa: B034
        re.split("x", "aXbxc", 0, re.I),  # noqa: B034
        re.sub(r"\d", _logged_upper, "a1b2c3", 1),  # noqa: B034
        re.subn("[a-c]", _logged_upper, "aBcd", 0, re.I),  # noqa: B034
        PATTERN.sub(_logged_upper, "x.1 y.2", 1),
        PATTERN.subn("#", "x.1 y.2", 1),
        PATTERN.split("a.1 b.2", 1),
        re.Pattern.subn(PATTERN, _logged_upper, "x.1 y.2", 1),
    )


def re_arguments_by_keyword(t):
    return (
        t + 1,
        re.sub(r"\d", "#", "a1b2c3", count=2),
        re.sub("[a-c]", "#", "aBcd", flags=re.I),
        re.subn(pattern=r"\d", repl="#", string="a1b2c3", count=1),
        re.split(",", "a,b,c", maxsplit=1),
        re.split("x", "aXbxc", flags=re.I, maxsplit=1),
        re.sub(r"\d", repl=_logged_upper, string="a1b2c3", count=1),
        re.subn("[a-c]", _logged_upper, "aBcd", flags=re.I, count=2),
        PATTERN.sub(repl=_logged_upper, string="x.1 y.2", count=1),
        PATTERN.subn(_logged_upper, "x.1 y.2", count=1),
        re.Pattern.sub(PATTERN, _logged_upper, string="x.1 y.2"),
    )


def _run_recording_warnings(fn):
    """``fn(torch.ones(2))``'s result, the warnings it gave (message, category, file, line) and
    the substitution functions' log."""
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        result = fn(torch.ones(2))
    logged = list(CALLBACK_LOG)
    CALLBACK_LOG.clear()
    return result, [(str(w.message), w.category, w.filename, w.lineno) for w in warned], logged


#: the calls of ``re_arguments_by_position`` that give a count, maxsplit or flags by position to
#: ``re``'s module functions (``Pattern``'s C methods never warn)
_WARNING_CALLS = 7


@pytest.mark.parametrize("fn", [re_arguments_by_position, re_arguments_by_keyword])
def test_substitution_and_split_bind_arguments_as_cpython(fn):
    """``re.sub``/``subn``/``split`` and ``Pattern.sub``/``subn``/``split`` with count, maxsplit
    and flags given by position or by keyword, with a string or a function as the replacement:
    bound as CPython binds them. Where CPython warns for a positional one (3.13), the warning is
    each call's, at the caller's line: each compiled call gives it after the graph
    (``run_time_warnings``; torch.compile warns once, when it traces, at a line of its own).
    Nothing breaks, as in torch.compile."""
    bytegraph.reset()
    warns = fn is re_arguments_by_position and _warns_on_positional_count()
    compiled, counter = compile_counted(fn)
    recorder = Recorder()
    for _ in range(3):
        expected = _run_recording_warnings(fn)
        with recorder:
            actual = _run_recording_warnings(compiled)
        assert_same(actual[0], expected[0])
        assert actual[1:] == expected[1:]
        assert len(actual[1]) == (_WARNING_CALLS if warns else 0)
    assert break_count(recorder.report()) == 0
    assert_no_more_breaks(0, fn, torch.ones(2))
    CALLBACK_LOG.clear()

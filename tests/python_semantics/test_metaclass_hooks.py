"""A metaclass's hooks are the class's, not its objects': ``Meta.__getattr__`` runs for a
missing attribute of the class (``K.zzz``), never of ``K()``; ``Meta.__bool__``/``__len__`` give
the truth of ``K``, not of ``K()``; ``Meta.__round__`` rounds ``K``. The tracer asked
``hasattr(K, "__getattr__")``, which finds the metaclass's: every attribute read of ``K()``
broke ("defines __getattr__"), and the truth of ``K()`` called a ``__bool__`` the object does
not have; reading ``__wrapped__`` off such a class to find a call rule ran the metaclass's
``__getattr__`` and took its string for code (an internal error: the frame ran in Python).
Compared with eager's results; breaks with torch.compile's (0 on each)."""

from __future__ import annotations

import itertools
import operator

import pytest
import torch
from difftest import check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks, dynamo_counts


class Meta(type):
    def __getattr__(cls, name):
        return "meta:" + name

    def __bool__(cls):
        return False

    def __len__(cls):
        return 0


class K(metaclass=Meta):
    @property
    def p(self):
        return ("p", getattr(self, "_p", None))

    @classmethod
    def cm(cls):
        return cls.__name__

    def __init_subclass__(cls, **kwargs):
        cls.sub = kwargs


class K2(K, tag=1):
    pass


def reads_of_an_object(x, o):
    o.x = 2
    return x + o.x, o.p, o.cm(), getattr(o, "missing", "default"), hasattr(o, "nope")


def truth_of_an_object_and_its_class(x, o):
    return x + 1, bool(o), (1 if o else 2), bool(K2), not K2, len(K2)


def calls_a_class_whose_metaclass_has_getattr(x, o):
    made = K2()
    return x + 1, K2.sub, isinstance(made, K), issubclass(K2, K), type(made) is K2


def test_attribute_reads_of_an_object_do_not_meet_its_metaclass():
    check_breaks(reads_of_an_object, lambda: (torch.zeros(2), K2()), graphs=1, breaks=0)


def test_the_truth_of_an_object_is_not_its_classes():
    check_breaks(
        truth_of_an_object_and_its_class, lambda: (torch.zeros(2), K2()), graphs=1, breaks=0
    )


def test_calling_the_class_runs_no_metaclass_hook():
    check_breaks(
        calls_a_class_whose_metaclass_has_getattr,
        lambda: (torch.zeros(2), K2()),
        graphs=1,
        breaks=0,
    )


# A class attribute that neither the class's MRO nor its metaclass's defines: CPython's
# ``type.__getattribute__`` then calls the metaclass's ``__getattr__`` with the class (``K.zzz``).
# The tracer broke there ("class K has no attribute 'zzz'"); torch.compile traces it.


class Strict(type):
    def __getattr__(cls, name):
        if name.startswith("opt_"):
            return name[4:]
        raise AttributeError(f"{cls.__name__} has no option {name!r}")


class Options(metaclass=Strict):
    size = 2


class OwnHook:
    """A ``__getattr__`` of its own, which is its objects' hook: ``OwnHook.zzz`` never calls it."""

    def __getattr__(self, name):
        return name


def reads_of_a_class_through_its_metaclass(x):
    yyy = getattr(K2, "yyy")  # noqa: B009 (the builtin, as a user writes it)
    return x + 1, K2.zzz, yyy, hasattr(K2, "q"), getattr(K2, "w", 3), K2.sub


def a_metaclass_hook_that_raises(x):
    try:
        missing = Options.colour
    except AttributeError as e:
        missing = str(e)
    return x * Options.size, Options.opt_fast, getattr(Options, "depth", 7), missing


def an_uncaught_error_of_the_metaclass_hook(x):
    return x + 1, Options.colour


def a_missing_attribute_of_a_class_with_an_objects_hook(x):
    try:
        return x + 1, OwnHook.zzz
    except AttributeError as e:
        return x - 1, str(e)


def test_a_missing_class_attribute_calls_the_metaclass_getattr():
    x = torch.zeros(2)
    check_breaks(reads_of_a_class_through_its_metaclass, lambda: (x,), graphs=1, breaks=0)
    assert dynamo_counts(reads_of_a_class_through_its_metaclass, x) == (1, 0)


def test_the_metaclass_getattr_raising_attribute_error():
    x = torch.ones(2)
    check_breaks(a_metaclass_hook_that_raises, lambda: (x,), graphs=1, breaks=0)
    assert dynamo_counts(a_metaclass_hook_that_raises, x) == (1, 0)
    compiled, _ = compile_counted(an_uncaught_error_of_the_metaclass_hook)
    with pytest.raises(AttributeError, match="Options has no option 'colour'"):
        compiled(x)


def test_the_metaclass_getattr_is_guarded():
    class Late(metaclass=type("LateMeta", (type,), {})):
        pass

    def reads(x):
        try:
            return x + 1, Late.zzz
        except AttributeError as e:
            return x - 1, str(e)

    compiled, counter = compile_counted(reads)
    x = torch.zeros(2)
    assert compiled(x)[1] == reads(x)[1] == "type object 'Late' has no attribute 'zzz'"
    type(Late).__getattr__ = lambda cls, name: name * 2
    assert compiled(x)[1] == reads(x)[1] == "zzzzzz"
    type(Late).__getattr__ = lambda cls, name: name * 3
    assert compiled(x)[1] == reads(x)[1] == "zzzzzzzzz"
    type(Late).zzz = "found"
    assert compiled(x)[1] == reads(x)[1] == "found"
    assert counter.frame_count == 4


def test_a_class_hook_for_its_objects_is_not_the_classes():
    x = torch.zeros(2)
    compiled, counter, _ = check_breaks(
        a_missing_attribute_of_a_class_with_an_objects_hook, lambda: (x,), graphs=1, breaks=0
    )
    compiled(x)
    assert counter.frame_count == 1  # no recompile: the class's own hook is no guard's concern
    assert dynamo_counts(a_missing_attribute_of_a_class_with_an_objects_hook, x) == (1, 0)


# CPython's C functions find a special method on the class's MRO only (a slot): a metaclass's
# ``__getattr__``, which answers any name read from the class, never supplies one. The polyfills
# of ``operator.length_hint``, ``itertools.islice``/``permutations`` and ``__reduce_ex__``'s
# protocol asked ``hasattr(type(x), "__len__")`` (or ``__index__``), and the tracer asked
# ``hasattr(type(attr), "__get__")`` of a class attribute: each broke on such a class, and
# answered wrongly once the class's metaclass hook was followed.


class Anything(type):
    def __getattr__(cls, name):
        return lambda *args: 5


class Plain(metaclass=Anything):
    pass


class Sized(metaclass=Anything):
    def __len__(self):
        return 3


class Hinted(metaclass=Anything):
    def __length_hint__(self):
        return 4


class Holds:
    tag = Plain()


def length_hints(x, o):
    return (
        x + 1,
        operator.length_hint(o, 7),
        operator.length_hint(Sized()),
        operator.length_hint(Hinted(), 1),
    )


def _error(call):
    try:
        return call()
    except (TypeError, ValueError) as e:
        return type(e).__name__, str(e)


def bounds_that_are_no_index(x, o):
    return (
        x + 1,
        _error(lambda: list(itertools.islice([1, 2], o))),
        _error(lambda: list(itertools.islice([1, 2], o, 2))),
        _error(lambda: list(itertools.islice([1, 2], 1, 2, o))),
        _error(lambda: list(itertools.permutations([1, 2], o))),
        _error(lambda: o.__reduce_ex__(Plain())),
    )


def a_class_attribute_whose_class_has_the_hook(x):
    return x + 1, type(Holds().tag).__name__


def test_length_hint_finds_slots_on_the_class_only():
    x = torch.zeros(2)
    check_breaks(length_hints, lambda: (x, Plain()), graphs=1, breaks=0)
    assert_no_more_breaks(0, length_hints, x, Plain())  # torch.compile breaks there (1 to 3)


def test_index_bounds_find_slots_on_the_class_only():
    x = torch.zeros(2)
    check_breaks(bounds_that_are_no_index, lambda: (x, Plain()), graphs=1, breaks=0)
    assert_no_more_breaks(0, bounds_that_are_no_index, x, Plain())


def test_a_descriptor_is_found_on_the_class_only():
    x = torch.zeros(2)
    check_breaks(a_class_attribute_whose_class_has_the_hook, lambda: (x,), graphs=1, breaks=0)
    assert_no_more_breaks(
        0,
        a_class_attribute_whose_class_has_the_hook,
        x,
        baseline_missing="torch 2.13's torch.compile runs it in Python (Unexpected type in "
        "sourceless builder); 2.11's traces it",
    )

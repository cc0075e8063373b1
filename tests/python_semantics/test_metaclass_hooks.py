"""A metaclass's hooks are the class's, not its objects': ``Meta.__getattr__`` runs for a
missing attribute of the class (``K.zzz``), never of ``K()``; ``Meta.__bool__``/``__len__`` give
the truth of ``K``, not of ``K()``; ``Meta.__round__`` rounds ``K``. The tracer asked
``hasattr(K, "__getattr__")``, which finds the metaclass's: every attribute read of ``K()``
broke ("defines __getattr__"), and the truth of ``K()`` called a ``__bool__`` the object does
not have; reading ``__wrapped__`` off such a class to find a call rule ran the metaclass's
``__getattr__`` and took its string for code (an internal error: the frame ran in Python).
Compared with eager's results; breaks with torch.compile's (0 on each)."""

from __future__ import annotations

import torch
from difftest import check_breaks


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

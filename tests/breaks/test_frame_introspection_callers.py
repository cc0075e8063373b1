"""The frames above the one user code runs in, as compiled code shows them: the frames of
``nn.Module.__call__`` above a module's ``forward`` (which the trace does not run), the caller of
the compiled function (not bytegraph's entry function), the callers of a callee whose break
resumed in it (which wait for it, with no frame of their own yet), and what ``warnings.warn``
names with a ``stacklevel`` through all of them. Each case is compared with eager CPython: the
frames' code, name, file and line, and each warning's category, message, file and line and the
``__warningregistry__`` it goes in; break counts with torch.compile's where it gives the frames
eager gives (where it does not, the test says so and checks it)."""

from __future__ import annotations

import contextlib
import inspect
import sys
import traceback
import types
import warnings

import pytest
import torch
from difftest import as_eager_twice, assert_same, check_breaks, compile_counted
from dynamo_baseline import assert_no_more_breaks
from torch import nn

from bytegraph.explain import Recorder


def _x():
    return (torch.randn(3),)


def _where(frame):
    """What user code reads of a frame: its code's name and file, its line."""
    return frame.f_code.co_name, frame.f_code.co_filename, frame.f_lineno


def _torch_compile_result(fn, *args):
    import torch._dynamo

    torch._dynamo.reset()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.compile(fn, backend="eager")(*args)
    finally:
        torch._dynamo.reset()


def _torch_compile_is_wrong(fn, *args):
    """torch.compile gives another frame than eager's here (its own wrapper's, in
    ``torch/_dynamo/eval_frame.py``, or the callee's where eager gives its caller's): there is no
    break count of its to compare with."""
    assert _torch_compile_result(fn, *args)[1:] != fn(*args)[1:]


# -- the frames of a module's call above its ``forward`` -------------------------------------


class _Reads(nn.Module):
    def forward(self, x):
        one, two = sys._getframe(1), sys._getframe(0).f_back.f_back
        return x + 1, _where(one), _where(two), _where(two.f_back), one is sys._getframe(1)


_reads = _Reads()
_hooked = _Reads()
_hooked.register_forward_hook(lambda module, args, result: None)


def module_frames(x):
    return _reads(x * 2)


def module_frames_with_a_hook(x):
    return _hooked(x * 2)


def test_frames_of_the_module_call_above_forward():
    """``_call_impl`` and ``_wrapped_call_impl`` (torch's frames), then the caller, at the line of
    its call: no break (torch.compile breaks)."""
    check_breaks(module_frames, _x, graphs=1, breaks=0)
    assert module_frames(torch.ones(3))[1][0] == "_call_impl"
    assert_no_more_breaks(0, module_frames, torch.ones(3))


def test_frames_of_the_module_call_with_hooks():
    """A module with hooks runs ``forward`` from another place in ``_call_impl``."""
    check_breaks(module_frames_with_a_hook, _x, graphs=1, breaks=0)


def _recorded(fn, *args):
    """``fn``'s result and the warnings it gave, as ``catch_warnings(record=True)`` keeps them."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args)
    return result, [(w.category, str(w.message), w.filename, w.lineno) for w in caught]


def _compare_warnings(fn, *args, breaks):
    compiled, _ = compile_counted(fn)
    recorder = Recorder()
    expected = _recorded(fn, *args)
    assert expected[1], "eager gave no warning"
    for _ in range(2):
        with recorder:
            result, caught = _recorded(compiled, *args)
        assert_same(result, expected[0])
        assert caught == expected[1], (caught, expected[1])
    report = recorder.report()
    assert not [r for r in report.break_reasons if r.fell_back], report.break_reasons
    assert report.graph_break_count == breaks, report.break_reasons


class _Warns(nn.Module):
    def __init__(self, level, break_first):
        super().__init__()
        self.level, self.break_first = level, break_first

    def forward(self, x):
        if self.break_first:
            print("in forward")
        warnings.warn("from forward", DeprecationWarning, stacklevel=self.level)
        return x + 1


@pytest.mark.parametrize("break_first", [False, True], ids=["warn", "break-then-warn"])
@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_a_warning_in_forward_names_what_eager_names(level, break_first, capsys):
    """``stacklevel=2`` names ``_call_impl``'s line in torch's ``module.py``, 3
    ``_wrapped_call_impl``'s, 4 the caller's line; after a break in ``forward`` too, where its
    resume function runs while its caller waits (found at run time). Each is given by the
    compiled call, after its graph: no break of its own."""
    module = _Warns(level, break_first)

    def fn(x):
        y = module(x * 2)
        return y - 1

    _compare_warnings(fn, torch.ones(3), breaks=int(break_first))
    if level == 2 and not break_first:
        assert_no_more_breaks(0, fn, torch.ones(3))


class _WarnsAndReads(nn.Module):
    def __init__(self, level):
        super().__init__()
        self.level = level

    def forward(self, x):
        print("in forward")
        warnings.warn("from forward", UserWarning, stacklevel=self.level)
        return x + 1, _where(sys._getframe(self.level - 1))


@pytest.mark.parametrize("level", [2, 3, 4])
def test_a_module_called_in_a_try_block(level, capsys):
    """A module called in a ``try`` block, where the break in its ``forward`` cannot resume:
    the call runs through bytegraph's ``call_module``, compiled, whose frame is none of the
    user's (torch.compile names other frames there)."""
    module = _WarnsAndReads(level)

    def fn(x):
        try:
            y = module(x * 2)
        except ValueError:
            y = None
        return y

    _compare_warnings(fn, torch.ones(3), breaks=2)  # the print, the frame read
    _torch_compile_is_wrong(fn, torch.ones(3))


def _registry(module_name):
    return {
        key
        for key in sys.modules[module_name].__dict__.get("__warningregistry__", {})
        if key != "version"
    }


def test_a_warning_in_forward_goes_in_the_registry_of_torchs_module():
    """With the default filter a warning is shown once per place: the place ``stacklevel``
    names, whose module's ``__warningregistry__`` notes it (``torch.nn.modules.module``'s for
    ``stacklevel=2``): the compiled call fills the same entries as eager."""
    module = _Warns(2, True)

    def fn(x):
        return module(x * 2) - 1

    compiled, _ = compile_counted(fn)
    with warnings.catch_warnings():  # traced first: a trace may change the warning filters, which
        warnings.simplefilter("ignore")  # empties every registry
        compiled(torch.ones(3))
    seen = []
    for run in (fn, compiled):
        sys.modules["torch.nn.modules.module"].__dict__.pop("__warningregistry__", None)
        sys.modules[__name__].__dict__.pop("__warningregistry__", None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            for _ in range(2):  # the second is not shown: the registry has it
                run(torch.ones(3))
        seen.append(
            (
                [(w.message.args, w.filename, w.lineno) for w in caught],
                _registry("torch.nn.modules.module"),
                _registry(__name__),
            )
        )
    assert seen[0] == seen[1], seen
    assert len(seen[0][0]) == 1 and seen[0][1], seen[0]


# -- the frame above the compiled function ---------------------------------------------------


def above_the_compiled_function(x):
    return x + 1, _where(sys._getframe(1)), _where(sys._getframe(2))


def f_back_of_its_own_frame(x):
    caller = sys._getframe(0).f_back
    return x + 1, _where(caller), caller.f_back.f_code.co_name


def its_own_frame_live_after_the_break(x):
    here = sys._getframe(0)
    caller = here.f_back
    return x + 1, _where(caller), here.f_code.co_name


def _twice_as_eager(fn, breaks=None):
    """``fn`` compiled and eager, called twice from one place: the same results, no fallback and,
    given ``breaks``, that many breaks in the two calls, no more than torch.compile takes."""
    report = as_eager_twice(fn)
    assert not [r for r in report.break_reasons if r.fell_back], report.break_reasons
    if breaks is not None:
        assert report.graph_break_count == breaks, report.break_reasons
        assert_no_more_breaks(breaks, fn, torch.ones(3))


def _checked_at_two_places(fn):
    """``fn`` called from two lines, eager and compiled each from the same one: each call's frames
    above are its own. Returns the report of the first compiled call."""
    compiled, _ = compile_counted(fn)
    recorder = Recorder()
    for i in range(2):
        with recorder if i == 0 else contextlib.nullcontext():
            first = (fn(torch.ones(3)), compiled(torch.ones(3)))
        second = (fn(torch.ones(3)), compiled(torch.ones(3)))
        assert_same(first[1], first[0])
        assert_same(second[1], second[0])
        assert first[0][1] != second[0][1]  # the lines differ
    return recorder.report()


@pytest.mark.parametrize(
    ("fn", "breaks"), [(above_the_compiled_function, 2), (f_back_of_its_own_frame, 1)]
)
def test_the_frame_above_is_the_callers_not_the_entry_functions(fn, breaks):
    """A frame above the compiled function, read at run time (a break for each frame
    ``sys._getframe`` or ``f_back`` reaches there; its ``f_back`` is traced), and one compile
    per calling line (its line guarded): its code and line as eager gives them (torch.compile
    names its own wrapper there, without a break)."""
    report = _checked_at_two_places(fn)
    assert not [r for r in report.break_reasons if r.fell_back], report.break_reasons
    assert report.graph_break_count == breaks, report.break_reasons
    assert "above the compiled function" in str(report.break_reasons[0])
    _torch_compile_is_wrong(fn, torch.ones(3))


def test_its_own_frame_live_at_the_break_reading_the_frame_above():
    """Its own frame live at the break (reading the frame above breaks): the rewritten code
    passes the user's frame on, with the user's code and the caller above it, not the generated
    frame whose caller is bytegraph's entry function (torch.compile names its own wrapper)."""
    report = _checked_at_two_places(its_own_frame_live_after_the_break)
    assert not [r for r in report.break_reasons if r.fell_back], report.break_reasons
    assert report.graph_break_count == 1, report.break_reasons
    _torch_compile_is_wrong(its_own_frame_live_after_the_break, torch.ones(3))


def one_frame_across_breaks(x):
    here = sys._getframe(0)
    print("break")
    y = x + 1
    print("break")
    again = sys._getframe(0)
    code = one_frame_across_breaks.__code__
    return y, _where(here.f_back), here is again, here.f_lineno, here.f_code is code


def current_frame_after_a_break(x):
    here = inspect.currentframe()
    y = x * 2
    print("break")
    z = y + 1
    code = current_frame_after_a_break.__code__
    return z, _where(here.f_back), sorted(here.f_locals), here.f_code is code, here.f_lineno


@pytest.mark.parametrize(
    ("fn", "breaks"), [(one_frame_across_breaks, 4), (current_frame_after_a_break, 3)]
)
def test_its_own_frame_across_breaks_is_the_users(fn, breaks, capsys):
    """``sys._getframe(0)`` and ``inspect.currentframe()`` before a break and after: one object,
    the user's code, the line its code runs at now (after a break, read in the trace of the
    resume function continuing it), its locals (the user's, after the break too), the caller above
    it (torch.compile names its own wrapper)."""
    report = _checked_at_two_places(fn)
    assert not [r for r in report.break_reasons if r.fell_back], report.break_reasons
    assert report.graph_break_count == breaks, report.break_reasons
    _torch_compile_is_wrong(fn, torch.ones(3))


def _own_frame():
    return sys._getframe(0)


def a_callees_frame_kept_across_a_break(x):
    frame = _own_frame()
    print("break")
    codes = (_own_frame.__code__, a_callees_frame_kept_across_a_break.__code__)
    found = (frame.f_code, frame.f_back.f_code)
    return x + 1, _where(frame.f_back.f_back), found == codes, frame.f_back.f_lineno


def test_a_fallback_gives_the_users_frames(capsys):
    """A frame the rewritten code cannot rebuild (a callee's, returned) sends the call to Python:
    there the frames are the user's too (its code, the caller above), not the routed copy's and
    the entry function's."""
    report = _checked_at_two_places(a_callees_frame_kept_across_a_break)
    assert [r.kind for r in report.break_reasons if r.fell_back] == ["reconstruct"]
    _torch_compile_is_wrong(a_callees_frame_kept_across_a_break, torch.ones(3))


def inspect_stack_after_a_break(x):
    y = x + 1
    print("break")
    found = inspect.stack()[:2]
    where = [(f.function, f.filename, f.lineno, f.code_context, f.index) for f in found]
    return y, where, found[0].positions  # (the caller's differs: its calls share a line)


def extract_stack_after_a_break(x):
    y = x + 1
    print("break")
    return y, [(f.name, f.filename, f.lineno, f.line) for f in traceback.extract_stack()[-2:]]


def format_stack_after_a_break(x):
    y = x + 1
    print("break")
    return y, traceback.format_stack()[-2:]


def inspect_stack_in_place(x):
    return x + 1, [(f.function, f.filename, f.lineno) for f in inspect.stack()[:2]]


def _extracts_after_a_break(t):
    print("break")
    return t + 1, [(f.name, f.lineno, f.line) for f in traceback.extract_stack()[-4:]]


def _calls_the_extractor(t):
    return _extracts_after_a_break(t * 2)


def the_stack_of_a_callee_that_resumed(x):
    return _calls_the_extractor(x * 2)


@pytest.mark.parametrize(
    ("fn", "breaks"),
    [
        (inspect_stack_after_a_break, 2),  # FrameInfo's fields are read in the trace
        (extract_stack_after_a_break, 2),
        (format_stack_after_a_break, 2),
        (inspect_stack_in_place, 1),
        (the_stack_of_a_callee_that_resumed, 2),
    ],
)
def test_the_stack_read_from_generated_code_is_the_users(fn, breaks, capsys):
    """``inspect.stack()``, ``traceback.extract_stack()`` and ``format_stack()`` break and run
    in Python, where generated code gives them the user's frames: no entry function, no resume
    function's, the callers waiting for a resumed callee, each with its line, source and
    position (the breaking call runs at its own: columns too) (torch.compile lists its own
    wrapper's frame)."""
    report = _checked_at_two_places(fn)
    assert not [r for r in report.break_reasons if r.fell_back], report.break_reasons
    assert report.graph_break_count == breaks, report.break_reasons
    _torch_compile_is_wrong(fn, torch.ones(3))


def frames_found_two_ways(x):
    found = inspect.stack()
    return (
        x + 1,
        found[1].frame is sys._getframe(1),
        found[0].frame is sys._getframe(0),
        found[1].frame is sys._getframe(0),
    )


def test_a_frame_found_two_ways_is_one_object():
    """``inspect.stack()[1].frame is sys._getframe(1)``: the frame the stack call gave (an input of
    the trace after its break) and the caller the trace reads at run time were told apart by the
    kinds of their trackers, False where eager gives True. A frame given to the trace is compared
    by CPython (a break)."""
    assert frames_found_two_ways(torch.ones(3))[1:] == (True, True, False)
    _twice_as_eager(frames_found_two_ways)


def test_the_frame_above_a_callee_that_resumed():
    """After a break in a callee two calls deep, its resume function runs while its callers wait
    (no frame of theirs exists yet): the frame above it is its caller's as eager gives it, with
    its code and line (torch.compile gives the callee's own frame)."""
    compiled, _ = compile_counted(_deep)
    for _ in range(2):
        assert_same(compiled(torch.ones(3)), _deep(torch.ones(3)))
    _torch_compile_is_wrong(_deep, torch.ones(3))


def recursive(x, n):
    if n == 0:
        print("in the innermost call")
        caller = sys._getframe(1)
        warnings.warn("innermost", UserWarning, stacklevel=2)
        return x + 1, _where(caller), sys._getframe(2).f_code.co_name
    return recursive(x * 2, n - 1)


@pytest.mark.parametrize("depth", [1, 2])
def test_the_frame_above_a_recursive_callee_that_resumed(depth, capsys):
    """The callee that resumed runs the compiled function's code: the frame waiting for it is
    still another call of that function, not the part the callee's resume function continues."""
    _compare_warnings(recursive, torch.ones(3), depth, breaks=3)


def _inner(t):
    print("in the callee")
    caller = sys._getframe(1)
    return t + 1, _where(caller), _where(caller.f_back), caller.f_globals["__name__"]


def _middle(t):
    return _inner(t)


def _deep(x):
    return _middle(x * 2)


# -- warnings helpers of a library, called from compiled code --------------------------------

_LIBRARY = """
import inspect, sys, warnings

def warn_at(t, level):
    warnings.warn(f"level {level}", FutureWarning, stacklevel=level)
    return t + 1

def caller_of(t):
    caller = sys._getframe(1)
    return t + 1, caller.f_code.co_name, caller.f_lineno, caller.f_globals["__name__"]

def info_here(t):
    return t + 1, tuple(inspect.getframeinfo(sys._getframe())), sys._getframe().f_lineno
"""


def _library():
    """A library module of its own (its own file and ``__name__``, in ``sys.modules``)."""
    module = types.ModuleType("frames_library")
    module.__file__ = "/site-packages/frames_library.py"
    exec(compile(_LIBRARY, module.__file__, "exec"), module.__dict__)
    sys.modules[module.__name__] = module
    return module


frames_library = _library()


@pytest.fixture
def library():
    return frames_library


@pytest.mark.parametrize("level", [1, 2, 3])
def test_a_library_warning_helper_between_breaks(library, level, capsys):
    """``warnings.warn(..., stacklevel=k)`` in a library function the compiled code calls, with
    breaks before and after: each warning names eager's file and line, given by the compiled
    call (the library's own line; its caller's; the caller's caller's, above the resume
    function the warning is traced in, found at run time): no break of its own."""

    def fn(x):
        y = x + 1
        print("before")
        z = library.warn_at(y, level)
        print("after")
        return z * 2

    _compare_warnings(fn, torch.ones(3), breaks=2)


def warns_through_a_global_module(x, level):
    y = x + 1
    print("before")
    z = frames_library.warn_at(y, level)
    print("after")
    return z * 2


@pytest.mark.parametrize("level", [1, 2, 3])
def test_a_warning_through_a_module_read_from_the_globals(level, capsys):
    """The frames a warning counts are told apart by their code, which hashes its constants:
    rewritten code that holds a module's globals dict as a constant is among them (it raised
    TypeError: unhashable type: 'dict')."""
    _compare_warnings(warns_through_a_global_module, torch.ones(3), level, breaks=2)


@pytest.mark.parametrize("level", [1, 2, 3])
def test_a_library_warning_helper_without_breaks_around(library, level):
    def fn(x):
        return library.warn_at(x + 1, level) * 2

    _compare_warnings(fn, torch.ones(3), breaks=0)


def test_a_library_reading_its_callers_frame(library):
    def fn(x):
        return library.caller_of(x * 2)

    check_breaks(fn, _x, graphs=1, breaks=0)
    assert_no_more_breaks(0, fn, torch.ones(3))


def _called_by():
    caller = inspect.stack()[1]
    return caller.function, caller.lineno, caller[3], caller.frame.f_code.co_name


def frame_info_fields(x):
    info = inspect.stack()[0]
    frame, filename, lineno, function, context, index = info
    fields = (info.function, info.filename, info.lineno, info.code_context, info.index)
    return x + 1, fields, (filename, lineno, function, context, index), info[3], info[-4]


def frame_info_of_the_caller(x):
    return x * 2, _called_by()


def frame_info_code(x):
    found = inspect.stack(0)[0]  # (the caller's line is the test's: it differs between calls)
    return x - 1, found.frame.f_code.co_name, found.code_context, found.positions


@pytest.mark.parametrize("fn", [frame_info_fields, frame_info_of_the_caller, frame_info_code])
def test_frame_info_fields_are_read_in_the_trace(fn):
    """``inspect.stack()`` runs in Python (one break, as torch.compile's); the fields of the
    ``FrameInfo``s it gives (``.function``, ``[3]``, unpacked, ``.frame.f_code``) are read in the
    trace, guarded, as eager's (each was a break of its own)."""
    _twice_as_eager(fn, breaks=1)


# -- readers of one frame: inspect.getframeinfo, inspect.getouterframes ----------------------


def _info(info):
    return tuple(info), info.positions


def frame_info_of_its_own_frame(x):
    here = inspect.getframeinfo(inspect.currentframe())
    again = inspect.getframeinfo(sys._getframe(), context=3)
    return x + 1, _info(here), _info(again)


def _info_of_the_caller():
    return inspect.getframeinfo(sys._getframe(1), 0)[:3]


def frame_info_of_the_caller_from_a_helper(x):
    return x * 2, _info_of_the_caller()


def _info_of_its_own():
    return _info(inspect.getframeinfo(inspect.currentframe()))


def frame_info_of_a_callees_own_frame(x):
    y = x - 1
    return y, _info_of_its_own()


def frame_info_in_a_library(x):
    return frames_library.info_here(x * 2)


def outer_frames_of_its_own_frame(x):
    found = inspect.getouterframes(inspect.currentframe())  # (the caller's line is the test's)
    here = [(f.function, f.lineno, f.code_context, f.positions, f.frame.f_code) for f in found[:1]]
    return x + 1, here, found[1].function, found[1].frame.f_code.co_name


class _InfoOfTheModuleCall(nn.Module):
    def forward(self, x):
        return x + 1, _info(inspect.getframeinfo(sys._getframe(1)))


_info_module = _InfoOfTheModuleCall()


def frame_info_of_the_module_call(x):
    return _info_module(x * 2)


@pytest.mark.parametrize(
    ("fn", "breaks"),
    [
        (frame_info_of_its_own_frame, 2),  # two calls
        (frame_info_of_the_caller_from_a_helper, 1),
        (frame_info_of_a_callees_own_frame, 1),
        (frame_info_in_a_library, 1),
        (outer_frames_of_its_own_frame, 1),
        (frame_info_of_the_module_call, 1),
    ],
)
def test_a_reader_of_one_frame_breaks_once(fn, breaks):
    """``inspect.getframeinfo(frame)`` and ``inspect.getouterframes(frame)`` run in Python at
    one break each (they traced into ``inspect``, breaking at each frame read, or sent the call to
    Python where the frame was a callee's or its caller's): file, line, function, source lines
    and positions as eager's, the frame a trace knows given as it knows it (a callee's, the
    caller of a helper, ``nn.Module``'s ``_call_impl``), a library's without source (no
    ``code_context``), over two calls; torch.compile breaks no less."""
    _twice_as_eager(fn, breaks=breaks)


def _three_up():
    above = sys._getframe(3)
    print("break")
    return _where(above)


def _calls_three_up():
    return _three_up()


def the_frame_above_held_by_a_callee_two_calls_deep(x):
    return x + 1, _calls_three_up()


def test_the_frame_above_held_across_a_break_two_calls_deep(capsys):
    """A callee two calls deep holds the frame above the compiled function across its break:
    the rewritten code rebuilds it before resuming the callee, while the caller between waits,
    which is below the rewritten code's frame, not above (it gave the compiled function's own
    frame) (torch.compile gives its own wrapper's)."""
    report = _checked_at_two_places(the_frame_above_held_by_a_callee_two_calls_deep)
    assert not [r for r in report.break_reasons if r.fell_back], report.break_reasons
    _torch_compile_is_wrong(the_frame_above_held_by_a_callee_two_calls_deep, torch.ones(3))

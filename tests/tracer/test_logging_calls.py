"""Calls into ``logging`` in a compiled function: a level method of a logger (``LOG.info(msg,
*args)``, ``debug``, ``warning``, ``error``, ``critical``, ``log``) and logging's module functions
(``logging.warning``). Where the level is disabled the call is nothing, with no break; where it
is enabled every compiled call gives the handlers the records eager's call gives them: message,
arguments, level, logger, and the file, line and function of the caller (``findCaller``'s,
which a frame of generated code would not give), in the same order as eager's other effects. The
answer is guarded: a level changed between calls logs on the next call. The tracer broke at
every such call (``RLock.acquire``/``release`` of logging's lock); torch.compile traces them."""

from __future__ import annotations

import functools
import logging
import logging.handlers

import pytest
import torch
from difftest import compile_counted
from dynamo_baseline import assert_no_more_breaks

from bytegraph.explain import Recorder

LOG = logging.getLogger("bytegraph_tests.logging_calls")


class Keeping(logging.Handler):
    """A handler of the user's keeping what each record says in ``events``, a list the program
    may change too: the records it is given are handled where eager handles them (in Python)."""

    def __init__(self, events: list) -> None:
        super().__init__()
        self.events = events

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.events.append(_said(record))
        except Exception:  # noqa: BLE001 (as logging's own handlers: reported, not raised)
            self.handleError(record)


class Buffered:
    """What each record a ``logging.handlers.BufferingHandler`` (logging's own: the records are
    handled after the graph) was given says, as a list of ``_said`` tuples."""

    def __init__(self) -> None:
        self.handler = logging.handlers.BufferingHandler(capacity=10**6)

    def __iter__(self):
        return iter([_said(r) for r in self.handler.buffer])

    def __len__(self) -> int:
        return len(self.handler.buffer)

    def __getitem__(self, i: int) -> tuple:
        return _said(self.handler.buffer[i])

    def __eq__(self, other: object) -> bool:
        return list(self) == other

    def clear(self) -> None:
        self.handler.buffer.clear()


def _said(record: logging.LogRecord) -> tuple:
    return (
        record.name,
        record.levelno,
        record.levelname,
        record.msg,
        record.args,
        record.getMessage(),
        record.pathname,
        record.lineno,
        record.funcName,
        record.exc_info,
    )


@pytest.fixture
def events():
    """Records of ``LOG`` (not propagated), buffered by logging's own handler."""
    kept = Buffered()
    handler = kept.handler
    LOG.addHandler(handler)
    LOG.propagate = False
    try:
        yield kept
    finally:
        LOG.removeHandler(handler)
        LOG.propagate = True
        LOG.setLevel(logging.NOTSET)


def _helper(t):
    LOG.info("helper got %s", "t")
    return t * 2


def logs_at_each_level(x):
    LOG.debug("debug %s", 1)
    y = _helper(x)
    LOG.info("info %s and %r", 2, "two")
    LOG.warning("warning %d", 3)
    LOG.log(logging.ERROR, "log at %s", "error")
    LOG.error("error")
    LOG.critical("critical %(a)s", {"a": 4})
    return y + 1


def _run(fn, level, *args):
    """``fn(*args)`` with ``LOG`` at ``level``."""
    LOG.setLevel(level)
    return fn(*args)


def _compare(fn, levels, make_args, events):
    compiled, counter = compile_counted(fn)
    recorder = Recorder()
    for level in levels:
        events.clear()
        with recorder:
            actual = _run(compiled, level, *make_args())
        got = list(events)
        events.clear()
        expected = _run(fn, level, *make_args())
        assert got == events
        torch.testing.assert_close(actual, expected)
    return counter, recorder.report()


def test_a_disabled_level_logs_nothing_and_does_not_break(events):
    counter, report = _compare(
        logs_at_each_level, [logging.CRITICAL + 1] * 3, lambda: (torch.ones(2),), events
    )
    assert events == []
    assert (counter.frame_count, report.graph_break_count) == (1, 0)
    LOG.setLevel(logging.CRITICAL + 1)
    assert_no_more_breaks(0, logs_at_each_level, torch.ones(2))


def test_an_enabled_level_gives_eagers_records_at_every_call(events):
    counter, report = _compare(
        logs_at_each_level, [logging.DEBUG] * 3, lambda: (torch.ones(2),), events
    )
    assert len(events) == 7
    assert events[1][-2:-1] == ("_helper",)  # the inlined helper's own frame names the record
    assert (counter.frame_count, report.graph_break_count) == (1, 0)
    LOG.setLevel(logging.DEBUG)
    assert_no_more_breaks(0, logs_at_each_level, torch.ones(2))


def test_a_level_changed_between_calls_logs_at_the_next_call(events):
    levels = [logging.WARNING, logging.DEBUG, logging.CRITICAL, logging.WARNING, logging.DEBUG]
    counter, report = _compare(logs_at_each_level, levels, lambda: (torch.ones(2),), events)
    assert len(events) == 7
    assert report.graph_break_count == 0
    assert counter.frame_count == 3  # a variant per set of levels enabled, reused after


def test_logging_disable_is_read_at_every_call(events):
    compiled, _ = compile_counted(logs_at_each_level)
    LOG.setLevel(logging.DEBUG)
    recorder = Recorder()
    seen = []
    for disabled in (logging.NOTSET, logging.WARNING, logging.NOTSET):
        logging.disable(disabled)
        try:
            for fn in (compiled, logs_at_each_level):
                events.clear()
                with recorder:
                    fn(torch.ones(2))
                seen.append(list(events))
        finally:
            logging.disable(logging.NOTSET)
    assert seen[0] == seen[1] and seen[2] == seen[3] and seen[4] == seen[5]
    assert [len(s) for s in seen[::2]] == [7, 3, 7]
    assert recorder.report().graph_break_count == 0


def logs_between_appends(x, out):
    out.append(1)
    LOG.info("between %s", "appends")
    out.append(2)
    LOG.warning("last")
    return x - 1


def test_records_and_the_programs_appends_are_as_eagers(events):
    compiled, _ = compile_counted(logs_between_appends)
    LOG.setLevel(logging.INFO)
    recorder = Recorder()
    for _ in range(3):
        events.clear()
        out = []
        with recorder:
            compiled(torch.ones(2), out)
        got = (out, list(events))
        events.clear()
        eager_out = []
        logs_between_appends(torch.ones(2), eager_out)
        assert got == (eager_out, events)
    assert recorder.report().graph_break_count == 0


def test_a_users_handler_sharing_the_programs_list_sees_it_as_eager():
    """A handler of the user's could read what the program changes (here: one list both append
    to); handled after the graph's stores it would see ``[1, 2]`` where eager's sees ``[1]``, so
    its records are handled in Python, where eager handles them (a break per enabled call)."""
    LOG.setLevel(logging.INFO)
    LOG.propagate = False
    try:
        results = []
        recorder = Recorder()
        for fn in (compile_counted(logs_between_appends)[0], logs_between_appends):
            out: list = []
            handler = Keeping(out)
            LOG.addHandler(handler)
            try:
                with recorder:
                    fn(torch.ones(2), out)
                    fn(torch.ones(2), out)
            finally:
                LOG.removeHandler(handler)
            results.append([e if type(e) is int else e[5] for e in out])
        assert results[0] == results[1] == [1, "between appends", 2, "last"] * 2
        assert recorder.report().graph_break_count == 2  # one trace: a break per enabled call
    finally:
        LOG.propagate = True
        LOG.setLevel(logging.NOTSET)


def logs_between_prints(x):
    print("first")
    LOG.info("between %s", "prints")
    y = x + 1
    print("second")
    LOG.warning("after")
    return y


def test_records_come_in_eagers_order_with_prints(capsys):
    """A handler writing where ``print`` writes: the same text, in the same order."""
    handler = logging.StreamHandler(__import__("sys").stdout)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s %(funcName)s:%(lineno)d"))
    LOG.addHandler(handler)
    LOG.propagate = False
    LOG.setLevel(logging.INFO)
    try:
        compiled, _ = compile_counted(logs_between_prints)
        for _ in range(2):
            compiled(torch.ones(2))
            got = capsys.readouterr().out
            logs_between_prints(torch.ones(2))
            assert got == capsys.readouterr().out
            assert got.count("\n") == 4
    finally:
        LOG.removeHandler(handler)
        LOG.propagate = True
        LOG.setLevel(logging.NOTSET)


def gets_its_logger(x):
    logging.getLogger("bytegraph_tests.logging_calls").info("got %s", 3)
    logging.getLogger("bytegraph_tests.logging_calls").debug("quiet")
    return x + 1


def test_a_logger_got_in_the_function(events):
    counter, report = _compare(
        gets_its_logger,
        [logging.INFO, logging.INFO, logging.WARNING],
        lambda: (torch.ones(2),),
        events,
    )
    assert report.graph_break_count == 0
    LOG.setLevel(logging.WARNING)
    assert_no_more_breaks(0, gets_its_logger, torch.ones(2))


def logs_a_tensor(x):
    LOG.debug("input %s", x)
    return x + 1


def test_a_tensor_logged_at_an_enabled_level_runs_in_python(events):
    """A tensor's text is not known at trace time: the call runs in Python (a break) where the
    level is enabled; where it is disabled the call is nothing."""
    compiled, _ = compile_counted(logs_a_tensor)
    for level, breaks in ((logging.INFO, 0), (logging.DEBUG, 1), (logging.INFO, 0)):
        LOG.setLevel(level)
        messages = []
        recorder = Recorder()
        for fn in (compiled, logs_a_tensor):
            events.clear()
            with recorder:
                torch.testing.assert_close(fn(torch.ones(2)), torch.ones(2) + 1)
            messages.append([(e[:3], e[5:]) for e in events])
        assert messages[0] == messages[1]
        assert recorder.report().graph_break_count == breaks


def logs_through_the_module(x):
    logging.warning("root says %s", "hi")
    logging.info("root is quiet at %s", "info")
    logging.log(logging.ERROR, "root logs %d", 5)
    return x * 3


def test_logging_module_functions_log_as_eager():
    kept = Buffered()
    handler = kept.handler
    root = logging.getLogger()
    root.addHandler(handler)
    level = root.level
    root.setLevel(logging.WARNING)
    try:
        compiled, _ = compile_counted(logs_through_the_module)
        recorder = Recorder()
        for _ in range(3):
            kept.clear()
            with recorder:
                actual = compiled(torch.ones(2))
            got = list(kept)
            kept.clear()
            torch.testing.assert_close(actual, logs_through_the_module(torch.ones(2)))
            assert got == kept and len(got) == 2
        assert recorder.report().graph_break_count == 0
        assert_no_more_breaks(0, logs_through_the_module, torch.ones(2))
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def logs_a_bad_format(x):
    LOG.warning("%d items", "many")
    return x + 1


def _outcome(fn, *args):
    try:
        return fn(*args).tolist()
    except Exception as e:  # noqa: BLE001 (the outcome compared)
        return type(e), str(e)


def test_a_message_that_does_not_format_is_reported_as_eager(events, capsys):
    """logging reports the error from each handler (``handleError``: to stderr, or raised where
    the handler raises it, as pytest's capturing handlers do): the call runs in Python."""
    LOG.setLevel(logging.INFO)
    formatting = logging.StreamHandler()  # formats each record: reports the error to stderr
    LOG.addHandler(formatting)
    try:
        compiled, _ = compile_counted(logs_a_bad_format)
        for _ in range(2):
            outcomes = []
            for fn in (compiled, logs_a_bad_format):
                err = (_outcome(fn, torch.ones(2)), capsys.readouterr().err)
                outcomes.append((err[0], "--- Logging error ---" in err[1]))
            assert outcomes[0] == outcomes[1]
    finally:
        LOG.removeHandler(formatting)
    assert len(events) == 4  # the buffering handler formats nothing: each record kept


@functools.lru_cache(None)
def _warning_once(logger, *args):
    logger.warning(*args)


def warns_once(x):
    _warning_once(LOG, "said once %s", "only")
    return x + 1


def test_a_cached_warning_is_given_once_as_eager(events):
    """transformers' ``logger.warning_once``: an ``lru_cache``'d function logging on its first
    call only (made for real while tracing, as eager's first call makes it; hits later)."""
    LOG.setLevel(logging.INFO)
    compiled, _ = compile_counted(warns_once)
    recorder = Recorder()
    got = []
    for _ in range(3):
        events.clear()
        with recorder:
            compiled(torch.ones(2))
        got.append(list(events))
    assert recorder.report().graph_break_count == 0
    _warning_once.cache_clear()
    expected = []
    for _ in range(3):
        events.clear()
        warns_once(torch.ones(2))
        expected.append(list(events))
    _warning_once.cache_clear()
    assert got == expected
    assert [len(e) for e in expected] == [1, 0, 0]


BUFFER = logging.handlers.BufferingHandler(capacity=10**6)


def reads_the_buffer_after(x):
    LOG.info("first")
    n = len(BUFFER.buffer)  # what the handler was given so far
    LOG.info("second")
    return x + n, len(BUFFER.buffer)


def reads_the_buffer_before(x):
    n = len(BUFFER.buffer)
    LOG.info("once")
    return x + n, len(BUFFER.buffer)


@pytest.mark.parametrize(
    ("fn", "breaks"), [(reads_the_buffer_after, 2), (reads_the_buffer_before, 1)]
)
def test_a_handlers_buffer_read_by_the_program_is_as_eager(fn, breaks):
    """A record is handled after the graph, so the program reading what the handler changes (its
    buffer) would read it as it was before the call: reading it after the call breaks there (the
    record handled first), and a call whose handler's buffer the trace read already runs in
    Python (``reads_the_buffer_after``'s resume function has read it when it logs again). Both
    gave eager's values shifted by the records not yet handled."""
    LOG.addHandler(BUFFER)
    LOG.propagate = False
    LOG.setLevel(logging.INFO)
    try:
        results = []
        recorder = Recorder()
        for run in (compile_counted(fn)[0], fn):
            got = []
            for _ in range(3):
                BUFFER.buffer.clear()  # (a length read is guarded: the same at every call)
                with recorder:
                    t, n = run(torch.zeros(1))
                got.append((t.tolist(), n, [r.msg for r in BUFFER.buffer]))
            results.append(got)
        assert results[0] == results[1]
        assert recorder.report().graph_break_count == breaks
    finally:
        LOG.removeHandler(BUFFER)
        LOG.propagate = True
        LOG.setLevel(logging.NOTSET)


def logs_a_tensor_through_the_module(x):
    y = x + 1
    logging.warning("value %s", x)  # breaks inside logging.warning, at root.warning
    return y * 2


def test_a_break_inside_loggings_own_function_names_the_users_line():
    """``logging.warning(msg, tensor)`` breaks inside logging's function; resumed there, the
    record named the generated code that ran the resumed function (``findCaller`` walks the real
    frames): the whole call runs in Python instead, from the user's frame."""
    kept = Buffered()
    root = logging.getLogger()
    root.addHandler(kept.handler)
    level = root.level
    root.setLevel(logging.WARNING)
    try:
        compiled, _ = compile_counted(logs_a_tensor_through_the_module)
        records = []
        for fn in (compiled, compiled, logs_a_tensor_through_the_module):
            kept.clear()
            torch.testing.assert_close(fn(torch.ones(2)), (torch.ones(2) + 1) * 2)
            records.append([(e[0], e[5], e[6], e[7], e[8]) for e in kept])
        assert records[0] == records[1] == records[2]
        assert records[2][0][-1] == "logs_a_tensor_through_the_module"
    finally:
        root.removeHandler(kept.handler)
        root.setLevel(level)

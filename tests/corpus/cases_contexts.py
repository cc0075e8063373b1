"""Context managers and torch global state: autocast, grad and inference mode,
``torch.device``, default dtype, deterministic algorithms, function modes, ``fork_rng``,
``@contextmanager`` generators, ``nullcontext``; as blocks, decorators, nested, with a graph break
inside and with an exception raised inside. Every case also compares torch's global state after each
call with eager's (``harness.global_state``)."""

from __future__ import annotations

import contextlib

import torch
from corpus.harness import Setup, case
from torch.overrides import TorchFunctionMode


def _square():
    return (torch.randn(4, 4),)


def _leaf():
    return (torch.randn(4, requires_grad=True),)


# -- autocast --------------------------------------------------------------------------------------
@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def autocast_nested_disabled():
    def fn(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            a = x @ x
            with torch.autocast("cpu", enabled=False):
                b = x @ x
            c = b @ x
        return a, b, c

    return Setup(fn, _square)


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def autocast_enabled_false():
    def fn(x):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=False):
            return x @ x

    return Setup(fn, _square)


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def autocast_inside_called_function():
    def project(x, w):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return torch.nn.functional.linear(x, w)

    def fn(x, w):
        y = project(x, w)
        return y.float().relu() + 1

    return Setup(fn, lambda: (torch.randn(3, 4), torch.randn(5, 4)))


@case("contexts", graphs=2, breaks=1, tc_breaks=1)
def autocast_break_inside():
    def fn(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ x
            print("inside", torch.is_autocast_enabled("cpu"))
            z = y @ x
        return y, z, z.sum()

    return Setup(fn, _square)


@case("contexts", graphs=3, breaks=1, tc_breaks=2)
def autocast_break_in_called_function():
    def inner(x):
        y = x @ x
        print("in inner", torch.get_autocast_dtype("cpu"))
        return y @ x

    def fn(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            z = inner(x)
        return z, z @ z

    return Setup(fn, _square)


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def autocast_exception_caught_outside():
    def fn(x, fail):
        try:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                y = x @ x
                if fail:
                    raise ValueError("inside autocast")
        except ValueError:
            y = x * 2
        return y

    return Setup(fn, lambda: (torch.randn(4, 4), True))


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def autocast_object_made_outside():
    ac = torch.autocast("cpu", dtype=torch.bfloat16)

    def fn(x):
        with ac:
            y = x @ x
        return y, x @ x

    return Setup(fn, _square)


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def autocast_decorated_method():
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        @torch.autocast("cpu", dtype=torch.bfloat16)
        def forward(self, x):
            return self.lin(x).relu()

    block = Block()

    def fn(x):
        return block(x).sum()

    return Setup(fn, _square)


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def autocast_cuda_on_cpu_tensors():
    def fn(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            with torch.autocast("cuda", dtype=torch.float16, enabled=torch.cuda.is_available()):
                return x @ x

    return Setup(fn, _square)


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def autocast_query_inside():
    def fn(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            on = torch.is_autocast_enabled("cpu")
            y = x @ x
        return y, on, torch.is_autocast_enabled("cpu")

    return Setup(fn, _square)


# -- grad mode -------------------------------------------------------------------------------------
@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def no_grad_block():
    def fn(x):
        with torch.no_grad():
            y = x * 2
        return y, x * y

    return Setup(fn, _leaf)


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def enable_grad_inside_no_grad():
    def fn(x):
        with torch.no_grad():
            a = x + 1
            with torch.enable_grad():
                b = x * 2
            c = a * b
        return a, b, c

    return Setup(fn, _leaf)


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def set_grad_enabled_block():
    def fn(x, mode):
        with torch.set_grad_enabled(mode):
            y = x * 3
        return y, torch.is_grad_enabled()

    return Setup(fn, lambda: (torch.randn(4, requires_grad=True), False))


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def set_grad_enabled_call_and_back():
    def fn(x):
        torch.set_grad_enabled(False)
        y = x * 2
        torch.set_grad_enabled(True)
        return y, y + x

    return Setup(fn, _leaf)


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def enable_grad_decorator():
    @torch.enable_grad()
    def inner(x):
        return x * 2

    def fn(x):
        with torch.no_grad():
            return inner(x), x + 1

    return Setup(fn, _leaf)


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def no_grad_decorator_without_parentheses():
    @torch.no_grad
    def inner(x):
        return x * 2

    def fn(x):
        return inner(x) + x

    return Setup(fn, _leaf)


@case("contexts", graphs=3, breaks=1, tc_breaks=2)
def no_grad_decorator_break_inside():
    @torch.no_grad()
    def inner(x):
        y = x * 2
        print("grad inside", torch.is_grad_enabled())
        return y + 1

    def fn(x):
        return inner(x) * x

    return Setup(fn, _leaf)


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def no_grad_exception_caught_outside():
    def fn(x):
        try:
            with torch.no_grad():
                y = x * 2
                raise RuntimeError("in no_grad")
        except RuntimeError:
            pass
        return y, x * 2, torch.is_grad_enabled()

    return Setup(fn, _leaf)


# -- inference mode --------------------------------------------------------------------------------
@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def inference_mode_decorator():
    @torch.inference_mode()
    def inner(x):
        return x * 2

    def fn(x):
        return inner(x).sum()

    return Setup(fn, _leaf)


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def inference_mode_false_nested():
    def fn(x):
        with torch.inference_mode():
            a = x * 2
            with torch.inference_mode(False):
                b = x * 3
        return a.sum(), b.sum()

    return Setup(fn, _leaf)


@case("contexts", graphs=2, breaks=1, tc_breaks=2)
def inference_mode_break_inside():
    def fn(x):
        with torch.inference_mode():
            a = x * 2
            print("inference", torch.is_inference_mode_enabled())
            b = a + 1
        return b.sum(), x.sum()

    return Setup(fn, _leaf)


# -- torch.device, default dtype, deterministic algorithms, function modes ------------------------
@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def device_context_meta():
    def fn(x):
        with torch.device("meta"):
            y = torch.ones(3)
            d = torch.get_default_device()
        return x + 1, y.device, y.shape, d

    return Setup(fn, lambda: (torch.randn(3),))


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def device_context_explicit_device_wins():
    def fn(x):
        with torch.device("meta"):
            a = torch.zeros(2, device="cpu")
            b = torch.empty(2)
        return x + a, b.device

    return Setup(fn, lambda: (torch.randn(2),))


@case(
    "contexts",
    graphs=2,
    breaks=1,
    tc_breaks=0,
    why="torch.compile compiles nothing here (it skips the frame, 0 graphs); print must break",
)
def device_context_break_inside():
    def fn(x):
        with torch.device("meta"):
            a = torch.ones(2)
            print("device", torch.get_default_device())
            b = torch.zeros(2)
        return x + 1, a.device, b.device, torch.ones(1)

    return Setup(fn, lambda: (torch.randn(2),))


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def default_dtype_set_and_restored():
    def fn(x):
        old = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        y = torch.ones(4) * 1.5
        torch.set_default_dtype(old)
        return x + y.float(), y.dtype

    return Setup(fn, lambda: (torch.randn(4),))


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def deterministic_algorithms_set_and_restored():
    def fn(x):
        torch.use_deterministic_algorithms(True)
        y = x.cumsum(0)
        on = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(False)
        return y, on

    return Setup(fn, lambda: (torch.randn(5),))


@case(
    "contexts",
    graphs=1,
    breaks=1,
    tc_breaks=0,
    why="TorchFunctionMode objects are not traced: the with-block runs in Python (clean break)",
)
def torch_function_mode_block():
    class AddIsSub(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func is torch.add:
                func = torch.sub
            return func(*args, **(kwargs or {}))

    mode = AddIsSub()

    def fn(x):
        y = x * 2
        with mode:
            z = torch.add(y, 1)
        return z

    return Setup(fn, lambda: (torch.randn(3),))


# -- fork_rng --------------------------------------------------------------------------------------
@case("contexts", graphs=1, breaks=0, tc_breaks=1)
def fork_rng_block():
    def fn(x):
        with torch.random.fork_rng():
            a = x + torch.randn(4)
        b = x + torch.randn(4)
        return a, b

    return Setup(fn, lambda: (torch.randn(4),))


@case(
    "contexts",
    graphs=0,
    breaks=1,
    tc_breaks=1,
    why="torch.compile compiles nothing here (it skips the frame, 0 graphs); print must break, and"
    " a break inside fork_rng is taken at its with (saving the RNG state again would be wrong)",
)
def fork_rng_break_inside():
    def fn(x):
        with torch.random.fork_rng():
            a = x + torch.randn(4)
            print("forked")
            b = torch.randn(4)
        return a, b, torch.randn(4)

    return Setup(fn, lambda: (torch.randn(4),))


# -- @contextmanager generators, nullcontext, user classes ----------------------------------------
@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def contextmanager_yielding_value():
    @contextlib.contextmanager
    def scaled(factor):
        yield factor * 2

    def fn(x):
        with scaled(3) as f:
            y = x * f
        return y

    return Setup(fn, lambda: (torch.randn(4),))


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def contextmanager_try_finally():
    log = ["enter a", "exit a"]  # as each call leaves it (its length is guarded)

    @contextlib.contextmanager
    def traced(name):
        log.append(f"enter {name}")
        try:
            yield
        finally:
            log.append(f"exit {name}")

    def fn(x):
        log.clear()  # (a list growing from call to call would be guarded on its length)
        with traced("a"):
            y = x + 1
        return y * 2

    return Setup(fn, lambda: (torch.randn(4),), observe=lambda: list(log))


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def contextmanager_used_twice():
    @contextlib.contextmanager
    def no_grad_scope():
        with torch.no_grad():
            yield

    def fn(x):
        with no_grad_scope():
            a = x * 2
        b = x * 3
        with no_grad_scope():
            c = b + a
        return a, b, c

    return Setup(fn, _leaf)


@case(
    "contexts",
    graphs=1,
    breaks=1,
    tc_breaks=0,
    why="torch.compile compiles nothing here (it skips the frame, 0 graphs); print must break, and"
    " a break inside a generator's block is taken at its with (it cannot be rebuilt suspended)",
)
def contextmanager_break_inside():
    log = ["enter", "exit"]  # as each call leaves it (its length is guarded)

    @contextlib.contextmanager
    def traced():
        log.append("enter")
        yield
        log.append("exit")

    def fn(x):
        log.clear()
        y = x + 1
        with traced():
            print("inside")
            y = y * 2
        return y

    return Setup(fn, lambda: (torch.randn(4),), observe=lambda: list(log))


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def nullcontext_with_value():
    def fn(x, use_no_grad):
        cm = torch.no_grad() if use_no_grad else contextlib.nullcontext(x)
        with cm as v:
            y = x * 2
        return y, v

    return Setup(fn, lambda: (torch.randn(4, requires_grad=True), False))


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def user_class_context_manager():
    class Scale:
        def __init__(self):
            self.depth = 0

        def __enter__(self):
            self.depth += 1
            return 3.0

        def __exit__(self, *exc):
            self.depth -= 1
            return False

    scale = Scale()

    def fn(x):
        with scale as s:
            inside = scale.depth
            y = x * s
        return y, inside

    return Setup(fn, lambda: (torch.randn(4),), observe=lambda: scale.depth)


# -- nested ----------------------------------------------------------------------------------------
@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def nested_no_grad_autocast_device():
    def fn(x):
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            with torch.device("cpu"):
                y = x @ x + torch.ones(4)
        return y, y.requires_grad

    return Setup(fn, lambda: (torch.randn(4, 4, requires_grad=True),))


@case("contexts", graphs=1, breaks=1, tc_breaks=1)
def nested_break_inside_two_contexts():
    def fn(x):
        with torch.no_grad():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                y = x @ x
                print("nested")
                z = y @ x
            w = z.float() * 2
        return y, z, w, x * 2

    return Setup(fn, lambda: (torch.randn(4, 4, requires_grad=True),))


@case("contexts", graphs=1, breaks=0, tc_breaks=0)
def user_class_context_made_in_function():
    class Scale:
        def __init__(self, k):
            self.k = k
            self.log = []

        def __enter__(self):
            self.log.append("in")
            return self.k

        def __exit__(self, *exc):
            self.log.append("out")
            return False

    def fn(x):
        s = Scale(3)
        with s as k:
            y = x * k
        return y, s.log

    return Setup(fn, lambda: (torch.randn(4),))


@case(
    "contexts",
    graphs=1,
    breaks=1,
    tc_breaks=0,
    why="torch.compile compiles nothing here (it skips the frame, 0 graphs); print must break, and"
    " a break inside a user __enter__/__exit__ block is taken at its with (its __exit__ is traced)",
)
def user_class_context_made_in_function_break_inside():
    class Scale:
        def __init__(self, k):
            self.k = k
            self.log = []

        def __enter__(self):
            self.log.append("in")
            return self.k

        def __exit__(self, *exc):
            self.log.append("out")
            return False

    def fn(x):
        y = x + 1
        s = Scale(3)
        with s as k:
            print("inside")
            y = y * k
        return y, s.log

    return Setup(fn, lambda: (torch.randn(4),))

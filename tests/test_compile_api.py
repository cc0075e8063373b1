"""``bytegraph.compile`` takes torch.compile's arguments: ``mode``, ``options``, ``disable``,
``name``, ``recompile_limit``; each rule torch.compile enforces (mode and options exclusive, unknown
mode or option named with the known ones, ``disable`` still checks its arguments) holds here too.
"""

from __future__ import annotations

import inspect
import warnings

import pytest
import torch
from bytegraph.backends import registry
from bytegraph.backends.debug import CompileCounter
from bytegraph.tracer.exc import BytegraphError

import bytegraph


def add_one(x):
    return torch.relu(x) + 1


@pytest.fixture
def fresh_notices(monkeypatch):
    """Each test sees the one-time notices as if none had been given yet."""
    monkeypatch.setattr(registry, "_NOTICED", set())


def test_signature_matches_torch_compile_for_the_shared_arguments():
    ours = inspect.signature(bytegraph.compile).parameters
    theirs = inspect.signature(torch.compile).parameters
    for name in ("model", "fullgraph", "dynamic", "backend", "mode", "options", "disable"):
        assert name in ours, name
        assert ours[name].kind == theirs[name].kind, name
        assert ours[name].default == theirs[name].default or name == "backend", name


def test_decorator_form_with_mode(fresh_notices):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        @bytegraph.compile(mode="reduce-overhead")
        def fn(x):
            return x * 2

    x = torch.randn(3)
    torch.testing.assert_close(fn(x), x * 2)
    assert len(bytegraph.cache_entries(fn)) == 1


def test_decorator_refuses_none():
    with pytest.raises(TypeError, match="can't be None"):
        bytegraph.compile()(None)


def test_mode_and_options_together_is_an_error():
    with pytest.raises(BytegraphError, match="both can't be specified"):
        bytegraph.compile(add_one, mode="max-autotune", options={"max_autotune": True})
    assert pytest.raises(RuntimeError, bytegraph.compile, add_one, mode="default", options={})


def test_unknown_mode_lists_the_modes():
    with pytest.raises(BytegraphError) as info:
        bytegraph.compile(add_one, mode="fast")
    message = str(info.value)
    for mode in ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"):
        assert mode in message


def test_unknown_option_lists_the_known_ones():
    with pytest.raises(BytegraphError) as info:
        bytegraph.compile(add_one, backend="auto", options={"triton.cudagraph": True})
    message = str(info.value)
    assert "'triton.cudagraph'" in message
    assert "triton.cudagraphs" in message and "max_autotune" in message


def test_option_with_a_wrong_type_is_an_error():
    with pytest.raises(BytegraphError, match="max_autotune"):
        bytegraph.compile(add_one, backend="auto", options={"max_autotune": "yes"})


def test_eager_backend_takes_no_options():
    with pytest.raises(BytegraphError, match="takes no options"):
        bytegraph.compile(add_one, backend="eager", options={"triton.cudagraphs": True})


def test_mode_with_the_eager_backend_gives_one_notice(fresh_notices):
    with pytest.warns(UserWarning, match="has no effect with backend='eager'"):
        first = bytegraph.compile(add_one, backend="eager", mode="reduce-overhead")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = bytegraph.compile(add_one, backend="eager", mode="reduce-overhead")
    x = torch.randn(4)
    torch.testing.assert_close(first(x), add_one(x))
    torch.testing.assert_close(second(x), add_one(x))


def test_auto_backend_on_cpu_graphs_gives_one_notice(fresh_notices, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    fn = bytegraph.compile(add_one, backend="auto", mode="max-autotune")
    x = torch.randn(4)
    with pytest.warns(UserWarning, match="autotuning.*CUDA graphs.*have no effect here"):
        torch.testing.assert_close(fn(x), add_one(x))
    other = bytegraph.compile(lambda x: x - 1, backend="auto", mode="max-autotune")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.testing.assert_close(other(x), x - 1)


def test_default_mode_gives_no_notice(fresh_notices, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fn = bytegraph.compile(add_one, backend="auto", mode="default")
        x = torch.randn(4)
        torch.testing.assert_close(fn(x), add_one(x))


def test_modes_map_to_the_triton_options():
    assert registry.MODES["reduce-overhead"] == {"triton.cudagraphs": True}
    assert registry.MODES["max-autotune"] == {"max_autotune": True, "triton.cudagraphs": True}
    assert registry.MODES["max-autotune-no-cudagraphs"] == {"max_autotune": True}


def test_auto_backend_receives_the_options_of_the_mode(monkeypatch):
    seen = []

    def recording(gm, example_inputs, options=None):
        seen.append(options)
        return gm.forward

    monkeypatch.setitem(registry._BACKENDS, "auto", recording)
    fn = bytegraph.compile(add_one, backend="auto", mode="max-autotune-no-cudagraphs")
    fn(torch.randn(3))
    assert seen == [{"max_autotune": True}]


def test_custom_backend_gets_torch_compiles_keywords():
    seen = []

    def backend(gm, example_inputs, **kwargs):
        seen.append(kwargs)
        return gm.forward

    bytegraph.compile(add_one, backend=backend, mode="reduce-overhead")(torch.randn(3))
    bytegraph.compile(add_one, backend=backend, options={"anything": 1})(torch.randn(3))
    bytegraph.compile(add_one, backend=backend)(torch.randn(3))
    assert seen == [{"mode": "reduce-overhead"}, {"options": {"anything": 1}}, {}]


def test_inductor_options_are_checked_against_inductors_config():
    with pytest.raises(BytegraphError, match="did you mean 'max_autotune'"):
        bytegraph.compile(add_one, backend="inductor", options={"max_autotun": True})
    bytegraph.compile(add_one, backend="inductor", options={"max_autotune": False})


def test_disable_returns_the_function_itself():
    assert bytegraph.compile(add_one, disable=True) is add_one
    assert bytegraph.compile(disable=True)(add_one) is add_one


def test_disable_still_checks_the_arguments():
    with pytest.raises(BytegraphError):
        bytegraph.compile(add_one, disable=True, mode="turbo")
    with pytest.raises(ValueError, match="unknown backend"):
        bytegraph.compile(add_one, disable=True, backend="nope")


def test_config_disable_turns_compile_into_a_no_op():
    with bytegraph.config.patch(disable=True):
        assert bytegraph.compile(add_one) is add_one


def test_per_function_recompile_limit():
    counter = CompileCounter()
    fn = bytegraph.compile(lambda x, n: x + n, backend=counter, dynamic=False, recompile_limit=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in range(5):
            assert fn(torch.ones(1), n).item() == 1 + n
    assert counter.frame_count == 2


def test_name_is_kept_for_reports():
    fn = bytegraph.compile(add_one, name="my_step")
    assert bytegraph.state_of(fn).settings.name == "my_step"


def test_triton_backend_options_are_checked_by_its_options_class():
    with pytest.raises(BytegraphError, match="triton.cudagraphs"):
        bytegraph.compile(add_one, backend="triton", options={"cudagraphs": True})


def test_triton_backend_receives_the_options_of_the_mode():
    compiler = registry.configure_backend("triton", mode="max-autotune")
    assert compiler.keywords == {"options": {"max_autotune": True, "triton.cudagraphs": True}}
    assert compiler.func is registry.lookup_backend("triton")

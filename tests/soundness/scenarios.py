"""The table of guard-soundness scenarios (see ``harness.py`` for how each one runs).

Each entry mutates one thing a trace read: globals, closure cells, attributes of objects and
modules, specialised list/dict contents, identities, types, torch global state. ``recompiles`` is
what sound guards must cause: 1 when the trace specialised on the changed thing, 0 when it only read
it as a graph input (tensor contents). Ints changed once become symbolic on the next trace
(automatic dynamic): still exactly one recompile, and the next new value needs none
(``test_followups.py``).

Refused on purpose (a graph break or a fallback, never a guess; ``note`` says which): reading a
deleted global, slot descriptors, ``Tensor.grad``, an instance-level ``forward``. Not guarded
(documented policy): globals of code exec'd outside any module are constants of the trace, and a
name rebound in the ``builtins`` module itself (a global shadowing a builtin is guarded).
"""

from __future__ import annotations

from soundness.harness import NO_BREAK, Scenario

import bytegraph

S = Scenario


def _one_entry(compiled) -> None:
    """The entry guarding the dead object was dropped: only the new one is left."""
    assert len(bytegraph.cache_entries(compiled)) == 1


def _dead(ref) -> None:
    assert ref() is None, "a guard kept the replaced object alive"


GLOBALS = [
    S(
        "global_float_rebound",
        """
        SCALE = 2.0
        def fn(x):
            x = x + 1
            BREAK
            return x * SCALE
        """,
        "SCALE = 3.0",
        "SCALE = 2.0",
        reason="G['SCALE'] == 2.0",
    ),
    S(
        "global_int_rebound_static",
        """
        N = 2
        def fn(x):
            x = x + 1
            BREAK
            return x + N
        """,
        "N = 5",
        "N = 2",
        dynamic=False,
        reason="G['N'] == 2",
    ),
    S(
        "global_int_rebound_automatic_dynamic",
        """
        N = 2
        def fn(x):
            x = x + 1
            BREAK
            return x + N
        """,
        "N = 5",
        "N = 2",
        reason="G['N'] == 2",
    ),
    S(
        "global_int_used_as_size",
        """
        N = 3
        def fn(x):
            x = x + 1
            BREAK
            return x.new_ones(N) * x.sum()
        """,
        "N = 4",
        "N = 3",
        dynamic=False,
    ),
    S(
        "global_str_selects_branch",
        """
        MODE = "relu"
        def fn(x):
            x = x - 1
            BREAK
            return torch.relu(x) if MODE == "relu" else torch.tanh(x)
        """,
        "MODE = 'tanh'",
        "MODE = 'relu'",
        reason="G['MODE'] == 'relu'",
    ),
    S(
        "global_str_names_torch_function",
        """
        NAME = "sin"
        def fn(x):
            x = x * 2
            BREAK
            return getattr(torch, NAME)(x)
        """,
        "NAME = 'cos'",
        "NAME = 'sin'",
    ),
    S(
        "global_bool_flag",
        """
        FLAG = True
        def fn(x):
            x = x * 2
            BREAK
            if FLAG:
                return x + 1
            return x - 1
        """,
        "FLAG = False",
        "FLAG = True",
    ),
    S(
        "global_float_becomes_int",
        """
        SCALE = 2.0
        def fn(x):
            x = x.long()
            BREAK
            return x * SCALE
        """,
        "SCALE = 2",
        "SCALE = 2.0",
        reason="type(G['SCALE']) is ___float",
    ),
    S(
        "global_none_becomes_tensor",
        """
        BIAS = None
        def fn(x):
            x = x * 2
            BREAK
            return x if BIAS is None else x + BIAS
        """,
        "BIAS = torch.ones(3)",
        "BIAS = None",
    ),
    S(
        "global_tensor_rebound_same_metadata",
        """
        W = torch.ones(3)
        def fn(x):
            x = x * 2
            BREAK
            return x * W
        """,
        "W = torch.full((3,), 5.0)",
        "W = torch.ones(3)",
        recompiles=0,
        note="a tensor is a graph input: new contents need no recompile",
    ),
    S(
        "global_tensor_mutated_in_place",
        """
        W = torch.ones(3)
        def fn(x):
            x = x * 2
            BREAK
            return x * W
        """,
        "W.mul_(4.0)",
        "W.fill_(1.0)",
        recompiles=0,
    ),
    S(
        "global_tensor_shape_changes",
        """
        W = torch.ones(3)
        def fn(x):
            x = x * 2
            BREAK
            return x.sum() + W.sum() * W.shape[0]
        """,
        "W = torch.ones(5)",
        "W = torch.ones(3)",
    ),
    S(
        "global_tensor_dtype_changes",
        """
        W = torch.ones(3)
        def fn(x):
            x = x * 2
            BREAK
            return x + W
        """,
        "W = torch.ones(3, dtype=torch.float64)",
        "W = torch.ones(3)",
    ),
    S(
        "global_tensor_requires_grad_changes",
        """
        W = torch.ones(3)
        def fn(x):
            x = x * 2
            BREAK
            return (x * W).requires_grad, x * W
        """,
        "W.requires_grad_(True)",
        "W.requires_grad_(False)",
    ),
    S(
        "global_tensor_alias_broken",
        """
        A = torch.ones(3)
        B = A
        def fn(x):
            x = x * 2
            BREAK
            return x + A + B * 2
        """,
        "B = torch.full((3,), 5.0)",
        "B = A",
        reason="G['B'] is G['A']",
    ),
    S(
        "global_nan_rebound",
        """
        SCALE = float("nan")
        def fn(x):
            x = x + 1
            BREAK
            return x * 0 if SCALE != SCALE else x * SCALE
        """,
        "SCALE = 1.5",
        "SCALE = float('nan')",
        dynamic=False,
    ),
    S(
        "global_int_used_as_dim",
        """
        DIM = 0
        def fn(x):
            x = x.reshape(3, 1) + 1
            BREAK
            return x.sum(DIM)
        """,
        "DIM = 1",
        "DIM = 0",
    ),
    S(
        "global_tensor_grad_assigned",
        """
        W = torch.ones(3, requires_grad=True)
        def fn(x):
            x = x + 1
            BREAK
            return x if W.grad is None else x + W.grad
        """,
        "W.grad = torch.full((3,), 4.0)",
        "W.grad = None",
        recompiles=1,
        note="Tensor.grad of an input is read through its source and guarded (None, or the "
        "tensor's match): assigning a gradient recompiles once; None again reuses the first",
    ),
    S(
        "global_function_freed_and_id_reused",
        """
        import gc
        ACT = lambda t: t + 1
        def make():
            return lambda t: t * 7
        KEEP = []
        def replace_act():
            global ACT
            import weakref
            old, alive = id(ACT), weakref.ref(ACT)
            ACT = None
            gc.collect()
            assert alive() is None, "something (a guard?) keeps the replaced function alive"
            for _ in range(10_000):
                new = make()
                if id(new) == old:
                    ACT = new
                    return
                KEEP.append(new)
            # The allocator did not hand the freed address out again (it depends on what else the
            # process allocated): the object is gone, checked above; the new one still must not
            # match the old entry, which the scenario's check verifies either way.
            ACT = new
        def fn(x):
            x = x + 1
            BREAK
            return ACT(x)
        """,
        "replace_act()",
        None,
        timings=NO_BREAK,
        note="the old entry is dropped when ACT dies; the new function must not match it by id",
        check=lambda ns, compiled: _one_entry(compiled),
    ),
    S(
        "global_module_freed",
        """
        import gc
        import weakref
        class Net(torch.nn.Module):
            def forward(self, x):
                return x * 2
        NET = Net()
        def fn(x):
            x = x + 1
            BREAK
            return NET(x)
        """,
        "OLD = weakref.ref(NET); NET = Net(); gc.collect()",
        None,
        recompiles=0,
        timings=NO_BREAK,
        check=lambda ns, compiled: _dead(ns["OLD"]),
        note="modules are guarded by structure (MODULE_TREE), not kept alive: an equal new module "
        "reuses the entry",
    ),
    S(
        "global_function_rebound",
        """
        def double(x):
            return x * 2
        def negate(x):
            return -x
        ACT = double
        def fn(x):
            x = x + 1
            BREAK
            return ACT(x)
        """,
        "ACT = negate",
        "ACT = double",
        reason="G['ACT'].__code__ is",  # a function is guarded by what it is made of
    ),
    S(
        "global_torch_function_rebound",
        """
        ACT = torch.relu
        def fn(x):
            x = x - 1
            BREAK
            return ACT(x)
        """,
        "ACT = torch.tanh",
        "ACT = torch.relu",
    ),
    S(
        "global_dtype_rebound",
        """
        DT = torch.float32
        def fn(x):
            x = x + 1
            BREAK
            return x.to(DT)
        """,
        "DT = torch.float64",
        "DT = torch.float32",
    ),
    S(
        "global_deleted",
        """
        SCALE = 2.0
        def fn(x):
            x = x + 1
            BREAK
            return x * SCALE
        """,
        "del SCALE",
        "SCALE = 2.0",
        fallback=True,
        restore_traces=1,
        note="eager raises NameError; the retrace refuses (name_error), fn runs in Python; the "
        "entry made without SCALE guards none (the read is after the break) and, the newest, "
        "serves SCALE = 2.0 again: its resume function is traced then",
    ),
    S(
        "builtin_shadowed_by_global",
        """
        def LEN(s):
            return 10
        def fn(x):
            x = x + 1
            BREAK
            return x * len([1, 2])
        """,
        "len = LEN",
        "globals().pop('len', None)",
        reason="'len'",
    ),
    S(
        "global_tuple_rebound",
        """
        SHAPE = (3, 1)
        def fn(x):
            x = x + 1
            BREAK
            return x.reshape(SHAPE)
        """,
        "SHAPE = (1, 3)",
        "SHAPE = (3, 1)",
        dynamic=False,
    ),
    S(
        "global_python_module_attribute",
        """
        import types
        CFG = types.ModuleType("cfg")
        CFG.scale = 2.0
        def fn(x):
            x = x + 1
            BREAK
            return x * CFG.scale
        """,
        "CFG.scale = 3.0",
        "CFG.scale = 2.0",
        reason="G['CFG'].scale == 2.0",
    ),
    S(
        "global_python_module_rebound",
        """
        import math
        import types
        FAKE = types.ModuleType("fake_math")
        FAKE.pi = 3.0
        M = math
        def fn(x):
            x = x + 1
            BREAK
            return x * M.pi
        """,
        "M = FAKE",
        "M = math",
    ),
]

CONTAINERS = [
    S(
        "global_list_item_mutated",
        """
        LST = [1.0, 2.0]
        def fn(x):
            x = x + 1
            BREAK
            return x * LST[0]
        """,
        "LST[0] = 5.0",
        "LST[0] = 1.0",
        reason="G['LST'][0] == 1.0",
    ),
    S(
        "global_list_appended",
        """
        LST = [1.0, 2.0]
        def fn(x):
            x = x + 1
            BREAK
            return x * sum(LST)
        """,
        "LST.append(3.0)",
        "LST[:] = [1.0, 2.0]",
        reason="len(G['LST']) == 2",
    ),
    S(
        "global_list_item_changes_type",
        """
        LST = [1.0, 2.0]
        def fn(x):
            x = x + 1
            BREAK
            return x * LST[1]
        """,
        "LST[1] = 2",
        "LST[1] = 2.0",
    ),
    S(
        "global_list_membership",
        """
        LST = [1, 2]
        def fn(x):
            x = x + 1
            BREAK
            return x + 1 if 3 in LST else x - 1
        """,
        "LST[1] = 3",
        "LST[1] = 2",
        dynamic=False,
    ),
    S(
        "global_list_tensor_replaced",
        """
        LST = [torch.ones(3)]
        def fn(x):
            x = x + 1
            BREAK
            return x.sum() + LST[0].sum() * LST[0].shape[0]
        """,
        "LST[0] = torch.ones(4)",
        "LST[0] = torch.ones(3)",
    ),
    S(
        "global_dict_value_mutated",
        """
        D = {"a": 1.0, "b": 2.0}
        def fn(x):
            x = x + 1
            BREAK
            return x * D["a"]
        """,
        "D['a'] = 7.0",
        "D['a'] = 1.0",
        reason="G['D']['a'] == 1.0",
    ),
    S(
        "global_dict_key_added",
        """
        D = {"a": 1.0}
        def fn(x):
            x = x + 1
            BREAK
            for v in D.values():
                x = x * v
            return x
        """,
        "D['b'] = 3.0",
        "D.pop('b', None)",
    ),
    S(
        "global_dict_key_removed",
        """
        D = {"a": 1.0, "b": 3.0}
        def fn(x):
            x = x + 1
            BREAK
            return x * len(D)
        """,
        "del D['b']",
        "D['b'] = 3.0",
    ),
    S(
        "global_dict_reordered",
        """
        D = {"a": 1.0, "b": 3.0}
        def fn(x):
            x = x + 1
            BREAK
            return [x * v for v in D.values()]
        """,
        "D.pop('a'); D['a'] = 1.0",
        "D.pop('b'); D['b'] = 3.0",
    ),
    S(
        "global_dict_membership",
        """
        D = {"a": 1.0}
        def fn(x):
            x = x + 1
            BREAK
            return x * 2 if "b" in D else x
        """,
        "D['b'] = 0.0",
        "D.pop('b', None)",
    ),
    S(
        "global_nested_dict_list",
        """
        CFG = {"layers": [1.0, 2.0]}
        def fn(x):
            x = x + 1
            BREAK
            return x * CFG["layers"][1]
        """,
        "CFG['layers'][1] = 9.0",
        "CFG['layers'][1] = 2.0",
    ),
    S(
        "global_list_in_tuple_mutated",
        """
        T = ([1.0], 2.0)
        def fn(x):
            x = x + 1
            BREAK
            return x * T[0][0] + T[1]
        """,
        "T[0][0] = 4.0",
        "T[0][0] = 1.0",
    ),
    S(
        "global_set_mutated",
        """
        FLAGS = {"a", "b"}
        def fn(x):
            x = x + 1
            BREAK
            return x * 2 if "c" in FLAGS else x
        """,
        "FLAGS.add('c')",
        "FLAGS.discard('c')",
    ),
    S(
        "global_ordered_dict_mutated",
        """
        import collections
        OD = collections.OrderedDict(a=1.0)
        def fn(x):
            x = x + 1
            BREAK
            return x * len(OD)
        """,
        "OD['b'] = 2.0",
        "OD.pop('b', None)",
    ),
    S(
        "global_dict_with_tuple_keys_mutated",
        """
        D = {(0, 1): 2.0}
        def fn(x):
            x = x + 1
            BREAK
            return x * D[(0, 1)]
        """,
        "D[(0, 1)] = 5.0",
        "D[(0, 1)] = 2.0",
    ),
    S(
        "global_list_subclass_mutated",
        """
        class MyList(list):
            pass
        LST = MyList([1.0, 2.0])
        def fn(x):
            x = x + 1
            BREAK
            return x * len(LST)
        """,
        "LST.append(3.0)",
        "LST[:] = [1.0, 2.0]",
    ),
]

OBJECTS = [
    S(
        "object_attribute_mutated",
        """
        class Config:
            def __init__(self):
                self.scale = 2.0
        OBJ = Config()
        def fn(x):
            x = x + 1
            BREAK
            return x * OBJ.scale
        """,
        "OBJ.scale = 3.0",
        "OBJ.scale = 2.0",
        reason="G['OBJ'].scale == 2.0",
    ),
    S(
        "object_instance_attribute_shadows_class",
        """
        class Config:
            scale = 2.0
        OBJ = Config()
        def fn(x):
            x = x + 1
            BREAK
            return x * OBJ.scale
        """,
        "OBJ.scale = 3.0",
        "vars(OBJ).pop('scale', None)",
    ),
    S(
        "class_attribute_mutated_read_through_instance",
        """
        class Config:
            scale = 2.0
        OBJ = Config()
        def fn(x):
            x = x + 1
            BREAK
            return x * OBJ.scale
        """,
        "Config.scale = 5.0",
        "Config.scale = 2.0",
    ),
    S(
        "class_attribute_mutated_read_through_class",
        """
        class Config:
            scale = 2.0
        def fn(x):
            x = x + 1
            BREAK
            return x * Config.scale
        """,
        "Config.scale = 5.0",
        "Config.scale = 2.0",
    ),
    S(
        "object_tensor_attribute_reshaped",
        """
        class Holder:
            def __init__(self):
                self.w = torch.ones(3)
        OBJ = Holder()
        def fn(x):
            x = x + 1
            BREAK
            return x.sum() * OBJ.w.shape[0] + OBJ.w.sum()
        """,
        "OBJ.w = torch.ones(6)",
        "OBJ.w = torch.ones(3)",
    ),
    S(
        "object_in_list_attribute_mutated",
        """
        class Config:
            def __init__(self, scale):
                self.scale = scale
        OBJS = [Config(2.0), Config(3.0)]
        def fn(x):
            x = x + 1
            BREAK
            return x * OBJS[1].scale
        """,
        "OBJS[1].scale = 4.0",
        "OBJS[1].scale = 3.0",
    ),
    S(
        "object_in_list_swapped",
        """
        class Config:
            def __init__(self, scale):
                self.scale = scale
        OBJS = [Config(2.0)]
        KEEP = OBJS[0]
        def fn(x):
            x = x + 1
            BREAK
            return x * OBJS[0].scale
        """,
        "OBJS[0] = Config(6.0)",
        "OBJS[0] = KEEP",
    ),
    S(
        "object_list_attribute_mutated",
        """
        class Config:
            def __init__(self):
                self.scales = [1.0, 2.0]
        OBJ = Config()
        def fn(x):
            x = x + 1
            BREAK
            return x * OBJ.scales[1]
        """,
        "OBJ.scales[1] = 8.0",
        "OBJ.scales[1] = 2.0",
    ),
    S(
        "object_class_swapped",
        """
        class A:
            def f(self, x):
                return x + 1
        class B:
            def f(self, x):
                return x - 1
        OBJ = A()
        def fn(x):
            x = x * 2
            BREAK
            return OBJ.f(x)
        """,
        "OBJ.__class__ = B",
        "OBJ.__class__ = A",
    ),
    S(
        "method_monkeypatched_on_class",
        """
        class Model:
            def f(self, x):
                return x + 1
        ORIGINAL = Model.f
        def PATCH(self, x):
            return x * 10
        OBJ = Model()
        def fn(x):
            x = x * 2
            BREAK
            return OBJ.f(x)
        """,
        "Model.f = PATCH",
        "Model.f = ORIGINAL",
    ),
    S(
        "method_monkeypatched_on_instance",
        """
        class Model:
            def f(self, x):
                return x + 1
        def PATCH(x):
            return x * 10
        OBJ = Model()
        def fn(x):
            x = x * 2
            BREAK
            return OBJ.f(x)
        """,
        "OBJ.f = PATCH",
        "vars(OBJ).pop('f', None)",
    ),
    S(
        "property_replaced_on_class",
        """
        class Model:
            @property
            def scale(self):
                return 2.0
        ORIGINAL = Model.scale
        PATCH = property(lambda self: 7.0)
        OBJ = Model()
        def fn(x):
            x = x * 2
            BREAK
            return x * OBJ.scale
        """,
        "Model.scale = PATCH",
        "Model.scale = ORIGINAL",
    ),
    S(
        "property_reads_mutated_attribute",
        """
        class Model:
            def __init__(self):
                self._scale = 2.0
            @property
            def scale(self):
                return self._scale
        OBJ = Model()
        def fn(x):
            x = x * 2
            BREAK
            return x * OBJ.scale
        """,
        "OBJ._scale = 7.0",
        "OBJ._scale = 2.0",
    ),
    S(
        "staticmethod_replaced_on_class",
        """
        class Model:
            @staticmethod
            def act(x):
                return x + 1
        ORIGINAL = Model.__dict__["act"]
        PATCH = staticmethod(lambda x: x * 10)
        OBJ = Model()
        def fn(x):
            x = x * 2
            BREAK
            return OBJ.act(x)
        """,
        "Model.act = PATCH",
        "Model.act = ORIGINAL",
    ),
    S(
        "classmethod_reads_mutated_class_attribute",
        """
        class Model:
            factor = 2.0
            @classmethod
            def scale(cls, x):
                return x * cls.factor
        OBJ = Model()
        def fn(x):
            x = x * 2
            BREAK
            return OBJ.scale(x)
        """,
        "Model.factor = 5.0",
        "Model.factor = 2.0",
    ),
    S(
        "function_replaced_on_class_called_through_class",
        """
        class Ops:
            def act(self, x):
                return x + 1
        ORIGINAL = Ops.act
        def PATCH(self, x):
            return x * 10
        OBJ = Ops()
        def fn(x):
            x = x * 2
            BREAK
            return Ops.act(OBJ, x)
        """,
        "Ops.act = PATCH",
        "Ops.act = ORIGINAL",
    ),
    S(
        "bound_method_default_rebound",
        """
        class Model:
            def f(self, x, k=2.0):
                return x * k
        M = Model().f
        def fn(x):
            x = x + 1
            BREAK
            return M(x)
        """,
        "Model.f.__defaults__ = (3.0,)",
        "Model.f.__defaults__ = (2.0,)",
    ),
    S(
        "bound_method_global_self_mutated",
        """
        class Model:
            def __init__(self):
                self.k = 2.0
            def f(self, x):
                return x * self.k
        M = Model().f
        def fn(x):
            x = x + 1
            BREAK
            return M(x)
        """,
        "M.__self__.k = 3.0",
        "M.__self__.k = 2.0",
    ),
    S(
        "hasattr_on_object",
        """
        class Config:
            pass
        OBJ = Config()
        def fn(x):
            x = x + 1
            BREAK
            return x * 2 if hasattr(OBJ, "extra") else x
        """,
        "OBJ.extra = 1",
        "vars(OBJ).pop('extra', None)",
    ),
    S(
        "hasattr_on_module",
        """
        import types
        CFG = types.ModuleType("cfg")
        def fn(x):
            x = x + 1
            BREAK
            return x * 2 if hasattr(CFG, "extra") else x
        """,
        "CFG.extra = 1",
        "vars(CFG).pop('extra', None)",
    ),
    S(
        "hasattr_on_class",
        """
        class Config:
            pass
        def fn(x):
            x = x + 1
            BREAK
            return x * 2 if hasattr(Config, "extra") else x
        """,
        "Config.extra = 1",
        "vars(Config).get('extra') and delattr(Config, 'extra')",
    ),
    S(
        "getattr_with_default_on_module",
        """
        import types
        CFG = types.ModuleType("cfg")
        CFG.scale = 2.0
        def fn(x):
            x = x + 1
            BREAK
            return x * getattr(CFG, "scale", 1.0)
        """,
        "vars(CFG).pop('scale', None)",
        "CFG.scale = 2.0",
    ),
    S(
        "getattr_on_class",
        """
        class Config:
            scale = 2.0
        def fn(x):
            x = x + 1
            BREAK
            return x * getattr(Config, "scale")
        """,
        "Config.scale = 3.0",
        "Config.scale = 2.0",
    ),
    S(
        "slots_attribute_mutated",
        """
        class Point:
            __slots__ = ("k",)
            def __init__(self):
                self.k = 2.0
        OBJ = Point()
        def fn(x):
            x = x + 1
            BREAK
            return x * OBJ.k
        """,
        "OBJ.k = 3.0",
        "OBJ.k = 2.0",
        note="slot descriptors are refused: a graph break at OBJ.k, whose value reaches the resume "
        "function as an argument (guarded there)",
    ),
    S(
        "object_replaced_by_equal_object",
        """
        class Config:
            def __init__(self):
                self.scale = 2.0
        OBJ = Config()
        def fn(x):
            x = x + 1
            BREAK
            return x * OBJ.scale
        """,
        "OBJ = Config()",
        None,
        recompiles=0,
        timings=NO_BREAK,
        note="plain objects are guarded by type and the attributes read, not by identity",
    ),
    S(
        "identity_comparison_with_is",
        """
        class Token:
            pass
        A, B = Token(), Token()
        MODE = A
        def fn(x):
            x = x + 1
            BREAK
            return x * 2 if MODE is A else x * 3
        """,
        "MODE = B",
        "MODE = A",
    ),
    S(
        "enum_global_rebound",
        """
        import enum
        class Color(enum.Enum):
            RED = 1
            BLUE = 2
        C = Color.RED
        def fn(x):
            x = x + 1
            BREAK
            return x * 2 if C is Color.RED else x * 3
        """,
        "C = Color.BLUE",
        "C = Color.RED",
    ),
    S(
        "partial_keywords_mutated",
        """
        import functools
        def scaled(x, scale):
            return x * scale
        P = functools.partial(scaled, scale=2.0)
        def fn(x):
            x = x + 1
            BREAK
            return P(x)
        """,
        "P.keywords['scale'] = 3.0",
        "P.keywords['scale'] = 2.0",
    ),
]

CLOSURES = [
    S(
        "closure_float_changed",
        """
        def make():
            k = 2.0
            def fn(x):
                x = x + 1
                BREAK
                return x * k
            def set_k(v):
                nonlocal k
                k = v
            return fn, set_k
        fn, set_k = make()
        """,
        "set_k(3.0)",
        "set_k(2.0)",
        reason="C['k'].cell_contents == 2.0",
    ),
    S(
        "closure_function_changed",
        """
        def make():
            act = torch.relu
            def fn(x):
                x = x - 1
                BREAK
                return act(x)
            def set_act(v):
                nonlocal act
                act = v
            return fn, set_act
        fn, set_act = make()
        """,
        "set_act(torch.sigmoid)",
        "set_act(torch.relu)",
    ),
    S(
        "closure_list_contents_mutated",
        """
        def make():
            scales = [1.0, 2.0]
            def fn(x):
                x = x + 1
                BREAK
                return x * scales[1]
            return fn, scales
        fn, SCALES = make()
        """,
        "SCALES[1] = 5.0",
        "SCALES[1] = 2.0",
    ),
    S(
        "closure_tensor_reshaped",
        """
        def make():
            w = torch.ones(3)
            def fn(x):
                x = x + 1
                BREAK
                return x.sum() + w.sum() * w.shape[0]
            def set_w(v):
                nonlocal w
                w = v
            return fn, set_w
        fn, set_w = make()
        """,
        "set_w(torch.ones(4))",
        "set_w(torch.ones(3))",
    ),
    S(
        "closure_of_inlined_helper_changed",
        """
        def make():
            k = 2.0
            def scale(x):
                return x * k
            def set_k(v):
                nonlocal k
                k = v
            return scale, set_k
        scale, set_k = make()
        def fn(x):
            x = x + 1
            BREAK
            return scale(x)
        """,
        "set_k(3.0)",
        "set_k(2.0)",
    ),
    S(
        "closure_object_attribute_mutated",
        """
        class Config:
            scale = 2.0
        def make():
            cfg = Config()
            def fn(x):
                x = x + 1
                BREAK
                return x * cfg.scale
            return fn, cfg
        fn, CFG = make()
        """,
        "CFG.scale = 3.0",
        "CFG.scale = 2.0",
    ),
    S(
        "nested_closure_two_levels",
        """
        def outer():
            k = 2.0
            def middle():
                def fn(x):
                    x = x + 1
                    BREAK
                    return x * k
                return fn
            def set_k(v):
                nonlocal k
                k = v
            return middle(), set_k
        fn, set_k = outer()
        """,
        "set_k(4.0)",
        "set_k(2.0)",
    ),
]

DEFAULTS = [
    S(
        "default_argument_contents_mutated",
        """
        def scaled(x, opts={"scale": 2.0}):
            return x * opts["scale"]
        def fn(x):
            x = x + 1
            BREAK
            return scaled(x)
        """,
        "scaled.__defaults__[0]['scale'] = 5.0",
        "scaled.__defaults__[0]['scale'] = 2.0",
    ),
    S(
        "default_argument_rebound",
        """
        def scaled(x, scale=2.0):
            return x * scale
        def fn(x):
            x = x + 1
            BREAK
            return scaled(x)
        """,
        "scaled.__defaults__ = (5.0,)",
        "scaled.__defaults__ = (2.0,)",
    ),
    S(
        "kwonly_default_rebound",
        """
        def scaled(x, *, scale=2.0):
            return x * scale
        def fn(x):
            x = x + 1
            BREAK
            return scaled(x)
        """,
        "scaled.__kwdefaults__ = {'scale': 5.0}",
        "scaled.__kwdefaults__ = {'scale': 2.0}",
    ),
    S(
        "default_argument_of_method_rebound",
        """
        class Model:
            def f(self, x, k=2.0):
                return x * k
        OBJ = Model()
        def fn(x):
            x = x + 1
            BREAK
            return OBJ.f(x)
        """,
        "Model.f.__defaults__ = (3.0,)",
        "Model.f.__defaults__ = (2.0,)",
    ),
    S(
        "default_argument_list_mutated",
        """
        def scaled(x, scales=[2.0]):
            return x * scales[0]
        def fn(x):
            x = x + 1
            BREAK
            return scaled(x)
        """,
        "scaled.__defaults__[0][0] = 5.0",
        "scaled.__defaults__[0][0] = 2.0",
    ),
    S(
        "inlined_function_code_replaced",
        """
        def act(x):
            return x + 1
        ORIGINAL = act.__code__
        PATCH = (lambda x: x * 10).__code__
        def fn(x):
            x = x * 2
            BREAK
            return act(x)
        """,
        "act.__code__ = PATCH",
        "act.__code__ = ORIGINAL",
    ),
]

OTHER_MODULE = [
    S(
        # The guards read the globals dict the trace read, not whatever sys.modules names now: the
        # compiled code still calls the old module's function, which reads the old dict.
        "other_module_replaced_in_sys_modules_then_old_global_rebound",
        """
        from_helper = helper.scale
        def fn(x):
            x = x + 1
            BREAK
            return from_helper(x)
        """,
        "import sys, types\n"
        "copy = types.ModuleType(helper.__name__)\n"
        "copy.__dict__.update(helper.__dict__)\n"
        "sys.modules[helper.__name__] = copy\n"
        "helper.SCALE = 3.0",
        "import sys\nsys.modules[helper.__name__] = helper\nhelper.SCALE = 2.0",
        helper="""
        SCALE = 2.0
        def scale(x):
            return x * SCALE
        """,
    ),
    S(
        "other_module_global_rebound",
        """
        def fn(x):
            x = x + 1
            BREAK
            return helper.scale(x)
        """,
        "helper.SCALE = 3.0",
        "helper.SCALE = 2.0",
        helper="""
        SCALE = 2.0
        def scale(x):
            return x * SCALE
        """,
    ),
    S(
        "other_module_function_rebound",
        """
        from_helper = helper.apply
        def fn(x):
            x = x + 1
            BREAK
            return from_helper(x)
        """,
        "helper.act = helper.negate",
        "helper.act = helper.double",
        helper="""
        def double(x):
            return x * 2
        def negate(x):
            return -x
        act = double
        def apply(x):
            return act(x)
        """,
    ),
    S(
        "other_module_list_mutated",
        """
        from_helper = helper.scale
        def fn(x):
            x = x + 1
            BREAK
            return from_helper(x)
        """,
        "helper.SCALES[0] = 6.0",
        "helper.SCALES[0] = 2.0",
        helper="""
        SCALES = [2.0]
        def scale(x):
            return x * SCALES[0]
        """,
    ),
    S(
        "other_module_builtin_shadowed",
        """
        from_helper = helper.count
        def fn(x):
            x = x + 1
            BREAK
            return from_helper(x)
        """,
        "helper.len = helper.LEN",
        "vars(helper).pop('len', None)",
        helper="""
        def LEN(s):
            return 10
        def count(x):
            return x * len([1, 2])
        """,
    ),
    S(
        "other_module_attribute_of_module_global",
        """
        def fn(x):
            x = x + 1
            BREAK
            return x * helper.CFG.scale
        """,
        "helper.CFG.scale = 3.0",
        "helper.CFG.scale = 2.0",
        helper="""
        import types
        CFG = types.SimpleNamespace(scale=2.0)
        """,
    ),
]

MODULES = [
    S(
        "nn_submodule_swapped",
        """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.act = torch.nn.ReLU()
            def forward(self, x):
                return self.act(x)
        NET = Net()
        RELU = NET.act
        def fn(x):
            x = x - 1
            BREAK
            return NET(x)
        """,
        "NET.act = torch.nn.Tanh()",
        "NET.act = RELU",
    ),
    S(
        "nn_float_attribute_changed",
        """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.scale = 2.0
            def forward(self, x):
                return x * self.scale
        NET = Net()
        def fn(x):
            x = x - 1
            BREAK
            return NET(x)
        """,
        "NET.scale = 3.0",
        "NET.scale = 2.0",
    ),
    S(
        "nn_training_flag_changed",
        """
        class Net(torch.nn.Module):
            def forward(self, x):
                return x * 2 if self.training else x
        NET = Net()
        def fn(x):
            x = x - 1
            BREAK
            return NET(x)
        """,
        "NET.eval()",
        "NET.train()",
    ),
    S(
        "nn_parameter_updated_in_place",
        """
        torch.manual_seed(0)
        LIN = torch.nn.Linear(3, 2)
        def fn(x):
            x = x - 1
            BREAK
            with torch.no_grad():
                return LIN(x)
        """,
        "LIN.weight.data.mul_(2.0)",
        "LIN.weight.data.div_(2.0)",
        recompiles=0,
    ),
    S(
        "nn_forward_hook_registered",
        """
        LIN = torch.nn.Linear(3, 3)
        HANDLES = []
        def double_output(module, args, output):
            return output * 2
        def fn(x):
            x = x - 1
            BREAK
            with torch.no_grad():
                return LIN(x)
        """,
        "HANDLES.append(LIN.register_forward_hook(double_output))",
        "while HANDLES: HANDLES.pop().remove()",
    ),
    S(
        "nn_forward_monkeypatched_on_instance",
        """
        class Net(torch.nn.Module):
            def forward(self, x):
                return x + 1
        def PATCH(x):
            return x * 10
        NET = Net()
        def fn(x):
            x = x - 1
            BREAK
            return NET(x)
        """,
        "NET.forward = PATCH",
        "vars(NET).pop('forward', None)",
        recompiles=2,
        note="a forward set on the instance is refused by the module tracer: the recompile breaks "
        "at the call (run in Python) and its resume function is traced too",
    ),
    S(
        "nn_buffer_reshaped",
        """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("b", torch.ones(3))
            def forward(self, x):
                return x.sum() + self.b.sum() * self.b.shape[0]
        NET = Net()
        def fn(x):
            x = x - 1
            BREAK
            return NET(x)
        """,
        "NET.b = torch.ones(5)",
        "NET.b = torch.ones(3)",
    ),
    S(
        "nn_module_in_list_swapped",
        """
        ACTS = [torch.nn.ReLU(), torch.nn.Tanh()]
        RELU = ACTS[0]
        def fn(x):
            x = x - 1
            BREAK
            return ACTS[0](x)
        """,
        "ACTS[0] = torch.nn.Sigmoid()",
        "ACTS[0] = RELU",
    ),
]

TORCH_STATE = [
    S(
        "grad_mode_disabled",
        """
        W = torch.ones(3, requires_grad=True)
        def fn(x):
            x = x + 1
            BREAK
            y = x * W
            return y.requires_grad, y.detach()
        """,
        "torch.set_grad_enabled(False)",
        "torch.set_grad_enabled(True)",
        reason="___is_grad_enabled() is True",
    ),
    S(
        "default_dtype_changed",
        """
        def fn(x):
            x = x + 1
            BREAK
            return torch.ones(3) + x.sum()
        """,
        "torch.set_default_dtype(torch.float64)",
        "torch.set_default_dtype(torch.float32)",
    ),
    S(
        "default_device_decides_branch",
        """
        def fn(x):
            x = x + 1
            BREAK
            return x * 2 if torch.ones(1).device.type == "cpu" else x * 3
        """,
        "torch.set_default_device('meta')",
        "torch.set_default_device(None)",
        timings=("in_break",),
        note="x itself would be made on 'meta' at the other timings",
    ),
    S(
        "default_device_changed",
        """
        def fn(x):
            x = x + 1
            BREAK
            return torch.ones(3) * 2
        """,
        "torch.set_default_device('meta')",
        "torch.set_default_device(None)",
    ),
    S(
        "deterministic_algorithms_enabled",
        """
        def fn(x):
            x = x + 1
            BREAK
            return x * 2
        """,
        "torch.use_deterministic_algorithms(True)",
        "torch.use_deterministic_algorithms(False)",
    ),
    S(
        "autocast_enabled",
        """
        def fn(x):
            x = x.reshape(3, 1)
            BREAK
            return x @ x.t()
        """,
        "torch.set_autocast_enabled('cpu', True)",
        "torch.set_autocast_enabled('cpu', False)",
    ),
    S(
        "backend_flag_read_through_its_module",
        """
        def fn(x):
            x = x + 1
            BREAK
            return x * 2 if torch.backends.cuda.matmul.allow_tf32 else x * 3
        """,
        "torch.backends.cuda.matmul.allow_tf32 = True",
        "torch.backends.cuda.matmul.allow_tf32 = False",
        reason="_get_cublas_allow_tf32() == False",
        note="cuBLASModule.__getattr__ calls torch._C._get_cublas_allow_tf32(): a call on "
        "constants whose folded result the guards ask again (a stale branch before)",
    ),
    S(
        "backend_flags_module_passed_as_an_argument",
        """
        def make_args():
            return (torch.arange(3.0), torch.backends.cuda.matmul)
        def fn(x, m):
            x = x + 1
            BREAK
            return x * 2 if m.allow_tf32 else x * 3
        """,
        "torch.backends.cuda.matmul.allow_tf32 = True",
        "torch.backends.cuda.matmul.allow_tf32 = False",
        reason="_get_cublas_allow_tf32() == False",
    ),
    S(
        "thread_count_read_by_a_torch_call",
        """
        torch.set_num_threads(1)
        def fn(x):
            x = x + 1
            BREAK
            return x * torch.get_num_threads()
        """,
        "torch.set_num_threads(3)",
        "torch.set_num_threads(1)",
        reason="get_num_threads() == ",
    ),
    S(
        "argument_requires_grad_changes",
        """
        RG = False
        def make_args():
            return (torch.arange(3.0, requires_grad=RG),)
        def fn(x):
            y = x * 2
            BREAK
            return y.requires_grad, y.detach()
        """,
        "RG = True",
        "RG = False",
        timings=NO_BREAK,
        note="the argument itself changes, so there is no in-break variant",
    ),
]

SCENARIOS: list[Scenario] = (
    GLOBALS + CONTAINERS + OBJECTS + CLOSURES + DEFAULTS + OTHER_MODULE + MODULES + TORCH_STATE
)

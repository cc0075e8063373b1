"""nn.Module code as training code writes it, compiled and compared with eager call by call:
modules that change their own state in forward, hooks, member iteration and container indexing,
parametrizations, normalisation layers in train and eval, recurrent layers, embeddings, and
whole training steps (forward, backward, optimizer step, gradient clipping, zero_grad). Each
case compares results, the modules, optimizers and tensors after every call, and the graph and
break counts (``difftest.check``)."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from difftest import assert_same, assert_state_same, break_count, check, compile_counted
from torch import nn
from torch.nn.utils import prune, spectral_norm
from torch.nn.utils.parametrizations import orthogonal, weight_norm

from bytegraph.explain import Recorder


def _linear() -> nn.Linear:
    return nn.Linear(4, 4)


def _mlp() -> nn.Sequential:
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


# -- container slicing: a new container of the same class, as __getitem__ builds it ---------------
def sequential_slice_is_called(s, x):
    return s[:2](x), s[-1:](x), len(s[1:])


def slices_are_containers(s, ml, x):
    a, b, c = s[1:], ml[1:], s[5:]
    return (
        type(a).__name__,
        [name for name, _ in a.named_children()],
        type(b).__name__,
        list(b._modules),
        len(c),
        a(x),
        a is s[1:],
        list(a.state_dict()),
        sum(m(x) for m in b),
    )


def test_a_sequential_slice_is_a_sequential_called_as_eager():
    torch.manual_seed(0)
    seq = nn.Sequential(_linear(), nn.Tanh(), _linear())
    check(sequential_slice_is_called, seq, torch.randn(2, 4), calls=3)


def test_slices_of_containers_are_containers_of_their_class():
    torch.manual_seed(0)
    seq = nn.Sequential(_linear(), nn.Tanh(), _linear())
    ml = nn.ModuleList([_linear(), _linear(), _linear()])
    check(slices_are_containers, seq, ml, torch.randn(2, 4), calls=3)


# -- a representative sample of module code that traces as eager runs it -------------------------
class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = _linear()
        self.n = 0

    def forward(self, x):
        self.n += 1
        return self.lin(x) * self.n


class RunningMean(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(4))
        self.register_buffer("count", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        if self.training:
            self.mean.mul_(0.9).add_(x.mean(0), alpha=0.1)
            self.count += 1
        return x - self.mean


class Layers(nn.Module):
    def __init__(self):
        super().__init__()
        for i in range(3):
            setattr(self, f"layer{i}", _linear())

    def forward(self, x):
        for i in range(3):
            x = getattr(self, f"layer{i}")(x)
        return x


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.out = nn.Linear(4, 10, bias=False)
        self.out.weight = self.emb.weight

    def forward(self, ids):
        return self.out(self.emb(ids))


def call(m, x):
    return m(x)


def with_hooks():
    m = nn.Sequential(_linear(), nn.ReLU())
    m[0].register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    m[0].register_forward_hook(lambda mod, args, out: out + 100)
    return m


def apply_init(m, x):
    def init(s):
        if isinstance(s, nn.Linear):
            nn.init.constant_(s.weight, 0.1)
            nn.init.zeros_(s.bias)

    m.apply(init)
    return m(x)


def members(m, x):
    linears = [sub for _, sub in m.named_modules() if isinstance(sub, nn.Linear)]
    reg = sum((p**2).sum() for n, p in m.named_parameters() if "weight" in n)
    for c in m.children():
        x = c(x)
    return x, reg, len(linears), [n for n, _ in m.named_parameters()]


def zipped(ml, norms, x):
    for layer, norm in zip(ml, norms, strict=False):
        x = norm(layer(x))
    return x


def tied_backward(m, ids):
    # check() deep-copies the module for eager (a Parameter's copy has no .grad); the second
    # call finds a .grad where the first found None: one recompile, which breaks again
    m.zero_grad()
    y = m(ids).sum()
    y.backward()
    return y


def batch_norm_state(m, x):
    return m(x), m.num_batches_tracked.clone(), m.running_mean.clone()


def attention(m, q, mask):
    return m(q, q, q, attn_mask=mask, need_weights=True)


def embedding_max_norm(m, ids):
    return m(ids), m.weight.detach().clone()


def train_step(model, opt, x, y):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def clipped_step(model, opt, x):
    loss = model(x).sum()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    opt.step()
    model.zero_grad(set_to_none=False)
    return norm


def autocast_inside(model, x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = model(x)
    return y, y.dtype


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = _linear()
        self.mlp = _linear()

    def forward(self, x):
        return x + self.mlp(F.gelu(self.attn(x)))


class Stack(nn.Module):
    """A transformers-style stack: config dict, hidden states collected in a tuple."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Block() for _ in range(3)])
        self.norm = nn.LayerNorm(4)
        self.config = {"output_hidden_states": True}

    def forward(self, x, output_hidden_states=None):
        ohs = output_hidden_states
        ohs = self.config["output_hidden_states"] if ohs is None else ohs
        hidden = () if ohs else None
        for layer in self.layers:
            if ohs:
                hidden = hidden + (x,)
            x = layer(x)
        return self.norm(x), hidden


class PositionCache(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, x):
        n = x.shape[0]
        if n not in self.cache:
            self.cache[n] = torch.arange(n, dtype=x.dtype)[:, None]
        return x + self.cache[n]


def eval_inside(m, x):
    was = m.training
    m.eval()
    y = m(x)
    m.train(was)
    return y, m.training


def _adam(model):
    return model, torch.optim.Adam(model.parameters(), lr=1e-2)


CASES = {
    "step_counter": (call, lambda: (Counter(), torch.randn(2, 4)), 1, 0),
    "running_mean": (call, lambda: (RunningMean(), torch.randn(2, 4)), 1, 0),
    "getattr_layers": (call, lambda: (Layers(), torch.randn(2, 4)), 1, 0),
    "hooks": (call, lambda: (with_hooks(), torch.randn(2, 4)), 1, 0),
    "apply_init": (apply_init, lambda: (_mlp(), torch.randn(3, 4)), 1, 0),
    "members": (members, lambda: (_mlp(), torch.randn(3, 4)), 1, 0),
    "zipped": (
        zipped,
        lambda: (
            nn.ModuleList([_linear() for _ in range(3)]),
            nn.ModuleList([nn.LayerNorm(4) for _ in range(3)]),
            torch.randn(2, 4),
        ),
        1,
        0,
    ),
    "tied_backward": (tied_backward, lambda: (Tied(), torch.tensor([[1, 2, 3]])), 2, 2),
    "orthogonal": (call, lambda: (orthogonal(_linear()), torch.randn(2, 4)), 1, 0),
    "weight_norm": (call, lambda: (weight_norm(_linear()), torch.randn(2, 4)), 1, 0),
    "batch_norm": (batch_norm_state, lambda: (nn.BatchNorm1d(4), torch.randn(3, 4)), 1, 0),
    "attention": (
        attention,
        lambda: (
            nn.MultiheadAttention(8, 2, batch_first=True),
            torch.randn(2, 5, 8),
            torch.triu(torch.ones(5, 5, dtype=torch.bool), 1),
        ),
        1,
        0,
    ),
    "embedding_max_norm": (
        embedding_max_norm,
        lambda: (nn.Embedding(10, 4, max_norm=1.0), torch.tensor([[1, 2, 3]])),
        1,
        0,
    ),
    "adam_step": (
        train_step,
        lambda: (*_adam(_mlp()), torch.randn(3, 4), torch.tensor([0, 1, 1])),
        2,
        1,
    ),
    "clipped_step": (
        clipped_step,
        lambda: (*_adam(_mlp()), torch.randn(3, 4)),
        2,
        1,
    ),
    "autocast_inside": (autocast_inside, lambda: (_mlp(), torch.randn(3, 4)), 1, 0),
    "stack": (call, lambda: (Stack(), torch.randn(2, 4)), 1, 0),
    # the first call fills the cache, the second finds it filled: another graph, then none
    "position_cache": (call, lambda: (PositionCache(), torch.randn(2, 4)), 2, 0),
    "eval_inside": (
        eval_inside,
        lambda: (nn.Sequential(_linear(), nn.Dropout(0.9)), torch.randn(2, 4)),
        1,
        0,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_module_code_as_eager(name):
    fn, make_args, graphs, breaks = CASES[name]
    torch.manual_seed(0)
    check(fn, *make_args(), graphs=graphs, breaks=breaks, calls=3)


# -- hooks torch registers on a module: objects whose __call__ is inlined ------------------------
def with_power_iteration(m, x):
    return m(x), m.weight_u.clone(), m.weight


def pruned(m, x):
    return m(x), m.weight


def _pruned() -> nn.Linear:
    m = _linear()
    prune.l1_unstructured(m, "weight", amount=0.5)
    return m


@pytest.mark.parametrize(
    "fn, make",
    [
        (with_power_iteration, lambda: spectral_norm(_linear())),
        (with_power_iteration, lambda: spectral_norm(_linear()).eval()),
        (pruned, _pruned),
    ],
    ids=["spectral_norm", "spectral_norm_eval", "prune"],
)
def test_a_hook_object_of_torch_is_traced_in_the_graph(fn, make):
    """spectral_norm's power iteration (its forward pre-hook updates the weight_u/weight_v
    buffers in place) and a pruning mask, in one graph as torch.compile traces them. The
    module holds a computed weight, which deepcopy refuses: eager runs a twin built alike."""
    torch.manual_seed(0)
    module, x = make(), torch.randn(2, 4)
    torch.manual_seed(0)
    twin = make()
    compiled, counter = compile_counted(fn)
    recorder = Recorder()
    for _ in range(3):
        with warnings.catch_warnings(), recorder:
            warnings.simplefilter("error")
            actual = compiled(module, x)
        assert_same(actual, fn(twin, x))
        assert_state_same(module, twin)
    assert (counter.frame_count, break_count(recorder.report())) == (1, 0)

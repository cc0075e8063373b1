"""The sweep of third-party models side by side: models from PyPI libraries written in styles other
than ``transformers`` (lucidrains' ``vit-pytorch`` and ``x-transformers`` with ``einops`` and their
tensor-free helpers such as ``exists``/``default``, ``torch_geometric`` message passing, ``e3nn``
and ``egnn-pytorch`` equivariant networks, a ``kornia`` augmentation pipeline; local, linear,
axial, Nystrom and rotary attention, Perceiver, vector quantizers, hyper-connections, mixture of
experts, the Lion optimizer, the ``mambapy`` state-space model, ``zuko`` normalising flows,
``pyro`` distributions, ``torchdiffeq`` ODE solvers, ``torchmetrics`` module metrics,
``gpytorch``'s exact Gaussian process, ``entmax``, ``torch_optimizer``), small configs, random
weights, CPU, one intra-op thread, through bytegraph and through ``torch.compile`` (both with
backend ``eager``), each compared with eager (issue 37).

    python benchmarks/third_party.py [--models a,b] [--library L] [--no-tc] [--time N]
                                     [--limit S] [--list]

The libraries are not in the test venvs: run it with the benchmark venv that
``benchmarks/requirements-third-party.txt`` describes. Each model is a ``vision_zoo.VisionArch``
(its ``family`` is the library) run by ``vision_zoo.run``, and each row printed as
``benchmarks/vision_models.py`` prints one: wrong or raising (outputs, dtype, shape, gradients,
parameters and buffers after an SGD step, compared with an eager copy), graphs/breaks on the first
inference and the first training call, graphs compiled again by a second identical inference call
(should be 0), seconds of the first inference call and the steady-state speedup over eager (least
thread CPU time of ``--time`` interleaved calls) for both engines; then the first-call ratio
bytegraph / torch.compile, and totals with geometric means. torch.compile runs in a worker process
that never imports bytegraph. Exit status 1 if bytegraph is wrong, raises or hits an internal error
anywhere.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import importlib.metadata
import importlib.util
import json
import sys
import time
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[0] = str(ROOT / "tests")  # benchmarks/models.py must not shadow tests/models

from models import suite, vision_zoo  # noqa: E402  (tests/models: a namespace package)
from models.vision_zoo import VisionArch  # noqa: E402

# benchmarks/ only once tests/models is imported: its models.py, a module, would win over it
sys.path.append(str(ROOT / "benchmarks"))
import vision_models  # noqa: E402  (its row, totals and torch.compile worker)

# -- building the models ---------------------------------------------------------------------------


def _lucid(module: str, cls: str, **kwargs: Any):
    """A ``vit_pytorch`` model. The package's ``__init__`` imports every model, some of which
    import torchvision (not importable beside torch's CPU wheel): the package is entered without
    it, each model module imported on its own."""

    def make():
        if "vit_pytorch" not in sys.modules:
            spec = importlib.util.find_spec("vit_pytorch")
            package = types.ModuleType("vit_pytorch")
            package.__path__ = list(spec.submodule_search_locations)
            sys.modules["vit_pytorch"] = package
        return getattr(importlib.import_module(f"vit_pytorch.{module}"), cls)(**kwargs)

    return make


def _image(channels: int = 3, batch: int = 2):
    def inputs(size: int) -> tuple[tuple, dict]:
        import torch

        return (torch.randn(batch, channels, size, size),), {}

    return inputs


def _tokens(vocab: int = 256, batch: int = 2, mask: bool = False):
    def inputs(size: int) -> tuple[tuple, dict]:
        import torch

        tokens = torch.randint(0, vocab, (batch, size))
        if not mask:
            return (tokens,), {}
        lengths = torch.tensor([size, size - 5])
        return (tokens,), {"mask": torch.arange(size)[None, :] < lengths[:, None]}

    return inputs


def _xt_decoder(**layer_kwargs: Any):
    def make():
        from x_transformers import Decoder, TransformerWrapper

        layers = Decoder(dim=64, depth=2, heads=4, **layer_kwargs)
        return TransformerWrapper(num_tokens=256, max_seq_len=64, attn_layers=layers)

    return make


def _xt_encoder():
    from x_transformers import Encoder, TransformerWrapper

    layers = Encoder(dim=64, depth=2, heads=4, attn_dim_head=16)
    return TransformerWrapper(num_tokens=256, max_seq_len=64, attn_layers=layers)


def _xt_vit():
    from x_transformers import Encoder, ViTransformerWrapper

    layers = Encoder(dim=64, depth=2, heads=4, attn_dim_head=16)
    return ViTransformerWrapper(image_size=32, patch_size=8, num_classes=10, attn_layers=layers)


def _xt_clip():
    """A CLIP pair of towers from x-transformers: an image encoder and a text encoder projected to
    one space, the logits of their normalised embeddings' similarities."""
    import torch
    import torch.nn.functional as F
    from torch import nn
    from x_transformers import Encoder, TransformerWrapper, ViTransformerWrapper

    class Clip(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.image = ViTransformerWrapper(
                image_size=32, patch_size=8, attn_layers=Encoder(dim=64, depth=2, heads=4)
            )
            self.text = TransformerWrapper(
                num_tokens=256, max_seq_len=32, attn_layers=Encoder(dim=64, depth=2, heads=4)
            )
            self.image_proj, self.text_proj = nn.Linear(64, 32), nn.Linear(64, 32)
            self.scale = nn.Parameter(torch.tensor(2.0))

        def forward(self, image, text):
            i = F.normalize(
                self.image_proj(self.image(image, return_embeddings=True)[:, 0]), dim=-1
            )
            t = self.text(text, return_embeddings=True).mean(dim=1)
            t = F.normalize(self.text_proj(t), dim=-1)
            return self.scale.exp() * i @ t.t()

    return Clip()


def _clip_inputs(size: int) -> tuple[tuple, dict]:
    import torch

    return (torch.randn(2, 3, 32, 32), torch.randint(0, 256, (2, size))), {}


def _xt_encdec():
    from x_transformers import XTransformer

    return XTransformer(
        dim=64,
        enc_num_tokens=256,
        enc_depth=1,
        enc_heads=4,
        enc_max_seq_len=32,
        dec_num_tokens=256,
        dec_depth=1,
        dec_heads=4,
        dec_max_seq_len=32,
    )


def _encdec_inputs(size: int) -> tuple[tuple, dict]:
    import torch

    return (torch.randint(0, 256, (2, size)), torch.randint(0, 256, (2, size))), {}


def _graph(make_layers):
    """A two-layer graph network from torch_geometric on a random graph of 40 nodes."""

    def make():
        import torch.nn.functional as F
        from torch import nn

        class Net(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.conv1, self.conv2, self.pool = make_layers()

            def forward(self, x, edge_index, batch):
                x = F.relu(self.conv1(x, edge_index))
                x = self.conv2(x, edge_index)
                return self.pool(x, batch) if self.pool is not None else x

        return Net()

    return make


def _gcn():
    from torch_geometric.nn import GCNConv

    return GCNConv(16, 32), GCNConv(32, 8), None


def _gat():
    from torch_geometric.nn import GATConv

    return GATConv(16, 8, heads=4), GATConv(32, 8, heads=1), None


def _sage_pool():
    from torch_geometric.nn import SAGEConv, global_mean_pool

    return SAGEConv(16, 32), SAGEConv(32, 8), global_mean_pool


def _graph_inputs(size: int) -> tuple[tuple, dict]:
    import torch

    x = torch.randn(size, 16)
    edge_index = torch.randint(0, size, (2, 4 * size))
    batch = torch.arange(size) * 2 // size  # two graphs
    return (x, edge_index, batch), {}


def _e3nn():
    """An e3nn equivariant block: a linear map, a gated nonlinearity, a tensor product."""
    from e3nn import nn as enn
    from e3nn import o3
    from torch import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            irreps_in = o3.Irreps("8x0e + 4x1o")
            self.gate = enn.Gate(
                "8x0e", [nn.functional.silu], "4x0e", [nn.functional.sigmoid], "4x1o"
            )
            self.lin = o3.Linear(irreps_in, self.gate.irreps_in)
            self.tp = o3.FullyConnectedTensorProduct(self.gate.irreps_out, irreps_in, "8x0e + 2x1o")

        def forward(self, x):
            return self.tp(self.gate(self.lin(x)), x)

    return Block()


def _e3nn_inputs(size: int) -> tuple[tuple, dict]:
    import torch

    return (torch.randn(size, 8 + 4 * 3),), {}


def _egnn():
    from egnn_pytorch import EGNN_Network

    return EGNN_Network(num_tokens=21, dim=32, depth=2, num_nearest_neighbors=4)


def _egnn_inputs(size: int) -> tuple[tuple, dict]:
    import torch

    feats = torch.randint(0, 21, (1, size))
    return (feats, torch.randn(1, size, 3)), {"mask": torch.ones(1, size, dtype=torch.bool)}


def _kornia():
    """kornia's augmentations (random flip, colour jitter, affine) in front of a small CNN."""
    import kornia.augmentation as K
    from torch import nn

    augment = K.AugmentationSequential(
        K.RandomHorizontalFlip(),
        K.ColorJitter(0.1, 0.1, 0.1, 0.1, p=1.0),
        K.RandomAffine(degrees=10.0, p=1.0),
    )
    return nn.Sequential(augment, nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1))


# -- attention, quantizer and optimizer libraries, a state-space model, flows, ODEs ---------------


def _randn(*shapes: tuple[int, ...]):
    """Inputs: one standard normal tensor per shape."""

    def inputs(size: int) -> tuple[tuple, dict]:
        import torch

        return tuple(torch.randn(*shape) for shape in shapes), {}

    return inputs


def _rotary():
    """Attention weights of queries and keys rotated by ``rotary_embedding_torch``."""
    from rotary_embedding_torch import RotaryEmbedding
    from torch import nn

    class Rotary(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rotary, self.proj = RotaryEmbedding(dim=16), nn.Linear(32, 32)

        def forward(self, x):
            q = self.rotary.rotate_queries_or_keys(self.proj(x).view(2, 4, 8, 32)[..., :32])
            k = self.rotary.rotate_queries_or_keys(q * 2)
            return (q @ k.transpose(-1, -2)).softmax(-1)

    return Rotary()


def _local_attention():
    """Causal windowed attention (``LocalAttention``, which has no parameters) on projected
    queries, keys and values."""
    from local_attention import LocalAttention
    from torch import nn

    class Local(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkv = nn.Linear(16, 48)
            self.attn = LocalAttention(
                dim=16,
                window_size=8,
                causal=True,
                look_backward=1,
                look_forward=0,
                dropout=0.0,
                exact_windowsize=False,
            )

        def forward(self, x):
            return self.attn(*self.qkv(x).chunk(3, dim=-1))

    return Local()


def _local_transformer():
    from local_attention import LocalTransformer

    return LocalTransformer(
        num_tokens=64, max_seq_len=64, dim=32, depth=2, causal=True, local_attn_window_size=8
    )


def _hyper_connections():
    """Two linear branches in ``hyper_connections``' four residual streams: the input expanded
    to the streams, each branch mixing them, the streams reduced again."""
    from hyper_connections import get_init_and_expand_reduce_stream_functions
    from torch import nn

    init, expand, reduce = get_init_and_expand_reduce_stream_functions(4)

    class Streams(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.b1 = init(dim=16, branch=nn.Linear(16, 16), layer_index=0)
            self.b2 = init(dim=16, branch=nn.Linear(16, 16), layer_index=1)

        def forward(self, x):
            return reduce(self.b2(self.b1(expand(x))))

    return Streams()


def _quantizer(make, dim: int):
    """``vector_quantize_pytorch``'s quantizer behind a linear layer. The quantizers have no
    parameters (the codebooks are buffers, updated by EMA in training mode); the layer gets its
    gradient through their straight-through estimator."""

    def build():
        from torch import nn

        return nn.Sequential(nn.Linear(dim, dim), make())

    return build


def _vq():
    from vector_quantize_pytorch import VectorQuantize

    return VectorQuantize(dim=16, codebook_size=32, decay=0.8, commitment_weight=1.0)


def _fsq():
    from vector_quantize_pytorch import FSQ

    return FSQ(levels=[8, 5, 5])


def _residual_vq():
    from vector_quantize_pytorch import ResidualVQ

    return ResidualVQ(dim=16, num_quantizers=3, codebook_size=32)


def _mamba():
    from mambapy.mamba import Mamba, MambaConfig

    return Mamba(MambaConfig(d_model=16, n_layers=2, d_state=8, expand_factor=2))


def _perceiver():
    from perceiver_pytorch import Perceiver

    return Perceiver(
        input_channels=3,
        input_axis=2,
        num_freq_bands=4,
        max_freq=10.0,
        depth=2,
        num_latents=8,
        latent_dim=32,
        cross_heads=1,
        latent_heads=2,
        cross_dim_head=8,
        latent_dim_head=8,
        num_classes=5,
        attn_dropout=0.0,
        ff_dropout=0.0,
        weight_tie_layers=False,
        fourier_encode_data=True,
        self_per_cross_attn=1,
    )


def _nystrom():
    from nystrom_attention import Nystromformer

    return Nystromformer(dim=32, dim_head=8, heads=2, depth=2, num_landmarks=8, pinv_iterations=3)


def _nystrom_inputs(size: int) -> tuple[tuple, dict]:
    import torch

    return (torch.randn(2, size, 32),), {"mask": torch.ones(2, size, dtype=torch.bool)}


def _zuko_nsf():
    """The log-density of a conditional neural spline flow (``zuko.flows.NSF``)."""
    import zuko
    from torch import nn

    class Flow(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.flow = zuko.flows.NSF(
                features=3, context=2, transforms=2, hidden_features=[16, 16]
            )

        def forward(self, x, context):
            return self.flow(context).log_prob(x)

    return Flow()


def _zuko_maf():
    """An unconditional masked autoregressive flow (``zuko.flows.MAF``): the log-density of the
    input and reparametrised samples."""
    import zuko
    from torch import nn

    class Flow(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.flow = zuko.flows.MAF(features=3, context=0, transforms=2, hidden_features=[16])

        def forward(self, x):
            dist = self.flow()
            return dist.log_prob(x), dist.rsample((4,))

    return Flow()


def _pyro():
    """``pyro.distributions``: a diagonal normal made an event (``to_event``) and a multivariate
    normal, both parametrised by a linear layer, and their log-densities."""
    import pyro.distributions as dist
    import torch
    from torch import nn

    class Densities(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(3, 6)

        def forward(self, x, y):
            h = self.lin(x)
            loc, scale = h[:, :3], h[:, 3:].exp()
            normal = dist.Normal(loc, scale).to_event(1)
            mvn = dist.MultivariateNormal(loc, scale_tril=torch.diag_embed(scale))
            return normal.log_prob(y) + mvn.log_prob(y)

    return Densities()


def _pyro_vae():
    """A variational autoencoder's loss with ``pyro.distributions``: the KL term of two diagonal
    normals made events, which ``kl_divergence`` finds in torch's registry keyed by the pair of
    their classes (``_KL_MEMOIZE[type(p), type(q)]``, pyro registers the pair), and positive
    scales through ``transform_to(constraints.positive)``, found in torch's registry keyed by the
    constraint's class (``_registry[type(constraint)]``): registry dispatch on every call."""
    import pyro.distributions as dist
    import torch
    from torch import nn
    from torch.distributions import constraints, kl_divergence, transform_to

    class Vae(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.enc, self.dec = nn.Linear(6, 8), nn.Linear(4, 6)
            self.raw_noise = nn.Parameter(torch.zeros(6))

        def forward(self, x):
            h = self.enc(x)
            positive = transform_to(constraints.positive)
            q = dist.Normal(h[:, :4], positive(h[:, 4:])).to_event(1)
            prior = dist.Normal(torch.zeros_like(h[:, :4]), 1.0).to_event(1)
            z = q.rsample()
            likelihood = dist.Normal(self.dec(z), positive(self.raw_noise)).to_event(1)
            return (kl_divergence(q, prior) - likelihood.log_prob(x)).mean()

    return Vae()


def _ode(points: int, **solver: Any):
    """A neural ODE (``torchdiffeq.odeint`` of a small MLP) from the input to ``points`` times."""

    def make():
        import torch
        from torch import nn
        from torchdiffeq import odeint

        class Field(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.net = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))

            def forward(self, t, y):
                return self.net(y)

        class ODE(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.field = Field()

            def forward(self, y0):
                return odeint(self.field, y0, torch.linspace(0, 1, points), **solver)

        return ODE()

    return make


def _performer():
    from performer_pytorch import PerformerLM

    return PerformerLM(
        num_tokens=64,
        max_seq_len=32,
        dim=32,
        depth=2,
        heads=2,
        dim_head=8,
        causal=True,
        nb_features=16,
        feature_redraw_interval=1000,
    )


def _axial():
    from axial_attention import AxialAttention

    return AxialAttention(dim=8, dim_index=1, heads=2, num_dimensions=2)


def _linformer():
    from linformer import LinformerLM

    return LinformerLM(num_tokens=64, dim=32, seq_len=32, depth=2, heads=2, k=8)


def _moe():
    from mixture_of_experts import MoE

    return MoE(dim=16, num_experts=4, hidden_dim=32)


def _lion():
    """Fast weights trained at each call by ``lion_pytorch``'s ``Lion``: the call starts them (a
    buffer) at a linear layer's weight, makes a Lion optimizer of them (one held by the module
    would lose its own attributes to ``deepcopy``, which keeps only ``Optimizer``'s state), takes
    two steps on the input's reconstruction error (its gradient written into ``.grad`` by hand)
    and returns the layer's output plus the fast weights' and the optimizer's momentum."""
    import torch
    from lion_pytorch import Lion
    from torch import nn

    class FastWeights(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(8, 8)
            self.register_buffer("fast", torch.zeros(8, 8))

        def forward(self, x):
            with torch.no_grad():
                self.fast.copy_(self.lin.weight)
                opt = Lion([self.fast], lr=1e-2, weight_decay=1e-2)
                for _ in range(2):
                    self.fast.grad = (x @ self.fast.t() - x).t() @ x / len(x)
                    opt.step()
            return self.lin(x) + x @ self.fast.t(), opt.state[self.fast]["exp_avg"].clone()

    return FastWeights()


def _metric():
    """A regression head scored by ``torchmetrics`` module metrics (their state updated at each
    call through ``Metric.__setattr__``, an override of ``nn.Module``'s) held in a
    ``MetricCollection``: the predictions and the batch's mean squared and absolute errors."""
    import torchmetrics
    from torch import nn

    class Scored(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.head = nn.Linear(6, 1)
            self.metrics = torchmetrics.MetricCollection(
                [torchmetrics.MeanSquaredError(), torchmetrics.MeanAbsoluteError()]
            )

        def forward(self, x, y):
            pred = self.head(x).squeeze(-1)
            scores = self.metrics(pred.detach(), y)
            return pred, scores["MeanSquaredError"], scores["MeanAbsoluteError"]

    return Scored()


def _exact_gp():
    """A ``gpytorch`` exact Gaussian process (constant mean, scaled RBF kernel, Gaussian
    likelihood): in training mode the negative exact marginal log likelihood of the input's
    targets, made the training data (``set_train_data``), in eval mode the predictive mean and
    variance at the input given the training data last set."""
    import gpytorch
    import torch
    from torch import nn

    class GP(gpytorch.models.ExactGP):
        def __init__(self, x, y, likelihood) -> None:
            super().__init__(x, y, likelihood)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(
                self.mean_module(x), self.covar_module(x)
            )

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            g = torch.Generator().manual_seed(0)
            x = torch.linspace(0, 1, 12)
            y = torch.sin(x * 6.28) + 0.1 * torch.randn(12, generator=g)
            self.likelihood = gpytorch.likelihoods.GaussianLikelihood()
            self.gp = GP(x, y, self.likelihood)
            self.mll = gpytorch.mlls.ExactMarginalLogLikelihood(self.likelihood, self.gp)

        def forward(self, x, y):
            if self.training:
                self.gp.set_train_data(x, y, strict=False)
                return -self.mll(self.gp(x), y)
            pred = self.likelihood(self.gp(x))
            return pred.mean, pred.variance

    return Model()


def _entmax():
    """Sparse attention weights: ``entmax``'s 1.5-entmax and sparsemax (autograd Functions whose
    ``forward`` is a classmethod) of a linear layer's scores."""
    from entmax import entmax15, sparsemax
    from torch import nn

    class Sparse(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scores = nn.Linear(16, 8)

        def forward(self, x):
            s = self.scores(x)
            return entmax15(s, dim=-1) + sparsemax(s, dim=-1)

    return Sparse()


def _yogi():
    """Fast weights trained at each call by ``torch_optimizer``'s ``Yogi`` (as ``_lion``): two
    steps on the input's reconstruction error, the optimizer made in the call."""
    import torch
    import torch_optimizer
    from torch import nn

    class FastWeights(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(8, 8)
            self.register_buffer("fast", torch.zeros(8, 8))

        def forward(self, x):
            with torch.no_grad():
                self.fast.copy_(self.lin.weight)
                opt = torch_optimizer.Yogi([self.fast], lr=1e-2)
                for _ in range(2):
                    self.fast.grad = (x @ self.fast.t() - x).t() @ x / len(x)
                    opt.step()
            return self.lin(x) + x @ self.fast.t(), opt.state[self.fast]["exp_avg"].clone()

    return FastWeights()


A = VisionArch
V = "vit_pytorch"
X = "x_transformers"
VIT = {"num_classes": 10, "dim": 64, "depth": 2, "heads": 4, "mlp_dim": 128, "dim_head": 16}
#: The models of the sweep; ``size`` is the image side, the sequence length or the node count.
ARCHS = [
    A("vit", V, _lucid("vit", "ViT", image_size=32, patch_size=8, **VIT), 32),
    A("simple_vit", V, _lucid("simple_vit", "SimpleViT", image_size=32, patch_size=8, **VIT), 32),
    A(
        "simple_vit_registers",
        V,
        _lucid("simple_vit_with_register_tokens", "SimpleViT", image_size=32, patch_size=8, **VIT),
        32,
    ),
    A("deepvit", V, _lucid("deepvit", "DeepViT", image_size=32, patch_size=8, **VIT), 32),
    A(
        "cait",
        V,
        _lucid("cait", "CaiT", image_size=32, patch_size=8, cls_depth=1, layer_dropout=0.1, **VIT),
        32,
    ),
    A(
        "cross_vit",
        V,
        _lucid(
            "cross_vit",
            "CrossViT",
            image_size=32,
            num_classes=10,
            sm_dim=32,
            lg_dim=48,
            sm_patch_size=4,
            lg_patch_size=8,
            sm_enc_heads=2,
            sm_enc_mlp_dim=64,
            sm_enc_dim_head=16,
            lg_enc_depth=1,
            lg_enc_heads=2,
            lg_enc_mlp_dim=64,
            lg_enc_dim_head=16,
            cross_attn_depth=1,
            cross_attn_heads=2,
            cross_attn_dim_head=16,
            depth=1,
            dropout=0.0,
            emb_dropout=0.0,
        ),
        32,
    ),
    A(
        "max_vit",
        V,
        _lucid(
            "max_vit",
            "MaxViT",
            num_classes=10,
            dim=32,
            depth=(1, 1),
            dim_head=16,
            window_size=4,
            dropout=0.0,
        ),
        32,
    ),
    A(
        "levit",
        V,
        _lucid(
            "levit",
            "LeViT",
            image_size=64,
            num_classes=10,
            dim=(32, 48, 64),
            depth=1,
            heads=(2, 3, 4),
            mlp_mult=2,
            dim_key=16,
            dim_value=16,
        ),
        64,
    ),
    A(
        "pit",
        V,
        _lucid(
            "pit",
            "PiT",
            image_size=32,
            patch_size=4,
            num_classes=10,
            dim=32,
            depth=(1, 1),
            heads=2,
            mlp_dim=64,
            dim_head=16,
        ),
        32,
    ),
    A(
        "cct",
        V,
        _lucid(
            "cct",
            "CCT",
            img_size=32,
            embedding_dim=64,
            n_conv_layers=1,
            kernel_size=3,
            stride=1,
            padding=1,
            num_layers=2,
            num_heads=2,
            mlp_ratio=2.0,
            num_classes=10,
            attention_dropout=0.0,
            stochastic_depth_rate=0.0,
            positional_embedding="learnable",
        ),
        32,
    ),
    A(
        "mobile_vit",
        V,
        _lucid(
            "mobile_vit",
            "MobileViT",
            image_size=(64, 64),
            dims=[32, 40, 48],
            channels=[8, 16, 24, 24, 32, 32, 40, 40, 48, 48, 96],
            num_classes=10,
            depths=(1, 1, 1),
        ),
        64,
    ),
    A(
        "nest",
        V,
        _lucid(
            "nest",
            "NesT",
            image_size=32,
            patch_size=4,
            num_classes=10,
            dim=32,
            heads=2,
            num_hierarchies=2,
            block_repeats=(1, 1),
            dim_head=16,
        ),
        32,
    ),
    A(
        "xcit",
        V,
        _lucid("xcit", "XCiT", image_size=32, patch_size=8, cls_depth=1, **VIT),
        32,
    ),
    A(
        "ats_vit",
        V,
        _lucid(
            "ats_vit",
            "ViT",
            image_size=32,
            patch_size=4,
            max_tokens_per_depth=(32, 16),
            **VIT,
        ),
        32,
    ),
    A("xt_decoder", X, _xt_decoder(rotary_pos_emb=True, attn_dim_head=32), 32, inputs=_tokens()),
    A(
        "xt_decoder_features",
        X,
        _xt_decoder(
            alibi_pos_bias=True,
            ff_glu=True,
            attn_qk_norm=True,
            use_rmsnorm=True,
            attn_num_mem_kv=2,
            residual_attn=True,
            attn_dim_head=16,
        ),
        32,
        inputs=_tokens(),
    ),
    A("xt_encoder_mask", X, _xt_encoder, 32, inputs=_tokens(mask=True)),
    A("xt_vit", X, _xt_vit, 32),
    A("xt_clip", X, _xt_clip, 16, inputs=_clip_inputs),
    A("xt_encdec", X, _xt_encdec, 16, inputs=_encdec_inputs),
    A("pyg_gcn", "torch_geometric", _graph(_gcn), 40, inputs=_graph_inputs),
    A("pyg_gat", "torch_geometric", _graph(_gat), 40, inputs=_graph_inputs),
    A("pyg_sage_pool", "torch_geometric", _graph(_sage_pool), 40, inputs=_graph_inputs),
    A("e3nn_gate_tp", "e3nn", _e3nn, 16, inputs=_e3nn_inputs),
    A("egnn", "egnn_pytorch", _egnn, 16, inputs=_egnn_inputs),
    A("kornia_augment", "kornia", _kornia, 32),
    A("rotary_embedding", "rotary_embedding_torch", _rotary, 32, inputs=_randn((2, 32, 32))),
    A("local_attention", "local_attention", _local_attention, 32, inputs=_randn((2, 4, 32, 16))),
    A("local_transformer", "local_attention", _local_transformer, 32, inputs=_tokens(64)),
    A("hyper_connections", "hyper_connections", _hyper_connections, 8, inputs=_randn((2, 8, 16))),
    A("vq", "vector_quantize_pytorch", _quantizer(_vq, 16), 10, inputs=_randn((2, 10, 16))),
    A("vq_fsq", "vector_quantize_pytorch", _quantizer(_fsq, 3), 10, inputs=_randn((2, 10, 3))),
    A(
        "vq_residual",
        "vector_quantize_pytorch",
        _quantizer(_residual_vq, 16),
        10,
        inputs=_randn((2, 10, 16)),
    ),
    A("mambapy", "mambapy", _mamba, 12, inputs=_randn((2, 12, 16))),
    A("perceiver", "perceiver_pytorch", _perceiver, 8, inputs=_randn((2, 8, 8, 3))),
    A("nystrom", "nystrom_attention", _nystrom, 30, inputs=_nystrom_inputs),
    A("zuko_nsf", "zuko", _zuko_nsf, 4, inputs=_randn((4, 3), (4, 2))),
    A("zuko_maf", "zuko", _zuko_maf, 4, inputs=_randn((4, 3))),
    A("pyro_distributions", "pyro_ppl", _pyro, 4, inputs=_randn((4, 3), (4, 3))),
    A("pyro_vae", "pyro_ppl", _pyro_vae, 4, inputs=_randn((4, 6))),
    A(
        "odeint_rk4",
        "torchdiffeq",
        _ode(5, method="rk4", options={"step_size": 0.1}),
        3,
        inputs=_randn((3, 2)),
    ),
    A(
        "odeint_dopri5",
        "torchdiffeq",
        _ode(3, method="dopri5", rtol=1e-3, atol=1e-4),
        3,
        inputs=_randn((3, 2)),
    ),
    A("performer_lm", "performer_pytorch", _performer, 32, inputs=_tokens(64)),
    A("axial_attention", "axial_attention", _axial, 6, inputs=_randn((2, 8, 6, 6))),
    A("linformer_lm", "linformer", _linformer, 32, inputs=_tokens(64)),
    A("mixture_of_experts", "mixture_of_experts", _moe, 8, inputs=_randn((2, 8, 16))),
    A("lion_fast_weights", "lion_pytorch", _lion, 3, inputs=_randn((3, 8))),
    A("torchmetrics_collection", "torchmetrics", _metric, 8, inputs=_randn((8, 6), (8,))),
    A("gpytorch_exact_gp", "gpytorch", _exact_gp, 5, inputs=_randn((5,), (5,))),
    A("entmax", "entmax", _entmax, 4, inputs=_randn((2, 4, 16))),
    A("yogi_fast_weights", "torch_optimizer", _yogi, 3, inputs=_randn((3, 8))),
]
BY_NAME = {a.name: a for a in ARCHS}
assert len(BY_NAME) == len(ARCHS)

#: The libraries whose versions the header prints: einops and each model's.
LIBRARIES = ("einops", *dict.fromkeys(a.family for a in ARCHS))


# -- the sweep -------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="", help="comma-separated model names, in this order")
    parser.add_argument("--library", default="", help="only this library's models")
    parser.add_argument("--no-tc", action="store_true", help="bytegraph only")
    parser.add_argument("--time", type=int, default=15, help="calls timed for the speedup")
    parser.add_argument("--limit", type=int, default=120, help="seconds per model and engine")
    parser.add_argument("--list", action="store_true", help="print the models and exit")
    parser.add_argument("--tc-worker", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.list:
        print("\n".join(f"{a.name} ({a.family})" for a in ARCHS))
        return 0
    vision_models._quiet()
    if opts.tc_worker:
        return _tc_worker(opts.time, opts.limit)
    import torch
    from models import modeltest  # imports bytegraph: never in the torch.compile worker

    names = [n for n in opts.models.split(",") if n]
    unknown = set(names) - set(BY_NAME)
    if unknown:
        parser.error(f"unknown models: {', '.join(sorted(unknown))}")
    archs = [
        a
        for a in ([BY_NAME[n] for n in names] or ARCHS)
        if not opts.library or a.family == opts.library
    ]
    print(
        f"torch {torch.__version__}, {_versions()}, Python {sys.version.split()[0]}; "
        f"backend eager for both, one thread; {len(archs)} models\n"
    )
    print(vision_models._HEADER.replace("| family |", "| library |") + " first bg/tc |")
    print(vision_models._RULE + "---|")
    totals = vision_models.Totals()
    start = time.perf_counter()
    worker = None if opts.no_tc else _Worker(opts.time, opts.limit)
    notes: list[str] = []
    ratios: list[float] = []
    for arch in archs:
        tc = None if worker is None else worker.ask(arch.name)
        with contextlib.redirect_stdout(sys.stderr):  # a model's prints stay out of the table
            bg = vision_zoo.run(arch, modeltest.BytegraphEngine(), opts.time, opts.limit)
        totals.add(arch, bg, tc)
        ratio = _first_ratio(bg, tc)
        if ratio is not None:
            ratios.append(ratio)
        cell = "-" if ratio is None else f"{ratio:.2f}"
        print(vision_models._row(arch, bg, tc) + f" {cell} |", flush=True)
        # the zoo's recorded counts are the vision suite's: none are recorded here
        notes += [n for n in vision_models._notes(arch, bg, tc) if "the zoo records" not in n]
    if worker is not None:
        worker.close()
    print(f"\n{len(archs)} models in {time.perf_counter() - start:.0f} s\n")
    totals.report()
    mean = vision_zoo.geomean(ratios)
    if mean is not None:
        print(f"first inference call bytegraph / torch.compile, geomean: {mean:.2f}")
    if notes:
        print("\nNotes:\n" + "\n".join(notes))
    return 1 if totals.bg_bad else 0


def _first_ratio(bg: suite.ArchRun, tc: suite.ArchRun | None) -> float | None:
    if tc is None or "inf" not in bg.phases or "inf" not in tc.phases:
        return None
    return bg.phases["inf"].first_s / tc.phases["inf"].first_s


def _versions() -> str:
    out = []
    for name in LIBRARIES:
        try:
            out.append(f"{name} {importlib.metadata.version(name.replace('_', '-'))}")
        except importlib.metadata.PackageNotFoundError:
            out.append(f"{name} missing")
    return ", ".join(out)


class _Worker(vision_models._Worker):
    """torch.compile's side in a process without bytegraph: this file's ``--tc-worker``."""

    def __init__(self, calls: int, limit: int) -> None:
        self.command = [sys.executable, __file__, "--tc-worker", "--time", str(calls)]
        self.command += ["--limit", str(limit)]
        self.proc = self._start()


def _tc_worker(calls: int, limit: int) -> int:
    """Answer model names with torch.compile's ``ArchRun`` as JSON (no bytegraph here)."""
    assert "bytegraph" not in sys.modules
    for line in sys.stdin:
        arch = BY_NAME[json.loads(line)]
        # stdout carries the answers: a model's prints (performer_pytorch's) go to stderr
        with contextlib.redirect_stdout(sys.stderr):
            run = vision_zoo.run(arch, suite.TorchCompileEngine("eager"), calls, limit)
        print(json.dumps(dataclasses.asdict(run)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

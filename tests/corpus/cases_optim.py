"""Optimizers and training steps: ``opt.step()`` of torch.optim's optimizers (single-tensor and
foreach), LR schedulers (ReduceLROnPlateau with a metric), ``clip_grad_norm_`` and ``zero_grad``.

Each world is a small ``nn.Linear`` with its optimizer. ``observe`` exposes the module (parameters
and their ``.grad``), the optimizer (every state tensor and every param-group entry, ``lr``
included) and the scheduler's position, so four calls compare the whole training state with
eager's. The ``step_only`` cases compile just ``opt.step()`` (the gradients come from ``inputs``,
as a backward run outside the compiled function would leave them).
"""

from __future__ import annotations

import torch
from corpus.harness import Setup, case

# Why bytegraph traces again after the first call (each a genuine change of what the code does):
#: ``zero_grad`` is traced (torch.compile runs it in Python): the first call finds every ``.grad``
#: None and skips the loop body, the second finds gradients and sets them to None (one retrace).
ZERO = "zero_grad traced: .grad is None on the first call only; "
#: SGD creates ``momentum_buffer`` in its first step (not in ``_init_group``), like torch.compile.
MOMENTUM = "SGD creates momentum_buffer in the first step; "
#: The scheduler's first step (``_step_count == 1``) and its epoch branches (StepLR's ``epoch %
#: step_size``) are Python branches; a whole ``param_groups`` dict read is guarded item by item, so
#: a new float lr retraces the frame that read it; ``math.cos`` of a symbolic epoch (Cosine) is
#: specialised (torch.compile: 1-2 retraces).
LR = "scheduler branches, lr guarded with its param group, math.cos specialised; "
#: ``zero_grad(set_to_none=False)``: the first call has no grads, the second has grads made by
#: ``backward`` (requires_grad False), later ones the same: a third trace for the momentum buffer.
KEEP = "set_to_none=False: grads exist from the second call on"
#: Under compilation torch's optimizers read the step as a tensor (``_get_value``) and, where
#: ``capturable`` is False, branch on its value: ASGD (``mu.item() != 1``), RAdam (``rho_t > 5``),
#: Adamax foreach (a list of step-size tensors given as ``_foreach_addcdiv_``'s scalars, which the
#: op refuses). bytegraph breaks there (correct, the step runs in Python); torch.compile instead
#: traces the capturable branch, setting ``capturable`` True in its view of every param group.
#: The break lies in the step's ``func``, which ``_use_grad``'s wrapper calls through a hook with
#: no frame of its own to resume in, so it is taken at the wrapper's call: ``opt.step()`` has no
#: graph. LBFGS and SparseAdam are no cases here: torch.compile's break count for them varies
#: with what ran before in the process (1 or 2); both equal eager.
DATA = "step branches on a tensor's value (capturable False); "
#: Adafactor's first step creates its state; the second traces again and breaks at each
#: ``.item()`` of its loop over the parameters, under the profiler and grad-mode blocks: the
#: resume functions compile per parameter shape, then once more as the floats they take change
#: (the step counter, the norms): dynamic from the third step on.
NESTED = "Adafactor: second step retraced, its breaks' resume functions compiled (floats change)"


def _model() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))


def _train_step(make_opt, make_sched=None, clip=None, set_to_none=True) -> Setup:
    """``zero_grad(); loss = model(x).sum(); loss.backward(); [clip]; step(); [sched.step()]``."""
    model = _model()
    opt = make_opt(model.parameters())
    sched = make_sched(opt) if make_sched is not None else None

    def fn(x):
        opt.zero_grad(set_to_none=set_to_none)
        loss = model(x).sum()
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if sched is not None:
            sched.step()
        return loss

    def observe():
        position = None if sched is None else (sched.last_epoch, sched.get_last_lr())
        return model, opt, position

    return Setup(fn, lambda: (torch.randn(5, 4),), observe)


def _step_only(make_opt) -> Setup:
    """The common recipe: backward in eager, ``@torch.compile def step(): opt.step()``."""
    model = _model()
    opt = make_opt(model.parameters())

    def step():
        opt.step()

    def grads():
        for p in model.parameters():
            p.grad = torch.randn_like(p)
        return ()

    return Setup(step, grads, lambda: (model, opt))


# -- SGD -----------------------------------------------------------------------------------------
@case(
    "optim",
    graphs=2,
    breaks=1,
    tc_breaks=4,
    retraces=1,
    why=ZERO,
)
def sgd_plain_train_step():
    return _train_step(lambda ps: torch.optim.SGD(ps, lr=0.1))


@case(
    "optim",
    graphs=2,
    breaks=1,
    tc_breaks=4,
    retraces=2,
    why=ZERO + MOMENTUM,
)
def sgd_momentum_train_step():
    return _train_step(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9))


@case(
    "optim",
    graphs=2,
    breaks=1,
    tc_breaks=4,
    retraces=2,
    why=ZERO + MOMENTUM,
)
def sgd_nesterov_weight_decay_train_step():
    return _train_step(
        lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)
    )


@case(
    "optim",
    graphs=2,
    breaks=1,
    tc_breaks=4,
    retraces=2,
    why=ZERO + MOMENTUM,
)
def sgd_momentum_foreach_train_step():
    return _train_step(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, foreach=True))


# -- Adam / AdamW --------------------------------------------------------------------------------
@case(
    "optim",
    graphs=2,
    breaks=1,
    tc_breaks=4,
    retraces=1,
    why=ZERO,
)
def adam_train_step():
    return _train_step(lambda ps: torch.optim.Adam(ps, lr=0.01))


@case(
    "optim",
    graphs=2,
    breaks=1,
    tc_breaks=4,
    retraces=1,
    why=ZERO,
)
def adam_amsgrad_train_step():
    return _train_step(lambda ps: torch.optim.Adam(ps, lr=0.01, amsgrad=True))


@case(
    "optim",
    graphs=2,
    breaks=1,
    tc_breaks=4,
    retraces=1,
    why=ZERO,
)
def adam_foreach_train_step():
    return _train_step(lambda ps: torch.optim.Adam(ps, lr=0.01, foreach=True))


@case(
    "optim",
    graphs=2,
    breaks=1,
    tc_breaks=4,
    retraces=1,
    why=ZERO,
)
def adam_single_tensor_train_step():
    return _train_step(lambda ps: torch.optim.Adam(ps, lr=0.01, foreach=False))


@case(
    "optim",
    graphs=2,
    breaks=1,
    tc_breaks=4,
    retraces=1,
    why=ZERO,
)
def adamw_train_step():
    return _train_step(lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1))


@case(
    "optim",
    graphs=2,
    breaks=1,
    tc_breaks=4,
    retraces=1,
    why=ZERO,
)
def adamw_foreach_amsgrad_train_step():
    return _train_step(
        lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1, amsgrad=True, foreach=True)
    )


# -- schedulers, clipping, zero_grad -------------------------------------------------------------
@case(
    "optim",
    graphs=2,
    breaks=1,
    tc_breaks=5,
    retraces=4,
    why=ZERO + MOMENTUM + LR,
)
def sgd_steplr_train_step():
    return _train_step(
        lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
        lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5),
    )


@case(
    "optim",
    graphs=2,
    breaks=1,
    tc_breaks=5,
    retraces=2,
    why=ZERO + LR,
)
def adam_lambdalr_train_step():
    return _train_step(
        lambda ps: torch.optim.Adam(ps, lr=0.01),
        lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 1.0 / (epoch + 1)),
    )


@case(
    "optim",
    graphs=2,
    breaks=1,
    tc_breaks=5,
    retraces=3,
    why=ZERO + LR,
)
def adamw_cosine_train_step():
    return _train_step(
        lambda ps: torch.optim.AdamW(ps, lr=0.01),
        lambda opt: torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=3),
    )


@case(
    "optim",
    graphs=2,
    breaks=1,
    tc_breaks=4,
    retraces=1,
    why=ZERO,
)
def adam_clip_grad_norm_train_step():
    return _train_step(lambda ps: torch.optim.Adam(ps, lr=0.01), clip=0.5)


@case(
    "optim",
    graphs=2,
    breaks=1,
    tc_breaks=4,
    retraces=2,
    why=ZERO + MOMENTUM + KEEP,
)
def sgd_zero_grad_keep_tensors_train_step():
    return _train_step(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9), set_to_none=False)


@case(
    "optim",
    graphs=2,
    breaks=1,
    tc_breaks=5,
    retraces=2,
    why=ZERO + LR,
)
def adamw_full_train_step():
    return _train_step(
        lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1),
        lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.9),
        clip=1.0,
    )


# -- compiling opt.step() alone ------------------------------------------------------------------
@case(
    "optim",
    graphs=1,
    breaks=0,
    tc_breaks=2,
    retraces=1,
    why=MOMENTUM,
)
def sgd_momentum_step_only():
    return _step_only(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9))


@case("optim", graphs=1, breaks=0, tc_breaks=2)
def adam_step_only():
    return _step_only(lambda ps: torch.optim.Adam(ps, lr=0.01))


@case("optim", graphs=1, breaks=0, tc_breaks=2)
def adam_foreach_step_only():
    return _step_only(lambda ps: torch.optim.Adam(ps, lr=0.01, foreach=True))


@case("optim", graphs=1, breaks=0, tc_breaks=2)
def adamw_amsgrad_step_only():
    return _step_only(lambda ps: torch.optim.AdamW(ps, lr=0.01, amsgrad=True))


@case("optim", graphs=1, breaks=0, tc_breaks=2)
def adam_two_param_groups_step_only():
    return _step_only(
        lambda ps: torch.optim.Adam(
            [{"params": list(ps)[:2]}, {"params": [], "lr": 0.1}], lr=0.01, weight_decay=0.1
        )
    )


@case(
    "optim",
    graphs=2,
    breaks=1,
    tc_breaks=4,
    retraces=2,
    why=ZERO + MOMENTUM,
)
def sgd_maximize_dampening_train_step():
    return _train_step(
        lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.1, maximize=True)
    )


@case("optim", graphs=2, breaks=1, tc_breaks=4, retraces=1, why=ZERO)
def adam_foreach_zero_grad_keep_tensors_train_step():
    return _train_step(lambda ps: torch.optim.Adam(ps, lr=0.01, foreach=True), set_to_none=False)


# -- the other optimizers ------------------------------------------------------------------------
@case("optim", graphs=2, breaks=1, tc_breaks=4, retraces=1, why=ZERO)
def adadelta_maximize_weight_decay_train_step():
    return _train_step(lambda ps: torch.optim.Adadelta(ps, lr=0.5, maximize=True, weight_decay=0.1))


@case("optim", graphs=1, breaks=0, tc_breaks=2)
def adadelta_foreach_step_only():
    return _step_only(lambda ps: torch.optim.Adadelta(ps, lr=0.5, foreach=True))


@case("optim", graphs=2, breaks=1, tc_breaks=4, retraces=1, why=ZERO)
def adagrad_lr_decay_single_tensor_train_step():
    return _train_step(
        lambda ps: torch.optim.Adagrad(ps, lr=0.1, lr_decay=0.1, weight_decay=0.1, foreach=False)
    )


@case("optim", graphs=1, breaks=0, tc_breaks=2)
def adagrad_foreach_maximize_step_only():
    return _step_only(lambda ps: torch.optim.Adagrad(ps, lr=0.1, foreach=True, maximize=True))


@case("optim", graphs=2, breaks=1, tc_breaks=4, retraces=1, why=ZERO)
def adamax_single_tensor_train_step():
    return _train_step(lambda ps: torch.optim.Adamax(ps, lr=0.01, foreach=False, weight_decay=0.1))


@case("optim", graphs=0, breaks=1, tc_breaks=2, why=DATA)
def adamax_foreach_step_only():
    return _step_only(lambda ps: torch.optim.Adamax(ps, lr=0.01, foreach=True))


@case("optim", graphs=1, breaks=2, tc_breaks=4, retraces=1, why=ZERO + DATA)
def asgd_train_step():
    return _train_step(lambda ps: torch.optim.ASGD(ps, lr=0.01, t0=1))


@case("optim", graphs=0, breaks=1, tc_breaks=2, why=DATA)
def asgd_foreach_maximize_step_only():
    return _step_only(
        lambda ps: torch.optim.ASGD(
            ps, lr=0.01, t0=1, foreach=True, maximize=True, weight_decay=0.1
        )
    )


@case("optim", graphs=2, breaks=1, tc_breaks=4, retraces=1, why=ZERO)
def nadam_decoupled_momentum_decay_train_step():
    return _train_step(
        lambda ps: torch.optim.NAdam(
            ps, lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, momentum_decay=0.01
        )
    )


@case("optim", graphs=1, breaks=0, tc_breaks=2)
def nadam_single_tensor_maximize_step_only():
    return _step_only(lambda ps: torch.optim.NAdam(ps, lr=0.01, foreach=False, maximize=True))


@case("optim", graphs=1, breaks=2, tc_breaks=4, retraces=1, why=ZERO + DATA)
def radam_decoupled_train_step():
    return _train_step(
        lambda ps: torch.optim.RAdam(ps, lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)
    )


@case("optim", graphs=0, breaks=1, tc_breaks=2, why=DATA)
def radam_foreach_step_only():
    return _step_only(lambda ps: torch.optim.RAdam(ps, lr=0.01, foreach=True))


@case("optim", graphs=2, breaks=1, tc_breaks=4, retraces=1, why=ZERO)
def rmsprop_centered_momentum_foreach_train_step():
    return _train_step(
        lambda ps: torch.optim.RMSprop(ps, lr=0.01, centered=True, momentum=0.9, foreach=True)
    )


@case("optim", graphs=1, breaks=0, tc_breaks=2)
def rmsprop_single_tensor_maximize_step_only():
    return _step_only(
        lambda ps: torch.optim.RMSprop(ps, lr=0.01, foreach=False, maximize=True, weight_decay=0.1)
    )


@case("optim", graphs=2, breaks=1, tc_breaks=4, retraces=1, why=ZERO)
def rprop_maximize_train_step():
    return _train_step(lambda ps: torch.optim.Rprop(ps, lr=0.01, maximize=True))


@case("optim", graphs=1, breaks=0, tc_breaks=2)
def rprop_single_tensor_step_only():
    return _step_only(lambda ps: torch.optim.Rprop(ps, lr=0.01, foreach=False))


if hasattr(torch.optim, "Adafactor"):

    @case("optim", graphs=1, breaks=0, tc_breaks=4, retraces=15, why=NESTED)
    def adafactor_step_only():
        return _step_only(lambda ps: torch.optim.Adafactor(ps, lr=0.01))


# -- more schedulers -----------------------------------------------------------------------------
@case("optim", graphs=2, breaks=1, tc_breaks=5, retraces=3, why=ZERO + MOMENTUM + LR)
def sgd_onecycle_train_step():
    return _train_step(
        lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
        lambda opt: torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10),
    )


@case("optim", graphs=2, breaks=1, tc_breaks=5, retraces=4, why=ZERO + LR)
def adam_sequential_train_step():
    return _train_step(
        lambda ps: torch.optim.Adam(ps, lr=0.01),
        lambda opt: torch.optim.lr_scheduler.SequentialLR(
            opt,
            [
                torch.optim.lr_scheduler.LinearLR(opt, 0.5, total_iters=2),
                torch.optim.lr_scheduler.ExponentialLR(opt, 0.9),
            ],
            milestones=[2],
        ),
    )


@case("optim", graphs=1, breaks=2, tc_breaks=5, retraces=5, why=ZERO + DATA + LR)
def radam_cosine_train_step():
    return _train_step(
        lambda ps: torch.optim.RAdam(ps, lr=0.01),
        lambda opt: torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=3),
    )


@case("optim", graphs=2, breaks=2, tc_breaks=6, retraces=4, why=ZERO + MOMENTUM + LR)
def sgd_reduce_on_plateau_train_step():
    """``sched.step(loss.item())``: the lr halves whenever the loss does not improve."""
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, factor=0.5)

    def fn(x):
        opt.zero_grad()
        loss = model(x).sum()
        loss.backward()
        opt.step()
        sched.step(loss.item())
        return loss

    def observe():
        return model, opt, (sched.num_bad_epochs, sched.best, sched.last_epoch)

    return Setup(fn, lambda: (torch.randn(5, 4),), observe)

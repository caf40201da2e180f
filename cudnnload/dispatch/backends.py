"""The backend interface, and the registry that plugins fill.

A backend runs convolutions and activations on `TensorRef`s (zero-copy views of the caller's
memory, `cudnnload.dispatch.tensors`). It is any object with the attributes of `Backend`; an operation
it does not implement it refuses in `Backend.supports`. `cudnnload.dispatch.dispatcher` checks every
argument before a backend sees it: shapes fit, dtypes agree, all tensors are on one device,
the output exists with the right shape (made and, on request, filled with NaN).

Plugins (as simonw/llm's, llm/plugins.py): a distribution declares an entry point in the
group ``cudnnload.backends`` (`ENTRY_POINT_GROUP`), named after the backend it adds, whose value is a callable
``register(registry)`` that calls ``registry.add(name, factory)``; the factory makes the
backend on first use. cudnnload's own backends (plugins/cudnnload_numpy, ...) are declared
in its pyproject.toml and load exactly the same way.

- ``CUDNNLOAD_BACKENDS=numpy,cudnn-graph`` loads only the plugins of those names and keeps
  only backends of those names; set but empty, it loads none (llm's LLM_LOAD_PLUGINS).
- A plugin whose import, ``register``, factory or ``availability`` raises is recorded as
  broken, with the exception, and skipped; the others load as usual. A call that names its
  backend fails at once with that exception as the reason (``backend="auto"`` lists it too).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from cudnnload.dispatch.capabilities import ACTIVATIONS as ACTIVATIONS  # re-exported: plugins import them here
from cudnnload.dispatch.capabilities import LAYOUTS as LAYOUTS
from cudnnload.dispatch.capabilities import Cell, Rule, cell_of, table
from cudnnload.dispatch.entrypoints import EntryPoint, entry_points
from cudnnload.dispatch.tensors import TensorRef
from cudnnload.errors import UsageError
from cudnnload.loading import pending

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "cudnnload.backends"
RESTRICT_VARIABLE = "CUDNNLOAD_BACKENDS"

# The operations, named as the Backend methods that run them. Layouts (capabilities.LAYOUTS): x, w and y in
# (N, C, *spatial) or (N, *spatial, C) order for 1, 2 or 3 spatial axes; weights likewise (K, C/groups,
# *kernel) or (K, *kernel, C/groups), as cuDNN's filter formats NCHW and NHWC (KCRS, KRSC).
OPS = ("conv_forward", "conv_backward_data", "conv_backward_filter", "activation_forward", "activation_backward")
# backend="auto" tries these first, in this order, then any other backend by name: PREFERENCE for
# convolutions, ELEMENTWISE_PREFERENCE for activations. Activations prefer the legacy API's precompiled
# kernels: every engine cuDNN 9 offers for a pointwise-only graph compiles its kernel at run time
# (CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION on all three engines of 9.28 and all eight of 9.0, read without
# a GPU), which costs the first call of each problem NVRTC's compilation.
PREFERENCE = ("cudnn-graph", "cudnn-legacy", "numpy")
ELEMENTWISE_PREFERENCE = ("cudnn-legacy", "cudnn-graph", "numpy")

_warming = threading.local()


@contextmanager
def warming(before_own_plans: Callable[[], object]) -> Iterator[None]:
    """Mark this thread's calls as a warm-up (`cudnnload.dispatch.warmup`). A backend with a quick way to a
    first result (cudnn-graph's quick plans) may make that ready first, then call ``before_own_plans()``
    (the warm-up's other first-time work ends meanwhile), then build the problem's own plan; calls
    from other threads run the quick way until that plan is ready."""
    previous = getattr(_warming, "hook", None)
    _warming.hook = before_own_plans
    try:
        yield
    finally:
        _warming.hook = previous


def warming_hook() -> Callable[[], object] | None:
    """This thread's `warming` hook, or None outside a warm-up."""
    return getattr(_warming, "hook", None)


def warm_ups_running() -> bool:
    """Whether a background warm-up (`cudnnload.start`, `preload(background=True)`) is running in this
    process: a backend with a quick first plan runs another thread's call on it meanwhile, as for a problem
    the warm-up has claimed, since the warm-up may not have reached that problem yet."""
    return pending.warm_ups_running()


@dataclass(frozen=True)
class ConvSpec:
    """A convolution (cross-correlation, as cuDNN's CUDNN_CROSS_CORRELATION and PyTorch compute) apart from its data.

    Tuples have one entry per spatial axis; padding is symmetric (cuDNN's legacy API has no other).
    """

    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int = 1
    layout: str = "NCHW"
    allow_tf32: bool = False  # float32 only: whether tensor cores may round inputs to TF32
    activation: str | None = None  # one of ACTIVATIONS, applied after the bias (conv_forward only)
    coef: float = 0.0  # clipped_relu: the ceiling; elu: alpha; swish: beta; unused by the others
    # conv_forward only: bias and activation must run inside the convolution's kernel (one engine); a
    # backend that would run them as steps after it refuses instead.
    fused: bool = False

    def output_size(self, spatial: tuple[int, ...], kernel: tuple[int, ...]) -> tuple[int, ...]:
        """Output extent per spatial axis: cudnnGetConvolutionNdForwardOutputDim's formula,
        ``1 + (in + 2 * pad - ((k - 1) * dilation + 1)) // stride`` (may be < 1: the input is too small)."""
        axes = zip(spatial, kernel, self.padding, self.dilation, self.stride, strict=True)
        return tuple(1 + (size + 2 * pad - ((k - 1) * dil + 1)) // step for size, k, pad, dil, step in axes)


@dataclass(frozen=True)
class ActivationSpec:
    """An activation apart from its data: ``mode`` is one of ACTIVATIONS; ``coef`` as in `ConvSpec`."""

    mode: str
    coef: float = 0.0


Spec = ConvSpec | ActivationSpec


class Backend(Protocol):
    """What a backend is. Tensors are `TensorRef`s; ``stream`` is the caller's cudaStream_t (0: legacy default).

    Conv tensors are in ``spec.layout`` axis order (`TensorRef.channels_first` turns them to
    (N, C, *spatial)); bias is 1-D, (K,). Outputs must be written entirely: they may hold NaN.

    Optional, besides ``capability``: ``replay(op, spec, tensors, *, autotune, stream)``, called after a
    conv_forward call with the caller's own output: a function that repeats exactly that call on the
    calling thread faster than the method, returning True, or False (having done nothing) once it no
    longer can; None where there is nothing faster. The dispatcher keeps it per problem, pointers,
    stream and thread, and calls it instead of the method (cudnn-graph: a recorded CUDA graph's launch).
    """

    name: str

    def availability(self) -> str | None:
        """None when the backend can run here; else why not (no GPU, no cuDNN, ...). Asked once per registry."""

    def capability(self, operation: str, dtype: str, layout: str, spatial: int) -> str | None:
        """None when the backend runs this cell of its table (`cudnnload.dispatch.capabilities`); else why not.
        Pure: asked without a GPU, before any call. Optional: a backend without it declares no table."""

    def supports(self, op: str, spec: Spec, *tensors: TensorRef | None) -> str | None:
        """None when ``op`` (one of OPS) can run; else why not (a cell its table rules out: the table's reason).

        ``tensors`` are the op's, in its method's order (conv_forward: x, w, bias or None, y).
        Asked once per problem (shapes, strides, dtypes, devices, spec) and the answer is
        cached: it must not depend on data pointers, and an output's ref may have ptr 0.
        """

    def conv_forward(self, x: TensorRef, w: TensorRef, bias: TensorRef | None, y: TensorRef, spec: ConvSpec, *,
                     autotune: bool = False, stream: int = 0) -> None:
        """y = activation(conv(x, w) + bias)."""

    def conv_backward_data(self, dy: TensorRef, w: TensorRef, dx: TensorRef, spec: ConvSpec, *,
                           autotune: bool = False, stream: int = 0) -> None:
        """dx = the gradient of conv(x, w) with respect to x, given dy."""

    def conv_backward_filter(self, x: TensorRef, dy: TensorRef, dw: TensorRef, spec: ConvSpec, *,
                             autotune: bool = False, stream: int = 0) -> None:
        """dw = the gradient of conv(x, w) with respect to w, given dy."""

    def activation_forward(self, x: TensorRef, y: TensorRef, spec: ActivationSpec, *, stream: int = 0) -> None:
        """y = activation(x), elementwise."""

    def activation_backward(self, y: TensorRef, dy: TensorRef, x: TensorRef, dx: TensorRef, spec: ActivationSpec, *,
                            stream: int = 0) -> None:
        """dx = dy * activation'(x), where y = activation(x) (cudnnActivationBackward's arguments)."""


BackendFactory = Callable[[], Backend]


def refusal(rule: Rule, op: str, spec: Spec, tensors: tuple[TensorRef | None, ...]) -> str | None:
    """Why the capability table of ``rule`` rules out this call of ``op`` (one of OPS), or None: what a
    backend's ``supports()`` asks first, so that it refuses exactly what its table says it cannot run."""
    if isinstance(spec, ActivationSpec):
        return rule(*cell_of(op, spec.mode, "NCHW", tensors))
    return rule(*cell_of(op, spec.activation, spec.layout, tensors))


@dataclass(frozen=True)
class BackendStatus:
    """One backend (or one plugin that failed or was not loaded), for ``cudnnload backends``."""

    name: str
    source: str  # the entry point and its distribution: "cudnnload_numpy:register (cudnnload 0.1.0)"
    available: bool
    reason: str | None  # why not available, or why broken
    broken: bool  # the plugin's import, register(), factory or availability() raised
    capabilities: tuple[Cell, ...] = ()  # its table; empty where it declares none (or could not be made)


@dataclass
class _Entry:
    factory: BackendFactory
    source: str
    backend: Backend | None = None
    reason: str | None = None  # unavailable or broken, once known
    checked: bool = False  # availability() asked
    broken: bool = False


class Registry:
    """Backends by name, as plugins added them. Each is made, and asked whether it can run, on first use."""

    def __init__(self, restrict: frozenset[str] | None = None) -> None:
        self._restrict = restrict
        self._entries: dict[str, _Entry] = {}
        self._plugin_failures: list[BackendStatus] = []  # plugins that raised, or were not loaded
        self._source = "added directly"  # the plugin whose register() is running
        self._check_lock = threading.RLock()  # one backend object per name, also when threads ask at once

    def add(self, name: str, factory: BackendFactory) -> None:
        """Add a backend; what a plugin's ``register(registry)`` calls. The factory runs on first use."""
        if self._restrict is not None and name not in self._restrict:
            log.debug("backend %s from %s skipped: not in %s", name, self._source, RESTRICT_VARIABLE)
            return
        if name in self._entries:
            raise UsageError(f"a backend named {name!r} is already registered by {self._entries[name].source}")
        self._entries[name] = _Entry(factory, self._source)

    @property
    def names(self) -> tuple[str, ...]:
        """Every backend added (unknown yet whether it can run), in the order added."""
        return tuple(self._entries)

    def get(self, name: str) -> tuple[Backend | None, str | None]:
        """``(backend, None)`` when ``name`` can run here, else ``(None, why not)``."""
        entry = self._entries.get(name)
        if entry is None:
            failed = next((f for f in self._plugin_failures if f.name == name and f.broken), None)
            if failed is not None:  # its plugin is installed but did not load: say why, not "no such backend"
                return None, f"the plugin {name!r} ({failed.source}) failed to load: {failed.reason}"
            available = ", ".join(self.names) or "none"
            return None, f"no backend named {name!r}; available: {available}{self._restriction_note()}"
        if not entry.checked:
            self._check(name, entry)
        return entry.backend if entry.reason is None else None, entry.reason

    @property
    def plugin_failures(self) -> tuple[BackendStatus, ...]:
        """The plugins that raised while loading (``broken``), or that ``CUDNNLOAD_BACKENDS`` left out."""
        return tuple(self._plugin_failures)

    def statuses(self) -> tuple[BackendStatus, ...]:
        """Every backend and every plugin that failed or was not loaded; asks each backend whether it can run."""
        found = []
        for name, entry in self._entries.items():
            _, reason = self.get(name)
            rule: Rule | None = getattr(entry.backend, "capability", None)
            found.append(BackendStatus(name, entry.source, reason is None, reason, entry.broken,
                                       () if rule is None else table(rule)))
        return (*found, *self._plugin_failures)

    def load_plugin(self, point: EntryPoint) -> None:
        """Import the entry point and call it with this registry; on any exception, undo its additions and record it."""
        source = _describe(point)
        if self._restrict is not None and point.name not in self._restrict:
            allowed = ",".join(sorted(self._restrict))
            self._plugin_failures.append(BackendStatus(point.name, source, False,
                                                       f"not loaded: {RESTRICT_VARIABLE}={allowed}", False))
            return
        before = set(self._entries)
        try:
            with self._registering(source):
                point.load()(self)
        except Exception as exc:  # a third-party plugin may raise anything; it must not break the others
            for name in set(self._entries) - before:
                del self._entries[name]
            reason = _exception_text(exc)
            log.warning("backend plugin %s (%s) is broken and was skipped: %s", point.name, source, reason)
            self._plugin_failures.append(BackendStatus(point.name, source, False, reason, True))

    @contextmanager
    def _registering(self, source: str) -> Iterator[None]:
        self._source = source
        try:
            yield
        finally:
            self._source = "added directly"

    def _check(self, name: str, entry: _Entry) -> None:
        with self._check_lock:
            if not entry.checked:
                self._make(name, entry)

    def _make(self, name: str, entry: _Entry) -> None:
        """Make the backend and ask it; ``checked`` is set last, so that a thread that finds it set
        (without the lock) finds the answer too."""
        try:
            backend = entry.factory()
            entry.reason = backend.availability()
        except Exception as exc:  # as in load_plugin: a broken backend is reported, never raised
            entry.reason, entry.broken = _exception_text(exc), True
            log.warning("backend %s (%s) is broken: %s", name, entry.source, entry.reason)
            entry.checked = True
            return
        entry.backend = backend
        entry.checked = True
        if entry.reason is not None:
            log.debug("backend %s is unavailable: %s", name, entry.reason)

    def _restriction_note(self) -> str:
        if self._restrict is None:
            return ""
        return f" ({RESTRICT_VARIABLE}={','.join(sorted(self._restrict))})"


def _describe(point: EntryPoint) -> str:
    return f"{point.value} ({point.distribution} {point.version})"


def _exception_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def restriction(environ: Mapping[str, str]) -> frozenset[str] | None:
    """The backend names ``CUDNNLOAD_BACKENDS`` allows; None when it is unset (everything loads)."""
    value = environ.get(RESTRICT_VARIABLE)
    if value is None:
        return None
    return frozenset(name.strip() for name in value.split(",") if name.strip())


def load_registry(environ: Mapping[str, str] | None = None) -> Registry:
    """A new registry holding every backend the installed plugins add, as ``CUDNNLOAD_BACKENDS`` allows.

    Plugins are imported here (in entry-point name order); backends are made on first use.
    """
    registry = Registry(restriction(os.environ if environ is None else environ))
    for point in sorted(entry_points(ENTRY_POINT_GROUP), key=lambda p: p.name):
        registry.load_plugin(point)
    return registry


def list_backends(environ: Mapping[str, str] | None = None) -> tuple[BackendStatus, ...]:
    """Every backend the installed plugins add, whether each can run here and why not; broken plugins too."""
    return load_registry(environ).statuses()


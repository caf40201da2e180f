"""The calls users make: convolution and activation on their own arrays, run by a backend.

``conv(x, w)`` takes numpy arrays (host) or device arrays (PyTorch, CuPy, anything with
DLPack or ``__cuda_array_interface__``) without copying them, and returns an output of the
input's own kind, made by the input's library with the input's memory order, or writes into
the caller's ``out``. Everything is checked before a backend or the GPU sees it; the typed
errors of `cudnnload.dispatch.errors` name the argument at fault.

What a call checked, and which backend it chose, is remembered per problem (shapes, strides,
dtypes, devices, parameters, backend argument): a repeated call reads its arrays, looks the
problem up, makes the output and calls the backend. A `Dispatcher` owns its registry and
that memory; the module's functions are those of a default one whose registry is built from
the process environment on first use (`reload` rebuilds it).

``backend="auto"`` takes the first backend, in the order cudnn-graph, cudnn-legacy, numpy,
then any other by name, that can run here and says it supports the call; the numpy backend
refuses device memory, so device data is never copied to the host.

Outputs are filled with NaN before the backend runs (``poison``), so that elements it leaves
unwritten show: by default for host outputs only, since on the GPU that is an extra pass over
the output's memory, as long as a small convolution; ``poison=True`` asks for it there too.
"""

from __future__ import annotations

import contextlib
import math
import operator
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from threading import get_ident as _thread_id
from typing import Any

from cudnnload.dispatch.backends import (
    ACTIVATIONS,
    ELEMENTWISE_PREFERENCE,
    LAYOUTS,
    PREFERENCE,
    ActivationSpec,
    Backend,
    ConvSpec,
    Registry,
    Spec,
    load_registry,
)
from cudnnload.dispatch.errors import ArgumentError, DeviceError, DtypeError, ShapeError, UnsupportedError
from cudnnload.dispatch.tensors import VIEWS, TensorRef, as_ref, memory_order, output_maker, poison, strides_in_order

# Plans remembered per dispatcher; past this many (shapes that never repeat), they are forgotten at once.
MAX_PLANS = 4096

# coef when the caller gives none: ELU's alpha and swish's beta are 1 in their usual forms
# (torch.nn.ELU, torch.nn.SiLU); a clipped ReLU has no usual ceiling, so it must be given.
_DEFAULT_COEF = {"elu": 1.0, "swish": 1.0}


# Replays kept per plan (pointer sets a problem is called with, per thread); past this many, forgotten at once.
MAX_REPLAYS = 256


@dataclass(frozen=True)
class _Plan:
    """What a problem's first call worked out: the backend's method to run, its spec, and how to make the output;
    for a backend with ``replay`` (conv_forward), the replays it handed out, by pointers, stream and thread."""

    run: Callable[..., None]
    spec: Spec
    make_output: Callable[[], TensorRef] | None  # None when the caller passes out=
    replay: Callable[..., Callable[[], bool] | None] | None = None
    replays: dict[tuple[Any, ...], Callable[[], bool]] = field(default_factory=dict, compare=False)


_stream_address: Callable[[object], int] | None = None


def _stream(stream: object) -> int:
    global _stream_address
    if type(stream) is int:
        return stream
    if _stream_address is None:
        from cudnnload.loading.handles import stream_address

        _stream_address = stream_address
    return _stream_address(stream)


class Dispatcher:
    """Checks calls, chooses backends from ``registry`` (default: the plugins installed) and runs them."""

    def __init__(self, registry: Registry | None = None, *, environ: Mapping[str, str] | None = None) -> None:
        self._registry = registry
        self._environ = environ
        self._plans: dict[Any, _Plan] = {}
        # a conv_forward replay by the arrays' views (`tensors.VIEWS`) and every argument: the repeated call
        # into the caller's out= skips reading the arrays in full and the plan lookup
        self._express: dict[tuple[Any, ...], Callable[[], bool]] = {}
        self._lock = threading.Lock()  # one registry, also when threads (a background warm-up) ask at once
        # Counts reloads: a plan made while one happened was chosen from the old registry, and is not remembered.
        self._generation = 0

    @property
    def registry(self) -> Registry:
        registry = self._registry
        if registry is None:
            with self._lock:
                if self._registry is None:
                    self._registry = load_registry(os.environ if self._environ is None else self._environ)
                registry = self._registry
        return registry

    def reload(self, environ: Mapping[str, str] | None = None) -> None:
        """Forget every plan and rebuild the registry from the installed plugins and ``environ``."""
        with self._lock:  # a thread building the registry meanwhile reads the new environ, not the old one
            self._environ, self._registry = environ, None
            self._generation += 1
            self._plans.clear()
            self._express.clear()

    # --- the calls --------------------------------------------------------------------------------

    def conv(self, x: Any, w: Any, bias: Any = None, *, stride: int | tuple[int, ...] = 1,
             padding: int | tuple[int, ...] = 0, dilation: int | tuple[int, ...] = 1, groups: int = 1,
             activation: str | None = None, coef: float | None = None, fused: bool = False, layout: str = "NCHW",
             allow_tf32: bool = False, backend: str | Backend = "auto", autotune: bool = False, out: Any = None,
             stream: object = None, poison: bool | None = None) -> Any:
        """y = activation(conv(x, w) + bias): cross-correlation over 1, 2 or 3 spatial axes.

        x is (N, C, *spatial) and w (K, C/groups, *kernel) for ``layout="NCHW"``; (N, *spatial, C)
        and (K, *kernel, C/groups) for "NHWC". bias is (K,). stride, padding (symmetric) and
        dilation are an int or one per spatial axis. ``coef``: the clipped_relu ceiling (required
        for it), the elu alpha or the swish beta (default 1). ``fused=True`` requires bias and activation
        to run inside the convolution's kernel: a backend that would run them as steps after it refuses
        (UnsupportedError when none can); by default a backend may run them as steps, and says so once in
        its log. ``allow_tf32`` lets float32 run on TF32 tensor cores. ``autotune`` asks the backend to
        time its algorithms, not guess. ``stream``: a CUDA stream (int or stream object) to run on;
        default the legacy default stream.
        ``out``: an array to write the result into, else one is made like x. ``poison``: fill the
        output with NaN first (default: host outputs only; see the module docstring).
        """
        s = 0 if stream is None else _stream(stream)
        view = VIEWS.get(type(out)) if poison is None else None
        fast: tuple[Any, ...] | None = None
        if view is not None and type(x) is type(out) and type(w) is type(out) and (
                bias is None or type(bias) is type(out)):
            fast = (view(x), view(w), None if bias is None else view(bias), view(out), s, stride, padding, dilation,
                    groups, activation, coef, fused, layout, allow_tf32, backend, autotune, _thread_id())
            try:
                again = self._express.get(fast)
            except TypeError:  # an argument that cannot be a key (a list): the call read in full
                again = fast = None
            if again is not None and fast is not None:
                if again():
                    return out
                self._express.pop(fast, None)  # the run is gone, or another context is current
        xr, wr = as_ref(x, s), as_ref(w, s)
        br = None if bias is None else as_ref(bias, s)
        yr = None if out is None else as_ref(out, s)
        key = ("conv", type(x), xr.shape, xr.strides, xr.dtype, xr.device, wr.shape, wr.strides, wr.dtype, wr.device,
               None if br is None else (br.shape, br.strides, br.dtype, br.device),
               None if yr is None else (yr.shape, yr.strides, yr.dtype, yr.device),
               stride, padding, dilation, groups, activation, coef, fused, layout, allow_tf32, backend)
        try:
            plan = self._plans[key]
        except (KeyError, TypeError):
            generation = self._generation  # read before planning (see _remember)
            plan = self._remember(key, generation, self._plan_conv(xr, wr, br, yr, stride, padding, dilation, groups,
                                                                   activation, coef, fused, layout, allow_tf32,
                                                                   backend))
        if yr is None or poison is not None or yr.device is None:
            out, yr = self._output(plan, out, yr, s, poison, (xr, wr, br))
        elif plan.replay is not None:  # the caller's device out=, as is: the backend may repeat the call faster
            again_key = (xr.ptr, wr.ptr, None if br is None else br.ptr, yr.ptr, s, autotune, _thread_id())
            again = plan.replays.get(again_key)
            if again is not None and again():
                if fast is not None:
                    if len(self._express) >= MAX_REPLAYS:
                        self._express.clear()
                    self._express[fast] = again
                return out
            plan.run(xr, wr, br, yr, plan.spec, autotune=autotune, stream=s)
            _keep(plan.replays, again_key, plan.replay("conv_forward", plan.spec, (xr, wr, br, yr), autotune=autotune,
                                                       stream=s))
            return out
        plan.run(xr, wr, br, yr, plan.spec, autotune=autotune, stream=s)
        return out

    def conv_backward_data(self, dy: Any, w: Any, x_shape: tuple[int, ...] | None = None, *,
                           stride: int | tuple[int, ...] = 1, padding: int | tuple[int, ...] = 0,
                           dilation: int | tuple[int, ...] = 1, groups: int = 1, layout: str = "NCHW",
                           allow_tf32: bool = False, backend: str | Backend = "auto", autotune: bool = False,
                           out: Any = None, stream: object = None, poison: bool | None = None) -> Any:
        """dx, the gradient of ``conv(x, w, ...)`` with respect to x, given dy (the gradient of its output).

        ``x_shape`` (in ``layout`` order) picks among the input sizes a strided convolution maps to
        dy's size; default: out's shape, else the smallest.
        """
        s = 0 if stream is None else _stream(stream)
        dyr, wr = as_ref(dy, s), as_ref(w, s)
        dxr = None if out is None else as_ref(out, s)
        key = ("data", type(dy), dyr.shape, dyr.strides, dyr.dtype, dyr.device, wr.shape, wr.strides, wr.dtype,
               wr.device, None if dxr is None else (dxr.shape, dxr.strides, dxr.dtype, dxr.device),
               x_shape, stride, padding, dilation, groups, layout, allow_tf32, backend)
        try:
            plan = self._plans[key]
        except (KeyError, TypeError):
            generation = self._generation
            plan = self._remember(key, generation, self._plan_backward_data(dyr, wr, dxr, x_shape, stride, padding,
                                                                            dilation, groups, layout, allow_tf32,
                                                                            backend))
        dx, dxr = self._output(plan, out, dxr, s, poison, (dyr, wr))
        plan.run(dyr, wr, dxr, plan.spec, autotune=autotune, stream=s)
        return dx

    def conv_backward_filter(self, x: Any, dy: Any, w_shape: tuple[int, ...] | None = None, *,
                             stride: int | tuple[int, ...] = 1, padding: int | tuple[int, ...] = 0,
                             dilation: int | tuple[int, ...] = 1, groups: int = 1, layout: str = "NCHW",
                             allow_tf32: bool = False, backend: str | Backend = "auto", autotune: bool = False,
                             out: Any = None, stream: object = None, poison: bool | None = None) -> Any:
        """dw, the gradient of ``conv(x, w, ...)`` with respect to w, given dy.

        ``w_shape`` (in ``layout`` order) or ``out`` gives the kernel size, which x and dy do not fix.
        """
        s = 0 if stream is None else _stream(stream)
        xr, dyr = as_ref(x, s), as_ref(dy, s)
        dwr = None if out is None else as_ref(out, s)
        key = ("filter", type(x), xr.shape, xr.strides, xr.dtype, xr.device, dyr.shape, dyr.strides, dyr.dtype,
               dyr.device, None if dwr is None else (dwr.shape, dwr.strides, dwr.dtype, dwr.device),
               w_shape, stride, padding, dilation, groups, layout, allow_tf32, backend)
        try:
            plan = self._plans[key]
        except (KeyError, TypeError):
            generation = self._generation
            plan = self._remember(key, generation, self._plan_backward_filter(xr, dyr, dwr, w_shape, stride,
                                                                              padding, dilation, groups, layout,
                                                                              allow_tf32, backend))
        dw, dwr = self._output(plan, out, dwr, s, poison, (xr, dyr))
        plan.run(xr, dyr, dwr, plan.spec, autotune=autotune, stream=s)
        return dw

    def activation(self, x: Any, mode: str, *, coef: float | None = None, backend: str | Backend = "auto",
                   out: Any = None, stream: object = None, poison: bool | None = None) -> Any:
        """y = mode(x), elementwise; mode is one of sigmoid, relu, tanh, clipped_relu, elu, identity, swish."""
        s = 0 if stream is None else _stream(stream)
        xr = as_ref(x, s)
        yr = None if out is None else as_ref(out, s)
        key = ("act", type(x), xr.shape, xr.strides, xr.dtype, xr.device,
               None if yr is None else (yr.shape, yr.strides, yr.dtype, yr.device), mode, coef, backend)
        try:
            plan = self._plans[key]
        except (KeyError, TypeError):
            generation = self._generation
            plan = self._remember(key, generation, self._plan_activation(xr, yr, mode, coef, backend))
        y, yr = self._output(plan, out, yr, s, poison, (xr,))
        plan.run(xr, yr, plan.spec, stream=s)
        return y

    def activation_backward(self, y: Any, dy: Any, x: Any, mode: str, *, coef: float | None = None,
                            backend: str | Backend = "auto", out: Any = None, stream: object = None,
                            poison: bool | None = None) -> Any:
        """dx = dy * mode'(x), where y = mode(x): cudnnActivationBackward's arguments, in its order."""
        s = 0 if stream is None else _stream(stream)
        yr, dyr, xr = as_ref(y, s), as_ref(dy, s), as_ref(x, s)
        dxr = None if out is None else as_ref(out, s)
        key = ("act_back", type(x), yr.shape, yr.strides, yr.dtype, yr.device, dyr.shape, dyr.strides, dyr.dtype,
               dyr.device, xr.shape, xr.strides, xr.dtype, xr.device,
               None if dxr is None else (dxr.shape, dxr.strides, dxr.dtype, dxr.device), mode, coef, backend)
        try:
            plan = self._plans[key]
        except (KeyError, TypeError):
            generation = self._generation
            plan = self._remember(key, generation,
                                  self._plan_activation_backward(yr, dyr, xr, dxr, mode, coef, backend))
        dx, dxr = self._output(plan, out, dxr, s, poison, (yr, dyr, xr))
        plan.run(yr, dyr, xr, dxr, plan.spec, stream=s)
        return dx

    # --- the per-call steps ---------------------------------------------------------------------------

    def _remember(self, key: Any, generation: int, plan: _Plan) -> _Plan:
        """Keep ``plan`` for the next call of its problem, unless `reload` ran since ``generation`` was read
        (before the plan was made): it may hold a backend of the old registry."""
        with self._lock:
            if generation != self._generation:
                return plan
            if len(self._plans) >= MAX_PLANS:
                self._plans.clear()
            with contextlib.suppress(TypeError):  # an argument given as a list: valid, but it cannot be a key
                self._plans[key] = plan
        return plan

    @staticmethod
    def _output(plan: _Plan, out: Any, ref: TensorRef | None, stream: int, fill: bool | None,
                inputs: tuple[TensorRef | None, ...]) -> tuple[Any, TensorRef]:
        """The output (made, or the caller's), filled with NaN when asked (None: on the host), except where
        the caller's out shares memory with an input: an in-place call, where a fill would destroy the input."""
        if ref is None:
            ref = plan.make_output()  # type: ignore[misc]  # the plan was made for out=None
            out = ref.owner
            if fill or (fill is None and ref.device is None):
                poison(ref, stream)
        elif (fill or (fill is None and ref.device is None)) and not any(
                given is not None and ref.overlaps(given) for given in inputs):
            poison(ref, stream)
        return out, ref

    # --- planning: checks and the choice of backend, on a problem's first call -------------------------

    def _plan_conv(self, xr: TensorRef, wr: TensorRef, br: TensorRef | None, yr: TensorRef | None, stride: Any,
                   padding: Any, dilation: Any, groups: Any, activation: Any, coef: Any, fused: Any, layout: Any,
                   allow_tf32: Any, backend: Any) -> _Plan:
        layout = _layout(layout)
        x, w = _operand("x", xr, layout), _operand("w", wr, layout)
        spatial = len(x.shape) - 2
        _same_rank("w", w, x)
        named = {"x": xr, "w": wr, "bias": br, "out": yr}
        _same_dtype(named)
        _same_device(named)
        mode, coef = (None, 0.0) if activation is None else _activation(activation, coef)
        spec = ConvSpec(_per_axis("stride", stride, spatial, 1), _per_axis("padding", padding, spatial, 0),
                        _per_axis("dilation", dilation, spatial, 1), _groups(groups), layout,
                        _flag("allow_tf32", allow_tf32), mode, coef, _flag("fused", fused))
        k = _check_channels(x.shape[1], w.shape[0], w.shape[1], spec.groups, "x", "w")
        out = _spatial_output(x.shape[2:], w.shape[2:], spec, "x")
        if br is not None and br.shape != (k,):
            raise ShapeError("bias", f"has shape {tuple(br.shape)}; it needs ({k},), one value per output channel")
        shape = _in_layout((x.shape[0], k, *out), layout)
        y = self._result("out", yr, shape, xr, layout)
        chosen = self._choose("conv_forward", spec, (xr, wr, br, y), backend)
        return _Plan(chosen.conv_forward, spec, None if yr is not None else output_maker(xr, y.shape, y.strides),
                     getattr(chosen, "replay", None))

    def _plan_backward_data(self, dyr: TensorRef, wr: TensorRef, dxr: TensorRef | None, x_shape: Any, stride: Any,
                            padding: Any, dilation: Any, groups: Any, layout: Any, allow_tf32: Any, backend: Any
                            ) -> _Plan:
        layout = _layout(layout)
        dy, w = _operand("dy", dyr, layout), _operand("w", wr, layout)
        spatial = len(dy.shape) - 2
        _same_rank("w", w, dy)
        named = {"dy": dyr, "w": wr, "out": dxr}
        _same_dtype(named)
        _same_device(named)
        spec = ConvSpec(_per_axis("stride", stride, spatial, 1), _per_axis("padding", padding, spatial, 0),
                        _per_axis("dilation", dilation, spatial, 1), _groups(groups), layout,
                        _flag("allow_tf32", allow_tf32))
        k, cg, kernel = w.shape[0], w.shape[1], w.shape[2:]
        if dy.shape[1] != k:
            raise ShapeError("dy", f"has {dy.shape[1]} channels; w has {k} output channels")
        c = cg * spec.groups
        _check_channels(c, k, cg, spec.groups, "x", "w")
        if x_shape is None and dxr is not None:
            x_shape = dxr.shape
        if x_shape is None:  # the smallest input that gives dy's size: conv_transpose's with no output padding
            sizes = tuple((o - 1) * step - 2 * pad + (r - 1) * dil + 1 for o, r, pad, dil, step in
                          zip(dy.shape[2:], kernel, spec.padding, spec.dilation, spec.stride, strict=True))
            x_shape = _in_layout((dy.shape[0], c, *sizes), layout)
        wanted = _shape_argument("x_shape", x_shape, len(dy.shape), layout)
        if wanted[:2] != (dy.shape[0], c):
            raise ShapeError("x_shape", f"has batch {wanted[0]} and {wanted[1]} channels; dy and w need "
                             f"batch {dy.shape[0]} and {c} channels")
        if _spatial_output(wanted[2:], kernel, spec, "x_shape") != dy.shape[2:]:
            raise ShapeError("x_shape", f"an input of spatial size {wanted[2:]} gives an output of "
                             f"{_spatial_output(wanted[2:], kernel, spec, 'x_shape')}, not dy's {dy.shape[2:]}")
        dx = self._result("out", dxr, _in_layout(wanted, layout), dyr, layout)
        chosen = self._choose("conv_backward_data", spec, (dyr, wr, dx), backend)
        return _Plan(chosen.conv_backward_data, spec,
                     None if dxr is not None else output_maker(dyr, dx.shape, dx.strides))

    def _plan_backward_filter(self, xr: TensorRef, dyr: TensorRef, dwr: TensorRef | None, w_shape: Any, stride: Any,
                              padding: Any, dilation: Any, groups: Any, layout: Any, allow_tf32: Any, backend: Any
                              ) -> _Plan:
        layout = _layout(layout)
        x, dy = _operand("x", xr, layout), _operand("dy", dyr, layout)
        spatial = len(x.shape) - 2
        _same_rank("dy", dy, x)
        named = {"x": xr, "dy": dyr, "out": dwr}
        _same_dtype(named)
        _same_device(named)
        spec = ConvSpec(_per_axis("stride", stride, spatial, 1), _per_axis("padding", padding, spatial, 0),
                        _per_axis("dilation", dilation, spatial, 1), _groups(groups), layout,
                        _flag("allow_tf32", allow_tf32))
        if w_shape is None:
            if dwr is None:
                raise ArgumentError("w_shape", "is needed: x and dy do not fix the kernel size",
                                    fix="pass w_shape=w.shape, or out=")
            w_shape = dwr.shape
        wanted = _shape_argument("w_shape", w_shape, len(x.shape), layout)
        if x.shape[0] != dy.shape[0]:
            raise ShapeError("dy", f"has batch {dy.shape[0]}; x has batch {x.shape[0]}")
        if wanted[0] != dy.shape[1]:
            raise ShapeError("w_shape", f"has {wanted[0]} output channels; dy has {dy.shape[1]} channels")
        _check_channels(x.shape[1], wanted[0], wanted[1], spec.groups, "x", "w_shape")
        if _spatial_output(x.shape[2:], wanted[2:], spec, "x") != dy.shape[2:]:
            raise ShapeError("dy", f"has spatial size {dy.shape[2:]}; x with a kernel of {wanted[2:]} gives "
                             f"{_spatial_output(x.shape[2:], wanted[2:], spec, 'x')}")
        dw = self._result("out", dwr, _in_layout(wanted, layout), xr, layout)
        chosen = self._choose("conv_backward_filter", spec, (xr, dyr, dw), backend)
        return _Plan(chosen.conv_backward_filter, spec,
                     None if dwr is not None else output_maker(xr, dw.shape, dw.strides))

    def _plan_activation(self, xr: TensorRef, yr: TensorRef | None, mode: Any, coef: Any, backend: Any) -> _Plan:
        named = {"x": xr, "out": yr}
        _same_dtype(named)
        _same_device(named)
        _elements("x", xr)
        spec = ActivationSpec(*_activation(mode, coef))
        y = self._result("out", yr, xr.shape, xr)
        chosen = self._choose("activation_forward", spec, (xr, y), backend)
        return _Plan(chosen.activation_forward, spec, None if yr is not None else output_maker(xr, y.shape, y.strides))

    def _plan_activation_backward(self, yr: TensorRef, dyr: TensorRef, xr: TensorRef, dxr: TensorRef | None,
                                  mode: Any, coef: Any, backend: Any) -> _Plan:
        named = {"y": yr, "dy": dyr, "x": xr, "out": dxr}
        _same_dtype(named)
        _same_device(named)
        _elements("x", xr)
        for name, ref in (("y", yr), ("dy", dyr)):
            if ref.shape != xr.shape:
                raise ShapeError(name, f"has shape {tuple(ref.shape)}; x has {tuple(xr.shape)}")
        spec = ActivationSpec(*_activation(mode, coef))
        dx = self._result("out", dxr, xr.shape, xr)
        chosen = self._choose("activation_backward", spec, (yr, dyr, xr, dx), backend)
        return _Plan(chosen.activation_backward, spec,
                     None if dxr is not None else output_maker(xr, dx.shape, dx.strides))

    @staticmethod
    def _result(name: str, given: TensorRef | None, shape: tuple[int, ...], like: TensorRef,
                layout: str | None = None) -> TensorRef:
        """The caller's output, checked against the result's shape; or a ref (ptr 0) describing the one to make."""
        if given is None:  # the input's memory order, so an NHWC-in-memory input gives an NHWC-in-memory result
            strides = strides_in_order(shape, memory_order(like.strides))
            return TensorRef(0, shape, strides, like.dtype, like.device, like.kind, None)
        if tuple(given.shape) != tuple(shape):
            order = f" ({layout} order)" if layout else ""
            raise ShapeError(name, f"has shape {tuple(given.shape)}; the result has shape {tuple(shape)}{order}")
        if any(stride == 0 and extent > 1 for stride, extent in zip(given.strides, given.shape, strict=True)):
            raise ArgumentError(name, "has a zero stride: its elements overlap")
        flags = getattr(given.owner, "flags", None)
        if given.kind == "numpy" and flags is not None and not flags.writeable:
            raise ArgumentError(name, "is read-only")
        return given

    def _choose(self, op: str, spec: Spec, tensors: tuple[TensorRef | None, ...], backend: str | Backend) -> Backend:
        if not isinstance(backend, str):
            why = backend.supports(op, spec, *tensors)
            if why is not None:
                raise UnsupportedError("backend", f"{backend.name} cannot run {op} here: {why}")
            return backend
        if backend != "auto":
            chosen, why = self.registry.get(backend)
            if chosen is None:
                raise UnsupportedError("backend", str(why))
            why = chosen.supports(op, spec, *tensors)
            if why is not None:
                raise UnsupportedError("backend", f"{backend} cannot run {op} here: {why}")
            return chosen
        registry = self.registry
        names = registry.names
        reasons = []
        preference = ELEMENTWISE_PREFERENCE if op.startswith("activation") else PREFERENCE
        for name in (*(n for n in preference if n in names), *sorted(set(names) - set(preference))):
            chosen, why = registry.get(name)
            if chosen is not None:
                why = chosen.supports(op, spec, *tensors)
                if why is None:
                    return chosen
            reasons.append(f"{name}: {why}")
        reasons += [f"{failed.name}: its plugin failed to load: {failed.reason}" for failed in registry.plugin_failures
                    if failed.broken and failed.name not in names]
        raise UnsupportedError("backend", f"no backend can run {op} here: " + ("; ".join(reasons) or "none installed"),
                               fix=None if reasons else "install cudnnload (its numpy backend is a plugin), or "
                               "unset CUDNNLOAD_BACKENDS")


def _keep(replays: dict[tuple[Any, ...], Callable[[], bool]], key: tuple[Any, ...],
          again: Callable[[], bool] | None) -> None:
    """Remember the replay a backend handed out for ``key`` (or forget the one that stopped working)."""
    if again is None:
        replays.pop(key, None)
        return
    if len(replays) >= MAX_REPLAYS:
        replays.clear()
    replays[key] = again


# --- argument checks ---------------------------------------------------------------------------------

def _layout(layout: Any) -> str:
    if layout not in LAYOUTS:
        raise ArgumentError("layout", f"{layout!r} is not one of {', '.join(LAYOUTS)}")
    return str(layout)


def _operand(name: str, ref: TensorRef, layout: str) -> TensorRef:
    """A convolution operand in (N, C, *spatial) order, checked for 1, 2 or 3 spatial axes and no empty axis."""
    if not 3 <= len(ref.shape) <= 5:
        raise ShapeError(name, f"has {len(ref.shape)} axes (shape {tuple(ref.shape)}); a convolution needs 3, 4 or 5: "
                         f"batch (or output channels), channels and 1, 2 or 3 spatial axes in {layout} order")
    _elements(name, ref)
    return ref.channels_first(layout)


def _elements(name: str, ref: TensorRef) -> None:
    if 0 in ref.shape:
        raise ShapeError(name, f"has an axis of size 0 (shape {tuple(ref.shape)})")


def _same_rank(name: str, ref: TensorRef, first: TensorRef) -> None:
    if len(ref.shape) != len(first.shape):
        raise ShapeError(name, f"has {len(ref.shape)} axes; the input has {len(first.shape)}: both need the same "
                         "number of spatial axes")


def _same_dtype(named: dict[str, TensorRef | None]) -> None:
    (first, ref), *rest = ((name, ref) for name, ref in named.items() if ref is not None)
    for name, other in rest:
        if other is not None and other.dtype != ref.dtype:
            raise DtypeError(name, f"is {other.dtype} but {first} is {ref.dtype}: every tensor of a call has one dtype")


def _same_device(named: dict[str, TensorRef | None]) -> None:
    (first, ref), *rest = ((name, ref) for name, ref in named.items() if ref is not None)
    for name, other in rest:
        if other is None or other.device == ref.device:
            continue
        if other.device is None or ref.device is None:
            host, device = (name, first) if other.device is None else (first, name)
            raise DeviceError(host, f"is in host memory but {device} is on a CUDA device: copy one of them first")
        raise DeviceError(name, f"is on CUDA device {other.device} but {first} is on CUDA device {ref.device}")


def _is_integer(value: Any) -> bool:
    """Python and numpy integers (anything with __index__), but not bools."""
    return not isinstance(value, bool) and hasattr(type(value), "__index__")


def _integer(name: str, value: Any, minimum: int) -> int:
    if not _is_integer(value):
        raise ArgumentError(name, f"{value!r} is not an integer")
    if operator.index(value) < minimum:
        raise ArgumentError(name, f"{value} is below {minimum}")
    return operator.index(value)


def _per_axis(name: str, value: Any, spatial: int, minimum: int) -> tuple[int, ...]:
    """An int for every spatial axis, or a sequence with one per axis; each at least ``minimum``."""
    if _is_integer(value):
        return (_integer(name, value, minimum),) * spatial
    try:
        items = tuple(value)
    except TypeError:
        raise ArgumentError(name, f"{value!r} is neither an int nor a sequence of ints") from None
    if len(items) != spatial:
        raise ArgumentError(name, f"has {len(items)} values for {spatial} spatial axes")
    return tuple(_integer(name, item, minimum) for item in items)


def _groups(groups: Any) -> int:
    return _integer("groups", groups, 1)


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ArgumentError(name, f"{value!r} is not True or False")
    return value


def _activation(mode: Any, coef: Any) -> tuple[str, float]:
    if mode not in ACTIVATIONS:
        raise ArgumentError("activation", f"{mode!r} is not one of {', '.join(ACTIVATIONS)}")
    if coef is None:
        if mode == "clipped_relu":
            raise ArgumentError("coef", "clipped_relu needs its ceiling (6.0 for ReLU6)")
        return mode, _DEFAULT_COEF.get(mode, 0.0)
    if isinstance(coef, bool) or not isinstance(coef, (int, float)) or not math.isfinite(coef):
        raise ArgumentError("coef", f"{coef!r} is not a finite number")
    return mode, float(coef)


def _check_channels(channels: int, k: int, per_group: int, groups: int, x_name: str, w_name: str) -> int:
    """Checks that ``channels`` inputs in ``groups`` groups fit a filter of k outputs and ``per_group`` inputs."""
    if channels % groups:
        raise ShapeError("groups", f"{x_name} has {channels} channels, not a multiple of groups={groups}")
    if k % groups:
        raise ShapeError("groups", f"{w_name} has {k} output channels, not a multiple of groups={groups}")
    if per_group * groups != channels:
        raise ShapeError(w_name, f"has {per_group} input channels per group; {x_name} has {channels} channels in "
                         f"{groups} group{'s' if groups > 1 else ''}, so it needs {channels // groups}")
    return k


def _spatial_output(spatial: tuple[int, ...], kernel: tuple[int, ...], spec: ConvSpec, name: str
                    ) -> tuple[int, ...]:
    out = spec.output_size(tuple(spatial), tuple(kernel))
    if min(out) < 1:
        reach = tuple((r - 1) * dil + 1 for r, dil in zip(kernel, spec.dilation, strict=True))
        raise ShapeError(name, f"spatial size {tuple(spatial)} with padding {spec.padding} is smaller than the "
                         f"dilated kernel {reach}: the output would be {out}")
    return out


def _shape_argument(name: str, shape: Any, rank: int, layout: str) -> tuple[int, ...]:
    """A shape the caller gave (in ``layout`` order), checked and returned in (N, C, *spatial) order."""
    try:
        sizes = tuple(shape)
    except TypeError:
        raise ArgumentError(name, f"{shape!r} is not a shape") from None
    if len(sizes) != rank:
        raise ShapeError(name, f"has {len(sizes)} axes; the other tensors have {rank}")
    for size in sizes:
        if not _is_integer(size) or operator.index(size) < 1:
            raise ShapeError(name, f"{sizes} has a size that is not a positive integer: {size!r}")
    sizes = tuple(operator.index(size) for size in sizes)
    return sizes if layout == "NCHW" else (sizes[0], sizes[-1], *sizes[1:-1])


def _in_layout(shape: tuple[int, ...], layout: str) -> tuple[int, ...]:
    """A (N, C, *spatial) shape in ``layout`` order."""
    return shape if layout == "NCHW" else (shape[0], *shape[2:], shape[1])


_default = Dispatcher()
conv = _default.conv
conv_backward_data = _default.conv_backward_data
conv_backward_filter = _default.conv_backward_filter
activation = _default.activation
activation_backward = _default.activation_backward


def registry() -> Registry:
    """The default dispatcher's registry (what ``backend="auto"`` chooses among)."""
    return _default.registry


def reload(environ: Mapping[str, str] | None = None) -> None:
    """Rebuild the default dispatcher's registry (after installing a plugin, or to apply CUDNNLOAD_BACKENDS)."""
    _default.reload(environ)

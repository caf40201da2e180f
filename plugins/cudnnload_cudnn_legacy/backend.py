"""The cudnn-legacy backend: cuDNN's legacy (descriptor) API through ctypes.

Per problem (shapes, strides, dtype, parameters), once: the descriptors, then the algorithm
(``cudnnGetConvolution*Algorithm_v7``'s first working answer, or with ``autotune=True``
``cudnnFind*AlgorithmEx``'s fastest), remembered on disk by `cudnnload.dispatch.algos` so a new
process skips the query, and its workspace size. Per call: one dict lookup, this thread's
handle (`cudnnload.dispatch.runtime.Runtime`), the workspace, and the cuDNN call(s).

Convolution forward with a bias and ReLU is one ``cudnnConvolutionBiasActivationForward``;
with any other activation, or a bias alone, it is ``cudnnConvolutionForward``, then
``cudnnAddTensor`` and ``cudnnActivationForward`` in place on the output.
``cudnnConvolutionBiasActivationForward`` takes only RELU or IDENTITY, and IDENTITY only with
IMPLICIT_PRECOMP_GEMM (cuDNN API reference, cudnnConvolutionBiasActivationForward).
IDENTITY "does not work with cudnnActivationForward() or cudnnActivationBackward()" (cuDNN API
reference, cudnnActivationMode_t): the identity activation is a ``cudnnTransformTensor`` copy.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

from cudnnload.dispatch.algos import problem_key
from cudnnload.dispatch.backends import ACTIVATIONS, ActivationSpec, ConvSpec, Spec, refusal
from cudnnload.dispatch.runtime import PlanningLock, Runtime, nc_dims, runtime, usable_strides
from cudnnload.dispatch.tensors import TensorRef
from cudnnload.errors import CudnnloadError
from cudnnload.loading.capi import ConvolutionFwdAlgoPerf, MathType
from cudnnload.loading.status import NotSupported, check

from .descriptors import INT_MAX, MAX_DIMS, Descriptors, filter_format, math_type
from .functions import LegacyFunctions

NAME = "cudnn-legacy"

# Scalars cuDNN reads through host pointers: float for FLOAT, HALF and BFLOAT16 data, double for
# DOUBLE (cuDNN developer guide, "Scaling Parameters"). Module-level, so their addresses stay valid.
_SCALARS = {False: (ctypes.c_float(1.0), ctypes.c_float(0.0)), True: (ctypes.c_double(1.0), ctypes.c_double(0.0))}
_ONE_ZERO = {double: (ctypes.addressof(one), ctypes.addressof(zero)) for double, (one, zero) in _SCALARS.items()}

# Activation modes whose backward pass cuDNN 9.19 refused (CUDNN_STATUS_NOT_SUPPORTED) at run time for x
# with padded rows while y, dy and dx were dense; sigmoid, tanh and elu ran (measured on an H200).
STRICT_BACKWARD = frozenset({"relu", "clipped_relu", "swish"})

# (operation, spatial axes) that cuDNN 9.19 refuses for float64 data in NHWC order: every algorithm
# cudnnGetConvolution*Algorithm_v7 listed returned NOT_SUPPORTED (H100, measured: forward in 3-D, both
# gradients in 1-D, 2-D and 3-D; forward in 1-D and 2-D ran).
_NO_DOUBLE_NHWC = frozenset({*((f"conv_forward+{mode}", 3) for mode in ACTIVATIONS), ("conv_forward", 3),
                             *((gradient, spatial) for gradient in ("conv_backward_data", "conv_backward_filter")
                               for spatial in (1, 2, 3))})

# The largest workspace cudnnFind*AlgorithmEx may use; algorithms that need more are skipped.
FIND_WORKSPACE_LIMIT = 1 << 30


@dataclass(frozen=True)
class Direction:
    """The functions of one convolution direction. All three take their tensors in the order
    (a, b, output): forward (x, w, y), backward data (w, dy, dx), backward filter (x, dy, dw)."""

    max_count: str
    heuristic: str
    find: str
    workspace: str
    run: str


DIRECTIONS = {
    "conv_forward": Direction("cudnnGetConvolutionForwardAlgorithmMaxCount", "cudnnGetConvolutionForwardAlgorithm_v7",
                              "cudnnFindConvolutionForwardAlgorithmEx", "cudnnGetConvolutionForwardWorkspaceSize",
                              "cudnnConvolutionForward"),
    "conv_backward_data": Direction("cudnnGetConvolutionBackwardDataAlgorithmMaxCount",
                                    "cudnnGetConvolutionBackwardDataAlgorithm_v7",
                                    "cudnnFindConvolutionBackwardDataAlgorithmEx",
                                    "cudnnGetConvolutionBackwardDataWorkspaceSize", "cudnnConvolutionBackwardData"),
    "conv_backward_filter": Direction("cudnnGetConvolutionBackwardFilterAlgorithmMaxCount",
                                      "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
                                      "cudnnFindConvolutionBackwardFilterAlgorithmEx",
                                      "cudnnGetConvolutionBackwardFilterWorkspaceSize",
                                      "cudnnConvolutionBackwardFilter"),
}
# Which of the op's tensors (in the Backend method's order) is the filter, and the (a, b, output) order.
_ROLES = {"conv_forward": (1, (0, 1, 3)), "conv_backward_data": (1, (1, 0, 2)), "conv_backward_filter": (2, (0, 1, 2))}


def _steps_after(tensors: tuple[TensorRef | None, ...], spec: ConvSpec) -> str | None:
    """What a forward convolution would run after cudnnConvolutionForward (None: nothing, or fused)."""
    bias = len(tensors) == 4 and tensors[2] is not None
    activation = spec.activation not in (None, "identity")
    if bias and spec.activation == "relu":
        return None
    if bias or activation:
        return " and ".join(part for part, present in (("bias", bias), (str(spec.activation), activation))
                            if present)
    return None


def conv_key(op: str, tensors: tuple[TensorRef | None, ...], spec: ConvSpec, autotune: bool) -> tuple[Any, ...]:
    """What a convolution problem is: every tensor's shape and strides, the dtype, the device, the parameters."""
    first = tensors[0]
    assert first is not None
    return (op, *(None if t is None else (t.shape, t.strides) for t in tensors), first.dtype, first.device, spec,
            autotune)


@dataclass
class ConvProblem:
    """One convolution problem's descriptors and algorithm."""

    op: str
    dtype: str
    math: MathType  # what the descriptor was made with (the caller's TF32 choice for float32)
    descriptors: Descriptors
    a: int  # descriptors of the (a, b, output) tensors, as `Direction` orders them
    b: int
    out: int
    conv: int
    one: int  # addresses of the scalars 1 and 0 of the data's type
    zero: int
    persisted_as: str  # the problem's key in the algorithm store
    algo: int = -1
    workspace: int = 0
    tuned: bool = False  # algo is chosen (by heuristics or measurement, now or in an earlier process)
    bias: int = 0  # forward only: bias descriptor, activation descriptor, whether bias + ReLU run fused
    activation: int = 0
    activation_mode: str | None = None
    fused: bool = False


@dataclass
class ElementwiseProblem:
    """One activation problem's descriptors."""

    descriptors: Descriptors
    tensors: tuple[int, ...]  # tensor descriptors, in the Backend method's order
    activation: int  # 0 for identity
    one: int
    zero: int


class LegacyBackend:
    """`cudnnload.backends.Backend` over cuDNN's legacy API."""

    name = NAME

    def __init__(self) -> None:
        self._runtime: Runtime | None = None
        self._functions: LegacyFunctions | None = None
        self._convs: dict[Any, ConvProblem] = {}
        self._elementwise: dict[Any, ElementwiseProblem] = {}
        # serialises problem preparation and tuning (cuDNN queries, descriptors); waits for it are bounded
        self._lock = PlanningLock(f"{NAME} problems")

    # --- Backend ----------------------------------------------------------------------------------

    def availability(self) -> str | None:
        from cudnnload.loading.gpu import device_count

        count, reason = device_count()
        if not count:
            return f"no CUDA device is visible ({reason or 'the driver shows none'})"
        try:
            self._runtime = runtime()
        except (CudnnloadError, OSError) as exc:
            return f"cuDNN could not be loaded: {exc}"
        self._functions = LegacyFunctions(self._runtime.api)
        return None

    def capability(self, operation: str, dtype: str, layout: str, spatial: int) -> str | None:
        if (dtype, layout) == ("float64", "NHWC") and (operation, spatial) in _NO_DOUBLE_NHWC:
            return "cuDNN 9.19 lists no algorithm that runs it on float64 data in NHWC order (measured on an H100)"
        return None

    def supports(self, op: str, spec: Spec, *tensors: TensorRef | None) -> str | None:
        why = refusal(self.capability, op, spec, tensors)
        if why is not None:
            return why
        present = [t for t in tensors if t is not None]
        for ref in present:
            if ref.device is None:
                return "cuDNN runs on the GPU; the data is in host memory"
            why = usable_strides(ref)
            if why is not None:
                return why
            if max(ref.size, *ref.strides) > INT_MAX:
                return "the legacy API counts elements in C ints; this tensor has more than 2**31 - 1"
        if op in DIRECTIONS:
            assert isinstance(spec, ConvSpec)
            filt = tensors[_ROLES[op][0]]
            assert filt is not None
            if filter_format(*nc_dims(filt, spec.layout, widen=False)) is None:
                return "the legacy API takes filters packed as KCRS or KRSC only; this one is strided"
            if spec.fused and _steps_after(tensors, spec):
                return ("fused=True: cudnnConvolutionBiasActivationForward fuses a bias with ReLU only; this "
                        f"convolution's {_steps_after(tensors, spec)} would run as calls after it")
            try:  # descriptors and the heuristic's algorithm: what cuDNN cannot run shows here, as a reason
                self._conv_problem(op, tensors, spec, False, 0)
            except CudnnloadError as exc:
                return exc.message
            return None
        if op in ("activation_forward", "activation_backward"):
            if len(present[0].shape) > MAX_DIMS:
                return f"cuDNN tensors have at most {MAX_DIMS} dims"
            assert isinstance(spec, ActivationSpec)
            if (op == "activation_backward" and spec.mode in STRICT_BACKWARD
                    and not (all(t.is_dense for t in present) and len({tuple(t.strides) for t in present}) == 1)):
                return (f"cudnnActivationBackward runs {spec.mode} only on dense tensors that share their strides "
                        "(measured: NOT_SUPPORTED for a strided x on cuDNN 9.19)")
            return None
        return f"{NAME} does not implement {op}"

    def conv_forward(self, x: TensorRef, w: TensorRef, bias: TensorRef | None, y: TensorRef, spec: ConvSpec, *,
                     autotune: bool = False, stream: int = 0) -> None:
        tensors = (x, w, bias, y)
        key = conv_key("conv_forward", tensors, spec, autotune)
        p = self._convs.get(key) or self._conv_problem("conv_forward", tensors, spec, autotune, stream)
        rt, f = self._runtime, self._functions
        assert rt is not None and f is not None and x.device is not None
        state = rt.state()
        h = rt.handle(state, x.device, stream)
        if not p.tuned:
            self._tune(p, h, state, x.device, stream, (x.ptr, w.ptr, y.ptr))
        ws = rt.workspace(state, x.device, stream, p.workspace)
        if p.fused:
            assert bias is not None
            # z = y with alpha2 = 0: the residual input is not read (as PyTorch's cudnn_convolution_relu does).
            status = f.cudnnConvolutionBiasActivationForward(h, p.one, p.a, x.ptr, p.b, w.ptr, p.conv, p.algo, ws,
                                                            p.workspace, p.zero, p.out, y.ptr, p.bias, bias.ptr,
                                                            p.activation, p.out, y.ptr)
            if status:
                check(status, "cudnnConvolutionBiasActivationForward", f.api)
            return
        status = f.cudnnConvolutionForward(h, p.one, p.a, x.ptr, p.b, w.ptr, p.conv, p.algo, ws, p.workspace, p.zero,
                                           p.out, y.ptr)
        if status:
            check(status, "cudnnConvolutionForward", f.api)
        if bias is not None:
            check(f.cudnnAddTensor(h, p.one, p.bias, bias.ptr, p.one, p.out, y.ptr), "cudnnAddTensor", f.api)
        if p.activation:
            check(f.cudnnActivationForward(h, p.activation, p.one, p.out, y.ptr, p.zero, p.out, y.ptr),
                  "cudnnActivationForward", f.api)

    def conv_backward_data(self, dy: TensorRef, w: TensorRef, dx: TensorRef, spec: ConvSpec, *,
                           autotune: bool = False, stream: int = 0) -> None:
        self._backward("conv_backward_data", (dy, w, dx), spec, autotune, stream)

    def conv_backward_filter(self, x: TensorRef, dy: TensorRef, dw: TensorRef, spec: ConvSpec, *,
                             autotune: bool = False, stream: int = 0) -> None:
        self._backward("conv_backward_filter", (x, dy, dw), spec, autotune, stream)

    def activation_forward(self, x: TensorRef, y: TensorRef, spec: ActivationSpec, *, stream: int = 0) -> None:
        key = ("fwd", x.shape, x.strides, y.strides, x.dtype, spec)
        p = self._elementwise.get(key) or self._activation_problem(key, (x, y), spec)
        rt, f = self._runtime, self._functions
        assert rt is not None and f is not None and x.device is not None
        h = rt.handle(rt.state(), x.device, stream)
        xd, yd = p.tensors
        if p.activation:
            status = f.cudnnActivationForward(h, p.activation, p.one, xd, x.ptr, p.zero, yd, y.ptr)
            if status:
                check(status, "cudnnActivationForward", f.api)
        else:
            check(f.cudnnTransformTensor(h, p.one, xd, x.ptr, p.zero, yd, y.ptr), "cudnnTransformTensor", f.api)

    def activation_backward(self, y: TensorRef, dy: TensorRef, x: TensorRef, dx: TensorRef, spec: ActivationSpec, *,
                            stream: int = 0) -> None:
        key = ("bwd", x.shape, y.strides, dy.strides, x.strides, dx.strides, x.dtype, spec)
        p = self._elementwise.get(key) or self._activation_problem(key, (y, dy, x, dx), spec)
        rt, f = self._runtime, self._functions
        assert rt is not None and f is not None and x.device is not None
        h = rt.handle(rt.state(), x.device, stream)
        yd, dyd, xd, dxd = p.tensors
        if p.activation:
            status = f.cudnnActivationBackward(h, p.activation, p.one, yd, y.ptr, dyd, dy.ptr, xd, x.ptr, p.zero, dxd,
                                               dx.ptr)
            if status:
                check(status, "cudnnActivationBackward", f.api)
        else:  # the identity's gradient passes dy through
            check(f.cudnnTransformTensor(h, p.one, dyd, dy.ptr, p.zero, dxd, dx.ptr), "cudnnTransformTensor", f.api)

    # --- convolution ------------------------------------------------------------------------------

    def _backward(self, op: str, tensors: tuple[TensorRef, TensorRef, TensorRef], spec: ConvSpec, autotune: bool,
                  stream: int) -> None:
        key = conv_key(op, tensors, spec, autotune)
        p = self._convs.get(key) or self._conv_problem(op, tensors, spec, autotune, stream)
        rt, f = self._runtime, self._functions
        device = tensors[0].device
        assert rt is not None and f is not None and device is not None
        state = rt.state()
        h = rt.handle(state, device, stream)
        a, b, out = (tensors[i].ptr for i in _ROLES[op][1])
        if not p.tuned:
            self._tune(p, h, state, device, stream, (a, b, out))
        ws = rt.workspace(state, device, stream, p.workspace)
        run = DIRECTIONS[op].run
        status = getattr(f, run)(h, p.one, p.a, a, p.b, b, p.conv, p.algo, ws, p.workspace, p.zero, p.out, out)
        if status:
            check(status, run, f.api)

    def _conv_problem(self, op: str, tensors: tuple[TensorRef | None, ...], spec: ConvSpec, autotune: bool,
                      stream: int) -> ConvProblem:
        """The problem's descriptors and, unless it is to be measured on the first call, its algorithm; made once."""
        key = conv_key(op, tensors, spec, autotune)
        shapes = [None if t is None else tuple(t.shape) for t in tensors]
        with self._lock.holding(f"preparing {op} on {key[-4]} tensors of shapes {shapes}"):
            found = self._convs.get(key)
            if found is None:
                found = self._convs[key] = self._make_conv(op, tensors, spec, autotune, stream)
            return found

    def _make_conv(self, op: str, tensors: tuple[TensorRef | None, ...], spec: ConvSpec, autotune: bool,
                   stream: int) -> ConvProblem:
        rt, f = self._runtime, self._functions
        assert rt is not None and f is not None
        filter_index, order = _ROLES[op]
        first = tensors[0]
        assert first is not None and first.device is not None
        dtype, device = first.dtype, first.device
        descs = Descriptors(f)
        made: list[int] = []
        geometry: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
        for index in order:
            ref = tensors[index]
            assert ref is not None
            dims, strides = nc_dims(ref, spec.layout)
            geometry.append((dims, strides))
            if index == filter_index:
                layout = filter_format(dims, strides)
                assert layout is not None  # supports() refuses other filters
                made.append(descs.filter(dtype, dims, layout))
            else:
                made.append(descs.tensor(dtype, dims, strides))
        math = math_type(dtype, spec.allow_tf32)
        one, zero = _ONE_ZERO[dtype == "float64"]
        persisted_as = problem_key(op, "autotune" if autotune else "heuristic", dtype, *geometry, spec.stride,
                                   spec.padding, spec.dilation, spec.groups, spec.allow_tf32)
        a, b, out = made
        p = ConvProblem(op, dtype, math, descs, a, b, out, descs.convolution(dtype, spec, math), one, zero,
                        persisted_as)
        if op == "conv_forward":
            self._forward_extras(p, descs, tensors[2], geometry[2][0], spec)
        h = rt.handle(rt.state(), device, stream)
        remembered = rt.choices(device).get(NAME, persisted_as)
        if remembered is not None and self._adopt(p, h, remembered):
            return p
        if not autotune:
            self._choose(p, h, self._heuristic(p, h), device)
        return p

    @staticmethod
    def _forward_extras(p: ConvProblem, descs: Descriptors, bias: TensorRef | None, y_dims: tuple[int, ...],
                        spec: ConvSpec) -> None:
        if bias is not None:
            k, step, units = y_dims[1], bias.strides[0], (1,) * (len(y_dims) - 2)
            p.bias = descs.tensor(p.dtype, (1, k, *units), (k * step, step, *units))
        if spec.activation is not None and spec.activation != "identity":
            p.activation = descs.activation(spec.activation, spec.coef)
        p.fused = bias is not None and spec.activation == "relu"

    def _heuristic(self, p: ConvProblem, h: int) -> list[ConvolutionFwdAlgoPerf]:
        f = self._functions
        assert f is not None
        direction = DIRECTIONS[p.op]
        count = ctypes.c_int()
        check(getattr(f, direction.max_count)(h, ctypes.byref(count)), direction.max_count, f.api)
        perf = (ConvolutionFwdAlgoPerf * max(count.value, 1))()
        returned = ctypes.c_int()
        check(getattr(f, direction.heuristic)(h, p.a, p.b, p.conv, p.out, len(perf), ctypes.byref(returned), perf),
              direction.heuristic, f.api)
        return list(perf[:returned.value])

    def _choose(self, p: ConvProblem, h: int, perf: list[ConvolutionFwdAlgoPerf], device: int) -> None:
        """Take the first working algorithm of ``perf`` (heuristic or measured order), set its math type
        on the descriptor (cuDNN >= 7.4 needs both, as PyTorch's Conv_v7.cpp notes), and remember it."""
        rt, f = self._runtime, self._functions
        assert rt is not None and f is not None
        for result in perf:
            if result.status != 0:
                continue
            if p.math == MathType.FMA_MATH and result.mathType != MathType.FMA_MATH:
                continue  # a tensor-core (TF32) kernel where the caller ruled TF32 out
            choice = {"algo": int(result.algo), "math": int(result.mathType)}
            if self._adopt(p, h, choice):
                rt.choices(device).put(NAME, p.persisted_as, {**choice, "workspace": p.workspace})
                return
        raise NotSupported(3000, DIRECTIONS[p.op].heuristic, major=f.api.major,
                           detail=f"none of the {len(perf)} algorithms cuDNN listed can run this {p.op} problem")

    def _adopt(self, p: ConvProblem, h: int, choice: dict[str, Any]) -> bool:
        """Use ``choice`` ({algo, math}) if cuDNN accepts it for this problem: its workspace query says so."""
        f = self._functions
        assert f is not None
        try:
            algo, math = int(choice["algo"]), int(choice["math"])
        except (KeyError, TypeError, ValueError):
            return False
        if f.cudnnSetConvolutionMathType(p.conv, math):
            return False
        size = ctypes.c_size_t()
        if getattr(f, DIRECTIONS[p.op].workspace)(h, p.a, p.b, p.conv, p.out, algo, ctypes.byref(size)):
            return False
        p.algo, p.workspace, p.tuned = algo, size.value, True
        return True

    def _tune(self, p: ConvProblem, h: int, state: Any, device: int, stream: int, pointers: tuple[int, int, int]
              ) -> None:
        """Time every algorithm on the caller's data (cudnnFind*AlgorithmEx; it writes the output) and adopt
        the fastest that runs."""
        rt, f = self._runtime, self._functions
        assert rt is not None and f is not None
        with self._lock.holding(f"autotuning {p.persisted_as}"):
            if p.tuned:
                return
            listed = self._heuristic(p, h)
            need = max((int(r.memory) for r in listed if r.status == 0 and r.memory <= FIND_WORKSPACE_LIMIT),
                       default=0)
            ws = rt.workspace(state, device, stream, need)
            direction = DIRECTIONS[p.op]
            perf = (ConvolutionFwdAlgoPerf * max(len(listed), 1))()
            returned = ctypes.c_int()
            a, b, out = pointers
            check(getattr(f, direction.find)(h, p.a, a, p.b, b, p.conv, p.out, out, len(perf),
                                             ctypes.byref(returned), perf, ws, need), direction.find, f.api)
            # cudnnFind*AlgorithmEx returns its results fastest first (cuDNN API reference).
            self._choose(p, h, list(perf[:returned.value]), device)

    # --- activation -------------------------------------------------------------------------------

    def _activation_problem(self, key: tuple[Any, ...], tensors: tuple[TensorRef, ...], spec: ActivationSpec
                            ) -> ElementwiseProblem:
        f = self._functions
        assert f is not None
        with self._lock.holding(f"preparing activation {key}"):
            found = self._elementwise.get(key)
            if found is None:
                descs = Descriptors(f)
                dtype = tensors[0].dtype
                made = tuple(descs.tensor(dtype, tuple(t.shape), tuple(t.strides)) for t in tensors)
                activation = 0 if spec.mode == "identity" else descs.activation(spec.mode, spec.coef)
                found = self._elementwise[key] = ElementwiseProblem(descs, made, activation,
                                                                    *_ONE_ZERO[dtype == "float64"])
            return found

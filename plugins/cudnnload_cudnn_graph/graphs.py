"""Operation graphs: what to ask cuDNN for (pure data), and the descriptors that ask it.

`conv_graph` describes one convolution problem as a `GraphSpec`: its tensors (dims in
(N, C, *spatial) order with the caller's strides, so NHWC and strided views need no copy),
the convolution, and for the forward direction the pointwise operations fused after it:
conv fprop -> ADD of a bias broadcast as [1, K, 1, 1] -> activation, the intermediate
results virtual (never written to memory). Where no engine builds that fused graph, the
backend runs it as two steps: the convolution with its bias, then `epilogue_graph` (the
activation on y, in place). `activation_graph` is one pointwise operation, forward or
backward, on tensors seen as packed rows. A `GraphSpec` is hashable: it is the plan cache's key. `build` turns one into
finalized backend descriptors.

cuDNN's convolution tensors may carry the groups in their dims: "X [N, GC, ...], W [GK, C, ...],
Y [N, GK, ...]" (cudnn_graph.h, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR), so a
grouped convolution needs nothing more than its filter's shape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cudnnload.dispatch.backends import ActivationSpec, ConvSpec
from cudnnload.dispatch.runtime import DATA_TYPES, alignment, nc_dims, widened
from cudnnload.dispatch.tensors import TensorRef, memory_order, strides_in_order
from cudnnload.loading.capi import ConvolutionMode, DataType

from .backend_api import Attribute as A
from .backend_api import AttributeType as T
from .backend_api import DescriptorType as D
from .backend_api import GraphApi, PointwiseMode

# Activation -> its forward and backward pointwise modes and the attribute carrying the coefficient
# (cudnn_graph.h: cudnnPointwiseMode_t and the CUDNN_BACKEND_POINTWISE_DESCRIPTOR attributes). Clipped ReLU is
# RELU with an upper clip; the identity's backward passes dy through (IDENTITY on dy).
ACTIVATIONS: dict[str, tuple[PointwiseMode, PointwiseMode, A | None]] = {
    "relu": (PointwiseMode.RELU_FWD, PointwiseMode.RELU_BWD, None),
    "clipped_relu": (PointwiseMode.RELU_FWD, PointwiseMode.RELU_BWD, A.POINTWISE_RELU_UPPER_CLIP),
    "elu": (PointwiseMode.ELU_FWD, PointwiseMode.ELU_BWD, A.POINTWISE_ELU_ALPHA),
    "sigmoid": (PointwiseMode.SIGMOID_FWD, PointwiseMode.SIGMOID_BWD, None),
    "tanh": (PointwiseMode.TANH_FWD, PointwiseMode.TANH_BWD, None),
    "swish": (PointwiseMode.SWISH_FWD, PointwiseMode.SWISH_BWD, A.POINTWISE_SWISH_BETA),
    "identity": (PointwiseMode.IDENTITY, PointwiseMode.IDENTITY, None),
}

# The tensors of each operation, in the Backend method's order.
ROLES = {
    "conv_forward": ("x", "w", "bias", "y"),
    "conv_backward_data": ("dy", "w", "dx"),
    "conv_backward_filter": ("x", "dy", "dw"),
    "activation_forward": ("x", "y"),
    "activation_backward": ("y", "dy", "x", "dx"),
}
CONVOLUTIONS = ("conv_forward", "conv_backward_data", "conv_backward_filter")
_OPERATION = {"conv_forward": D.OPERATION_CONVOLUTION_FORWARD,
              "conv_backward_data": D.OPERATION_CONVOLUTION_BACKWARD_DATA,
              "conv_backward_filter": D.OPERATION_CONVOLUTION_BACKWARD_FILTER}
# Operand attributes per direction: (alpha, beta, conv desc, {role: attribute}).
_OPERANDS = {
    "conv_forward": (A.OPERATION_CONVOLUTION_FORWARD_ALPHA, A.OPERATION_CONVOLUTION_FORWARD_BETA,
                     A.OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                     {"x": A.OPERATION_CONVOLUTION_FORWARD_X, "w": A.OPERATION_CONVOLUTION_FORWARD_W,
                      "y": A.OPERATION_CONVOLUTION_FORWARD_Y}),
    "conv_backward_data": (A.OPERATION_CONVOLUTION_BWD_DATA_ALPHA, A.OPERATION_CONVOLUTION_BWD_DATA_BETA,
                           A.OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                           {"dy": A.OPERATION_CONVOLUTION_BWD_DATA_DY, "w": A.OPERATION_CONVOLUTION_BWD_DATA_W,
                            "dx": A.OPERATION_CONVOLUTION_BWD_DATA_DX}),
    "conv_backward_filter": (A.OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, A.OPERATION_CONVOLUTION_BWD_FILTER_BETA,
                             A.OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                             {"x": A.OPERATION_CONVOLUTION_BWD_FILTER_X, "dy": A.OPERATION_CONVOLUTION_BWD_FILTER_DY,
                              "dw": A.OPERATION_CONVOLUTION_BWD_FILTER_DW}),
}
# uids: the method's tensors are 1, 2, ... in its order; the virtual intermediates have their own.
_CONV_OUT, _BIASED = 101, 102
# What a uid binds to in a variant pack: the method's tensor of that index, or ZERO_BIAS, a zero-filled
# buffer of the bias's size that the backend keeps: a convolution with an activation and no bias is built
# as one with a zero bias, because cuDNN has precompiled engines for conv -> ADD -> RELU but none for
# conv -> RELU (9.28: engines 0, 11, 35 and 36 of 61 against none of 12 for a 3x3 float16 NCHW problem,
# read without a GPU): those need no run-time compilation on their first call.
ZERO_BIAS = -1


@dataclass(frozen=True)
class Tensor:
    uid: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: DataType
    alignment: int  # bytes every pointer bound to it will be aligned to
    virtual: bool = False


@dataclass(frozen=True)
class Pointwise:
    mode: PointwiseMode
    x: int  # uids
    y: int  # the output: dx for a backward mode
    b: int | None = None
    dy: int | None = None  # backward modes: the gradient of the activation's output
    parameter: tuple[A, float] | None = None  # (attribute, value), e.g. the ELU alpha


@dataclass(frozen=True)
class Convolution:
    op: str  # one of CONVOLUTIONS
    operands: tuple[tuple[str, int], ...]  # convolution role -> uid
    padding: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]


@dataclass(frozen=True)
class GraphSpec:
    """One operation graph: a convolution and the pointwise operations after it, or pointwise operations alone."""

    op: str  # a key of ROLES: the Backend method this graph serves (wholly, or as one of its steps)
    tensors: tuple[Tensor, ...]
    conv: Convolution | None
    pointwise: tuple[Pointwise, ...]
    bindings: tuple[tuple[int, int], ...]  # (uid, what it binds to: the method's tensor index, or ZERO_BIAS)
    compute: DataType
    allow_tf32: bool = False

    @property
    def uids(self) -> tuple[int, ...]:
        return tuple(uid for uid, _ in self.bindings)

    def pointers(self, tensors: tuple[TensorRef | None, ...], zero_bias: int = 0) -> list[int]:
        """The address of each bound uid, in `bindings` order, for the method's ``tensors``."""
        return [zero_bias if index == ZERO_BIAS else tensors[index].ptr  # type: ignore[union-attr]
                for _, index in self.bindings]

    @property
    def zero_bias(self) -> int:
        """Bytes of the zero bias it binds; 0 for none."""
        for uid, index in self.bindings:
            if index == ZERO_BIAS:
                tensor = next(t for t in self.tensors if t.uid == uid)
                return tensor.dims[1] * _ITEMSIZE[tensor.dtype]
        return 0

    def text(self) -> str:
        """A stable one-line description, for the on-disk choice store."""
        tensors = ";".join(f"{t.uid}:{t.dims}:{t.strides}:{int(t.dtype)}:{t.alignment}:{int(t.virtual)}"
                           for t in self.tensors)
        ops = ";".join(f"{int(p.mode)}:{p.x}:{p.b}:{p.dy}:{p.y}:{p.parameter and (int(p.parameter[0]), p.parameter[1])}"
                       for p in self.pointwise)
        conv = self.conv
        geometry = "-" if conv is None else f"{conv.op}|{conv.operands}|{conv.padding}|{conv.stride}|{conv.dilation}"
        return f"{self.op}|{tensors}|{int(self.compute)}|{geometry}|{ops}|{self.bindings}|{int(self.allow_tf32)}"


_ITEMSIZE = {DataType.FLOAT: 4, DataType.HALF: 2, DataType.BFLOAT16: 2, DataType.DOUBLE: 8}


def _compute(dtype: DataType) -> DataType:
    return DataType.DOUBLE if dtype == DataType.DOUBLE else DataType.FLOAT


def conv_graph(op: str, tensors: tuple[TensorRef | None, ...], spec: ConvSpec) -> GraphSpec:
    """The graph of a convolution problem (``tensors`` in the Backend method's order, in ``spec.layout``
    order): for the forward direction, bias and activation fused after the convolution (`_fuse`)."""
    roles = ROLES[op]
    first = tensors[0]
    assert first is not None
    dtype = DATA_TYPES[first.dtype]
    made: list[Tensor] = []
    bindings: list[tuple[int, int]] = []
    operands: list[tuple[str, int]] = []
    for index, (role, ref) in enumerate(zip(roles, tensors, strict=True)):
        if ref is None:
            continue
        uid = index + 1
        bindings.append((uid, index))
        if role == "bias":
            made.append(_bias(uid, ref.shape[0], ref.strides[0], len(made[0].dims), dtype, alignment(ref.ptr)))
            continue
        dims, strides = nc_dims(ref, spec.layout)
        made.append(Tensor(uid, dims, strides, dtype, alignment(ref.ptr)))
        operands.append((role, uid))
    pointwise: list[Pointwise] = []
    if op == "conv_forward" and spec.activation not in (None, "identity"):
        if tensors[2] is None:  # a zero bias (see ZERO_BIAS)
            y = made[-1]
            made.append(_bias(3, y.dims[1], 1, len(y.dims), dtype, 16))
            bindings.insert(2, (3, ZERO_BIAS))
        operands, pointwise = _fuse(operands, made, 3, spec)
    elif op == "conv_forward" and tensors[2] is not None:
        operands, pointwise = _fuse(operands, made, 3, spec)
    conv = Convolution(op, tuple(operands), widened(spec.padding, 0), widened(spec.stride, 1),
                       widened(spec.dilation, 1))
    return GraphSpec(op, tuple(made), conv, tuple(pointwise), tuple(bindings), _compute(dtype), spec.allow_tf32)


def _bias(uid: int, k: int, step: int, rank: int, dtype: DataType, align: int) -> Tensor:
    """A bias of K values broadcast as [1, K, 1, ...] over a rank-``rank`` output."""
    units = (1,) * (rank - 2)
    return Tensor(uid, (1, k, *units), (k * step, step, *units), dtype, align)


def _fuse(operands: list[tuple[str, int]], made: list[Tensor], bias: int, spec: ConvSpec
          ) -> tuple[list[tuple[str, int]], list[Pointwise]]:
    """Route the convolution's output through bias and activation: conv -> ADD bias -> [activation] -> y."""
    y = next(t for t in made if t.uid == dict(operands)["y"])
    # Intermediates in float (the compute type), dense in y's memory order, as cuDNN's frontend makes virtuals.
    virtual_strides = strides_in_order(y.dims, memory_order_of(y))
    made.append(Tensor(_CONV_OUT, y.dims, virtual_strides, DataType.FLOAT, 16, virtual=True))
    operands = [(role, _CONV_OUT if role == "y" else uid) for role, uid in operands]
    if spec.activation in (None, "identity"):
        return operands, [Pointwise(PointwiseMode.ADD, _CONV_OUT, y.uid, b=bias)]
    made.append(Tensor(_BIASED, y.dims, virtual_strides, DataType.FLOAT, 16, virtual=True))
    forward, _, attribute = ACTIVATIONS[spec.activation]
    return operands, [Pointwise(PointwiseMode.ADD, _CONV_OUT, _BIASED, b=bias),
                      Pointwise(forward, _BIASED, y.uid,
                                parameter=None if attribute is None else (attribute, spec.coef))]


def epilogue_graph(tensors: tuple[TensorRef | None, ...], spec: ConvSpec) -> GraphSpec:
    """The activation of a forward convolution applied to its output y in place: the step after
    `conv_graph` of the same problem without the activation (the bias stays fused into the convolution),
    where no engine fuses the activation too (cuDNN 9.19: swish after a convolution in NCHW order, measured).
    y must be `flat`."""
    y = tensors[3]
    assert y is not None and spec.activation is not None
    graph = activation_graph("activation_forward", (y, y), ActivationSpec(spec.activation, spec.coef))
    return GraphSpec("conv_forward", graph.tensors, None, graph.pointwise, ((1, 3), (2, 3)), graph.compute)


def flat(tensors: tuple[TensorRef, ...]) -> bool:
    """Whether elementwise ``tensors`` can be seen as one packed row each: dense, with the same shape and the
    same memory order, so that element i of one is element i of the others. cuDNN 9.19's engine for a
    pointwise graph takes only "fully packed" tensors in N-spatial-C, C-N-spatial or C-spatial-N order
    (NOT_SUPPORTED_LAYOUT for NCHW, measured on an H100), which a row [1, n, 1, 1] is."""
    first = tensors[0]
    order = _order(first)
    return all(t.is_dense and t.shape == first.shape and _order(t) == order for t in tensors)


def _order(ref: TensorRef) -> tuple[int, ...]:
    """The memory order of ``ref``'s axes longer than one (the others are never stepped over)."""
    return tuple(axis for axis in memory_order(ref.strides) if ref.shape[axis] != 1)


def activation_graph(op: str, tensors: tuple[TensorRef, ...], spec: ActivationSpec) -> GraphSpec:
    """One pointwise operation: y = mode(x), or for the backward direction dx from dy and x (the activation's
    input; cudnn_graph.h, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: DXDESC, DYDESC, XDESC). Every tensor,
    `flat`, is described as the row [1, n, 1, 1] (packed N-spatial-C): elementwise, only the element order
    matters."""
    dtype = DATA_TYPES[tensors[0].dtype]
    forward, backward, attribute = ACTIVATIONS[spec.mode]
    parameter = None if attribute is None else (attribute, spec.coef)
    n = tensors[0].size

    def tensor(index: int) -> Tensor:
        return Tensor(index + 1, (1, n, 1, 1), (n, 1, n, n), dtype, alignment(tensors[index].ptr))

    if op == "activation_forward":
        made, chain = [tensor(0), tensor(1)], Pointwise(forward, 1, 2, parameter=parameter)
    elif spec.mode == "identity":  # dx = dy
        made, chain = [tensor(1), tensor(3)], Pointwise(PointwiseMode.IDENTITY, 2, 4)
    else:
        made, chain = [tensor(1), tensor(2), tensor(3)], Pointwise(backward, 3, 4, dy=2, parameter=parameter)
    return GraphSpec(op, tuple(made), None, (chain,), tuple((t.uid, t.uid - 1) for t in made), _compute(dtype))


def memory_order_of(tensor: Tensor) -> tuple[int, ...]:
    """The axes of ``tensor`` from outermost to innermost in memory."""
    return tuple(sorted(range(len(tensor.dims)), key=lambda axis: -tensor.strides[axis]))


@dataclass
class OperationGraph:
    """A finalized operation graph and every descriptor it refers to (kept alive as long as it is)."""

    desc: int
    owned: list[int]

    def destroy(self, graph_api: GraphApi) -> None:
        graph_api.destroy_all(self.owned)


def build(g: GraphApi, spec: GraphSpec, handle: int) -> OperationGraph:
    """Make and finalize the descriptors of ``spec`` (cudnn-facts §5, steps 1-6) for the device of
    ``handle`` (0: no device, enough to finalize the graph but not to rank engines for a GPU)."""
    owned: list[int] = []

    def make(kind: D) -> int:
        return g.create_owned(kind, owned)

    try:
        tensors: dict[int, int] = {}
        for t in spec.tensors:
            desc = make(D.TENSOR)
            g.set(desc, A.TENSOR_UNIQUE_ID, T.INT64, [t.uid])
            g.set(desc, A.TENSOR_DATA_TYPE, T.DATA_TYPE, [t.dtype])
            g.set(desc, A.TENSOR_DIMENSIONS, T.INT64, t.dims)
            g.set(desc, A.TENSOR_STRIDES, T.INT64, t.strides)
            g.set(desc, A.TENSOR_BYTE_ALIGNMENT, T.INT64, [t.alignment])
            if t.virtual:
                g.set(desc, A.TENSOR_IS_VIRTUAL, T.BOOLEAN, [True])
            g.finalize(desc, f"tensor {t.uid}")
            tensors[t.uid] = desc
        operations = [] if spec.conv is None else [_convolution(g, spec, spec.conv, tensors, make)]
        for p in spec.pointwise:
            mode = make(D.POINTWISE)
            g.set(mode, A.POINTWISE_MODE, T.POINTWISE_MODE, [p.mode])
            g.set(mode, A.POINTWISE_MATH_PREC, T.DATA_TYPE, [DataType.FLOAT])
            if p.parameter is not None:
                # FLOAT, the math precision's type (the attribute takes CUDNN_TYPE_DOUBLE or CUDNN_TYPE_FLOAT).
                g.set(mode, p.parameter[0], T.FLOAT, [p.parameter[1]])
            g.finalize(mode, f"pointwise {p.mode.name}")
            op = make(D.OPERATION_POINTWISE)
            g.set(op, A.OPERATION_POINTWISE_PW_DESCRIPTOR, T.BACKEND_DESCRIPTOR, [mode])
            g.set(op, A.OPERATION_POINTWISE_XDESC, T.BACKEND_DESCRIPTOR, [tensors[p.x]])
            if p.b is not None:
                g.set(op, A.OPERATION_POINTWISE_BDESC, T.BACKEND_DESCRIPTOR, [tensors[p.b]])
            if p.dy is None:
                g.set(op, A.OPERATION_POINTWISE_YDESC, T.BACKEND_DESCRIPTOR, [tensors[p.y]])
            else:
                g.set(op, A.OPERATION_POINTWISE_DYDESC, T.BACKEND_DESCRIPTOR, [tensors[p.dy]])
                g.set(op, A.OPERATION_POINTWISE_DXDESC, T.BACKEND_DESCRIPTOR, [tensors[p.y]])
            g.finalize(op, f"pointwise {p.mode.name} operation")
            operations.append(op)
        graph = make(D.OPERATIONGRAPH)
        if handle:
            g.set(graph, A.OPERATIONGRAPH_HANDLE, T.HANDLE, [handle])
        g.set(graph, A.OPERATIONGRAPH_OPS, T.BACKEND_DESCRIPTOR, operations)
        g.finalize(graph, "operation graph")
    except Exception:
        OperationGraph(0, owned).destroy(g)
        raise
    return OperationGraph(graph, owned)


def _convolution(g: GraphApi, spec: GraphSpec, conv: Convolution, tensors: dict[int, int],
                 make: Callable[[D], int]) -> int:
    """The finalized convolution operation of ``spec``."""
    desc = make(D.CONVOLUTION)
    g.set(desc, A.CONVOLUTION_SPATIAL_DIMS, T.INT64, [len(conv.padding)])
    g.set(desc, A.CONVOLUTION_COMP_TYPE, T.DATA_TYPE, [spec.compute])
    g.set(desc, A.CONVOLUTION_CONV_MODE, T.CONVOLUTION_MODE, [ConvolutionMode.CROSS_CORRELATION])
    g.set(desc, A.CONVOLUTION_PRE_PADDINGS, T.INT64, conv.padding)
    g.set(desc, A.CONVOLUTION_POST_PADDINGS, T.INT64, conv.padding)
    g.set(desc, A.CONVOLUTION_DILATIONS, T.INT64, conv.dilation)
    g.set(desc, A.CONVOLUTION_FILTER_STRIDES, T.INT64, conv.stride)
    g.finalize(desc, "convolution")
    alpha, beta, conv_attribute, roles = _OPERANDS[conv.op]
    scalar = T.DOUBLE if spec.compute == DataType.DOUBLE else T.FLOAT
    operation = make(_OPERATION[conv.op])
    for role, uid in conv.operands:
        g.set(operation, roles[role], T.BACKEND_DESCRIPTOR, [tensors[uid]])
    g.set(operation, conv_attribute, T.BACKEND_DESCRIPTOR, [desc])
    g.set(operation, alpha, scalar, [1.0])
    g.set(operation, beta, scalar, [0.0])
    g.finalize(operation, conv.op)
    return operation


def engine_count(g: GraphApi, graph: OperationGraph) -> int:
    """How many engines cuDNN has for the graph (CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT)."""
    return int(g.get(graph.desc, A.OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, T.INT64, 1)[0])

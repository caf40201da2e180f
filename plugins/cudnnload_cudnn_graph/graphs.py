"""Operation graphs: what to ask cuDNN for (pure data), and the descriptors that ask it.

`conv_graph` describes one convolution problem as a `GraphSpec`: its tensors (dims in
(N, C, *spatial) order with the caller's strides, so NHWC and strided views need no copy),
the convolution, and for the forward direction the pointwise operations fused after it:
conv fprop -> ADD of a bias broadcast as [1, K, 1, 1] -> activation, the intermediate
results virtual (never written to memory). A `GraphSpec` is hashable: it is the plan
cache's key. `build` turns one into finalized backend descriptors.

cuDNN's convolution tensors may carry the groups in their dims: "X [N, GC, ...], W [GK, C, ...],
Y [N, GK, ...]" (cudnn_graph.h, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR), so a
grouped convolution needs nothing more than its filter's shape.
"""

from __future__ import annotations

from dataclasses import dataclass

from cudnnload.backends import ConvSpec
from cudnnload.dispatch.runtime import DATA_TYPES, alignment, nc_dims, widened
from cudnnload.loading.capi import ConvolutionMode, DataType
from cudnnload.tensors import TensorRef, strides_in_order

from .backend_api import Attribute as A
from .backend_api import AttributeType as T
from .backend_api import DescriptorType as D
from .backend_api import GraphApi, PointwiseMode

# Activation -> pointwise mode and the attribute carrying ConvSpec.coef (cudnn_graph.h, cudnnPointwiseMode_t
# and the CUDNN_BACKEND_POINTWISE_DESCRIPTOR attributes). Clipped ReLU is RELU_FWD with an upper clip.
ACTIVATIONS: dict[str, tuple[PointwiseMode, A | None]] = {
    "relu": (PointwiseMode.RELU_FWD, None),
    "clipped_relu": (PointwiseMode.RELU_FWD, A.POINTWISE_RELU_UPPER_CLIP),
    "elu": (PointwiseMode.ELU_FWD, A.POINTWISE_ELU_ALPHA),
    "sigmoid": (PointwiseMode.SIGMOID_FWD, None),
    "tanh": (PointwiseMode.TANH_FWD, None),
    "swish": (PointwiseMode.SWISH_FWD, A.POINTWISE_SWISH_BETA),
}

# The tensors of each direction, in the Backend method's order, and which convolution operand each is.
ROLES = {
    "conv_forward": ("x", "w", "bias", "y"),
    "conv_backward_data": ("dy", "w", "dx"),
    "conv_backward_filter": ("x", "dy", "dw"),
}
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
_CONV_OUT, _BIASED = 101, 102  # uids of the virtual intermediates (real tensors are numbered from 1)


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
    y: int
    b: int | None = None
    parameter: tuple[A, float] | None = None  # (attribute, value), e.g. the ELU alpha


@dataclass(frozen=True)
class GraphSpec:
    op: str  # a key of ROLES
    tensors: tuple[Tensor, ...]
    operands: tuple[tuple[str, int], ...]  # convolution role -> uid
    compute: DataType
    padding: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    pointwise: tuple[Pointwise, ...]
    io: tuple[int, ...]  # uid of each of the method's tensors, in its order (0 for an absent bias)
    allow_tf32: bool = False

    def text(self) -> str:
        """A stable one-line description, for the on-disk choice store."""
        tensors = ";".join(f"{t.uid}:{t.dims}:{t.strides}:{int(t.dtype)}:{t.alignment}:{int(t.virtual)}"
                           for t in self.tensors)
        ops = ";".join(f"{int(p.mode)}:{p.x}:{p.b}:{p.y}:{p.parameter and (int(p.parameter[0]), p.parameter[1])}"
                       for p in self.pointwise)
        return (f"{self.op}|{tensors}|{int(self.compute)}|{self.padding}|{self.stride}|{self.dilation}|{ops}|"
                f"{int(self.allow_tf32)}")


def conv_graph(op: str, tensors: tuple[TensorRef | None, ...], spec: ConvSpec) -> GraphSpec:
    """The graph of a convolution problem (``tensors`` in the Backend method's order, in ``spec.layout`` order)."""
    roles = ROLES[op]
    first = tensors[0]
    assert first is not None
    dtype = DATA_TYPES[first.dtype]
    compute = DataType.DOUBLE if dtype == DataType.DOUBLE else DataType.FLOAT
    made: list[Tensor] = []
    io: list[int] = []
    operands: list[tuple[str, int]] = []
    for uid, (role, ref) in enumerate(zip(roles, tensors, strict=True), start=1):
        if ref is None:
            io.append(0)
            continue
        io.append(uid)
        if role == "bias":
            k, step = ref.shape[0], ref.strides[0]
            rank = len(made[0].dims)
            made.append(Tensor(uid, (1, k) + (1,) * (rank - 2), (k * step, step) + (1,) * (rank - 2), dtype,
                               alignment(ref.ptr)))
            continue
        dims, strides = nc_dims(ref, spec.layout)
        made.append(Tensor(uid, dims, strides, dtype, alignment(ref.ptr)))
        operands.append((role, uid))
    pointwise: list[Pointwise] = []
    if op == "conv_forward":
        operands, made, pointwise = _fuse(operands, made, io[2] or None, spec)
    return GraphSpec(op, tuple(made), tuple(operands), compute, widened(spec.padding, 0), widened(spec.stride, 1),
                     widened(spec.dilation, 1), tuple(pointwise), tuple(io), spec.allow_tf32)


def _fuse(operands: list[tuple[str, int]], made: list[Tensor], bias: int | None, spec: ConvSpec
          ) -> tuple[list[tuple[str, int]], list[Tensor], list[Pointwise]]:
    """Route the convolution's output through bias and activation: conv -> [ADD bias] -> [activation] -> y."""
    activation = ACTIVATIONS.get(spec.activation or "")
    if bias is None and activation is None:
        return operands, made, []
    y = next(t for t in made if t.uid == dict(operands)["y"])
    # Intermediates in float (the compute type), dense in y's memory order, as cuDNN's frontend makes virtuals.
    order = memory_order_of(y)
    virtual_strides = strides_in_order(y.dims, order)
    chain: list[Pointwise] = []
    current = _CONV_OUT
    made.append(Tensor(_CONV_OUT, y.dims, virtual_strides, DataType.FLOAT, 16, virtual=True))
    operands = [(role, _CONV_OUT if role == "y" else uid) for role, uid in operands]
    if bias is not None:
        target = _BIASED if activation is not None else y.uid
        if activation is not None:
            made.append(Tensor(_BIASED, y.dims, virtual_strides, DataType.FLOAT, 16, virtual=True))
        chain.append(Pointwise(PointwiseMode.ADD, current, target, b=bias))
        current = target
    if activation is not None:
        mode, attribute = activation
        chain.append(Pointwise(mode, current, y.uid, parameter=None if attribute is None else (attribute, spec.coef)))
    return operands, made, chain


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
        conv = make(D.CONVOLUTION)
        g.set(conv, A.CONVOLUTION_SPATIAL_DIMS, T.INT64, [len(spec.padding)])
        g.set(conv, A.CONVOLUTION_COMP_TYPE, T.DATA_TYPE, [spec.compute])
        g.set(conv, A.CONVOLUTION_CONV_MODE, T.CONVOLUTION_MODE, [ConvolutionMode.CROSS_CORRELATION])
        g.set(conv, A.CONVOLUTION_PRE_PADDINGS, T.INT64, spec.padding)
        g.set(conv, A.CONVOLUTION_POST_PADDINGS, T.INT64, spec.padding)
        g.set(conv, A.CONVOLUTION_DILATIONS, T.INT64, spec.dilation)
        g.set(conv, A.CONVOLUTION_FILTER_STRIDES, T.INT64, spec.stride)
        g.finalize(conv, "convolution")
        alpha, beta, conv_attribute, roles = _OPERANDS[spec.op]
        scalar = T.DOUBLE if spec.compute == DataType.DOUBLE else T.FLOAT
        operation = make(_OPERATION[spec.op])
        for role, uid in spec.operands:
            g.set(operation, roles[role], T.BACKEND_DESCRIPTOR, [tensors[uid]])
        g.set(operation, conv_attribute, T.BACKEND_DESCRIPTOR, [conv])
        g.set(operation, alpha, scalar, [1.0])
        g.set(operation, beta, scalar, [0.0])
        g.finalize(operation, spec.op)
        operations = [operation]
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
            g.set(op, A.OPERATION_POINTWISE_YDESC, T.BACKEND_DESCRIPTOR, [tensors[p.y]])
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


def engine_count(g: GraphApi, graph: OperationGraph) -> int:
    """How many engines cuDNN has for the graph (CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT)."""
    return int(g.get(graph.desc, A.OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, T.INT64, 1)[0])

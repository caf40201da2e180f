"""Legacy descriptors (tensor, filter, convolution, activation) for one problem, made once and kept.

Everything here works without a GPU (cudnn-facts §4.4: every ``cudnnCreate*Descriptor`` and
``cudnnSet*Descriptor`` runs on a CPU-only machine), so the CPU tests check it against
``cudnnGetConvolutionNdForwardOutputDim``.

Tensors are described by ``cudnnSetTensorNdDescriptor`` with the caller's strides, so NCHW,
NHWC and any strided view need no copy. Filters have no strides in the legacy API: they
must be packed KCRS (``CUDNN_TENSOR_NCHW``) or KRSC (``CUDNN_TENSOR_NHWC``)
(``cudnnSetFilterNdDescriptor``; cudnn_ops.h).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass, field

from cudnnload.dispatch.backends import ConvSpec
from cudnnload.dispatch.runtime import DATA_TYPES, channels_last_order, packed, widened
from cudnnload.loading.capi import ActivationMode, ConvolutionMode, DataType, MathType, NanPropagation, TensorFormat
from cudnnload.loading.status import check

from .functions import LegacyFunctions

# cudnnSetTensorNdDescriptor takes 3 to CUDNN_DIM_MAX = 8 dims (cudnn_graph.h CUDNN_DIM_MAX); fewer
# than 4 is refused by several ops, so elementwise tensors are padded with unit axes to 4.
MAX_DIMS = 8
_MIN_DIMS = 4
# Dims and strides are C ints.
INT_MAX = 2**31 - 1

ACTIVATION_MODES = {mode.name.lower(): mode for mode in ActivationMode}  # "relu" -> CUDNN_ACTIVATION_RELU (1)


def _ints(values: tuple[int, ...]) -> ctypes.Array[ctypes.c_int]:
    return (ctypes.c_int * len(values))(*values)


def filter_format(dims: tuple[int, ...], strides: tuple[int, ...]) -> TensorFormat | None:
    """The filter format whose packed layout ``strides`` has: KCRS is NCHW, KRSC is NHWC; None for others."""
    if packed(dims, strides, tuple(range(len(dims)))):
        return TensorFormat.NCHW
    if packed(dims, strides, channels_last_order(len(dims))):
        return TensorFormat.NHWC
    return None


def math_type(dtype: str, allow_tf32: bool) -> MathType:
    """What cudnnSetConvolutionMathType gets, as PyTorch sets it (aten/src/ATen/cudnn/Descriptors.h).

    cuDNN's reference for cudnnMathType_t: "With NVIDIA Ampere GPU architecture and CUDA Toolkit
    11, CUDNN_DEFAULT_MATH permits TF32 Tensor Core operation and CUDNN_FMA_MATH does not."
    Half and bfloat16 ask for tensor cores outright.
    """
    if dtype == "float32":
        return MathType.DEFAULT_MATH if allow_tf32 else MathType.FMA_MATH
    if dtype in ("float16", "bfloat16"):
        return MathType.TENSOR_OP_MATH
    return MathType.DEFAULT_MATH


def compute_type(dtype: str) -> DataType:
    """Convolution compute type: FLOAT for float32, half and bfloat16 (the "pseudo-half" configurations
    of the cudnnConvolutionForward reference; a HALF compute type would accumulate in half), DOUBLE for float64."""
    return DataType.DOUBLE if dtype == "float64" else DataType.FLOAT


@dataclass
class Descriptors:
    """Descriptors made for one problem; `destroy` releases them."""

    functions: LegacyFunctions
    made: list[tuple[Callable[[int], int], int]] = field(default_factory=list)  # (destroy, descriptor)

    def tensor(self, dtype: str, dims: tuple[int, ...], strides: tuple[int, ...]) -> int:
        f = self.functions
        desc = self._create(f.cudnnCreateTensorDescriptor, f.cudnnDestroyTensorDescriptor, "Tensor")
        if len(dims) < _MIN_DIMS:
            pad = _MIN_DIMS - len(dims)
            dims, strides = dims + (1,) * pad, strides + (1,) * pad
        check(f.cudnnSetTensorNdDescriptor(desc, DATA_TYPES[dtype], len(dims), _ints(dims), _ints(strides)),
              "cudnnSetTensorNdDescriptor", f.api)
        return desc

    def filter(self, dtype: str, dims: tuple[int, ...], layout: TensorFormat) -> int:
        f = self.functions
        desc = self._create(f.cudnnCreateFilterDescriptor, f.cudnnDestroyFilterDescriptor, "Filter")
        # dims are always (K, C/groups, *kernel); the format says how they lie in memory (cudnn_ops.h).
        check(f.cudnnSetFilterNdDescriptor(desc, DATA_TYPES[dtype], layout, len(dims), _ints(dims)),
              "cudnnSetFilterNdDescriptor", f.api)
        return desc

    def convolution(self, dtype: str, spec: ConvSpec, math: MathType) -> int:
        f = self.functions
        desc = self._create(f.cudnnCreateConvolutionDescriptor, f.cudnnDestroyConvolutionDescriptor, "Convolution")
        padding, stride, dilation = widened(spec.padding, 0), widened(spec.stride, 1), widened(spec.dilation, 1)
        check(f.cudnnSetConvolutionNdDescriptor(desc, len(padding), _ints(padding), _ints(stride), _ints(dilation),
                                                ConvolutionMode.CROSS_CORRELATION, compute_type(dtype)),
              "cudnnSetConvolutionNdDescriptor", f.api)
        check(f.cudnnSetConvolutionGroupCount(desc, spec.groups), "cudnnSetConvolutionGroupCount", f.api)
        check(f.cudnnSetConvolutionMathType(desc, math), "cudnnSetConvolutionMathType", f.api)
        return desc

    def activation(self, mode: str, coef: float) -> int:
        f = self.functions
        desc = self._create(f.cudnnCreateActivationDescriptor, f.cudnnDestroyActivationDescriptor, "Activation")
        # coef is the clipped ReLU's ceiling and ELU's alpha (cudnnSetActivationDescriptor); swish takes
        # its beta from cudnnSetActivationDescriptorSwishBeta. NaNs propagate, as in PyTorch.
        check(f.cudnnSetActivationDescriptor(desc, ACTIVATION_MODES[mode], NanPropagation.PROPAGATE_NAN, coef),
              "cudnnSetActivationDescriptor", f.api)
        if mode == "swish":
            check(f.cudnnSetActivationDescriptorSwishBeta(desc, coef), "cudnnSetActivationDescriptorSwishBeta", f.api)
        return desc

    def destroy(self) -> None:
        while self.made:
            destroy, desc = self.made.pop()
            destroy(desc)

    def _create(self, create: Callable[..., int], destroy: Callable[[int], int], kind: str) -> int:
        desc = ctypes.c_void_p()
        check(create(ctypes.byref(desc)), f"cudnnCreate{kind}Descriptor", self.functions.api)
        self.made.append((destroy, desc.value or 0))
        return desc.value or 0


def output_dims(functions: LegacyFunctions, conv: int, x: int, w: int, rank: int) -> tuple[int, ...]:
    """What ``cudnnGetConvolutionNdForwardOutputDim`` says the output of (x, w) under ``conv`` is."""
    out = (ctypes.c_int * rank)()
    check(functions.cudnnGetConvolutionNdForwardOutputDim(conv, x, w, rank, out),
          "cudnnGetConvolutionNdForwardOutputDim", functions.api)
    return tuple(out)

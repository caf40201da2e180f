"""cuDNN's backend (graph) C API through ctypes: the enum values used here and typed attribute access.

Every value below is from cudnn_graph.h of cuDNN 9.28 and marked there "@since cuDNN 9.0.0"
unless noted, so it holds for every 9.x release (cudnn-facts §5 lists the sequence and the
same values, checked against the 9.0 and 9.28 libraries).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from enum import IntEnum
from typing import Any

from cudnnload.dispatch.runtime import bind
from cudnnload.loading.capi import CudnnApi
from cudnnload.loading.status import check


class DescriptorType(IntEnum):
    """cudnnBackendDescriptorType_t."""

    POINTWISE = 0
    CONVOLUTION = 1
    ENGINE = 2
    ENGINECFG = 3
    ENGINEHEUR = 4
    EXECUTION_PLAN = 5
    KNOB_CHOICE = 7
    OPERATION_CONVOLUTION_FORWARD = 10
    OPERATION_CONVOLUTION_BACKWARD_FILTER = 11
    OPERATION_CONVOLUTION_BACKWARD_DATA = 12
    OPERATION_POINTWISE = 13
    OPERATIONGRAPH = 15
    VARIANT_PACK = 16
    TENSOR = 17


class AttributeType(IntEnum):
    """cudnnBackendAttributeType_t: how the values passed to cudnnBackendSetAttribute are typed."""

    HANDLE = 0  # cudnnHandle_t
    DATA_TYPE = 1  # cudnnDataType_t (int32)
    BOOLEAN = 2  # C bool, 1 byte (cudnn-facts §5)
    INT64 = 3
    FLOAT = 4
    DOUBLE = 5
    VOID_PTR = 6
    CONVOLUTION_MODE = 7  # cudnnConvolutionMode_t (int32)
    HEUR_MODE = 8  # cudnnBackendHeurMode_t (int32)
    KNOB_TYPE = 9  # cudnnBackendKnobType_t (int32)
    NUMERICAL_NOTE = 11  # cudnnBackendNumericalNote_t (int32)
    POINTWISE_MODE = 14  # cudnnPointwiseMode_t (int32)
    BACKEND_DESCRIPTOR = 15  # cudnnBackendDescriptor_t
    BEHAVIOR_NOTE = 19  # cudnnBackendBehaviorNote_t (int32)


class Attribute(IntEnum):
    """cudnnBackendAttributeName_t, the ones set or read here."""

    POINTWISE_MODE = 0
    POINTWISE_MATH_PREC = 1
    POINTWISE_RELU_UPPER_CLIP = 4  # "If (value > upper_clip) value = upper_clip"
    POINTWISE_ELU_ALPHA = 6
    POINTWISE_SWISH_BETA = 8
    CONVOLUTION_COMP_TYPE = 100
    CONVOLUTION_CONV_MODE = 101
    CONVOLUTION_DILATIONS = 102
    CONVOLUTION_FILTER_STRIDES = 103
    CONVOLUTION_POST_PADDINGS = 104
    CONVOLUTION_PRE_PADDINGS = 105
    CONVOLUTION_SPATIAL_DIMS = 106
    ENGINEHEUR_MODE = 200
    ENGINEHEUR_OPERATION_GRAPH = 201
    ENGINEHEUR_RESULTS = 202
    ENGINECFG_ENGINE = 300
    ENGINECFG_KNOB_CHOICES = 302
    EXECUTION_PLAN_HANDLE = 400  # deprecated in 9.28 (cudnn-facts §5) but documented there as required
    EXECUTION_PLAN_ENGINE_CONFIG = 401
    EXECUTION_PLAN_WORKSPACE_SIZE = 402
    KNOB_CHOICE_KNOB_TYPE = 600
    KNOB_CHOICE_KNOB_VALUE = 601
    OPERATION_CONVOLUTION_FORWARD_ALPHA = 700
    OPERATION_CONVOLUTION_FORWARD_BETA = 701
    OPERATION_CONVOLUTION_FORWARD_CONV_DESC = 702
    OPERATION_CONVOLUTION_FORWARD_W = 703
    OPERATION_CONVOLUTION_FORWARD_X = 704
    OPERATION_CONVOLUTION_FORWARD_Y = 705
    OPERATION_CONVOLUTION_BWD_DATA_ALPHA = 706
    OPERATION_CONVOLUTION_BWD_DATA_BETA = 707
    OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC = 708
    OPERATION_CONVOLUTION_BWD_DATA_W = 709
    OPERATION_CONVOLUTION_BWD_DATA_DX = 710
    OPERATION_CONVOLUTION_BWD_DATA_DY = 711
    OPERATION_CONVOLUTION_BWD_FILTER_ALPHA = 712
    OPERATION_CONVOLUTION_BWD_FILTER_BETA = 713
    OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC = 714
    OPERATION_CONVOLUTION_BWD_FILTER_DW = 715
    OPERATION_CONVOLUTION_BWD_FILTER_X = 716
    OPERATION_CONVOLUTION_BWD_FILTER_DY = 717
    OPERATION_POINTWISE_PW_DESCRIPTOR = 750
    OPERATION_POINTWISE_XDESC = 751
    OPERATION_POINTWISE_BDESC = 752
    OPERATION_POINTWISE_YDESC = 753
    OPERATION_POINTWISE_DXDESC = 756  # backward modes: "the output tensor dX"
    OPERATION_POINTWISE_DYDESC = 757  # backward modes: "the input tensor dY"
    # Deprecated in 9.28 and optional for building a graph on a CPU (cudnn-facts §5), but the only source of
    # the device's properties before 9.8's DEVICEPROP: without it cuDNN 9.19 on an H200 ranked engines for
    # "smVersion 0", and their plans failed at execution with NOT_SUPPORTED_ARCH_MISMATCH (measured).
    OPERATIONGRAPH_HANDLE = 800
    OPERATIONGRAPH_OPS = 801
    OPERATIONGRAPH_ENGINE_GLOBAL_COUNT = 802
    TENSOR_BYTE_ALIGNMENT = 900
    TENSOR_DATA_TYPE = 901
    TENSOR_DIMENSIONS = 902
    TENSOR_STRIDES = 903
    TENSOR_UNIQUE_ID = 906
    TENSOR_IS_VIRTUAL = 907
    VARIANT_PACK_UNIQUE_IDS = 1000
    VARIANT_PACK_DATA_POINTERS = 1001
    VARIANT_PACK_WORKSPACE = 1003
    ENGINE_OPERATION_GRAPH = 1300
    ENGINE_GLOBAL_INDEX = 1301
    ENGINE_NUMERICAL_NOTE = 1303
    ENGINE_BEHAVIOR_NOTE = 1305


class PointwiseMode(IntEnum):
    """cudnnPointwiseMode_t."""

    ADD = 0
    IDENTITY = 21
    RELU_FWD = 100
    TANH_FWD = 101
    SIGMOID_FWD = 102
    ELU_FWD = 103
    SWISH_FWD = 106
    RELU_BWD = 200
    TANH_BWD = 201
    SIGMOID_BWD = 202
    ELU_BWD = 203
    SWISH_BWD = 206


class HeuristicMode(IntEnum):
    """cudnnBackendHeurMode_t. A: "Decision-tree heuristic (preferred over INSTANT)"; FALLBACK:
    "Functional fallback engines with no GPU performance guarantee"."""

    INSTANT = 0
    B = 1
    FALLBACK = 2
    A = 3


class NumericalNote(IntEnum):
    """cudnnBackendNumericalNote_t, the ones that decide whether an engine may run float32 data."""

    TENSOR_CORE = 0  # "Engine uses Tensor Core hardware acceleration": TF32 for float32 data
    DOWN_CONVERT_INPUTS = 1  # "Engine down-converts inputs to lower precision for compute"


class BehaviorNote(IntEnum):
    """cudnnBackendBehaviorNote_t, the one that decides what a first call costs."""

    RUNTIME_COMPILATION = 0  # the engine's kernel is compiled (NVRTC) when its plan is finalized


# Enum-valued attribute types travel as int32 (cudnn-facts §5).
_INT32_TYPES = frozenset({AttributeType.DATA_TYPE, AttributeType.CONVOLUTION_MODE, AttributeType.HEUR_MODE,
                          AttributeType.KNOB_TYPE, AttributeType.NUMERICAL_NOTE, AttributeType.POINTWISE_MODE,
                          AttributeType.BEHAVIOR_NOTE})
_CTYPES: dict[AttributeType, Any] = {
    AttributeType.INT64: ctypes.c_int64, AttributeType.FLOAT: ctypes.c_float, AttributeType.DOUBLE: ctypes.c_double,
    AttributeType.BOOLEAN: ctypes.c_bool, AttributeType.VOID_PTR: ctypes.c_void_p,
    AttributeType.BACKEND_DESCRIPTOR: ctypes.c_void_p, AttributeType.HANDLE: ctypes.c_void_p,
    **dict.fromkeys(_INT32_TYPES, ctypes.c_int32),
}

_p, _i64 = ctypes.c_void_p, ctypes.c_int64


class GraphApi:
    """The ``cudnnBackend*`` functions of one loaded cuDNN 9, each call checked into a typed error."""

    def __init__(self, api: CudnnApi) -> None:
        self.api = api
        status = ctypes.c_int
        self._create = bind(api, "cudnnBackendCreateDescriptor", status, ctypes.c_int, ctypes.POINTER(_p))
        self._destroy = bind(api, "cudnnBackendDestroyDescriptor", status, _p)
        self._finalize = bind(api, "cudnnBackendFinalize", status, _p)
        self._set = bind(api, "cudnnBackendSetAttribute", status, _p, ctypes.c_int, ctypes.c_int, _i64, _p)
        self._get = bind(api, "cudnnBackendGetAttribute", status, _p, ctypes.c_int, ctypes.c_int, _i64,
                         ctypes.POINTER(_i64), _p)
        # The per-call function: plain c_void_p arguments, converted by ctypes without a Python-level check.
        self.execute = bind(api, "cudnnBackendExecute", status, _p, _p, _p)

    def create(self, kind: DescriptorType) -> int:
        desc = _p()
        check(self._create(kind, ctypes.byref(desc)), f"cudnnBackendCreateDescriptor({kind.name})", self.api)
        return desc.value or 0

    def destroy(self, desc: int) -> None:
        check(self._destroy(desc), "cudnnBackendDestroyDescriptor", self.api)

    def create_owned(self, kind: DescriptorType, owned: list[int]) -> int:
        """Create a descriptor and record it in ``owned`` (destroyed together, newest first)."""
        desc = self.create(kind)
        owned.append(desc)
        return desc

    def destroy_all(self, owned: list[int]) -> None:
        """Destroy what ``owned`` records, newest first, and empty it."""
        for desc in reversed(owned):
            self.destroy(desc)
        owned.clear()

    def finalize(self, desc: int, what: str) -> None:
        check(self._finalize(desc), f"cudnnBackendFinalize({what})", self.api)

    def set(self, desc: int, name: Attribute, kind: AttributeType, values: Sequence[Any]) -> None:
        array = (_CTYPES[kind] * len(values))(*values)
        check(self._set(desc, name, kind, len(values), ctypes.cast(array, _p)),
              f"cudnnBackendSetAttribute({name.name})", self.api)

    def get(self, desc: int, name: Attribute, kind: AttributeType, count: int) -> list[Any]:
        """Up to ``count`` values of an attribute of a finalized descriptor."""
        array = (_CTYPES[kind] * max(count, 1))()
        returned = _i64()
        check(self._get(desc, name, kind, count, ctypes.byref(returned), ctypes.cast(array, _p)),
              f"cudnnBackendGetAttribute({name.name})", self.api)
        return list(array[:returned.value])

    def count(self, desc: int, name: Attribute, kind: AttributeType, most: int) -> int:
        """How many values an attribute holds: a query with no room for them, as the cuDNN frontend asks
        for heuristic results; ``most`` where cuDNN refuses such a query."""
        returned = _i64()
        if self._get(desc, name, kind, 0, ctypes.byref(returned), None) != 0:
            self.api.last_error()  # read, so that the next error's reason is its own
            return most
        return int(returned.value)

    def get_descriptors(self, desc: int, name: Attribute, kind: DescriptorType, count: int) -> list[int]:
        """Descriptor-valued attributes: cuDNN fills descriptors the caller made and passes in
        (cudnn-facts §5, step 7). Returns the filled ones; the caller owns them."""
        made = [self.create(kind) for _ in range(count)]
        array = (_p * max(count, 1))(*made)
        returned = _i64()
        status = self._get(desc, name, AttributeType.BACKEND_DESCRIPTOR, count, ctypes.byref(returned),
                           ctypes.cast(array, _p))
        filled = int(returned.value) if status == 0 else 0
        for extra in made[filled:]:
            self.destroy(extra)
        check(status, f"cudnnBackendGetAttribute({name.name})", self.api)
        return made[:filled]

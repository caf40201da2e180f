"""The legacy-API functions this backend calls that `cudnnload.loading.capi` does not declare.

Signatures from the 9.28 headers (cudnn_cnn.h, cudnn_ops.h; cudnn-facts §4.2); the text is
the same in 8.x. Every ``cudnnConvolution*AlgoPerf_t`` has the layout of
`cudnnload.loading.capi.ConvolutionFwdAlgoPerf` (48 bytes; cudnn-facts §4.2: "Bwd variants have the
same shape"). All of these are deprecated, not removed, in 9.x (cudnn-facts §4.1).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from cudnnload.dispatch.runtime import bind
from cudnnload.loading.capi import ConvolutionFwdAlgoPerf, CudnnApi

_p, _i, _sz = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t
_ip = ctypes.POINTER(ctypes.c_int)
_szp = ctypes.POINTER(ctypes.c_size_t)
_perf = ctypes.POINTER(ConvolutionFwdAlgoPerf)

# name -> argtypes; every one returns cudnnStatus_t (int).
_SIGNATURES: dict[str, tuple[Any, ...]] = {
    # cudnn_ops.h
    "cudnnAddTensor": (_p, _p, _p, _p, _p, _p, _p),
    "cudnnTransformTensor": (_p, _p, _p, _p, _p, _p, _p),
    "cudnnActivationBackward": (_p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p, _p),
    # cudnn_cnn.h: algorithm choice per direction (heuristic _v7 and measured FindEx)
    "cudnnGetConvolutionBackwardDataAlgorithmMaxCount": (_p, _ip),
    "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount": (_p, _ip),
    "cudnnGetConvolutionBackwardDataAlgorithm_v7": (_p, _p, _p, _p, _p, _i, _ip, _perf),
    "cudnnGetConvolutionBackwardFilterAlgorithm_v7": (_p, _p, _p, _p, _p, _i, _ip, _perf),
    "cudnnFindConvolutionForwardAlgorithmEx": (_p, _p, _p, _p, _p, _p, _p, _p, _i, _ip, _perf, _p, _sz),
    "cudnnFindConvolutionBackwardDataAlgorithmEx": (_p, _p, _p, _p, _p, _p, _p, _p, _i, _ip, _perf, _p, _sz),
    "cudnnFindConvolutionBackwardFilterAlgorithmEx": (_p, _p, _p, _p, _p, _p, _p, _p, _i, _ip, _perf, _p, _sz),
    "cudnnGetConvolutionBackwardDataWorkspaceSize": (_p, _p, _p, _p, _p, _i, _szp),
    "cudnnGetConvolutionBackwardFilterWorkspaceSize": (_p, _p, _p, _p, _p, _i, _szp),
    # cudnn_cnn.h: the runs
    "cudnnConvolutionBiasActivationForward": (_p, _p, _p, _p, _p, _p, _p, _i, _p, _sz, _p, _p, _p, _p, _p, _p,
                                              _p, _p),
    "cudnnConvolutionBackwardData": (_p, _p, _p, _p, _p, _p, _p, _i, _p, _sz, _p, _p, _p),
    "cudnnConvolutionBackwardFilter": (_p, _p, _p, _p, _p, _p, _p, _i, _p, _sz, _p, _p, _p),
}


class LegacyFunctions:
    """`cudnnload.loading.capi.CudnnApi`'s functions, plus the ones above, as attributes."""

    def __init__(self, api: CudnnApi) -> None:
        self.api = api
        self._bound: dict[str, Callable[..., int]] = {}

    def __getattr__(self, name: str) -> Callable[..., int]:
        if not name.startswith("cudnn"):
            raise AttributeError(name)
        function = self._bound.get(name)
        if function is None:
            signature = _SIGNATURES.get(name)
            function = self.api.symbol(name) if signature is None else bind(self.api, name, ctypes.c_int, *signature)
            self._bound[name] = function
        return function

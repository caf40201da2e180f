"""Dispatch: convolutions and activations on real data, through pluggable backends.

Takes the `Loaded` cuDNN of `cudnnload.loading`: views of the caller's arrays (`tensors`), the
plugin interface and registry (`backends`, `entrypoints`), the validating call layer
(`dispatcher`: `conv`, `activation`, ...), what the cuDNN backends need around each call
(`runtime`), remembered algorithm choices (`algos`), and the start-up that moves first-call
costs ahead (`warmup`, `starting`). Hands results back to the caller.
"""


def __getattr__(name: str) -> object:
    """``cudnnload.dispatch.conv`` and the like: this path was the call layer's module before it became
    this folder (now `cudnnload.dispatch.dispatcher`); it still answers, with a DeprecationWarning."""
    import importlib
    import warnings

    module = importlib.import_module("cudnnload.dispatch.dispatcher")
    if name.startswith("__") or not hasattr(module, name):
        raise AttributeError(f"module 'cudnnload.dispatch' has no attribute {name!r}")
    warnings.warn(f"cudnnload.dispatch.{name} has moved to cudnnload.dispatch.dispatcher.{name}: import it from "
                  "there", DeprecationWarning, stacklevel=2)
    return getattr(module, name)

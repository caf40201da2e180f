"""`cudnnload.tensors`: Zero-copy views of caller arrays (TensorRef): the path plugins import them from.

The code lives in `cudnnload.dispatch.tensors`; this path stays, and is that same module object.
"""

import sys

from cudnnload.dispatch.tensors import *  # noqa: F403  (what type checkers see here)

sys.modules[__name__] = sys.modules["cudnnload.dispatch.tensors"]

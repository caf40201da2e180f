"""`cudnnload.logs`: cuDNN's log to Python logging, and the CUDNN_LOG* variables: the path users import them from.

The code lives in `cudnnload.loading.logs`; this path stays, and is that same module object.
"""

import sys

from cudnnload.loading.logs import *  # noqa: F403  (what type checkers see here)

sys.modules[__name__] = sys.modules["cudnnload.loading.logs"]

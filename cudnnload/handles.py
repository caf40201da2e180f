"""`cudnnload.handles`: The cuDNN handle pool (HandlePool): the path users and plugins import it from.

The code lives in `cudnnload.loading.handles`; this path stays, and is that same module object.
"""

import sys

from cudnnload.loading.handles import *  # noqa: F403  (what type checkers see here)

sys.modules[__name__] = sys.modules["cudnnload.loading.handles"]

"""`cudnnload.status`: cuDNN status codes as typed errors: the path users and plugins import them from.

The code lives in `cudnnload.loading.status`; this path stays, and is that same module object.
"""

import sys

from cudnnload.loading.status import *  # noqa: F403  (what type checkers see here)

sys.modules[__name__] = sys.modules["cudnnload.loading.status"]

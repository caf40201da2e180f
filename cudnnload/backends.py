"""`cudnnload.backends`: the backend plugin interface (ConvSpec, Backend, Registry ...), at the path plugins
import it from.

The code lives in `cudnnload.dispatch.backends`; this path stays, and is that same module object.
"""

import sys

from cudnnload.dispatch.backends import *  # noqa: F403  (what type checkers see here)

sys.modules[__name__] = sys.modules["cudnnload.dispatch.backends"]

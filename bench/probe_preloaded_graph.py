"""What a shim's calls return with another release's graph in the process (run under LD_PRELOAD of that graph):

    LD_PRELOAD=/lib/x86_64-linux-gnu/libcudnn_graph.so.9 python bench/probe_preloaded_graph.py SHIM_FOLDER

prints cudnnGetVersion, cudnnOpsVersionCheck, cudnnCreateTensorDescriptor and cudnnCnnVersionCheck, then the
libcudnn files mapped (bench/results/2026-11-27-h200-frameworks.md).
"""

from __future__ import annotations

import ctypes
import os
import sys

shim = ctypes.CDLL(os.path.join(sys.argv[1], "libcudnn.so.9"))
print("version", shim.cudnnGetVersion())
print("ops check", shim.cudnnOpsVersionCheck())
descriptor = ctypes.c_void_p()
print("create tensor", shim.cudnnCreateTensorDescriptor(ctypes.byref(descriptor)))
print("cnn check", shim.cudnnCnnVersionCheck())
with open("/proc/self/maps") as maps:
    print("\n".join(sorted({line.split()[-1] for line in maps if "libcudnn" in line})))

"""Whether a setenv in the main thread while `prepare_context`'s thread runs cuInit crashes the process (the order
`cudnnload.start` had before 408f451). ``python bench/probe_setenv_race.py after|before`` sets new variables
for as long as cuInit runs (``after``) or before it begins (``before``); run it in many fresh processes on a GPU
machine and count the exit codes (139: SIGSEGV). On the H200 (glibc 2.39), 2026-11-30: 30 of 30 exited 0 either way.
"""

import os
import sys

from cudnnload.loading import cudadriver

if __name__ == "__main__":
    if sys.argv[1:] == ["before"]:
        for index in range(400):
            os.environ[f"RACE_{index}"] = "1"
        thread = cudadriver.prepare_context()
    else:
        thread = cudadriver.prepare_context()
        index = 0
        while thread is not None and thread.is_alive():
            os.environ[f"RACE_{index}"] = "1"
            index += 1
    if thread is not None:
        thread.join()
    print("ok")

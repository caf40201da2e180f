"""The fix differential on cases whose verbs are chosen, not drawn: to study a family without reading held-out cases.

    python bench/fixdiff_targeted.py --seed S --count N [--start I] [--jobs J] [--out DIR]   (S >= 7)
    python bench/fixdiff_targeted.py --replay S-I

Every option is `bench_fix_differential.py`'s. For seeds 7 and up, case (S, I) keeps its drawn base and generator but
its verbs are the pair ``COMBOS[I % len(COMBOS)]`` in a shuffled order, with a third verb drawn in 3 cases of 10
(seed 8: the first pair alone, its verbs the other way round before the shuffle, no third); seeds below 7 are drawn
as usual. The pairs are the verbs of seed 2's breaking cases at d5afc21 (session 19; only their verbs were read):
each with ``ld-preload-other``. Session 20 found its breaks here (7-7, 7-41, 7-60, 8-10, 8-11, ...) and mended them
before seed 2 ran again. Seed 9 pairs a start-up load (a ``.pth`` or ``sitecustomize`` that maps a cuDNN) with a
preload, and adds one or two of ``STARTUP_THIRD`` (the verbs of seed 2's last breaking case, 2-927, at de54f64).
Seed 10 pairs ``copy-into-torch-lib`` with a breakage of the venv's cuDNN (`TORCH_LIB`), on the torch base.
Seed 11 pairs ``pythonpath-other-site`` (added in session 54) with another verb (`PYTHONPATH`), on the drawn base.
Seed 12 pairs ``upgrade-under-running-process`` (the held program ``doctor --pid`` is asked about) with a route or a
breakage of the venv's cuDNN (`HELD`), on the drawn base.
Seed 13 pairs ``ldlp-none`` (added in session 63: no LD_LIBRARY_PATH for the venv's cuDNN) with a breakage or another
route of it (`NO_LDLP`), on the drawn base.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import bench_fix_differential as bench  # noqa: E402

import fixtures.fixdiff.bases as bases  # noqa: E402
import fixtures.fixdiff.grammar as grammar  # noqa: E402
import fixtures.fixdiff.runner as runner  # noqa: E402

FIRST_CHOSEN = 7
COMBOS = [("pip-uninstall-cudnn", "ld-preload-other"), ("partial-copy-on-path", "ld-preload-other"),
          ("unreadable-sublibrary", "ld-preload-other"), ("ldlp-system-like", "ld-preload-other"),
          ("pip-install-other-cuda", "ld-preload-other"), ("versioned-name-wrong", "ld-preload-other"),
          ("pip-install-other-release", "ld-preload-other"), ("ldlp-relative-entry", "ld-preload-other")]
STARTUP = [("pth-ctypes-load", "ld-preload-other"), ("sitecustomize-load", "ld-preload-other"),
           ("pth-ctypes-load", "ld-preload-by-name"), ("pth-sys-path-first", "ld-preload-other")]
STARTUP_THIRD = ["pip-install-other-release", "unreadable-sublibrary", "pip-install-other-cuda", "pip-uninstall-cudnn"]
# seed 10 (session 39): cuDNN copied into torch/lib, where libtorch_cuda.so's RPATH ends (``$ORIGIN``), with a
# breakage of the venv's own cuDNN that sends torch there; always on the torch base
TORCH_LIB = [("copy-into-torch-lib", other) for other in (
    "pip-uninstall-cudnn", "delete-sublibrary", "truncate-file", "copy-shim-other-release", "pip-install-other-release",
    "unreadable-sublibrary", "pip-uninstall-partial", "ldlp-other-release")]
# seed 11 (session 54): PYTHONPATH naming a folder that holds another cuDNN, with a breakage or another route of the
# venv's own cuDNN
PYTHONPATH = [("pythonpath-other-site", other) for other in (
    "pip-uninstall-cudnn", "pip-install-other-release", "ldlp-other-release", "delete-sublibrary", "pip-install-user",
    "copy-into-torch-lib", "pth-sys-path-first", "ld-preload-other", "pip-install-other-cuda", "truncate-file")]
# seed 12 (session 55): a program started, then another cuDNN installed under it (``doctor --pid``), with a route
# or a breakage of the venv's cuDNN before or after it (the shuffle decides which its environment holds)
HELD = [("upgrade-under-running-process", other) for other in (
    "ldlp-other-release", "ld-preload-other", "ld-preload-by-name", "ldlp-system-like", "partial-copy-on-path",
    "pip-install-other-cuda", "copy-shim-other-release", "delete-sublibrary", "pip-uninstall-cudnn", "conda-ldlp",
    "symlink-shim-elsewhere", "copy-sublibrary-other-release")]
# seed 13 (session 63): no LD_LIBRARY_PATH for the venv's cuDNN (``ldlp-none``, most users' shells), with a breakage
# or another route of it
NO_LDLP = [("ldlp-none", other) for other in (
    "pip-uninstall-cudnn", "pip-install-other-release", "pip-install-other-cuda", "delete-sublibrary", "truncate-file",
    "copy-into-torch-lib", "pip-install-user", "pip-install-target", "ld-preload-other", "conda-ldlp",
    "pth-ctypes-load", "partial-copy-on-path", "versioned-name-wrong", "pip-install-jit", "pip-uninstall-cublas",
    "symlink-shim-elsewhere")]
_drawn = grammar.draw


def draw(seed: int, index: int) -> tuple[random.Random, grammar.Base, list[grammar.Verb]]:
    rng, base, verbs = _drawn(seed, index)
    if seed < FIRST_CHOSEN:
        return rng, base, verbs
    by_name = {v.name: v for v in grammar.GRAMMAR}
    pairs = {FIRST_CHOSEN + 1: [COMBOS[0][::-1]], FIRST_CHOSEN + 2: STARTUP, FIRST_CHOSEN + 3: TORCH_LIB,
             FIRST_CHOSEN + 4: PYTHONPATH, FIRST_CHOSEN + 5: HELD, FIRST_CHOSEN + 6: NO_LDLP}.get(seed, COMBOS)
    if seed == FIRST_CHOSEN + 3:
        base = bases.by_name("torch")
    combo = pairs[index % len(pairs)]
    chosen = [by_name[name] for name in combo]
    order = random.Random(f"targeted:{seed}:{index}")
    order.shuffle(chosen)
    if seed == FIRST_CHOSEN + 2:
        chosen += [by_name[name] for name in order.sample(STARTUP_THIRD, order.choice([1, 2]))]
    elif seed != FIRST_CHOSEN + 1 and order.random() < 0.3:
        chosen.append(order.choice([v for v in grammar.GRAMMAR if v.name not in combo]))
    return rng, base, chosen


grammar.draw = runner.draw = bench.draw = draw  # type: ignore[assignment]

if __name__ == "__main__":
    sys.argv[0] = str(ROOT / "bench" / "bench_fix_differential.py")
    bench.main()

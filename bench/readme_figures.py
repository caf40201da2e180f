"""README's figures, measured rather than typed: the test suite's size and time (from the log of a `make test`
run), and what `make demo` and `make test` download (the sizes of the wheels they fetch, as cached).

    make test 2>&1 | tee /tmp/test.log; python bench/readme_figures.py --log /tmp/test.log [--machine TEXT]

Rewrites the block between README's ``<!-- figures: ... -->`` and ``<!-- /figures -->`` markers.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fixtures.wheels import WHEELS, cache_root, wheel_file  # noqa: E402

README = ROOT / "README.md"
# the Makefile's DEMO_CUDNN and what it requires (pip takes the newest cuBLAS 12; the cached one is as large)
DEMO = (("nvidia-cudnn-cu12", "9.28.0.42"), ("nvidia-cublas-cu12", "12.9.1.4"), ("nvidia-cuda-nvrtc-cu12", "12.9.86"))
_SUMMARY = re.compile(r"=* ?(?P<counts>(?:\d+ \w+(?:, )?)+) in (?P<seconds>[\d.]+)s")


def suite(log: str) -> tuple[str, float]:
    """pytest's last summary line in the log: ("1 562 passed, 69 skipped", seconds)."""
    found = [m for m in _SUMMARY.finditer(log)]
    if not found:
        raise SystemExit("no pytest summary line (\"N passed ... in S s\") in the log")
    last = found[-1]
    counts = ", ".join(part for part in last.group("counts").split(", ") if "warning" not in part)
    return re.sub(r"(\d)(\d{3})\b", r"\1 \2", counts), float(last.group("seconds"))


def gigabytes(pairs: tuple[tuple[str, str], ...]) -> float:
    folder = cache_root() / "wheels"
    files = [wheel_file(folder, dist, version) for dist, version in pairs]
    missing = [f"{d}=={v}" for (d, v), f in zip(pairs, files, strict=True) if f is None]
    if missing:
        raise SystemExit(f"not downloaded yet ({', '.join(missing)}): run `make wheels`")
    return sum(os.path.getsize(f) for f in files if f is not None) / 1e9


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", required=True, help="the output of a `make test` run")
    parser.add_argument("--machine", default=f"{os.cpu_count()} cores", help="where the run was made")
    args = parser.parse_args()
    counts, seconds = suite(Path(args.log).read_text(errors="replace"))
    minutes, rest = divmod(round(seconds), 60)  # 537.6 s is 8 min 58 s, not "9 min" and 58 s
    lines = [
        f"- `make test` on {args.machine}, {time.strftime('%Y-%m-%d')}: {counts} in {minutes} min {rest} s "
        "(pytest's own count and time, the downloads already cached).",
        f"- Downloads: `make demo` {gigabytes(DEMO):.1f} GB of cuDNN, cuBLAS and NVRTC wheels (plus cudnnload's "
        f"dependencies); `make test` {gigabytes(WHEELS):.1f} GB of test wheels ({len(WHEELS)} wheels), each once.",
    ]
    text = README.read_text()
    block = re.compile(r"(<!-- figures:[^\n]*-->\n)(.*?)(<!-- /figures -->)", re.S)
    if not block.search(text):
        raise SystemExit("README.md has lost its figures markers")
    README.write_text(block.sub(lambda m: m.group(1) + "\n".join(lines) + "\n" + m.group(3), text))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

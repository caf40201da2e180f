"""The release a cuDNN 9 shim's code dlopens the names of (`ElfInfo.names_release`), read on the shims of many
releases: each fetched alone from its wheel on PyPI (HTTP range requests on the zip: about 130 KB a shim, not the
wheel's 600 MB) and read; the wheel's version is the truth.

    python bench/shim_releases.py [VERSION...]      (default: a spread of nvidia-cudnn-cu12 9.x releases)

The shims are kept under ``$CUDNNLOAD_TEST_CACHE/shims`` (the test cache, never the user's cudnnload cache).
"""

from __future__ import annotations

import io
import re
import sys
import urllib.request
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cudnnload.resolve.elf import read_elf  # noqa: E402
from fixtures.wheels import cache_root  # noqa: E402

INDEX = "https://pypi.org/simple/nvidia-cudnn-cu12/"
DEFAULT = ("9.0.0.312", "9.1.1.17", "9.2.1.18", "9.3.0.75", "9.5.1.17", "9.8.0.87", "9.10.2.21", "9.12.0.46",
           "9.14.0.64", "9.17.1.4", "9.19.0.56", "9.24.0.43", "9.26.1.1", "9.28.0.42")


class _Remote(io.RawIOBase):
    """A file on a web server read by range requests: what zipfile needs of it."""

    def __init__(self, url: str) -> None:
        self.url, self.at = url, 0
        head = urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=60)
        self.size = int(head.headers["Content-Length"])

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        self.at = offset if whence == 0 else self.at + offset if whence == 1 else self.size + offset
        return self.at

    def tell(self) -> int:
        return self.at

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        count = min(len(buffer), self.size - self.at)
        if count <= 0:
            return 0
        request = urllib.request.Request(self.url, headers={"Range": f"bytes={self.at}-{self.at + count - 1}"})
        data = urllib.request.urlopen(request, timeout=120).read()
        buffer[:len(data)] = data
        self.at += len(data)
        return len(data)


def shim(version: str, links: list[str], folder: Path) -> Path:
    path = folder / f"libcudnn.so.9-{version}"
    if not path.exists():
        url = next(link.split("#")[0] for link in links if f"-{version}-" in link and "manylinux" in link
                   and "x86_64" in link)
        wheel = zipfile.ZipFile(io.BufferedReader(_Remote(url), buffer_size=1 << 20))
        member = next(name for name in wheel.namelist() if name.endswith("/lib/libcudnn.so.9"))
        path.write_bytes(wheel.read(member))
    return path


def main(versions: list[str]) -> int:
    folder = cache_root() / "shims"
    folder.mkdir(parents=True, exist_ok=True)
    links = re.findall(r'href="([^"]+)"', urllib.request.urlopen(INDEX, timeout=60).read().decode())
    wrong = 0
    print(f"{'wheel':12s} {'read':10s} verdict")
    for version in versions or DEFAULT:
        expected = ".".join(version.split(".")[:3])
        got = read_elf(shim(version, links, folder)).names_release
        wrong += str(got) != expected
        print(f"{version:12s} {got!s:10s} {'right' if str(got) == expected else 'WRONG'}", flush=True)
    print(f"{len(versions or DEFAULT) - wrong} of {len(versions or DEFAULT)} read right")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

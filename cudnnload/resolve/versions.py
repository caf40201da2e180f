"""cuDNN release numbers: the record and the three encodings it is read from (cudnn-facts §1.5, §2)."""

from __future__ import annotations

from cudnnload.resolve.records import record


@record
class Release:
    major: int
    minor: int
    patch: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    @property
    def number(self) -> int:
        """The value ``cudnnGetVersion()`` returns for this release (cudnn_version.h)."""
        if self.major >= 9:
            return self.major * 10000 + self.minor * 100 + self.patch
        return self.major * 1000 + self.minor * 100 + self.patch


def decode_version(value: int) -> Release:
    """``cudnnGetVersion()`` to a release: 8907 -> 8.9.7, 92800 -> 9.28.0 (cudnn-facts §1.5)."""
    if value <= 0:
        raise ValueError(f"not a cuDNN version number: {value}")
    if value < 10000:
        return Release(value // 1000, value % 1000 // 100, value % 100)
    return Release(value // 10000, value % 10000 // 100, value % 100)


def decode_packed_version(value: int) -> Release:
    """An exported version constant (``cudnn_graph_version`` ...) to a release: 0x091C00 -> 9.28.0."""
    return Release(value >> 16 & 0xFF, value >> 8 & 0xFF, value & 0xFF)


def parse_release(text: str) -> Release:
    """``"9.28"``, ``"9.28.0.42"`` or ``"8"`` to a release; ValueError names the text."""
    parts = text.strip().split(".")
    if not all(part.isdigit() and part.isascii() for part in parts) or not parts[0]:
        raise ValueError(f"not a cuDNN version: {text!r} (expected e.g. 9.28.0 or 8.9)")
    major, minor, patch = (int(parts[i]) if i < len(parts) else 0 for i in range(3))
    return Release(major, minor, patch)


# Exported u32 constants that hold the release as major<<16|minor<<8|patch (cudnn-facts §2); the
# catalog names the library of each (tests/test_catalog.py keeps the two in step).
VERSION_SYMBOLS = frozenset({
    "cudnn_graph_version", "cudnn_ops_infer_version", "cudnn_adv_infer_version", "cudnn_ops_train_version",
    "cudnn_cnn_infer_version",
})


_OPERATORS = (">=", "<=", "==", "!=", ">", "<")


@record
class VersionRange:
    """A constraint such as ``">=9.1,<10"``; a bare ``"9.28"`` means ``==9.28`` (any patch)."""

    text: str
    clauses: tuple[tuple[str, Release, int], ...]  # operator, release, how many parts were written

    @classmethod
    def parse(cls, text: str) -> VersionRange:
        if not isinstance(text, str):  # a caller's 9 or 9.28: a range is text, as pip writes one
            from cudnnload.errors import UsageError

            raise UsageError(f"a version range is text, not {type(text).__name__} {text!r}",
                             fix="write it like '>=9.1,<10' or '9.28'")
        clauses = []
        for part in filter(None, (p.strip() for p in text.split(","))):
            op = next((o for o in _OPERATORS if part.startswith(o)), "==")
            number = part[len(op):].strip() if part.startswith(op) else part
            try:
                release = parse_release(number)
            except ValueError as exc:
                from cudnnload.errors import UsageError

                raise UsageError(f"bad version range {text!r}: {exc}",
                                 fix="write it like '>=9.1,<10' or '9.28'") from None
            clauses.append((op, release, len(number.split("."))))
        if not clauses:
            from cudnnload.errors import UsageError

            raise UsageError(f"empty version range {text!r}", fix="write it like '>=9.1,<10' or '9.28'")
        return cls(text, tuple(clauses))

    def admits(self, release: Release) -> bool:
        for op, bound, parts in self.clauses:
            have = (release.major, release.minor, release.patch)[:parts]
            want = (bound.major, bound.minor, bound.patch)[:parts]
            if not {"==": have == want, "!=": have != want, ">=": have >= want, "<=": have <= want,
                    ">": have > want, "<": have < want}[op]:
                return False
        return True

"""The message catalog: every cuDNN-, cuBLAS-, CUDA-runtime- and loader-related error or warning string that the
frameworks, cuDNN itself, glibc's dynamic linker and Python on Windows print, read from their own source or
binaries at the versions users run (`fixtures/explain/harvest.py` writes ``catalog.json`` beside this module;
its README section says how it is run). Each entry is one template as the source writes it, with the file
and versions that print it, what it means, the causes it points to (fixtures/explain/FAMILIES.md ids, most
likely first), and whether it is only a warning or a framework's generic advice (boilerplate, never evidence).

The catalog is read, and each template compiled, only when a text is explained: `load()` parses the data once,
`Entry.regex` compiles on first use, and `Catalog.matches` runs an entry's pattern only on the lines that hold
its literal words, so a long paste costs one pass to collect its words plus the few entries they admit.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

DATA = Path(__file__).with_name("catalog.json")

# printf conversions (C, glibc, cuDNN, TensorFlow's absl::StrFormat, Python's %-format) and Python's str.format /
# f-string fields; "%%" and "{{" "}}" are literal.
_PRINTF = re.compile(r"%%|%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|z|j|t|q|I64)?[diouxXeEfgGcspaASRUV]")
_FORMAT = re.compile(r"\{\{|\}\}|\{[^{}]*\}")
PLACEHOLDER = "\x00"  # one field of any style, in a template split into literal parts


def split_template(template: str, style: str) -> list[str]:
    """The literal parts of ``template``, in order; a field of the style lies between each two parts."""
    if style == "literal":
        return [template]
    pattern, literal = (_PRINTF, {"%%": "%"}) if style == "printf" else (_FORMAT, {"{{": "{", "}}": "}"})
    parts, current, last = [], [], 0
    for found in pattern.finditer(template):
        current.append(template[last:found.start()])
        if found.group(0) in literal:
            current.append(literal[found.group(0)])
        else:
            parts.append("".join(current))
            current = []
        last = found.end()
    current.append(template[last:])
    parts.append("".join(current))
    return parts


def _literal_regex(part: str) -> re.Pattern[str]:
    # a paste keeps the words but not always the spacing: a run of spaces matches one or more
    return re.compile(r" +".join(re.escape(piece) for piece in re.split(r" +", part)))


FIELD = 240  # the most characters one field of a template takes (a path, a version, an error text)
STARTS = 20  # the most places in one line a template's first words are tried from


@dataclass(frozen=True)
class Found:
    """Where a template was found in a text: like re.Match's start(), end() and group()."""

    text: str
    begin: int
    finish: int

    def start(self) -> int:
        return self.begin

    def end(self) -> int:
        return self.finish

    def group(self, index: int = 0) -> str:
        return self.text[self.begin:self.finish]


@dataclass(frozen=True)
class TemplatePattern:
    """A template compiled for finding: its literal parts in order, each at most FIELD characters after the one
    before. Found part by part with bounded searches, never by backtracking, so it runs in linear time on any
    line; a leading field reaches back over the word before, a trailing one over the rest of the line (at most
    FIELD characters)."""

    parts: tuple[re.Pattern[str], ...]
    leading: bool  # a field before the first literal part
    trailing: bool  # a field after the last one
    texts: tuple[str, ...] = ()  # the literal parts as written (`cut`)

    def search(self, text: str, pos: int = 0, endpos: int | None = None) -> Found | None:
        end = len(text) if endpos is None else endpos
        if not self.parts:
            return None
        first, rest = self.parts[0], self.parts[1:]
        for number, head in enumerate(first.finditer(text, pos, end)):
            if number >= STARTS:
                return None
            at = head.end()
            for part in rest:
                found = part.search(text, at, min(end, at + FIELD + 400))
                if found is None or found.start() - at > FIELD:
                    break
                at = found.end()
            else:
                begin = head.start()
                if self.leading:
                    word = re.search(r"\S*$", text[max(pos, begin - FIELD):begin])
                    begin -= len(word.group(0)) if word else 0
                if self.trailing:
                    stop = text.find("\n", at, end)
                    at = min(end if stop < 0 else stop, at + FIELD)
                return Found(text, begin, at)
        return None

    def cut(self, line: str) -> Found | None:
        """The template in ``line`` where the paste ends inside it: its literal parts in order, each at most FIELD
        characters after the one before, to a part of which the line's end (less "...", "…" or "[truncated]") holds
        only the start, of CUT_PART characters or more; with CUT_LETTERS letters of its literal parts or more, and
        at least CUT_SHARE of them, shown. None where the line holds the template whole, or too little of it."""
        if not self.texts or len(self.texts) != len(self.parts):
            return None
        rest = _CUT_END.sub("", line)
        total = sum(_letters(text) for text in self.texts)
        head = self.parts[0].search(rest)
        if head is None:  # cut inside its first part
            start = _cut_start(rest, self.texts[0])
            shown = _letters(rest[start:]) if start is not None else 0
            return Found(rest, start, len(rest)) if start is not None and shown >= max(
                CUT_LETTERS, CUT_SHARE * total) else None
        at, shown = head.end(), _letters(self.texts[0])
        for number in range(1, len(self.texts)):
            tail = rest[at:at + FIELD + len(self.texts[number])]
            found = self.parts[number].search(tail)
            if found is not None and found.start() <= FIELD:
                at, shown = at + found.end(), shown + _letters(self.texts[number])
                continue
            start = _cut_start(tail, self.texts[number])
            if start is None or len(tail) - start < CUT_PART:
                return None
            shown += _letters(tail[start:])
            if shown < CUT_LETTERS or shown < CUT_SHARE * total:
                return None
            return Found(rest, head.start(), len(rest))
        return None  # every part is there: a whole match, not a cut one


# A paste cut inside a message (a terminal's width, a title, an editor): the least of it that still names it.
CUT_PART = 8  # characters of the part the paste ends in
CUT_LETTERS = 40  # letters of the template's literal parts
CUT_SHARE = 0.5  # of all its literal letters
# what a paste puts where it cut a line
_CUT_END = re.compile(r"\s*(?:\.\.\.+|…|\[truncated\]|\(truncated\))?\s*$")


def _holds(outer: Match, inner: Match) -> bool:
    """``outer``'s place holds ``inner``'s, and ``inner`` is no message of its own there: not an error code's words in
    the last field of a message that prints them (CTranslate2's "CUDA failed with error %s" holding "device kernel
    image is invalid", which says what failed)."""
    if not (outer.start <= inner.start and inner.end <= outer.end and outer.entry.id != inner.entry.id):
        return False
    return not (inner.entry.as_error and outer.entry.ends_in_field)


def _squeezed(text: str) -> str:
    """``text`` in lower case with each run of spaces one space: how a literal's words are looked up."""
    return re.sub(r" +", " ", text.lower())


def _letters(text: str) -> int:
    return sum(c.isalpha() for c in text)


def _cut_start(tail: str, part: str) -> int | None:
    """Where in ``tail`` the start of ``part`` runs to its end (``tail`` ends inside ``part``), the earliest such
    place; spaces compared loosely. None where none does."""
    squeezed = re.sub(r" +", " ", part)
    # the piece is shorter than the part, its spaces at most doubled in the paste: only the line's last characters
    window = max(0, len(tail) - 2 * len(part))
    for start in (i for i in range(window, len(tail)) if tail[i] == squeezed[:1]):
        piece = re.sub(r" +", " ", tail[start:])
        if piece and squeezed.startswith(piece) and len(piece) < len(squeezed):
            return start
    return None


# The punctuation that ends a sentence: a paste often drops it (a message cut at the line's end, quoted in a
# title, followed by its own text: "... support the graph" of "... support the graph."), so a template's last
# part is found without it.
_END = re.compile(r"[\s.!;:,]+$")
# ...and the decoration a template's first part may start with, which a paste (or `pasted`'s reading of a Markdown
# quote or list) drops at a line's start: DeepSpeed's ">- DeepSpeed Op Builder: ...", dlib's "*** Dlib requires",
# the ". " or ") " of a part that follows a field in its source
_START = re.compile(r"^[\s>*.!;:,)\]-]+")


def literal_parts(template: str, style: str) -> list[str]:
    """The literal parts of ``template`` that a text must hold, in order: the first and the last without the
    spaces around them; the first, where the template starts with it, without the decoration before its words;
    the last, where the template ends in it (no field after it), without the punctuation that ends its sentence."""
    parts = split_template(template, style)
    literal = [part for part in parts if part.strip()]
    if literal:
        literal[0], literal[-1] = literal[0].strip(), literal[-1].strip()
        if parts[0].strip():
            literal[0] = _START.sub("", literal[0])
        if parts[-1].strip():
            literal[-1] = _END.sub("", literal[-1])
    return [part for part in literal if part]


def compile_template(template: str, style: str) -> TemplatePattern:
    """The pattern that finds ``template`` in a text: its literal parts (`literal_parts`) exactly (spaces
    loosely), each field as up to FIELD characters of one line."""
    parts = split_template(template, style)
    literal = literal_parts(template, style)
    return TemplatePattern(tuple(_literal_regex(part) for part in literal),
                           leading=len(parts) > 1 and not parts[0].strip(),
                           trailing=len(parts) > 1 and not parts[-1].strip(), texts=tuple(literal))


def render_example(template: str, style: str, values: tuple[str, ...] = ()) -> str:
    """``template`` with each field filled: with ``values`` in order, else a sample."""
    parts = split_template(template, style)
    fills = list(values) + ["libcudnn.so.9"] * max(0, len(parts) - 1 - len(values))
    return "".join(part + (fills[index] if index < len(parts) - 1 else "") for index, part in enumerate(parts))


# A terminal's colour and cursor escapes (CSI sequences), as a template may hold them.
_COLOUR = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")


def words(text: str) -> set[str]:
    return set(_WORD.findall(text))


@dataclass(frozen=True)
class Entry:
    """One message as its source prints it."""

    id: str
    source: str  # who prints it: "glibc", "cudnn", "pytorch", "tensorflow", "xla", ...
    file: str  # where: a source file, or a library of a wheel
    versions: tuple[str, ...]  # the releases read that print it
    template: str
    style: str  # "printf", "format" or "literal"
    example: str  # one rendering of the template; the compiled pattern must find it
    meaning: str
    families: tuple[str, ...]  # the causes it points to, most likely first
    kind: str | None = None  # the message kind the ranking keeps priors for, where it has one
    warning: bool = False  # only a warning or information: not the failure
    boilerplate: bool = False  # generic advice: stripped before the text is read for evidence
    curated: bool = False  # meaning and causes written for it (else derived from its words)
    # an error code's words (the CUDA runtime's "invalid argument"): found only where printed as an error's words
    as_error: bool = False

    @functools.cached_property
    def line(self) -> str:
        """The line of its template that a text is searched for: the template itself, or for one printed over
        several lines (torch/cuda/__init__.py's "Found GPU%d %s which is of cuda capability %d.%d." and then,
        indented, "PyTorch no longer supports ...") its first line of MIN_LETTERS letters or more: texts are
        matched line by line, and a paste keeps a message's first line where it re-indents or cuts the rest.
        Colour escapes in a template (onnxruntime/__init__.py prints its CUDA warning in yellow) are not
        searched for: explain takes them out of the text first."""
        lines = _COLOUR.sub("", self.template).split("\n")
        return next((line for line in lines if sum(c.isalpha() for c in line) >= MIN_LETTERS), self.template)

    @functools.cached_property
    def ends_in_field(self) -> bool:
        """Its template's last part is a field: it prints another message's words there (CTranslate2's "CUDA failed
        with error %s")."""
        return not split_template(self.template, self.style)[-1].strip()

    @functools.cached_property
    def regex(self) -> TemplatePattern:
        return compile_template(self.line, self.style)

    @functools.cached_property
    def parts(self) -> tuple[str, ...]:
        return tuple(literal_parts(self.line, self.style))

    @functools.cached_property
    def keys(self) -> frozenset[str]:
        """The words of its literal parts, all of which a text must hold for the entry to be tried."""
        return frozenset(word for part in self.parts for word in _WORD.findall(part))

    @functools.cached_property
    def lead(self) -> str:
        """The start of its first literal part that holds CUT_LETTERS letters (the whole part where it holds fewer):
        a paste cut inside the message holds at least this."""
        first = self.parts[0] if self.parts else ""
        count = 0
        for index, char in enumerate(first):
            count += char.isalpha()
            if count >= CUT_LETTERS:
                return first[:index + 1]
        return first

    @functools.cached_property
    def lead_keys(self) -> frozenset[str]:
        """The whole words of `lead` (its last, where the lead ends inside it, left out)."""
        lead = self.lead
        found = _WORD.findall(lead)
        if found and lead != (self.parts[0] if self.parts else "") and lead.endswith(found[-1]):
            found = found[:-1]
        return frozenset(found)

    @functools.cached_property
    def anchor(self) -> str:
        """Its longest literal part: the lines that hold it are the only ones its pattern runs on."""
        return max(self.parts, key=len).strip() if self.parts else ""

    def json(self) -> dict[str, object]:
        return {"id": self.id, "source": self.source, "file": self.file, "versions": list(self.versions),
                "template": self.template, "meaning": self.meaning, "families": list(self.families),
                "warning": self.warning, "boilerplate": self.boilerplate}


@dataclass(frozen=True)
class Match:
    entry: Entry
    start: int
    end: int
    text: str  # what the pattern matched


@dataclass(frozen=True)
class Near:
    entry: Entry
    line: str  # the line of the text it resembles
    score: float  # 0..1, difflib's ratio of the line to the entry's example


# An entry is tried only when its literal words say enough: a template of fewer literal letters would match
# unrelated text ("%s: %s").
MIN_LETTERS = 12
# ... except a short literal a library returns as the words of an error code (the CUDA runtime's cudaGetErrorString
# "out of memory", "invalid argument"), where the text prints it as such: after an error's name or number, as the
# frameworks print it (PyTorch's c10 "CUDA error: %s" and its TH "cuda runtime error (%d) : %s", ONNX Runtime's
# "CUDA failure %d: %s", Paddle's "CUDA error(%d), %s", CTranslate2's "CUDA failed with error %s", TensorFlow's
# "CUDA_ERROR_OUT_OF_MEMORY: out of memory" and "Status: %s", Caffe's "Check failed: error == cudaSuccess (%d vs.
# 0)  %s", MXNet's "cudaMalloc retry failed: %s", NCCL's "Cuda failure 'out of memory'"); never in a sentence ("the
# GPU ran out of memory").
_AS_AN_ERROR = (r"(?:\b(?:error|failure|failed|status)(?:\s*\(?-?\d+\)?)?\s*(?:[:,]\s*['\"]?|['\"])|"
                r"\bfailed with error\s*|\bcudaSuccess \(-?\d+ vs\. 0\)\s*|\bCUDA_ERROR_\w+\s*:\s*|"
                r"\bcudaError\w*\s*:\s*)")


@dataclass(frozen=True)
class Catalog:
    entries: tuple[Entry, ...]
    api: dict[str, tuple[str, ...]] = field(default_factory=dict)  # cuDNN identifier -> headers' versions
    # glibc's loader words in the languages its catalogs translate them to (po/*.po), each -> the English msgid
    translations: dict[str, str] = field(default_factory=dict)
    # Windows' system messages in the languages they were seen printed in, each -> the English text
    windows: dict[str, str] = field(default_factory=dict)
    # the CUDA driver API's results (cuda.h's CUresult): number -> (name, cuda.h's first sentence on it)
    driver: dict[int, tuple[str, str]] = field(default_factory=dict)

    @functools.cached_property
    def matchable(self) -> tuple[Entry, ...]:
        return tuple(e for e in self.entries
                     if not e.as_error and sum(c.isalpha() for c in "".join(e.parts)) >= MIN_LETTERS)

    @functools.cached_property
    def short_literals(self) -> tuple[dict[str, Entry], re.Pattern[str]]:
        """The literal entries found only printed as an error's words (`_AS_AN_ERROR`): an error code's words
        (``as_error``), and a curated one too short to be matchable; by their words (lower case, single-spaced),
        with the one pattern that finds any of them (the longest first), so a text is read once for all."""
        entries = {_squeezed(e.template): e for e in self.entries if e.style == "literal" and (
            e.as_error or (e.kind and e.curated and e not in self.matchable))}
        words = "|".join(_literal_regex(e.template).pattern for e in sorted(
            entries.values(), key=lambda e: -len(e.template)))
        return entries, re.compile(f"(?i){_AS_AN_ERROR}({words})(?![\\w-])")

    @functools.cached_property
    def by_id(self) -> dict[str, Entry]:
        return {entry.id: entry for entry in self.entries}

    @functools.cached_property
    def by_literal(self) -> dict[str, Entry]:
        """The entries whose template is a literal string (a status name as cudnnGetErrorString returns it), by it."""
        return {entry.template: entry for entry in self.entries if entry.style == "literal"}

    def matches(self, text: str) -> list[Match]:
        """Each entry found in ``text``, with where. Of matches where one holds the other, the longer wins, and a
        curated entry (meaning written for it) over a derived one."""
        present = words(text)
        found: list[Match] = []
        for entry in self.matchable:
            if not entry.anchor:
                continue
            if not entry.keys <= present:
                # a paste that ends inside the message: its first part, and enough of the rest (`TemplatePattern.cut`)
                if entry.lead_keys <= present and not entry.boilerplate:
                    for start, line in itertools.islice(_lines_with(text, entry.lead[:CUT_PART]), STARTS):
                        if (hit := entry.regex.cut(line)) is not None:
                            found.append(Match(entry, start + hit.start(), start + hit.end(), hit.group(0)))
                continue
            for start, line in _lines_with(text, entry.anchor):
                hit = entry.regex.search(line)
                if hit:
                    found.append(Match(entry, start + hit.start(), start + hit.end(), hit.group(0)))
        literals, regex = self.short_literals
        seen: dict[str, int] = {}
        for said in regex.finditer(text):
            entry = literals[_squeezed(said.group(1))]
            seen[entry.id] = seen.get(entry.id, 0) + 1
            if seen[entry.id] <= STARTS:
                found.append(Match(entry, said.start(1), said.end(1), said.group(1)))
        found.sort(key=lambda m: (m.start, -(m.end - m.start), not m.entry.curated))
        kept: list[Match] = []
        for match in found:
            if not any(_holds(k, match) and ((k.end - k.start) > (match.end - match.start) or k.entry.curated
                                             or not match.entry.curated) for k in kept):
                kept.append(match)
        # a derived match inside a curated one's place (the curated one started earlier or is shorter)
        return [m for m in kept if m.entry.curated or not any(k.entry.curated and _holds(k, m) for k in kept)]

    @functools.cached_property
    def _by_kind(self) -> dict[str, list[Entry]]:
        kinds: dict[str, list[Entry]] = {}
        for entry in self.entries:
            if entry.kind and entry.families:
                kinds.setdefault(entry.kind, []).append(entry)
        return kinds

    def weights(self, families: tuple[str, ...], weight: float) -> dict[str, float]:
        """The catalog's count for each of an entry's causes: ``weight`` for the first, half for the second..."""
        return {family: weight / (index + 1) for index, family in enumerate(families)}

    def kind_weights(self, kind: str, weight: float) -> dict[str, float]:
        """The catalog's count for each cause of a kind of message: `weights` averaged over the entries of that
        kind (so a kind of many entries, a status with its sub-codes, weighs no more than one)."""
        entries = self._by_kind.get(kind, [])
        total: dict[str, float] = {}
        for entry in entries:
            for family, value in self.weights(entry.families, weight).items():
                total[family] = total.get(family, 0.0) + value / len(entries)
        return total

    def boilerplate_spans(self, text: str) -> list[tuple[int, int]]:
        return [(m.start, m.end) for m in self.matches(text) if m.entry.boilerplate]

    def nearest(self, text: str, count: int = 3, cutoff: float = 0.5) -> list[Near]:
        """The entries whose example most resembles a line of ``text`` that says something failed: shown as
        "nearest known messages" when nothing in the text is known, never as a match."""
        lines = [line.strip()[:300] for line in text.splitlines()
                 if _FAILURE.search(line) and len(line.strip()) >= 12][:40]
        scored: dict[str, Near] = {}
        for line in lines:
            line_words = words(line)
            for entry in self.matchable:
                if entry.boilerplate or not entry.keys & line_words:
                    continue
                matcher = difflib.SequenceMatcher(None, line.lower(), entry.example.lower(), autojunk=False)
                if matcher.real_quick_ratio() < cutoff or matcher.quick_ratio() < cutoff:
                    continue
                score = matcher.ratio()
                if score >= cutoff and score > getattr(scored.get(entry.id), "score", 0.0):
                    scored[entry.id] = Near(entry, line, round(score, 2))
        return sorted(scored.values(), key=lambda near: -near.score)[:count]

    def declared(self, identifier: str) -> tuple[str, ...]:
        """The cuDNN releases whose headers declare ``identifier`` (none: not in any release read)."""
        return self.api.get(identifier, ())

    @functools.cached_property
    def api_releases(self) -> tuple[str, ...]:
        return tuple(sorted({release for releases in self.api.values() for release in releases}, key=_release))


_FAILURE = re.compile(r"(?i)error|fail|cannot|could not|couldn't|unable|not found|undefined|missing|invalid|"
                      r"not (?:supported|declared|loaded)|exception|abort|warning")


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version))


def _lines_with(text: str, needle: str) -> Iterator[tuple[int, str]]:
    """(offset, line) of each line of ``text`` that holds ``needle``."""
    at = text.find(needle)
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        yield start, text[start:end]
        at = text.find(needle, end)


def entry_from_json(data: dict[str, object]) -> Entry:
    return Entry(
        id=str(data["id"]), source=str(data["source"]), file=str(data["file"]),
        versions=tuple(data["versions"]),  # type: ignore[arg-type]
        template=str(data["template"]), style=str(data["style"]), example=str(data["example"]),
        meaning=str(data["meaning"]), families=tuple(data["families"]),  # type: ignore[arg-type]
        kind=data.get("kind"),  # type: ignore[arg-type]
        warning=bool(data.get("warning")), boilerplate=bool(data.get("boilerplate")),
        curated=bool(data.get("curated")), as_error=bool(data.get("as_error")))


@functools.lru_cache(maxsize=4)
def load(path: Path = DATA) -> Catalog:
    """The catalog in ``path`` (default: the one shipped beside this module), parsed once."""
    data = json.loads(path.read_text(encoding="utf-8"))
    api = {name: tuple(releases) for name, releases in data.get("api", {}).items()}
    translations = {text: msgid for msgid, by_text in data.get("translations", {}).items() for text in by_text}
    windows = {text: english for english, by_text in data.get("windows", {}).items() for text in by_text}
    driver = {int(number): (result["name"], result["meaning"]) for number, result in data.get("driver", {}).items()}
    return Catalog(tuple(entry_from_json(entry) for entry in data["entries"]), api, translations, windows, driver)

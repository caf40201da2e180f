"""A pasted text read back as the program printed it: what terminals, web pages, forums, mails, loggers and
locales do to a program's words, undone before any message is matched (`printed`), and the ways a paste that was
hard-wrapped may have been printed (`unwrapped`). Pure text in, text out."""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Iterable

from cudnnload.diagnose.explain import catalog as messages

# Longer lines are read in pieces of this length: every pattern then runs in bounded time on any input (a 1 MB paste
# of one line, binary junk). Each piece begins OVERLAP characters before the one before it ends, so a message of up to
# that length is whole in one of them wherever it stands on a long line (a log collector's JSON record, a notebook's
# output saved as one line).
LINE_LIMIT = 2000
OVERLAP = 500


def _pieces(line: str) -> str:
    """``line`` as lines of at most LINE_LIMIT characters, each overlapping the one before by OVERLAP."""
    if len(line) <= LINE_LIMIT:
        return line
    step = LINE_LIMIT - OVERLAP
    return "\n".join(line[start:start + LINE_LIMIT] for start in range(0, len(line) - OVERLAP, step))


# A terminal's escape sequences (colours, titles, cursor moves: CSI, OSC, and the two-character ones): they are
# not words of any message, and a colour starts in a word's middle. The other control characters a binary paste
# holds (NULs between the strings of a core file or a library) part words, as a space does.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?|\x9b[0-?]*[ -/]*[@-~]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]+")


# What a web page, a forum or a word processor makes of a program's ASCII: typographic quotes (Discourse, the
# NVIDIA forums and Word write "Could not load dynamic library ‘libcudnn.so.8’"), no-break and other wide spaces,
# invisible ones (zero-width spaces, the byte-order mark), an ellipsis for "...". No message of the catalog holds
# any of them, so each is read as the character the program printed.
_TYPESET = str.maketrans({**dict.fromkeys("‘’‚‛′", "'"), **dict.fromkeys("“”„‟″", '"'),
                          **dict.fromkeys("\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
                                          "\u200a\u202f\u205f\u3000", " "),
                          **dict.fromkeys("\u200b\u200c\u200d\u2060\ufeff", ""), "…": "..."})


# What a reply or a logger puts before each line the program printed. A quoted paste (e-mail's and Markdown's "> ",
# nested "> > "), and the lines of Python's logging configured with a time stamp, as applications that run the
# frameworks log their errors: loguru's default ("2025-01-02 12:00:00.123 | ERROR    | app.main:run:42 - ") and
# logging's common "%(asctime)s - %(name)s - %(levelname)s - %(message)s". The time stamp and the place go; a
# warning's or information's level stays, as a logger's mark the reading knows ("[WARNING] "). TensorFlow's own
# "2024-01-02 12:00:00.000000: W tensorflow/..." is the program's output, and is kept as it is.
_QUOTED = re.compile(r"(?m)^[ \t]*>(?:[ \t]?>)*[ \t]?")
_STAMP = r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
_LOGGED = re.compile(rf"(?m)^{_STAMP}(?:[ \t]*\|[ \t]*(?P<loguru>[A-Z]+)[ \t]*\|[ \t]*"
                     rf"(?:[\w.<>-]+:[\w.<>-]+:\d+[ \t]+-[ \t]+)?"
                     rf"|[ \t]+-[ \t]+[\w.<>-]+[ \t]+-[ \t]+(?P<logging>[A-Z]+)[ \t]+-[ \t]+)")
_KEPT_LEVELS = {"WARNING": "[WARNING] ", "WARN": "[WARNING] ", "INFO": "[INFO] ", "DEBUG": "[INFO] ",
                "TRACE": "[INFO] ", "SUCCESS": "[INFO] "}


# What a log collector or a launcher puts before each line a program printed: docker compose's service
# ("frigate-1  | "), journald's and syslog's ("Dec 05 07:50:05 node3 python3[123]: "), an RFC 3339 time stamp
# (`docker logs -t`, `kubectl logs --timestamps`, GitHub Actions; a CRI log's "stderr F" after it), `kubectl logs
# --prefix`'s "[pod/NAME/CONTAINER] ", Ray's worker prefix ("(RayTrainWorker pid=123, ip=10.0.0.1) ",
# "(raylet) "), `srun --label`'s task ("  0: ") and Open MPI's `--tag-output` ("[1,0]<stderr>:"). None is a word
# of any message; a message that starts a line is read only once it is gone.
_COLLECTED = re.compile(r"(?m)^(?:[A-Za-z0-9][\w.-]* +\| ?"
                        r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.-]+ [^\s:\[]+(?:\[\d+\])?: "
                        r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d) (?:std(?:out|err) [FP] )?"
                        r"|\[pod/[^\]\s]+\] "
                        r"|\((?:[\w.]+ )?(?:pid=\d+(?:, ip=[\d.]+)?|raylet(?:, ip=[\d.]+)?|gcs_server)\) "
                        r"| {0,4}\d{1,4}: "
                        r"|\[\d+,\d+\]<std(?:out|err)>: ?)")


# What Markdown puts around a line a user pasted into an issue: a list's bullet, and bold or inline code that starts
# or ends on it ("**OSError: [WinError 1455] ...**", "- `Could not load library ...`"). No program's message starts
# with either, nor ends with one (glibc's "version `GLIBC_2.38' not found" holds its backtick inside).
_MARKED = re.compile(r"(?m)^(?P<indent>[ \t]*)(?:[-*+][ \t]+(?:\*\*|`(?!``))?|\*\*|`(?!``))|(?<!`)(?:\*\*|`)[ \t]*$")


def _undecorated(text: str) -> str:
    """``text`` without the quote marks, Markdown's marks, the loggers' time stamps and the collectors' prefixes
    before its lines (`_QUOTED`, `_MARKED`, `_LOGGED`, `_COLLECTED`)."""
    if ">" in text:
        text = _QUOTED.sub("", text)
    if "*" in text or "`" in text or "- " in text or "+ " in text:
        text = _MARKED.sub(lambda found: found.group("indent") or "", text)
    text = _COLLECTED.sub("", text)
    return _LOGGED.sub(lambda found: _KEPT_LEVELS.get(found.group("loguru") or found.group("logging") or "", ""),
                       text)


# A text escaped as a string by what stored or printed it: Docker's json-file log and a structured logger's record
# (a JSON object a line), a JSON API's answer, a notebook's saved output, Python's repr of an exception (Ray's and
# multiprocessing's errors print one). Its line breaks are "\n", a Windows path's backslashes doubled, its quotes
# and terminal escapes escaped. A line that is JSON is read as the text it holds; another is read unescaped where it
# holds a "\n" that no path holds (one not before a lowercase letter: "C:\Users\me\nvidia" is a path's) or a
# drive's doubled backslashes ("C:\\Users"), without the quotes and the calls around the string
# ("RuntimeError('...\n...')").
_ESCAPED_BREAK = re.compile(r"\\n(?![a-z])|\b[A-Za-z]:\\\\")
_STRING_ESCAPE = re.compile(r"\\(?:u(?P<u>[0-9a-fA-F]{4})|x(?P<x>[0-9a-fA-F]{2})|(?P<c>[nrt\"'\\/]))")
_QUOTING = re.compile(r"^\s*(?:[\w.]+\()*[rbu]?['\"]|['\"]\)*[,;]?\s*$")
_ESCAPED_AS = {"n": "\n", "r": "", "t": "\t"}


def _unstringed(text: str) -> str:
    """``text`` with each line that a string's escaping made read as the lines it stands for: a JSON line as
    the text it holds (`_json_text`), another unescaped where it holds an escaped line break (`_ESCAPED_BREAK`)."""
    if "\\" not in text and '"' not in text:
        return text
    return "\n".join(_line_unstringed(line) for line in text.split("\n"))


def _line_unstringed(line: str) -> str:
    stripped = line.strip().rstrip(",")
    if stripped[:1] in ('{', '[', '"') and stripped[-1:] in ('}', ']', '"'):
        # a JSON value, or a member of an object pretty-printed a line each ('"evalue": "...",' in a notebook)
        held = _json_text(stripped) or (_json_text(f"{{{stripped}}}") if stripped[:1] == '"' else None)
        if held is not None:
            return held
    if not _ESCAPED_BREAK.search(line):
        return line
    return _STRING_ESCAPE.sub(_character, _QUOTING.sub("", line))


def _json_text(line: str) -> str | None:
    """The text a line of JSON holds: a string; an object's longest string (a log record's message: Docker's
    "log", a logger's "msg"); a list's strings, each with its own line breaks (a notebook's output). None for a
    line that is no JSON, or holds no text."""
    import json

    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, dict):
        value = max((held for held in value.values() if isinstance(held, str)), key=len, default=None)
    elif isinstance(value, list):
        value = "".join(held for held in value if isinstance(held, str)) or None
    return value.rstrip("\n") if isinstance(value, str) and value.strip() else None


def _character(escape: re.Match[str]) -> str:
    """The character one escape stands for (half of a surrogate pair, never printable alone, as U+FFFD)."""
    code = escape.group("u") or escape.group("x")
    if not code:
        return _ESCAPED_AS.get(escape.group("c"), escape.group("c"))
    return "\ufffd" if 0xD800 <= int(code, 16) <= 0xDFFF else chr(int(code, 16))


# A page's HTML source, or a feed's text of it, holds the characters a program printed as entities
# ("libcudnn.so.8: cannot open shared object file" in "&quot;...&quot;", "&lt;module&gt;", "&#39;").
_ENTITY = re.compile(r"&(?:[A-Za-z]{2,8}|#\d{1,7}|#[xX][0-9A-Fa-f]{1,6});")


def _unescaped(text: str) -> str:
    """``text`` with its HTML entities read as the characters they stand for, where it holds any."""
    return html.unescape(text) if _ENTITY.search(text) else text


# A paste hard-wrapped at a width: a terminal's copy cuts each long line at its width, in the middle of a word; a
# mail or a forum re-flows it at a word boundary, within a width (Python's textwrap and most mailers break before a
# word that would pass it). A message cut so reads as two lines, and neither holds the message.
WRAP_WIDTHS = range(40, 161)
# A paste longer than this is a whole log, read as given (each way of joining it is read again: a paste of a few
# screens is read in a few milliseconds, a megabyte's log in seconds).
UNWRAP_LIMIT = 1 << 16
# A line that starts a record of its own: a logger's severity letter or time stamp, a traceback's, a bracket.
_RECORD = re.compile(r"[EFWIDC]\d{4} |[EFWIDC] \S|\d{4}-\d\d-\d\d|\[|Traceback|File \"|During handling")


# A line that sets a block apart: an empty one, or a Markdown fence. A paste's blocks are wrapped each at its own
# width (a user's prose unwrapped above a log the mail client re-flowed, or a terminal's copy inside a fence).
_FENCES = ("```", "~~~")


def unwrapped(text: str) -> tuple[tuple[str, bool], ...]:
    """``text`` with the lines a wrap made joined again, each way a wrap is made, each block (`_FENCES`) at its
    widest line's width: a mail's or a forum's re-flow (a line that the next line's first word would have taken
    past that width, joined with a space, unless it ends a sentence before a capital), and a terminal's copy
    (every line of exactly that width joined with the next as one word). Never before a line that starts a record
    of its own (`_RECORD`); a break at a space (the next line indented, the line ending in one) joined as it is; no
    line joined past LINE_LIMIT. Each with whether a terminal's join in it is of one line alone at its block's
    width (weaker: `explain._rejoined`). None where no block's widest line is a wrap's, or the text is past
    UNWRAP_LIMIT."""
    if len(text) > UNWRAP_LIMIT:
        return ()
    blocks: list[list[str]] = [[]]
    for line in text.split("\n"):
        if not line.strip() or line.lstrip().startswith(_FENCES):
            blocks.extend(([line], []))
        else:
            blocks[-1].append(line)
    flowed, cut, lone, hand = [], [], False, []
    for block in filter(None, blocks):
        reflowed, terminal, alone = _joined(block)
        flowed.append(reflowed)
        cut.append(terminal)
        lone = lone or (alone and terminal != "\n".join(block))
        hand.append(_paragraph(block))
    return tuple((candidate, cutting and lone)
                 for cutting, candidate in ((False, "\n".join(flowed)), (True, "\n".join(cut)),
                                            (False, "\n".join(hand))) if candidate != text)


def _paragraph(lines: list[str]) -> str:
    """One block's lines joined as the paragraph they may be, wrapped by hand or at no one width (a message
    retyped, an editor's soft wrap pasted): every line that starts no record of its own (`_RECORD`) joined to the
    one before with a space, none past LINE_LIMIT."""
    joined = [lines[0]]
    for line in lines[1:]:
        if _RECORD.match(line.lstrip()) or len(joined[-1]) + len(line) >= LINE_LIMIT:
            joined.append(line)
        else:
            joined[-1] = joined[-1].rstrip() + " " + line.lstrip()
    return "\n".join(joined)


def _joined(lines: list[str]) -> tuple[str, str, bool]:
    """One block's lines re-flowed and cut joined (`unwrapped`), and whether its widest line is alone at its
    width; the block as given, twice, where its widest line is no wrap's."""
    width = max((len(line.rstrip()) for line in lines), default=0)
    if width not in WRAP_WIDTHS or len(lines) < 2:
        return "\n".join(lines), "\n".join(lines), False
    flowed, cut = [lines[0]], [lines[0]]
    for before, line in zip(lines, lines[1:], strict=False):
        end, first = before.rstrip(), line.lstrip().split(" ", 1)[0]
        at_space = end != before or not line[:1].strip()
        record = bool(_RECORD.match(line.lstrip()))
        if (not record and len(end) + 1 + len(first) > width and not (end[-1:] in ".!?:" and first[:1].isupper())
                and len(flowed[-1]) + len(line) < LINE_LIMIT):
            flowed[-1] += line if at_space else " " + line
        else:
            flowed.append(line)
        if not record and len(end) == width and len(cut[-1]) + len(line) < LINE_LIMIT:
            cut[-1] += line
        else:
            cut.append(line)
    # a terminal's cut shows in two lines or more of that width; one alone may be the widest line of any text
    lone = sum(len(line.rstrip()) == width for line in lines) == 1
    return "\n".join(flowed), "\n".join(cut), lone


@functools.lru_cache(maxsize=1)
def _translated() -> tuple[re.Pattern[str] | None, dict[str, str]]:
    """A pattern of every translation of glibc's loader words that the catalog holds (typeset as `_TYPESET`
    reads it), longest first, and the English of each."""
    english = {text.translate(_TYPESET): msgid for text, msgid in messages.load().translations.items()}
    return (re.compile(_longest_first(english)) if english else None), english


def _longest_first(texts: Iterable[str]) -> str:
    """A pattern of any of ``texts``, the longest tried first (a translation that holds another is read whole)."""
    return "|".join(re.escape(text) for text in sorted(texts, key=len, reverse=True))


def _in_english(text: str) -> str:
    """``text`` with glibc's loader words read in English where a locale printed them in its language (dlerror
    and ld.so translate them: "libcudnn.so.8: 无法打开共享对象文件: 没有那个文件或目录" under zh_CN is "libcudnn.so.8:
    cannot open shared object file: No such file or directory"). Only a line that names a shared object (".so":
    glibc's messages name the library they are about) and is not ASCII is read so."""
    if text.isascii():
        return text
    pattern, english = _translated()
    if pattern is None:
        return text
    return "\n".join(pattern.sub(lambda found: english[found.group(0)], line)
                     if ".so" in line and not line.isascii() else line for line in text.split("\n"))


# Where a text is Windows' (a DLL, Python's "[WinError N]" and "DLL load failed", LoadLibrary, Rust's "(os error N)",
# .NET's HRESULT), its system messages are read in English.
_WINDOWS_CONTEXT = re.compile(r"(?i)\.dll\b|WinError|DLL load failed|LoadLibrary|os error \d|HRESULT|0x8007")


def _stem(text: str) -> str:
    """A Windows message without its end's full stop (Python's "[WinError N]" drops an ASCII one) and its "%1"
    (the file, which Python leaves as it is: "[WinError 193] %1 is not a valid Win32 application")."""
    text = text.rstrip(" .。")
    return text[2:].lstrip() if text.startswith("%1") else text


@functools.lru_cache(maxsize=1)
def _windows_translated() -> tuple[re.Pattern[str] | None, dict[str, str]]:
    """A pattern of every translation of Windows' system messages that the catalog holds (`_stem`, typeset as
    `_TYPESET` reads it), longest first, each with the full stop after it, and the English of each."""
    english = {_stem(text.translate(_TYPESET)): _stem(words) for text, words in messages.load().windows.items()}
    return (re.compile(f"(?:{_longest_first(english)})[.。]?") if english else None), english


def _windows_in_english(text: str) -> str:
    """``text`` with Windows' system messages read in English where Windows printed them in its language
    ("[WinError 126] 找不到指定的模块。" is "[WinError 126] The specified module could not be found."), in a text
    that is Windows' (`_WINDOWS_CONTEXT`)."""
    pattern, english = _windows_translated()
    if pattern is None or not _WINDOWS_CONTEXT.search(text):
        return text
    return pattern.sub(lambda found: english[found.group(0).rstrip(".。")] + "." * (found.group(0)[-1:] in ".。"),
                       text)


def printed(text: str) -> tuple[str, bool]:
    """``text`` with a string's escapes read (`_unstringed`) and its HTML entities (`_unescaped`), without escape
    sequences, control characters read as spaces, typeset characters read as what the program printed
    (`_TYPESET`), without quote marks, Markdown's marks, loggers' time stamps and collectors' prefixes
    (`_undecorated`), glibc's translated loader words and Windows' system messages read in English (`_in_english`,
    `_windows_in_english`), each line longer than LINE_LIMIT read in pieces (`_pieces`); and whether any words were
    read in English."""
    plain = _undecorated(_CONTROLS.sub(" ", _ESCAPES.sub("", _unescaped(_unstringed(text)))).translate(_TYPESET))
    cut = "\n".join(_pieces(line) for line in plain.splitlines())
    english = _windows_in_english(_in_english(cut))
    return "\n".join(_pieces(line) for line in english.split("\n")), english != cut

"""``cudnnload explain "TEXT"``: the causes of a pasted cuDNN error, ranked by what the text shows.

People paste errors from another machine (a cluster node, a CI log, a GitHub issue), so the ranking reads
the text alone (`reading`: the messages, known from the `catalog` of what the frameworks, cuDNN, glibc and
Windows print, the `Error:` part's library, paths, platform, versions, the framework; `ranking`: how often
each cause is the real one for that message, counted on the tuning reports and on the catalog's meaning, then
the evidence in the text, read after the frameworks' generic advice is taken out). The same text ranks the
same on every machine. A text with no known message that still names cuDNN gets the usual causes of what its
words say (a status in words, a cuDNN library next to words of a failed load, a cuDNN function next to words of
a link failure, a version), never above "possible", with the catalog's nearest messages shown as such, never as
a match; a text with no known message that does not name cuDNN gets only the causes of a failing call its words
name strongly ("out of memory", an Xid, "no kernel image"), never one about loading. Where its words name none,
the causes of a failing call that the catalog's nearest messages list are offered, said to come from them; a text
that names cuDNN and nothing more gets the usual causes of a failing cuDNN call. All are never above "possible".

With ``here=True`` (``explain --here``, for an error of this machine) each cause is also checked on this
machine (`here`): "shows", "rules out" or "cannot tell", and a cause this machine shows moves up, one it
rules out down. Nothing is loaded either way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cudnnload.diagnose.explain import catalog as messages
from cudnnload.diagnose.explain import pasted
from cudnnload.diagnose.explain.causes import FAMILIES
from cudnnload.diagnose.explain.here import CANNOT_TELL, RULES_OUT, SHOWS, Here, check, machine
from cudnnload.diagnose.explain.ranking import Priors, Scored, confidence, loads_last, rank
from cudnnload.diagnose.explain.reading import GUESSES, Reading, Signal, read
from cudnnload.errors import UsageError
from cudnnload.verdicts import Fix

__all__ = ["Cause", "Explanation", "explain", "read", "Reading", "Signal", "SHOWS", "RULES_OUT", "CANNOT_TELL"]

# How far a check on this machine moves a cause (``--here``): as far as decisive evidence in the text.
HERE_WEIGHT = {SHOWS: 3.0, RULES_OUT: -3.0, CANNOT_TELL: 0.0}


@dataclass(frozen=True)
class Cause:
    title: str
    family: str  # its id in fixtures/explain/FAMILIES.md
    confidence: str  # "confident", "likely", "possible", "unlikely"
    evidence: tuple[str, ...]  # the parts of the text that point at it (or away), and what each means
    prior: str  # how often the corpus saw this cause for this kind of message
    why: str  # how the cause produces the message
    tell: str  # the check that tells it apart from the others
    fix: Fix
    here: str | None = None  # "shows", "rules out", "cannot tell"; None: this machine was not checked
    here_detail: str | None = None

    def json(self) -> dict[str, object]:
        return {"title": self.title, "family": self.family, "confidence": self.confidence,
                "evidence": list(self.evidence), "prior": self.prior, "why": self.why, "tell": self.tell,
                "here": self.here, "here_detail": self.here_detail, "fix": self.fix.json()}


@dataclass(frozen=True)
class Explanation:
    reading: Reading
    causes: tuple[Cause, ...]  # best first
    checked_here: bool  # whether the causes were checked on this machine (and ranked with it)
    note: str | None = None  # for a text with no known message
    nearest: tuple[messages.Near, ...] = ()  # the catalog's messages closest to an unknown text: not matches

    @property
    def recognized(self) -> bool:
        return bool(self.reading.signals)

    @property
    def confirmed(self) -> bool:
        """This machine shows one of the causes (``--here`` only)."""
        return any(cause.here == SHOWS for cause in self.causes)

    def json(self) -> dict[str, object]:
        r = self.reading
        return {
            "recognized": self.recognized,
            "messages": [{"pattern": s.pattern, "kind": s.kind, "line": s.line, "quote": s.quote, "source": s.source,
                          "meaning": s.meaning, "library": s.library, "failed": s.failed, "error": s.error,
                          "status": s.status, "built": s.built, "found": s.found, "warning": s.warning,
                          "catalog": s.entry} for s in r.signals],
            "read": {"platform": r.platform, "cudnn_major": r.cudnn_major,
                     "cuda": ".".join(map(str, r.cuda)) if r.cuda else None, "framework": r.framework,
                     "frameworks": list(r.frameworks), "paths": list(r.paths),
                     "clues": [{"name": c.name, "quote": c.quote} for c in r.clues]},
            "checked_here": self.checked_here,
            "causes": [cause.json() for cause in self.causes],
            "note": self.note,
            "nearest": [{"line": near.line, "score": near.score, **near.entry.json()} for near in self.nearest],
        }


def _messages(reading: Reading) -> dict[tuple[str, str, str | None, str | None], Signal]:
    """The messages a pattern or the catalog knows in ``reading`` (guesses from a text's words are none)."""
    return {(signal.pattern, signal.kind, signal.failed, signal.status): signal for signal in reading.signals
            if signal.pattern not in GUESSES}


def _rejoined(joined: Reading, reading: Reading, text: str, lone: bool) -> bool:
    """Whether ``joined`` (``text`` unwrapped, `pasted.unwrapped`) holds a message a pattern or the catalog knows
    that ``reading`` (of ``text`` as given) does not, and that a wrap had cut: its words are on no line of ``text``
    (and, where ``lone``, do not go on from a message ``text`` holds: the widest line of a text that no terminal
    cut may end a message of its own, "... undefined symbol: cudnnX" before "cuDNN 7.1"); a message read without
    its words only where ``text`` holds no known message at all."""
    lines = [" ".join(line.split()) for line in text.split("\n")]
    had = _messages(reading)
    whole = [signal.quote.rstrip("…") for signal in had.values() if signal.quote]
    return any(not any(words in line for line in lines) and not (lone and any(words.startswith(old) for old in whole))
               if (words := signal.quote.rstrip("…")) else not had
               for key, signal in _messages(joined).items() if key not in had)


# Said where a text held glibc's loader words or Windows' system messages in another language.
IN_ENGLISH = "the loader's or the system's words in the text's language were read as the English ones, as shown above"


def explain(text: str, *, here: bool = False, environ: Mapping[str, str] | None = None,
            site_paths: Sequence[str] | None = None, priors: Priors | None = None) -> Explanation:
    """The causes of the cuDNN messages in ``text``, best first, ranked by the text alone; with ``here``, also
    checked on this machine (its environment ``environ``, the pip wheels on ``site_paths``; default: this
    process's), and ranked with what this machine shows. Without ``here`` neither is read. ``priors``: the counts
    per message kind the ranking weighs causes by (default `ranking.PRIORS`)."""
    if not text.strip():
        raise UsageError("nothing to explain: paste the error message", fix='cudnnload explain "Could not load ..."')
    cut, translated = pasted.printed(text)
    reading = read(cut)
    # a paste hard-wrapped: read as it was printed, where that holds a message a wrap had cut (of the ways to join
    # it, the one that holds the most messages; a re-flow's before a terminal's)
    joined = [(again, candidate) for candidate, lone in pasted.unwrapped(cut)
              if _rejoined(again := read(candidate), reading, cut, lone)]
    if joined:
        reading, cut = max(joined, key=lambda pair: len(_messages(pair[0])))
    guessed = all(signal.pattern in GUESSES for signal in reading.signals)
    nearest = tuple(messages.load().nearest(cut)) if guessed else ()
    ranked = rank(reading, priors, nearest)
    if not ranked:
        aborted = reading.quote("aborted")
        notes = [f"the process aborted (\"{aborted}\") after a line that is not in the text: paste the line before "
                 "it, or run `cudnnload doctor -- YOUR-PROGRAM`" if aborted else "",
                 "nearest known messages (not a match; the text holds none of them): " + "; ".join(
                     f"\"{near.entry.template}\" ({near.entry.source}, {near.entry.file})" for near in nearest)
                 if nearest else ""]
        return Explanation(reading, (), here, "\n".join(n for n in notes if n) or None, nearest)
    note = ("no message cudnnload knows is in the text: the causes are the usual ones of what its words say"
            + ("; nearest known messages (not a match): " + "; ".join(
                f"\"{near.entry.template}\" ({near.entry.source}, {near.entry.file})" for near in nearest)
               if nearest else "")) if guessed else None
    if translated:
        note = f"{note}; {IN_ENGLISH}" if note else IN_ENGLISH
    checks: dict[str, Here] = {}
    if here:
        facts = machine(environ, site_paths)
        checks = {scored.family: check(scored.family, facts, reading) for scored in ranked}
        ranked = loads_last(reading, sorted(ranked, key=lambda s: -(s.score + HERE_WEIGHT[checks[s.family].verdict])))
    return Explanation(reading, tuple(_cause(reading, ranked, index, checks.get(scored.family), guessed)
                                      for index, scored in enumerate(ranked)), here, note, nearest)


# The confidences from most to least sure; a guess from a text's words is never surer than "possible".
_CONFIDENCES = ("confident", "likely", "possible", "unlikely")


def _cause(reading: Reading, ranked: tuple[Scored, ...], index: int, seen: Here | None, guessed: bool) -> Cause:
    scored = ranked[index]
    family = FAMILIES[scored.family]
    primary = reading.primary
    # what in the text moved it; with nothing more than the message, the message's own words
    evidence = scored.evidence or ((f"the message: \"{primary.quote or primary.line}\"",) if primary else ())
    sure = confidence(ranked, index)
    if guessed:
        sure = _CONFIDENCES[max(_CONFIDENCES.index(sure), _CONFIDENCES.index("possible"))]
    return Cause(family.title(reading, primary), scored.family, sure, evidence, scored.prior,
                 *family.words(reading, primary), family.fix(reading, primary), seen.verdict if seen else None,
                 seen.detail if seen else None)

"""The GPU generations a text can name, in one table: the names programs and people write for each generation's
GPUs (its compute capability in a comment) and the first CUDA release with kernels for it (the CUDA Toolkit
release notes: sm_75 in 10.0, sm_80 in 11.0, sm_86 in 11.1, sm_89 and sm_90 in 11.8, sm_100 and sm_120 in 12.8).
`reading` makes its GPU clues from it (each generation's names under its clue), `ranking.gpu_newer_than_cuda` the
CUDA a GPU needs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class Generation:
    clue: str  # the reading's clue that the names are part of
    first_cuda: tuple[int, int] | None  # the first CUDA with kernels for it, where a clue needs it
    names: str  # a regular expression

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.names)


GENERATIONS: tuple[Generation, ...] = (
    # Blackwell (compute capability 10.0, 12.0)
    Generation("gpu-new", (12, 8), r"RTX ?50\d0|\bB[12]00\b|\bGB200\b|\bBlackwell\b|\bsm_1[02]\d\b"),
    # Ada and Hopper (8.9, 9.0)
    Generation("gpu-new", (11, 8), r"RTX ?40\d0|\bL40S?\b|\bL4\b|\bH[12]00\b|\bGH200\b|\bHopper\b|\bsm_(?:89|9\d)\b"),
    # Ampere GA10x (8.6), then GA100 (8.0)
    Generation("gpu-new", (11, 1), r"RTX ?30\d0|\bA(?:10|40|6000|5000|4000)\b|\bRTX A\d{4}\b|\bsm_8[6-8]\b"),
    Generation("gpu-new", (11, 0), r"\bA(?:100|30)\b|\bAmpere\b|\bsm_8[0-5]\b"),
    # Turing (7.5), whose kernels came with CUDA 10.0: a CUDA before it (9.x and older) named beside it has none for it
    Generation("gpu-turing", (10, 0), r"RTX ?20[678]0|\bGTX ?16[56]0\b|\bTITAN RTX\b|\bQuadro RTX ?\d{4}\b|\bT4\b|"
                                      r"\bTuring\b|\bsm_75\b"),
    # Maxwell and Pascal (5.x, 6.x), the generations before Volta: the oldest a build of today still has, and the next
    # it drops (CUDA 12.8's builds of torch 2.8 and later left out sm_50 and sm_60)
    Generation("gpu-before-volta", None, r"\bMaxwell\b|\bPascal\b|\bGTX ?(?:9[5-8]0|10[5-8]0)(?: ?Ti)?\b|\bTITAN Xp?\b|"
                                         r"\bQuadro [MP]\d{3,4}\b|\bTesla [MP]\d{1,3}\b|\bP100\b|\bMX ?[12]\d0\b"),
    # Kepler and Fermi (3.x, 2.x): the name says which GPU it is, not that this build dropped it (cuDNN 7 and 8 ran on
    # Kepler)
    Generation("gpu-old-name", None, r"\bKepler\b|\bFermi\b|\bGeForce (?:GT |GTX )?[4-7]\d\d[A-Z]?M?\b|\bTesla K\d+|"
                                     r"\bQuadro K\d+|\b(?:GT|GTX) ?[4-7]\d\dM?\b|\b6\d\dM\b"),
)


def clues() -> tuple[tuple[str, str], ...]:
    """(clue, regular expression) for each clue of the table: its generations' names, newest first."""
    named = dict.fromkeys(generation.clue for generation in GENERATIONS)
    return tuple((clue, "|".join(g.names for g in GENERATIONS if g.clue == clue)) for clue in named)


def first_cuda(text: str) -> tuple[str, tuple[int, int]] | None:
    """(the GPU's name as written, the first CUDA with kernels for it) of the newest generation ``text`` names."""
    for generation in GENERATIONS:
        found = generation.pattern.search(text)
        if found and generation.first_cuda:
            return found.group(0), generation.first_cuda
    return None

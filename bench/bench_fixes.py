"""The fix proof (issue 17 item 4): is the fix `cudnnload doctor` gives for each failing layout of the scenario
corpus right, applied?

    python bench/bench_fixes.py [--layouts NAME,...] [--forms declared,target,command] [--out FILE]

For every failing layout (fixtures/scenarios/layouts.py; `make wheels` first), in each form: the corpus's own
first fix ("declared", the control: it says the harness and the layout are sound), the error findings'
``fix.actions`` of ``doctor --json TARGET`` and of ``doctor --output FILE -- APP ...``, applied to a copy of the
layout (fixtures/scenarios/fixes.py says how), then the app run again. A fix is proven when the app then works
(exit 0, every call as on a healthy install of the release, one release mapped). Prints a row per layout, the
proven fraction per family for each form, and each unproven layout with why: no report (doctor gave no JSON
document), no error finding, no actions (a fix still given as text counts as none), manual only, not applied (an
action refused), or still failing.
"right kinds": the action kinds are those of one of the fixes the layout declares; a fix that works with other
kinds (an extra install beside the entry that was the cause) is marked WRONG KINDS and not counted proven.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fixtures.scenarios.fixes import FORMS, PROVEN, Proof, failing, kinds, prove  # noqa: E402


def cell(proof: Proof | None) -> str:
    if proof is None:
        return "n/a (only a running process shows it)"
    said = proof.verdict
    if proof.kinds:
        said += f" [{', '.join(proof.kinds)}]" + ("" if proof.right_kinds in (None, True) else " WRONG KINDS")
    return said


def proven(proof: Proof) -> bool:
    """The app works once the fix is applied, and the fix is of the kinds the layout declares (not more)."""
    return proof.verdict == PROVEN and proof.right_kinds is not False


def manual_by_nature(name: str) -> bool:
    """The layout's own fixes are all manual: no automatic action exists (a driver, a relink, a newer host)."""
    layout = next(layout for layout in failing() if layout.name == name)
    return all(set(kinds(fix)) == {"manual"} for fix in layout.fixes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layouts", default="", help="comma-separated layout names (default: every failing one)")
    parser.add_argument("--forms", default=",".join(("declared", *FORMS)), help="declared, target, command")
    parser.add_argument("--out", help="also write the tables to this file")
    args = parser.parse_args()
    names = {n for n in args.layouts.split(",") if n}
    forms = [f for f in args.forms.split(",") if f]
    started = time.monotonic()
    proofs: dict[str, dict[str, Proof | None]] = {}
    lines = ["| layout | family | " + " | ".join(forms) + " |", "|---|---|" + "---|" * len(forms)]
    print(lines[0], flush=True)
    for layout in failing():
        if names and layout.name not in names:
            continue
        row: dict[str, Proof | None] = {}
        for form in forms:
            row[form] = None if form == "target" and not layout.static else prove(layout, form)
        proofs[layout.name] = row
        lines.append(f"| {layout.name} | {layout.family} | " + " | ".join(cell(row[f]) for f in forms) + " |")
        print(lines[-1], flush=True)
    families: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    for row in proofs.values():
        for form, proof in row.items():
            if proof is not None:
                counts = families[proof.family][form]
                counts[0] += proven(proof)
                counts[1] += 1
                counts[2] += not manual_by_nature(proof.layout)
    lines += ["", "proven / failing layouts (/ of them with an automatic fix), per family:", "",
              "| family | " + " | ".join(forms) + " |", "|---|" + "---|" * len(forms)]
    for family in sorted(families):
        lines.append(f"| {family} | " + " | ".join("{}/{} ({})".format(*families[family].get(form, [0, 0, 0]))
                                                   for form in forms) + " |")
    totals = [[sum(families[f].get(form, [0, 0, 0])[i] for f in families) for i in range(3)] for form in forms]
    lines.append("| **all** | " + " | ".join("**{}/{} ({})**".format(*total) for total in totals) + " |")
    lines += ["", "unproven, and why:", ""]
    for name, row in proofs.items():
        for form, proof in row.items():
            if proof is not None and not proven(proof):
                why = "; ".join(proof.why[:2]) if proof.why else ", ".join(proof.codes) or "-"
                verdict = proof.verdict if proof.verdict != PROVEN else "works, with other kinds than declared"
                lines.append(f"- {name} ({form}): {verdict}: {why}")
    lines.append(f"\n{len(proofs)} failing layouts, {time.monotonic() - started:.0f} s")
    print("\n".join(lines[len(proofs) + 2:]))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

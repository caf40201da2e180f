"""Diagnose: what is wrong with a cuDNN setup, what the user will see, and how to fix it.

Runs the stages before it and arranges what they return: `inventory` and `which` (resolve's facts gathered
in one context, then judged: `cudnnload.find`, `cudnnload.which`); `doctor` (every check on a target, one
report), `targets` (what a target names), `observe` (``doctor -- COMMAND``: the program run and watched,
with `launch`, `lddebug` and `family`),
`pid` (a running process), `rooted` (an image's root); the fix's order and reach (`remedy`, `ahead`,
`scoped`); `before` (a verdict before an install); `explain` (an error message); `trace` and `apilog`
(first-call latency, cuDNN's API log); `fleet` (many nodes' reports). The CLI formats what it hands on.
"""

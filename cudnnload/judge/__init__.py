"""Judge: facts to verdicts. What is wrong, what the user will see, and the fix, as data.

Pure functions over what `cudnnload.resolve` found (files are asked about through its facts, never read
here): an install's findings and the calls an application would see (`installs`, `consequences`), the
search-path policy (`policy`), the driver and GPUs (`gpu`), each framework's rules (`frameworks`), the
fixes as actions derived from the facts (`fixes`), which install ``load()`` takes (`choose`), and what
each cuDNN name resolves to (`which`). `inventory` and `which` are the doors: they gather resolve's facts
first, then judge them. Hands on judged `Install`s (their `Verdict`) for `cudnnload.loading` to load and
`cudnnload.diagnose` to explain.
"""

"""Judge: facts to verdicts. What is wrong, what the user will see, and the fix, as data.

Pure functions over what `cudnnload.resolve` found (files are asked about through its facts, never read
here): an install's findings and the calls an application would see (`installs`, `consequences`), the
search-path policy (`policy`), the driver and GPUs (`gpu`), each framework's rules (`frameworks`), the
fixes as actions derived from the facts (`fixes`), which install ``load()`` takes (`choose`), what is said
of the names ``which`` resolved (`which`), and the findings of a whole inventory (`inventory`). No module
here gathers: the caller builds one context and gathers (`cudnnload.diagnose.inventory`, `.which`), then
asks. Hands on `judged.Judged` installs (resolve's `Install` with the judge's `Verdict`) for
`cudnnload.loading` to load and `cudnnload.diagnose` to explain.
"""

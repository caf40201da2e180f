"""Resolve: which cuDNN files are on this machine, what each one is, and which one ld.so would open.

Answers without loading anything: the catalog of cuDNN generations, each file's ELF facts (and
its GPU code), glibc's search for a name from a given object in a given environment, and every
install found, grouped and judged (`discovery`), or per name (`which`). Hands on `Install`s with
their load plans and findings, for `cudnnload.loading` to load and `cudnnload.diagnose` to explain.
"""

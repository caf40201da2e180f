"""Resolve: which cuDNN files are on this machine, what each one is, and which one ld.so would open.

Answers without loading anything and without judging: the catalog of cuDNN generations, each file's
ELF facts (and its GPU code), glibc's search for a name from a given object in a given environment,
every install found and grouped (`discovery`), who may write what (`access`), the frameworks installed
(`consumers`) and the driver's facts as records (`hardware`). Hands on facts (`Install`s with their load
plans, RECORD against the disk) for `cudnnload.judge` to judge.
"""

"""Analysis of schedule JSON: summary, diff, critical path, idle gaps and a Perfetto export.

Every command reads a schedule through `load_schedule`, which accepts both our own files
(`furiosa-opt compile --dump-schedule`) and upstream-shaped ones (string indices, no `source`, no
`makespan`), so the analyses never see raw JSON. README.md beside this file says what each computes.
"""

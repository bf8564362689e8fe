"""The build: the pipeline and the incremental engine under it.

In: the settings, a clock and a target (where files go). Out: a site swapped in whole
(or only its changes, for a deploy), the build cache saved for the next build, and a
BuildReport.

pipeline runs the stages top to bottom (inspect → catalog → render → write → search →
swap); inspection and holdback decide what is published; keys, ledger, cache and state
(with records, what it holds of each unit and file) decide what is kept; target, writer
and parallel put files in place; lock keeps one writer per site and per cache.
"""

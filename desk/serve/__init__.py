"""`desk serve`: the editor's live preview.

In: the settings and the watcher's changed paths. Out: the first half of `desk build`
(desk.build.pipeline.prepare) run at the start and after each batch of saves (server),
through an index of the preview's own (folder), and each file a browser asks for
rendered then, in memory, with the build's own renderers (demand), served over HTTP
(http) with what the preview shows (shown), and open pages told to reload when what they
show changed. No site is written.
"""

"""`desk serve`: the editor's live preview.

In: the settings and the watcher's changed paths. Out: the same build as `desk build`
(desk.build.pipeline), into a private folder, served over HTTP with a reload on every
save (server).
"""

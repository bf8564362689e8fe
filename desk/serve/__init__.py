"""`desk serve`: the editor's live preview.

In: the settings and the watcher's changed paths. Out: the same build as `desk build`
(desk.build.pipeline), into the site's preview folder (folder), served over HTTP (http)
with what the preview shows (shown): a saved story's pages ahead of its build
(desk.build.ahead), the builds one after another (builds), a start that serves the last
preview's site at once when nothing changed (resume), the files a start's first build
will write, made on demand while it renders (demand), and reloads of the pages that
changed (server).
"""

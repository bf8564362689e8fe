"""Search: the site's search index, in bundles whose size is bounded.

In: the published stories, the staged site's pages and the sealed bundles the cache
recalls. Out: the index files written into the staged site (index) and the plan of
which bundle indexes which stories (bundles).
"""

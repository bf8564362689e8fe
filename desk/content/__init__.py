"""Content: what a story file becomes.

In: the files under the content folder (story JSON, withdrawals) and the settings.
Out: immutable, validated models (desk.content.models), a LoadedStory summary of each
file with its findings (loader, checks), and the catalog (catalog) that places every
story among the published, held, draft or withdrawn ones, with the URL history of moved
stories (history). Nothing here renders or writes.
"""

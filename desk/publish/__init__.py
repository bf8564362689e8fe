"""What a build tells after it: the JSON and Markdown publish reports (report), GitHub
annotations (annotations), the site's size budget (budget) and the link check of a
built site (linkcheck).

In: a BuildReport or a built folder. Out: text and data for people and CI; nothing
here changes the site.
"""

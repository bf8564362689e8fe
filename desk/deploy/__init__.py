"""`desk deploy`: put a built site into an S3-compatible bucket, changed files only.

plan.py decides what to upload and delete from the site and the bucket's state,
headers.py what each object is served with, store.py speaks to the bucket and run.py
carries the plan out in an order that never shows a half-updated site.
"""

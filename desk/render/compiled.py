"""Templates' compiled code, kept in the build cache's folder between processes.

In: a folder and the version of what compiles the templates (desk's code fingerprint,
which names Python's and Jinja's versions too). Out: a Jinja bytecode cache.

A fresh process (the hourly publish, a preview's start) would otherwise compile every
template it uses from source: about 0.19 s for desk's own, where loading their code takes
about a millisecond. A template is compiled again whenever its source differs (Jinja
compares a checksum of it) or desk, Python or Jinja is another version. Only a build that
saves its state keeps code here (not `desk build --no-cache`).

The files are code, as the virtual environment's are: the cache folder is trusted as much
as the environment desk runs from. No pickle is read: a file is a line of what it was
compiled from, then the code in marshal's format.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import tempfile
from pathlib import Path

from jinja2.bccache import Bucket, BytecodeCache

# The folder below the cache folder that holds them.
COMPILED_TEMPLATES = "templates"
SUFFIX = ".code"


class CompiledTemplates(BytecodeCache):
    """Compiled templates in a folder, one file each, written whole or not at all."""

    def __init__(self, folder: Path, version: str) -> None:
        self.folder = folder
        self.version = version

    def load_bytecode(self, bucket: Bucket) -> None:
        """The bucket's code, when its file was compiled from this source by this version."""
        try:
            data = self._file(bucket).read_bytes()
        except OSError:
            return
        head = self._head(bucket)
        if not data.startswith(head):
            return  # another source, or another desk, Python or Jinja
        try:
            bucket.code = marshal.loads(data[len(head):])
        except (EOFError, ValueError, TypeError):
            bucket.reset()  # cut short or damaged: compiled again, and written again

    def dump_bytecode(self, bucket: Bucket) -> None:
        """Keep the bucket's code for the next process; failing to only costs time."""
        if bucket.code is None:
            return
        data = self._head(bucket) + marshal.dumps(bucket.code)
        with contextlib.suppress(OSError):
            self.folder.mkdir(parents=True, exist_ok=True)
            # Written beside it and renamed: a build reading it meanwhile, or two builds
            # writing it at once, see a whole file.
            fd, scratch = tempfile.mkstemp(dir=self.folder, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                os.replace(scratch, self._file(bucket))
            except BaseException:
                Path(scratch).unlink(missing_ok=True)
                raise

    def clear(self) -> None:
        """Forget every compiled template."""
        for path in self.folder.glob("*" + SUFFIX):
            path.unlink(missing_ok=True)

    def _file(self, bucket: Bucket) -> Path:
        # Jinja's key is a hash of the template's name and file name.
        return self.folder / (bucket.key + SUFFIX)

    def _head(self, bucket: Bucket) -> bytes:
        return f"desk-template {self.version} {bucket.checksum}\n".encode()

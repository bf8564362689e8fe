"""Findings: what desk reports about content, as errors or warnings.

Every finding names a file and, where it can, a JSON pointer or a line and column, so an
editor can go straight to the problem.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, order=True)
class Finding:
    """One problem in one file."""

    path: str
    pointer: str
    code: str
    message: str
    severity: Severity = "error"
    line: int | None = None
    column: int | None = None

    @property
    def is_error(self) -> bool:
        """True when the finding stops a build."""
        return self.severity == "error"

    def format(self, with_code: bool = False) -> str:
        """One line: `PATH: /pointer: message`, or `PATH:LINE:COL: message` for syntax."""
        message = f"[{self.code}] {self.message}" if with_code else self.message
        if self.line is not None:
            return f"{self.path}:{self.line}:{self.column}: {message}"
        if self.pointer:
            return f"{self.path}: {self.pointer}: {message}"
        return f"{self.path}: {message}"

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form for `desk check --format json`."""
        data: dict[str, object] = {
            "path": self.path,
            "pointer": self.pointer,
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
        }
        if self.line is not None:
            data["line"] = self.line
            data["column"] = self.column
        return data


def escape_pointer(key: str) -> str:
    """A key as a JSON pointer segment (RFC 6901: ~ and / escaped)."""
    return key.replace("~", "~0").replace("/", "~1")


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Errors first, then warnings; each group by file and pointer, as found within a file."""
    indexed = list(enumerate(findings))
    indexed.sort(key=lambda item: (not item[1].is_error, item[1].path, item[0]))
    return [finding for _, finding in indexed]

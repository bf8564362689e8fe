"""Pictures for tests: image files made with Pillow in a content folder, and stories naming
them (two local files and one remote URL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw
from storygen import make_story

REMOTE = {"url": "https://photos.example/agency/2026/dc-aisle.jpg", "alt": "A data centre aisle",
          "caption": "The aisle where the B300 nodes stand.", "credit": "Photo Agency",
          "width": 1200, "height": 800}


def photo(path: Path, size: tuple[int, int] = (3000, 2000), kind: str = "JPEG",
          shade: int = 0) -> Path:
    """A synthetic photograph (stripes over a gradient) at `path`."""
    width, height = size
    image = Image.linear_gradient("L").resize(size).convert("RGB")
    draw = ImageDraw.Draw(image)
    for x in range(0, width, max(8, width // 40)):
        draw.line([(x, 0), (width - x, height)], fill=((x + shade) % 256, 90, 160),
                  width=max(2, width // 300))
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, kind, **({"quality": 90} if kind == "JPEG" else {}))
    return path


def pictured_story(n: int, content: Path, **overrides: Any) -> dict[str, Any]:
    """Story n with two local pictures (written below content/media/) and a remote one."""
    lead = f"media/2026-11-14/lead-{n}.jpg"
    chart = f"media/2026-11-14/chart-{n}.png"
    photo(content / lead, (3000, 2000), shade=n)
    photo(content / chart, (900, 600), "PNG", shade=n)
    images = [
        {"url": lead, "alt": f"GPU racks [row {n}] *lit* in blue", "caption": "Racks at the test site.",
         "credit": "Jane Roe / Example Agency"},
        {"url": chart, "alt": "Tokens per minute, by host", "caption": "Throughput under load",
         "credit": "Hanging Context"},
        REMOTE,
    ]
    return make_story(n, images=images, **overrides)

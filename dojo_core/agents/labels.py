"""What a macro's label says, for the features that describe a move to a learned agent."""
from __future__ import annotations


def tile_sizes(label: str) -> list:
    """The size words of a tile macro's label, in order (``ta``, ``tb``, ``tr``; ``tr`` may
    be ``all``; no ``ta`` for a one-dimensional tile); [] for any other label."""
    if not label.startswith("tile "):
        return []
    return [w.split("/")[1] for w in label.split() if "/" in w]

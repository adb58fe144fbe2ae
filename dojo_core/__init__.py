"""dojo_core: the PerfDojo engine, pure Python with numpy (no Django).

Text -> parser -> immutable IR -> transformations -> printer / code generators.
Importing this package is cheap: the parser and checker load on first use.
"""
from .source import load_file

__all__ = ["load_file"]

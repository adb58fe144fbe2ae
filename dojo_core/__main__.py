"""``python -m dojo_core ...``: the command line (see dojo_core.cli)."""
import sys

from .cli import entry

if __name__ == "__main__":
    sys.exit(entry())

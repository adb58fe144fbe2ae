"""Search agents over the transformation game (issue 7).  The contract is in ``base.py``."""

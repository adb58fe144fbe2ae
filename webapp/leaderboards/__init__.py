"""Leaderboards and library downloads (issue 8): queries over the runners' Job table."""

"""Leaderboards and library downloads: queries over the runners' Job table."""

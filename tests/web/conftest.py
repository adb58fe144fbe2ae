"""Fixtures of the web tests: ``memory_broker`` (tests/broker_fixtures.py)."""
from broker_fixtures import memory_broker  # noqa: F401

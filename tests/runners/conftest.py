"""Fixtures of the runners tests: ``memory_broker`` (tests/broker_fixtures.py)."""
from broker_fixtures import memory_broker  # noqa: F401

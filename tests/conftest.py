"""Shared test setup: request rate-limit counts start empty in every test."""
import pytest


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    from webapp.api import limits
    limits.reset()
    yield


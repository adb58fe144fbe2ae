"""Shared test setup for every folder: request rate-limit counts start empty in every test, and
``--update-goldens`` rewrites golden files instead of comparing with them (tests/core/conftest.py)."""
import pytest


def pytest_addoption(parser):
    parser.addoption("--update-goldens", action="store_true", default=False,
                     help="write golden files from the current output instead of comparing")


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    from webapp.api import limits
    limits.reset()
    yield

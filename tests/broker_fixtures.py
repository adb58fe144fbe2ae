"""The fixture ``memory_broker`` of the web and runners tests (their conftest.py files
import it): job messages go to an in-memory Celery broker, and the dispatcher's Celery
app is made afresh before and after the test."""
import pytest

from webapp.runners import dispatch


@pytest.fixture
def memory_broker(settings):
    settings.DOJO_BROKER_URL = "memory://"
    settings.DOJO_BROKER_OPTIONS = {}
    dispatch.reset()
    yield
    dispatch.reset()

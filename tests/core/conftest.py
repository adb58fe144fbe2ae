"""Fixtures of the core tests: golden files under tests/core/golden/."""
from __future__ import annotations

from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def golden(request):
    """``golden("c/matmul.c", text)`` asserts that ``text`` equals the golden file under
    tests/core/golden/; with ``pytest --update-goldens`` it writes the file first."""
    update = request.config.getoption("--update-goldens")

    def compare(relative: str, text: str) -> str:
        path = GOLDEN / relative
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        assert path.exists(), f"missing golden file {path} (pytest --update-goldens creates it)"
        expected = path.read_text()
        assert text == expected
        return expected
    return compare

"""What the tests of foreign targets share: skip where a target's cross route (a cross
compiler and qemu-user, ``dojo_core.cross``) is missing here, fail instead under CI, which
installs them (.ci/run)."""
from __future__ import annotations

import os

import pytest

from dojo_core import cross


def require_cross_route(target) -> None:
    """Skip the test (fail it under CI) when ``target`` (a name or Target) has no working
    cross route on this machine, with the reason."""
    try:
        cross.check_route(target)
    except cross.TargetUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must install the cross toolchains (.ci/run): {exc}")
        pytest.skip(str(exc))

"""Deployment configuration from the environment, read by webapp/settings.py.

Nothing here imports Django.  Two modes:

* embedded (no REDIS_URL): the broker is the ``safefs://`` filesystem transport in
  the state directory, the channel layer is in memory, the database SQLite;
* served (REDIS_URL set): Redis is the broker and the channel layer; with
  DATABASE_URL (``postgres://user:pass@host:5432/name``) PostgreSQL is the database.

DOJO_BROKER_URL overrides the broker; DOJO_RUNNER_BROKER_URL is the broker URL
given to registering runners when it differs from the server's own view (e.g.
``redis://public-host:6379/0`` while the server uses ``redis://127.0.0.1:6379/0``).
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit


def database_from_url(url: str, sqlite_options: dict | None = None) -> dict:
    """A Django DATABASES entry from a URL: postgres[ql]://, sqlite:///PATH."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in ("postgres", "postgresql", "pgsql", "postgresql+psycopg"):
        entry = {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")) or "postgres",
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(parts.port or ""),
            "CONN_MAX_AGE": 600, "CONN_HEALTH_CHECKS": True,     # kept per HTTP thread (asgi.py)
            "OPTIONS": dict(parse_qsl(parts.query)),
        }
        return entry
    if scheme == "sqlite":
        path = unquote(parts.path)
        if parts.netloc and parts.netloc != "":
            path = "/" + parts.netloc + path
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": path or ":memory:",
                "CONN_MAX_AGE": 600, "CONN_HEALTH_CHECKS": True, "OPTIONS": dict(sqlite_options or {})}
    raise ValueError(f"DATABASE_URL: unsupported scheme {scheme!r} (use postgres:// or sqlite:///)")


def broker(state_dir: Path, env=os.environ) -> tuple[str, dict]:
    """(broker URL, transport options) for the server."""
    url = env.get("DOJO_BROKER_URL") or env.get("REDIS_URL") or "safefs://"
    if url.startswith(("safefs", "filesystem")):
        queue = state_dir / "broker" / "queue"
        control = state_dir / "broker" / "control"
        queue.mkdir(parents=True, exist_ok=True)
        control.mkdir(parents=True, exist_ok=True)
        return url, {"data_folder_in": str(queue), "data_folder_out": str(queue),
                     "control_folder": str(control), "polling_interval": 0.05}
    if url.startswith(("redis", "rediss")):
        return url, {"visibility_timeout": 3600}
    return url, {}


def channel_layers(env=os.environ) -> dict:
    redis_url = env.get("REDIS_URL")
    if redis_url:
        return {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                            "CONFIG": {"hosts": [redis_url], "prefix": env.get("DOJO_CHANNEL_PREFIX", "perfdojo")}}}
    return {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


def number(env, name: str, default: float) -> float:
    try:
        return float(env.get(name, default))
    except (TypeError, ValueError):
        return default

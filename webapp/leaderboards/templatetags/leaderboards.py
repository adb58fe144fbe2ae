"""``{% best_known_all as best %}`` (every kernel's best speedups, one query) and
``{{ best|best_for:name }}`` for the gallery's "best known" line."""
from __future__ import annotations

import logging

from django import template

from webapp.leaderboards.queries import best_known

register = template.Library()
log = logging.getLogger(__name__)


@register.simple_tag
def best_known_all() -> dict:
    try:
        return best_known()
    except Exception:                                   # noqa: BLE001 - the gallery must not 500
        log.warning("cannot compute the best known speedups", exc_info=True)
        return {}


@register.filter
def best_for(best: dict, name: str) -> list:
    return (best or {}).get(name, [])[:3]

"""Which agents can be started from the web: dojo_core's registry (``AGENTS``,
``make_agent(name, **options)``), with "llm" offered only when an endpoint is configured
(DOJO_LLM_ENDPOINT; DOJO_LLM_MODEL, DOJO_LLM_API_KEY optional)."""
from __future__ import annotations

import os

from dojo_core.agents import AGENTS, make_agent


def llm_configured() -> bool:
    return bool(os.environ.get("DOJO_LLM_ENDPOINT"))


def agent_names() -> list[str]:
    """The agents a run may name, sorted; "llm" only with an endpoint."""
    names = set(AGENTS)
    if "llm" in names and not llm_configured():
        names.discard("llm")
    return sorted(names)


def make(name: str):
    """A fresh agent instance (KeyError for an unknown name); "llm" reads its endpoint and
    model from the environment."""
    if name not in agent_names():
        raise KeyError(name)
    return make_agent(name)

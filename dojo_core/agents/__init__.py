"""Search agents over the transformation game (issue 7).  The contract is in ``base.py``.

``AGENTS`` maps an agent name to the dotted path of its factory (a class or function
called with the agent's options); ``make_agent(name, **options)`` imports it on first use,
so registering an agent is one line here and importing this package stays cheap.
Unknown names are a ValueError that lists the known ones.
"""
from __future__ import annotations

from importlib import import_module

AGENTS = {
    "random": "dojo_core.agents.random_search:RandomAgent",
    "greedy": "dojo_core.agents.greedy:GreedyAgent",
    "beam": "dojo_core.agents.beam:BeamAgent",
    "mcts": "dojo_core.agents.mcts:MCTSAgent",
    "q": "dojo_core.agents.qagent:QAgent",
    "llm": "dojo_core.agents.llm_client:LLMAgent",   # needs DOJO_LLM_ENDPOINT (or endpoint=)
}


def agent_factory(name: str):
    if name not in AGENTS:
        raise ValueError(f"unknown agent {name!r} (known: {', '.join(sorted(AGENTS))})")
    module, _, attr = AGENTS[name].partition(":")
    return getattr(import_module(module), attr)


def make_agent(name: str, **options):
    """A new agent of that name, configured with options (the factory's keyword arguments)."""
    return agent_factory(name)(**options)


__all__ = ["AGENTS", "agent_factory", "make_agent"]

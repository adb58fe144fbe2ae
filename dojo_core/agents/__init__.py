"""Search agents over the transformation game.  The contract is in ``base.py``.

``AGENTS`` maps an agent name to the dotted path of its factory (a class or function
called with the agent's options); ``make_agent(name, **options)`` imports it on first use,
so registering an agent is one line here and importing this package stays cheap.
Unknown names are a ValueError that lists the known ones.

Also, loaded on first use: ``Measurement`` (what an agent's measure callback returns,
``base.py``) and ``export_records`` (a history as training records, ``dataset.py``).
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


_HOME = {"Measurement": "base", "export_records": "dataset"}


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value


__all__ = ["AGENTS", "agent_factory", "make_agent", "Measurement", "export_records"]

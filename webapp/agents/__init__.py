"""Agent runs started from the web editor and the JSON API.

An ``AgentRun`` runs a dojo_core agent as a Celery task on the ``agents`` queue
(``python -m webapp.agents.worker``, started by ``make run``); every state the agent
measures becomes an ordinary step of the session's history, benchmarked on a runner,
and streams into the open editor page over the Channels group ``session-<ID>``.
"""

TASK_NAME = "perfdojo.agent_run"          # the Celery task of one run (worker.py)

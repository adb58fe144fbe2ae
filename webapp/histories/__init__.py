"""Optimization histories (sessions) and their steps: models, the editor pages, the
websocket consumer.  A thin layer over dojo_core: every step is replayed from the root
with the engine before it is stored (services.py)."""

"""The PerfDojo runner daemon: ``python -m runners --server URL --token TOKEN``.

Registers with the server, heartbeats, and runs a Celery worker on its own
queue; each job is fetched from the server, benchmarked in a sandbox
(``runners.sandbox``) with ``python -m dojo_core bench`` and its result
reported over HTTP.  Kept free of Django: a runner host needs only this
package, dojo_core and celery.
"""

"""The PerfDojo runner daemon: ``python -m runners --server URL --token TOKEN``.

Registers with the server, heartbeats, and runs a Celery worker on its own
queue; each job arrives as a ticket signed by the server (``runners.tickets``),
is benchmarked in a sandbox (``runners.sandbox``) with ``python -m dojo_core
bench``, claimed on the way (``runners.claim``) and its result reported over HTTP.  Kept free of Django: a runner host needs only this
package, dojo_core and celery.
"""

"""The pages of a history, one module a page: ``gallery`` (the kernel gallery, new and
imported sessions), ``editor`` (the editor and its partials, apply, undo, goto, fork),
``bench`` (benchmarks and the live job updates), ``compare`` (diffs, downloads, export),
``steps`` (the path as a ``.steps`` text and the replay of a pasted one).

Server-rendered; htmx swaps partials where JavaScript is on, and every control is also a
plain link or form that works without it.  Only owners change a history
(services.require_owner); others see a Fork button.  The views are thin: the rules are in
webapp/histories/services.py and webapp/api/jobs.py.
"""

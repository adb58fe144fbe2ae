"""The JSON API of DESIGN.md section 9 (sessions, actions, steps, benchmark, export/import)
and per-user API tokens.  GET /api/runners and /api/jobs/ID live in webapp.runners."""

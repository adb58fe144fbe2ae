"""The OpenAPI 3 description of the JSON API, served at /api/openapi.json.

It covers every /api/ route of webapp/urls.py (tests/web/test_web_api.py checks that), the
runner protocol included (openapi_jobs.py), and every answer a route can give; CI runs
schemathesis against it (tests/web/test_schemathesis.py).
"""
from __future__ import annotations

from webapp.agents import openapi as _agents_openapi

from . import openapi_jobs


def _ref(name):
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema, description="OK"):
    return {"description": description, "content": {"application/json": {"schema": schema}}}


ERR = _ref("Error")
SIZES = {"type": "object", "nullable": True,
         "additionalProperties": {"type": "integer", "minimum": 1, "maximum": 1 << 24}}


def _errors(*codes):
    reasons = {400: "bad input or an illegal action", 401: "bad credentials", 403: "not the owner / CSRF",
               404: "unknown session or step", 405: "method not allowed",
               409: "conflict (no runner online, step no longer replays)",
               413: "too large", 415: "not JSON", 429: "too many requests or jobs (see Retry-After)",
               431: "request headers too large", 503: "benchmarking not available"}
    codes = tuple(dict.fromkeys(codes + (429, 431)))          # the limits of webapp/api/limits.py
    return {str(c): _json(ERR, reasons[c]) for c in codes}


SID = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"},
       "description": "session id (10 characters)"}
N = {"name": "n", "in": "path", "required": True, "schema": {"type": "integer", "minimum": 0},
     "description": "step index (0 is the root)"}


def _leaderboard_paths() -> dict:
    """The leaderboards app's routes (webapp/leaderboards/views.py)."""
    target = {"name": "target", "in": "query", "schema": {"type": "string"},
              "description": "a runner name, a runner label, a hardware fingerprint or 'local'"}
    return {
        "/api/kernels/{name}/leaderboard": {"get": {
            "summary": "Per (sizes, hardware fingerprint): the verified measurements, best first, "
                       "with their history step; an entry's speedup is over the untransformed kernel "
                       "timed in the same job or batch on the same runner (null without one), its "
                       "speedup_across_runs over the board's fastest untransformed run (not timed together)",
            "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
            "responses": {"200": _json({"type": "object", "properties": {
                "kernel": {"type": "string"}, "boards": {"type": "array", "items": {"type": "object"}}}}),
                **_errors(404)}}},
        "/api/library/records": {"get": {
            "summary": "Verified measurements in the records format (dojo_core/records.py) and the runners",
            "parameters": [target],
            "responses": {"200": _json({"type": "object", "properties": {
                "records": {"type": "array", "items": {"type": "object"}},
                "runners": {"type": "array", "items": {"type": "object"}}}}), **_errors(400)}}},
        "/api/library": {"get": {
            "summary": "The library of a target (python -m dojo_core library build) as a .tar.gz",
            "parameters": [{**target, "required": True},
                           {"name": "kernels", "in": "query", "schema": {"type": "string"},
                            "description": "comma-separated kernel names (default: all)"}],
            "responses": {"200": {"description": "the archive",
                                  "content": {"application/gzip": {"schema": {"type": "string", "format": "binary"}}}},
                          **_errors(400)}}},
    }


def describe(request=None) -> dict:
    paths = {
        "/api/sessions": {"post": {
            "summary": "Create a session from a library kernel or from IR source",
            "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("NewSession")}}},
            "responses": {"201": _json(_ref("Created"), "created"), **_errors(400, 401, 413, 415)}}},
        "/api/sessions/import": {"post": {
            "summary": "Import an exported history (every step is replayed and checked)",
            "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("Export")}}},
            "responses": {"201": _json(_ref("Created"), "created"), **_errors(400, 401, 413, 415)}}},
        "/api/sessions/{id}": {"get": {
            "summary": "The history: steps with their IR and benchmark results",
            "parameters": [SID],
            "responses": {"200": _json(_ref("Session")), **_errors(404)}}},
        "/api/sessions/{id}/actions": {"get": {
            "summary": "The legal actions at a step",
            "parameters": [SID,
                           {"name": "step", "in": "query", "schema": {"type": "integer"},
                            "description": "step index (default: the current step)"},
                           {"name": "at", "in": "query", "schema": {"type": "string"},
                            "description": "only actions naming this loop iterator or statement (sN)"}],
            "responses": {"200": _json({"type": "object", "properties": {
                "session": {"type": "string"}, "step": {"type": "integer"}, "count": {"type": "integer"},
                "actions": {"type": "array", "items": _ref("Action")}}}), **_errors(400, 404, 409)}}},
        "/api/sessions/{id}/steps": {"post": {
            "summary": "Apply an action to a step (owner only); an action already applied there returns that step",
            "parameters": [SID],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["action"], "properties": {
                    "parent": {"type": "integer", "description": "default: the current step"},
                    "action": {"type": "string", "example": "split i by 32"}}}}}},
            "responses": {"201": _json(_ref("Step"), "the new step"), "200": _json(_ref("Step"), "existing step"),
                          **_errors(400, 401, 403, 404, 409)}}},
        "/api/sessions/{id}/steps/{n}": {"get": {
            "summary": "One step; with ?code=c or cuda also the generated source",
            "parameters": [SID, N, {"name": "code", "in": "query", "schema": {"type": "string", "enum": ["c", "cuda"]}}],
            "responses": {"200": _json(_ref("Step")), **_errors(400, 404)}}},
        "/api/sessions/{id}/steps/{n}/code/{target}": {"get": {
            "summary": "Download the generated C or CUDA source of a step",
            "parameters": [SID, N, {"name": "target", "in": "path", "required": True,
                                    "schema": {"type": "string", "enum": ["c", "cuda"]}}],
            "responses": {"200": {"description": "source", "content": {"text/plain": {"schema": {"type": "string"}}}},
                          **_errors(404, 409, 503)}}},
        "/api/sessions/{id}/steps/{n}/benchmark": {"post": {
            "summary": "Benchmark a step on a runner (owner only); the job's updates are pushed live",
            "parameters": [SID, N],
            "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {
                "runner": {"type": "string", "nullable": True, "description": "runner name or label; null: any"},
                "options": {"type": "object", "description": "min_time, timeout_s, threads, flush"}}}}}},
            "responses": {"202": _json({"type": "object", "properties": {"job": {"type": "integer"},
                                                                       "state": {"type": "string"}}}, "queued"),
                          **_errors(400, 401, 403, 404, 409, 503)}}},
        "/api/sessions/{id}/current": {"post": {
            "summary": "Move the current pointer (undo, branch from any step); owner only",
            "parameters": [SID],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["step"], "properties": {"step": {"type": "integer"}}}}}},
            "responses": {"200": _json({"type": "object"}), **_errors(400, 401, 403, 404)}}},
        "/api/sessions/{id}/fork": {"post": {
            "summary": "Fork a history into a new session owned by the caller",
            "parameters": [SID],
            "requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {
                "step": {"type": "integer", "description": "current step of the fork"}}}}}},
            "responses": {"201": _json(_ref("Created"), "created"), **_errors(400, 404)}}},
        "/api/sessions/{id}/export": {"get": {
            "summary": "Export the history as JSON", "parameters": [SID],
            "responses": {"200": _json(_ref("Export")), **_errors(404)}}},
        "/api/kernels": {"get": {"summary": "The kernel library",
                                 "responses": {"200": _json({"type": "object"})}}},
        "/api/tokens": {"post": {"summary": "Make an API token for the signed-in user (shown once)",
                                 "responses": {"201": _json({"type": "object", "properties": {
                                     "token": {"type": "string"}}}), **_errors(401)}}},
        "/api/runners": {"get": {"summary": "Registered runners with status and hardware (runners app)",
                                 "responses": {"200": _json({"type": "object"})}}},
        "/api/openapi.json": {"get": {"summary": "This description",
                                      "responses": {"200": _json({"type": "object"})}}},
        "/api/docs": {"get": {"summary": "This description as a page for people (HTML)",
                              "responses": {"200": {"description": "the page",
                                                    "content": {"text/html": {"schema": {"type": "string"}}}}}}},
        **openapi_jobs.paths(_json, _errors, _ref),
        **_leaderboard_paths(),
        **_agents_openapi.paths(_json, _errors, SID),      # agent runs, dataset (webapp/agents)
        "/api/agents/{run}/notify": {"post": {
            "summary": "(the agents worker, signed with X-Dojo-Agent-Signature) push a run's progress to its page",
            "parameters": [{"name": "run", "in": "path", "required": True, "schema": {"type": "integer"}}],
            "responses": {"204": {"description": "pushed"}, **_errors(403, 404, 405)}}},
    }
    schemas = {
        "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}},
        "NewSession": {"oneOf": [
            {"type": "object", "required": ["kernel"], "additionalProperties": False, "properties": {
                "kernel": {"type": "string", "example": "matmul"},
                "sizes": SIZES,
                "title": {"type": "string"}}},
            {"type": "object", "required": ["source"], "additionalProperties": False, "properties": {
                "source": {"type": "string", "description": "Dojo IR text (at most 64 KiB)"},
                "sizes": SIZES,
                "title": {"type": "string"}}}]},
        **openapi_jobs.schemas(),
        "Created": {"type": "object", "required": ["id", "url"], "properties": {
            "id": {"type": "string"}, "url": {"type": "string"},
            "owner_token": {"type": "string", "description": "anonymous sessions only: send it as "
                                                             "'Authorization: Token ...' to extend the session"}}},
        "Action": {"type": "object", "required": ["text", "kind"], "properties": {
            "text": {"type": "string", "example": "split i by 32"}, "kind": {"type": "string", "example": "split"}}},
        "Step": {"type": "object", "properties": {
            "id": {"type": "integer"}, "index": {"type": "integer"}, "parent": {"type": "integer", "nullable": True},
            "text": {"type": "string"}, "ir": {"type": "string"},
            "results": {"type": "array", "items": {"type": "object"}, "description": "benchmark jobs of this step"}}},
        "Session": {"type": "object", "properties": {
            "id": {"type": "string"}, "url": {"type": "string"}, "kernel": {"type": "string", "nullable": True},
            "owner": {"type": "string", "nullable": True}, "editable": {"type": "boolean"},
            "source": {"type": "string"}, "sizes": {"type": "object"}, "engine_version": {"type": "string"},
            "current": {"type": "integer"}, "steps": {"type": "array", "items": _ref("Step")}}},
        "Export": {"type": "object", "required": ["source"], "properties": {
            "format": {"type": "string", "enum": ["perfdojo-history"]}, "version": {"type": "integer"},
            "kernel": {"type": "string", "nullable": True}, "source": {"type": "string"},
            "current": {"type": "integer"},
            "steps": {"type": "array", "items": {"type": "object", "properties": {
                "index": {"type": "integer"}, "parent": {"type": "integer", "nullable": True},
                "text": {"type": "string"}, "ir": {"type": "string"}}}}}},
    }
    return {
        "openapi": "3.0.3",
        "info": {"title": "PerfDojo API", "version": "1",
                 "description": "Optimize ML kernels step by step with checked transformations. "
                                "Every refusal is a 4xx with {\"error\": reason}."},
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {"schemas": schemas, "securitySchemes": {
            "token": {"type": "apiKey", "in": "header", "name": "Authorization",
                      "description": "'Token pdk_...' (user API token) or 'Token pdo_...' (owner token)"},
            "runner": {"type": "http", "scheme": "bearer",
                       "description": "a runner's secret (the runner protocol)"}}},
        "security": [{}, {"token": []}],
    }

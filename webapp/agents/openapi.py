"""The agent runs' part of /api/openapi.json (merged by webapp/api/openapi.py)."""
from __future__ import annotations


def paths(_json, _errors, SID) -> dict:
    run = {"name": "run", "in": "path", "required": True, "schema": {"type": "integer"},
           "description": "agent run id"}
    run_schema = {"type": "object", "properties": {
        "id": {"type": "integer"}, "session": {"type": "string"}, "agent": {"type": "string"},
        "budget": {"type": "integer"}, "runner": {"type": "string", "nullable": True},
        "step": {"type": "integer", "description": "the start step"},
        "state": {"type": "string", "enum": ["queued", "running", "done", "stopped", "failed"]},
        "final": {"type": "boolean"}, "stop_requested": {"type": "boolean"},
        "error": {"type": "string", "nullable": True}, "measured": {"type": "integer"},
        "measurements": {"type": "array", "items": {"type": "object", "properties": {
            "step": {"type": "integer"}, "job": {"type": "integer", "nullable": True},
            "median_s": {"type": "number", "nullable": True}, "verified": {"type": "boolean"},
            "error": {"type": "string", "nullable": True}}}},
        "baseline_median_s": {"type": "number", "nullable": True,
                              "description": "the agent's own measurement of its start step"},
        "best": {"type": "object", "nullable": True, "properties": {
            "step": {"type": "integer"}, "text": {"type": "string"}, "median_s": {"type": "number"},
            "speedup": {"type": "number", "nullable": True,
                        "description": "over the root timed in the same batch on the same runner "
                                       "(the results table's speedup); null without such a root"},
            "speedup_over_start": {"type": "number", "nullable": True,
                                   "description": "the agent's search ratio: baseline_median_s / median_s"}}}}}
    return {
        "/api/agents": {"get": {
            "summary": "The agents a run can name, and the largest budget",
            "responses": {"200": _json({"type": "object", "properties": {
                "agents": {"type": "array", "items": {"type": "string"}}, "max_budget": {"type": "integer"}}})}}},
        "/api/sessions/{id}/agents": {"post": {
            "summary": "Start an agent on a session (owner only); every state it measures becomes a step, "
                       "benchmarked on the runner, streamed live to the editor",
            "parameters": [SID],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["agent", "budget"], "properties": {
                    "agent": {"type": "string", "example": "random"},
                    "budget": {"type": "integer", "minimum": 1, "description": "measurements, the baseline included"},
                    "runner": {"type": "string", "nullable": True, "description": "runner name or label; null: any"},
                    "step": {"type": "integer", "description": "start step (default: the current step)"},
                    "seed": {"type": "integer"},
                    "options": {"type": "object", "description": "benchmark options of every job: min_time, "
                                                                 "timeout_s, threads, flush"}}}}}},
            "responses": {"202": _json({"type": "object", "properties": {
                "run": {"type": "integer"}, "url": {"type": "string"}, "state": {"type": "string"}}}, "queued"),
                **_errors(400, 401, 403, 404, 409)}}},
        "/api/agents/{run}": {"get": {
            "summary": "An agent run: state, measurements so far, best step", "parameters": [run],
            "responses": {"200": _json(run_schema), **_errors(404)}}},
        "/api/agents/{run}/stop": {"post": {
            "summary": "Ask a run to stop (owner only); it ends after its current measurement",
            "parameters": [run], "responses": {"200": _json(run_schema), **_errors(401, 403, 404)}}},
        "/api/dataset.jsonl": {"get": {
            "summary": "Every measured step of every history as JSON lines (state, action, measured time, "
                       "runner), streamed",
            "responses": {"200": {"description": "JSON lines", "content": {
                "application/x-ndjson": {"schema": {"type": "string"}}}}}}},
    }

"""The jobs and runner-protocol part of /api/openapi.json (merged by openapi.py)."""
from __future__ import annotations

JOB = {"name": "job", "in": "path", "required": True, "schema": {"type": "integer", "minimum": 1}}
BEARER = [{"runner": []}]


def paths(_json, _errors, _ref) -> dict:
    job = _json(_ref("Job"))
    obj = {"type": "object"}

    def runner_post(summary, body=None, codes=(400, 401, 403)):
        op = {"summary": summary, "security": BEARER,
              "responses": {"200": _json(obj), **_errors(*codes)}}
        if body is not None:
            op["requestBody"] = {"content": {"application/json": {"schema": body}}}
        return {"post": op}

    return {
        "/api/jobs": {"post": {
            "summary": "Queue a benchmark job (needs a user token or an owner token); its kernel label "
                       "comes from its source; it attaches only to a step of a session the caller owns "
                       "whose program it measures",
            "security": [{"token": []}],
            "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("NewJob")}}},
            "responses": {"201": _json(_ref("Job"), "queued"), **_errors(400, 401, 403, 404, 409, 413, 415)}}},
        "/api/jobs/{job}": {"get": {
            "summary": "A job: state (queued, running, done, failed, lost, cancelled) and result",
            "parameters": [JOB], "responses": {"200": job, **_errors(404)}}},
        "/api/jobs/{job}/cancel": {"post": {
            "summary": "Cancel a queued or running job (its submitter, or the owner of its session)",
            "parameters": [JOB], "security": [{"token": []}],
            "responses": {"200": job, **_errors(401, 403, 404)}}},
        "/api/runners/register": {"post": {
            "summary": "A runner joins with a registration token (a registered name also needs that "
                       "runner's secret, or a token issued to replace it)",
            "requestBody": {"required": True, "content": {"application/json": {"schema": _ref("Register")}}},
            "responses": {"201": _json(obj, "registered"), **_errors(400, 403)}}},
        "/api/runners/heartbeat": runner_post(
            "A runner is alive (and names its job); the answer lists jobs to cancel",
            {"type": "object", "properties": {"current_job": {"type": "integer", "nullable": True}}}),
        "/api/runners/bye": runner_post("A runner goes offline now; its jobs go to others"),
        "/api/runners/jobs/{job}/claim": {"post": {
            **runner_post("A runner takes a job (its ticket's attempt)",
                          {"type": "object", "properties": {"attempt": {"type": "integer", "minimum": 1}}},
                          (400, 401, 403, 404, 409))["post"], "parameters": [JOB]}},
        "/api/runners/jobs/{job}/result": {"post": {
            **runner_post("A runner reports a job's result (once per attempt)",
                          {"type": "object", "required": ["attempt", "state", "result"], "properties": {
                              "attempt": {"type": "integer", "minimum": 1},
                              "state": {"type": "string", "enum": ["done", "failed", "cancelled"]},
                              "result": {"type": "object"}, "claim": {"type": "boolean"}}},
                          (400, 401, 403, 404, 409))["post"], "parameters": [JOB]}},
        "/api/runners/jobs/{job}/release": {"post": {
            **runner_post("A runner hands a running job back",
                          {"type": "object", "properties": {"reason": {"type": "string"}}},
                          (400, 401, 403, 404))["post"], "parameters": [JOB]}},
    }


def schemas() -> dict:
    sizes = {"type": "object", "nullable": True,
             "additionalProperties": {"type": "integer", "minimum": 1, "maximum": 1 << 24}}
    nullable_str = {"type": "string", "nullable": True}
    return {
        "NewJob": {"type": "object", "additionalProperties": False, "properties": {
            "source": {"type": "string", "nullable": True,
                       "description": "Dojo IR text (at most 64 KiB); or name a kernel"},
            "kernel": {"type": "string", "nullable": True,
                       "description": "a library kernel, loaded when no source is sent"},
            "steps": {"type": "array", "nullable": True, "items": {"type": "string"}, "maxItems": 2000},
            "sizes": sizes,
            "runner": {"type": "string", "nullable": True, "description": "runner name or label"},
            "session_id": {"type": "string", "nullable": True,
                           "description": "a session of the caller (with step_index)"},
            "step_index": {"type": "integer", "nullable": True},
            "options": {"type": "object", "nullable": True, "properties": {
                "min_time": {"type": "number"}, "timeout_s": {"type": "number"},
                "threads": {"type": "integer"}, "flush": {"type": "boolean"},
                "dry_run": {"type": "boolean"},
                "baseline": {"type": "boolean", "description": "also time the untransformed kernel in "
                             "the same run (the result's baseline)"}}}}},
        "Job": {"type": "object", "required": ["id", "state"], "properties": {
            "id": {"type": "integer"}, "job": {"type": "integer"}, "url": {"type": "string"},
            "state": {"type": "string", "enum": ["queued", "running", "done", "failed", "lost", "cancelled"]},
            "final": {"type": "boolean"}, "kernel": nullable_str, "sizes": {"type": "object"},
            "steps": {"type": "array", "items": {"type": "string"}}, "options": {"type": "object"},
            "runner": nullable_str, "requested_runner": nullable_str,
            "attempts": {"type": "integer"}, "max_attempts": {"type": "integer"},
            "created": nullable_str, "started": nullable_str, "finished": nullable_str,
            "heartbeat": nullable_str, "result": {"type": "object", "nullable": True},
            "error": nullable_str, "session_id": nullable_str,
            "step_index": {"type": "integer", "nullable": True}, "program_hash": nullable_str,
            "batch": {"type": "string", "nullable": True,
                      "description": "jobs measured together; speedups divide medians of one batch"}}},
        "Register": {"type": "object", "required": ["token"], "properties": {
            "token": {"type": "string"}, "name": nullable_str, "secret": {"type": "string"},
            "labels": {"type": "array", "items": {"type": "string"}},
            "hardware": {"type": "object"}, "sandbox": {"type": "object", "nullable": True},
            "peaks": {"type": "object", "nullable": True, "description": "measured on the runner: "
                      "gflops (f32 FMA) and gbytes_per_s (STREAM triad), both positive"}}},
    }

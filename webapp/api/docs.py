"""The API's human page, ``GET /api/docs``: /api/openapi.json (openapi.py) rendered as
HTML on the server, no script.

Guarantees: every operation of the description appears once, grouped by the first part
of its path after /api/, in path order, each with its method, path, summary, parameters,
request body and answers; a ``$ref`` is shown as the schema's name, linked to its entry
in the schemas section (``#schema-NAME``).  Nothing the description holds can make the
page fail: unknown shapes are shown as their JSON.
"""
from __future__ import annotations

import json

from django.shortcuts import render

from webapp.jsonapi import error

from . import openapi

METHODS = ("get", "post", "put", "patch", "delete")
REF_PREFIX = "#/components/schemas/"


def schema_text(schema) -> str:
    """A short type text of a schema: ``string``, ``integer[]``, ``Step``, ``object``..."""
    if not isinstance(schema, dict):
        return json.dumps(schema)
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return ref[len(REF_PREFIX):] if ref.startswith(REF_PREFIX) else ref
    if "oneOf" in schema and isinstance(schema["oneOf"], list):
        return " | ".join(schema_text(s) for s in schema["oneOf"])
    kind = schema.get("type", "any")
    if kind == "array":
        return schema_text(schema.get("items", {})) + "[]"
    text = str(kind)
    if isinstance(schema.get("enum"), list):
        text += " (" + ", ".join(str(v) for v in schema["enum"]) + ")"
    if schema.get("nullable"):
        text += " or null"
    return text


def _ref_name(schema):
    ref = schema.get("$ref") if isinstance(schema, dict) else None
    return ref[len(REF_PREFIX):] if isinstance(ref, str) and ref.startswith(REF_PREFIX) else None


def fields(schema) -> list:
    """The properties of an object schema: [{"name", "type", "required", "description", "ref"}]."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return []
    required = set(schema.get("required") or [])
    return [{"name": name, "type": schema_text(sub), "required": name in required, "ref": _ref_name(sub),
             "description": (sub.get("description") or "") if isinstance(sub, dict) else ""}
            for name, sub in schema["properties"].items()]


def _body(op: dict):
    content = (op.get("requestBody") or {}).get("content") or {}
    for media, entry in content.items():
        schema = (entry or {}).get("schema", {})
        return {"media": media, "type": schema_text(schema), "ref": _ref_name(schema),
                "fields": fields(schema), "required": bool(op["requestBody"].get("required"))}
    return None


def _answers(op: dict) -> list:
    out = []
    for code, answer in sorted((op.get("responses") or {}).items()):
        answer = answer if isinstance(answer, dict) else {}
        content = answer.get("content") or {}
        media, schema = next(((m, (e or {}).get("schema", {})) for m, e in content.items()), ("", {}))
        out.append({"code": code, "description": answer.get("description", ""), "media": media,
                    "type": schema_text(schema) if media else "", "ref": _ref_name(schema)})
    return out


def sections(spec: dict) -> list:
    """[{"name", "operations": [{"method", "path", "anchor", "summary", "parameters",
    "body", "answers"}]}], grouped by the path's first part after /api/."""
    groups = {}
    for path in sorted(spec.get("paths") or {}):
        item = spec["paths"][path] or {}
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            name = path.removeprefix("/api/").split("/")[0] or "api"
            params = [{"name": p.get("name", ""), "in": p.get("in", ""), "required": bool(p.get("required")),
                       "type": schema_text(p.get("schema", {})), "description": p.get("description", "")}
                      for p in op.get("parameters") or [] if isinstance(p, dict)]
            anchor = (method + "-" + path.strip("/")).replace("/", "-").replace("{", "").replace("}", "")
            groups.setdefault(name, []).append({
                "method": method.upper(), "path": path, "anchor": anchor, "summary": op.get("summary", ""),
                "parameters": params, "body": _body(op), "answers": _answers(op)})
    return [{"name": name, "operations": ops} for name, ops in groups.items()]


def schemas(spec: dict) -> list:
    """[{"name", "type", "fields", "json"}] of the description's components."""
    found = ((spec.get("components") or {}).get("schemas") or {})
    return [{"name": name, "type": schema_text(s), "fields": fields(s),
             "json": json.dumps(s, indent=1) if not fields(s) else ""} for name, s in sorted(found.items())]


def api_docs(request):
    """The page; another method than GET/HEAD is answered 405 in JSON, as under all of /api/."""
    if request.method not in ("GET", "HEAD"):
        response = error(405, f"method {request.method} not allowed; use GET")
        response["Allow"] = "GET, HEAD"
        return response
    spec = openapi.describe(request)
    info = spec.get("info") or {}
    return render(request, "api/docs.html", {
        "title": info.get("title", "API"), "version": info.get("version", ""),
        "description": info.get("description", ""), "sections": sections(spec), "schemas": schemas(spec),
        "security": ((spec.get("components") or {}).get("securitySchemes") or {})})

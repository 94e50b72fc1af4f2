#!/usr/bin/env python3
"""Builds the CORS fixtures for router/frontend/cors.h (tests/router/frontend/cors_test.cc).

vLLM serves its OpenAI API behind Starlette's CORSMiddleware, configured by --allowed-origins,
--allowed-methods, --allowed-headers (JSON lists, each ["*"] by default) and --allow-credentials.
headroom's router takes the same flags; this records what the middleware answers, so the C++
implementation is checked against Starlette itself: for each policy and request, either the
preflight answer (status, body, headers) or the CORS headers added to the application's response.

Writes tests/router/frontend/fixtures/cors_cases.json: {generator, cases: [{policy: {origins,
methods, headers, credentials}, request: {method, headers: [[name, value]]}, preflight: bool,
status, body, headers: [[name, value]]}]}; header names lowercased, only access-control-* and
vary. Needs starlette (scripts/requirements-fixtures.txt, build/venv).
"""
import asyncio
import json
import os
import platform

import starlette
from starlette.middleware.cors import CORSMiddleware

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "router",
                   "frontend", "fixtures", "cors_cases.json")

APP_BODY = b"application"

POLICIES = [
    # vLLM's defaults.
    {"origins": ["*"], "methods": ["*"], "headers": ["*"], "credentials": False},
    # vLLM's --allow-credentials with the other defaults.
    {"origins": ["*"], "methods": ["*"], "headers": ["*"], "credentials": True},
    # A web app's own origins, methods and headers.
    {"origins": ["https://app.example", "http://localhost:3000"], "methods": ["GET", "POST"],
     "headers": ["Authorization", "X-Request-Id"], "credentials": False},
    {"origins": ["https://app.example"], "methods": ["POST"], "headers": ["*"],
     "credentials": True},
]

ORIGINS = ["https://app.example", "https://evil.example", "http://localhost:3000"]

REQUESTS = []
for origin in ORIGINS:
    REQUESTS.append({"method": "POST", "headers": [["origin", origin]]})
    REQUESTS.append({"method": "GET", "headers": [["origin", origin], ["cookie", "session=1"]]})
    for method, asked in [("POST", "authorization, content-type"), ("POST", None),
                          ("PUT", "content-type"), ("GET", "X-Request-Id"),
                          ("POST", "x-other"), ("DELETE", "Authorization,X-Request-Id")]:
        headers = [["origin", origin], ["access-control-request-method", method]]
        if asked is not None:
            headers.append(["access-control-request-headers", asked])
        REQUESTS.append({"method": "OPTIONS", "headers": headers})
REQUESTS.append({"method": "POST", "headers": []})  # no Origin: untouched
REQUESTS.append({"method": "OPTIONS", "headers": [["origin", "https://app.example"]]})  # not a preflight


async def app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": APP_BODY})


def run(policy, request):
    middleware = CORSMiddleware(app, allow_origins=policy["origins"],
                                allow_methods=policy["methods"], allow_headers=policy["headers"],
                                allow_credentials=policy["credentials"])
    scope = {"type": "http", "method": request["method"], "path": "/v1/completions",
             "headers": [(k.encode(), v.encode()) for k, v in request["headers"]],
             "query_string": b"", "http_version": "1.1", "scheme": "http",
             "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 1), "root_path": ""}
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(middleware(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    headers = sorted([k.decode().lower(), v.decode()] for k, v in start["headers"]
                     if k.decode().lower().startswith("access-control-")
                     or k.decode().lower() == "vary")
    preflight = body != APP_BODY
    return {"policy": policy, "request": request, "preflight": preflight,
            "status": start["status"], "body": body.decode() if preflight else "",
            "headers": headers}


def main():
    cases = [run(policy, request) for policy in POLICIES for request in REQUESTS]
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    generator = f"starlette {starlette.__version__}, Python {platform.python_version()}"
    with open(OUT, "w") as f:  # one case per line
        f.write('{"generator": ' + json.dumps(generator) + ', "cases": [\n')
        f.write(",\n".join(json.dumps(c) for c in cases))
        f.write("\n]}\n")
    print(f"{len(cases)} cases -> {os.path.relpath(OUT)}")


if __name__ == "__main__":
    main()

"""The browser dashboard: a local web app over the same runtime (docs/dashboard-api.md).

A front end like the terminal chat and ACP: it never runs the loop, never touches a
provider, a tool or the database. It serves a JSON API and a per-session event stream
(Server-Sent Events) on 127.0.0.1 through hypercorn's trio worker and Starlette, on an
`AcpAgent` — the host's (`rawtrio serve --dashboard`) or its own (`rawtrio dashboard`) —
so a session is one `LiveSession` whichever front ends follow it.

- `server.py`: start the listener (hypercorn on trio), the token, `dashboard.json`;
- `security.py`: the checks every request passes (Host, Origin, token) and the headers
  every response carries (Content-Security-Policy, …);
- `api.py`: the endpoints, declared once (the router and the OpenAPI file read the same
  table); `models.py` their bodies and answers; `body.py` reading a JSON body;
- `backend.py`: the session operations on the agent; `operations.py` turns and
  compactions submitted with a client request id; `stream.py` the event stream;
- `errors.py`: `ApiError` and how rawtrio's errors map to statuses;
- `static.py`: the web app's files (`static/`, built by the front end's toolchain);
- `openapi.py`: `python -m rawtrio.dashboard.openapi` writes docs/dashboard-openapi.json;
- `cli.py`: `rawtrio dashboard`.
"""

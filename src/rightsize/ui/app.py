"""The planner's web app (Starlette): the page, its assets, and a JSON API over `rightsize.api`.

- `GET /api/start`: the spec the app was started with (its YAML text) and where it came from.
- `GET /api/schema/{kind}`: the JSON Schema of a spec kind (`rightsize schema`), which the page
  builds its form from.
- `POST /api/plan` `{"yaml": TEXT}`: the plan (JSON, headline, report document), or the CLI's error
  with its problems by field and exit code (2 bad input, 1 infeasible): an answer (200) the page
  shows, as the CLI prints it.
- `POST /api/download/plan/{fmt}` and `POST /api/download/jobs`: the plan as a file, the job files
  as a zip (422 bad input, 409 infeasible).

It listens on loopback only. Requests must name a loopback host (no DNS rebinding), posts must be
JSON from the page's own origin (another site's form cannot post here), and a body is read up to a
cap before anything parses it.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from rightsize.errors import BUG_REPORT, BadInput, RightsizeError
from rightsize.spec.load import MAX_SPEC_BYTES
from rightsize.ui.downloads import file_stem, jobs_zip, plan_file
from rightsize.ui.planner import Planned, Planner
from rightsize.ui.spec_text import error_payload, spec_yaml
from rightsize.ui.view import plan_view

STATIC = Path(__file__).parent / "static"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
MAX_BODY_BYTES = 8 * MAX_SPEC_BYTES  # a capped spec, JSON-escaped (every byte at most \uXXXX)
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class _Refused(Exception):
    def __init__(self, status: int, what: str, why: str, fix: str) -> None:
        super().__init__(what)
        self.status, self.error = status, BadInput(what, why, fix)


def _json(data: Any, status: int = 200) -> Response:
    body = json.dumps(data, allow_nan=False, default=str)
    return Response(body, status, media_type="application/json", headers=SECURITY_HEADERS)


async def _posted_text(request: Request) -> str:
    """The `yaml` text of a JSON post from this page, refused before parsing if it is not one."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise _Refused(
            415, "The request is not JSON.", "The planner's API takes JSON posts only.", "Post JSON."
        )
    origin = request.headers.get("origin")
    if origin is not None and origin != f"{request.url.scheme}://{request.headers.get('host', '')}":
        raise _Refused(
            403,
            "The request comes from another site.",
            "Only the planner's own page may post here.",
            "Open the planner's page.",
        )
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _Refused(
                413,
                "The request is too large.",
                f"A post is at most {MAX_BODY_BYTES:,} bytes; a spec is a few KB.",
                "Post a smaller spec.",
            )
        chunks.append(chunk)
    try:
        data = json.loads(b"".join(chunks))
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("yaml"), str):
        raise _Refused(
            400,
            "The request has no spec.",
            'The post must be {"yaml": "the spec as text"}.',
            "Post the spec's text.",
        )
    return str(data["yaml"])


def _internal(exc: BaseException) -> Response:
    traceback.print_exc(file=sys.stderr)
    detail = " ".join(str(exc).split())[:160]
    message = f"rightsize: internal error: {type(exc).__name__}" + (f": {detail}" if detail else "")
    return _json(
        {
            "error": {
                "kind": "internal",
                "exit_code": 3,
                "message": f"{message}\n  This is a bug in rightsize, not in your input; {BUG_REPORT}.",
                "fields": [],
            }
        },
        500,
    )


def _yaml_or_none(text: str, source: str) -> Any:
    """The spec's parsed YAML for the form (None when it cannot be read; the plan says why)."""
    try:
        data = spec_yaml(text, source)
        json.dumps(data, allow_nan=False, default=str)  # what the page can be sent (no NaN)
    except (BadInput, ValueError):
        return None
    return data


def _failure(exc: BaseException, extra: dict[str, Any] | None = None) -> Response:
    if isinstance(exc, _Refused):
        return _json({"error": error_payload(exc.error), **(extra or {})}, exc.status)
    if isinstance(exc, RightsizeError):
        return _json({"error": error_payload(exc), **(extra or {})}, 409 if exc.exit_code == 1 else 422)
    return _internal(exc)


def _page_view(planned: Planned) -> dict[str, Any]:
    return {
        **plan_view(planned.result, planned.plan_json),
        "kind": planned.read.kind,
        "notes": planned.read.notes,
    }


def _attachment(body: str | bytes, media: str, name: str) -> Response:
    headers = {**SECURITY_HEADERS, "Content-Disposition": f'attachment; filename="{name}"'}
    return Response(body, media_type=media, headers=headers)


def create_app(
    spec_text: str, source: str, base_dir: Path, allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS
) -> Starlette:
    """The app for one session: `spec_text` is what the page starts with; posted specs are read as
    if they were the file `source` in `base_dir` (relative paths in them resolve there)."""
    planner = Planner(base_dir, source)

    async def index(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers=SECURITY_HEADERS)

    async def start(request: Request) -> Response:
        return _json({"yaml": spec_text, "source": source})

    async def schema(request: Request) -> Response:
        from rightsize.spec.load import spec_json_schema

        try:
            return _json(spec_json_schema(request.path_params["kind"]))
        except BadInput as err:
            return _failure(err)

    async def plan(request: Request) -> Response:
        data: Any = None
        try:
            text = await _posted_text(request)
            data = await run_in_threadpool(_yaml_or_none, text, source)
            view = await run_in_threadpool(planner.rendered, text, _page_view)
            return _json({**view, "spec_data": data})
        except RightsizeError as exc:  # a planning outcome the page shows, not a failed request
            return _json({"error": error_payload(exc), "spec_data": data})
        except Exception as exc:  # every other failure becomes the CLI's message
            return _failure(exc, {"spec_data": data})

    async def download_plan(request: Request) -> Response:
        fmt = request.path_params["fmt"]
        try:
            text = await _posted_text(request)
            body, media, name = await run_in_threadpool(
                planner.rendered, text, lambda p: plan_file(p.result, p.plan_json, fmt)
            )
        except Exception as exc:
            return _failure(exc)
        return _attachment(body, media, name)

    async def download_jobs(request: Request) -> Response:
        try:
            text = await _posted_text(request)
            body, name = await run_in_threadpool(
                planner.rendered,
                text,
                lambda p: (jobs_zip(p.plan_json), f"{file_stem(p.plan_json)}-jobs.zip"),
            )
        except Exception as exc:
            return _failure(exc)
        return _attachment(body, "application/zip", name)

    routes = [
        Route("/", index),
        Route("/api/start", start),
        Route("/api/schema/{kind}", schema),
        Route("/api/plan", plan, methods=["POST"]),
        Route("/api/download/plan/{fmt}", download_plan, methods=["POST"]),
        Route("/api/download/jobs", download_jobs, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(
        routes=routes, middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))]
    )

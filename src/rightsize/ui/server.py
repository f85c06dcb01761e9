"""Serve the planner on loopback with uvicorn: the spec to start from, a free port (or the one
asked for), and the user's browser opened on it unless told not to."""

from __future__ import annotations

import socket
import sys
import webbrowser
from pathlib import Path

from rightsize.errors import BadInput
from rightsize.safe_read import read_text_capped
from rightsize.spec.load import MAX_SPEC_BYTES

HOST = "127.0.0.1"
STARTER = """\
# A spec to start from: edit the form or this text; every change is planned again.
name: my-plan
model: llama3-8b
training:
  seq_len: 8192
  global_batch_tokens: 4Mi
  train_tokens: 1T
targets:
  deadline: 30d
  objective: gpu_hours
"""


def starting_spec(spec: str | None) -> tuple[str, str, Path]:
    """(text, source, base folder) of the spec the page starts with: the file named (read through
    the spec's caps; the planner validates it), else a small starter spec in the working folder."""
    if spec is None:
        return STARTER, "(from the browser)", Path.cwd()
    path = Path(spec).expanduser()
    text = read_text_capped(path, "the spec", MAX_SPEC_BYTES, "Check the path; examples/ holds sample specs.")
    return text, str(path), path.resolve().parent


def free_port(port: int | None) -> int:
    """`port` when given and free on loopback, else one the system picks."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port or 0))
        except OSError as err:
            raise BadInput(
                f"Cannot listen on {HOST}:{port}.",
                f"The port is taken or not allowed ({err.strerror or err}).",
                "Pick another --port, or leave it out for a free one.",
            ) from None
        return int(s.getsockname()[1])


def serve(spec: str | None, port: int | None = None, open_browser: bool = True) -> None:
    """Run the planner until interrupted."""
    import uvicorn

    from rightsize.ui.app import create_app

    text, source, base = starting_spec(spec)
    chosen = free_port(port)
    url = f"http://{HOST}:{chosen}/"
    sys.stderr.write(f"rightsize ui: planning {source} at {url} (Ctrl-C stops it)\n")
    if open_browser:
        webbrowser.open(url)
    config = uvicorn.Config(create_app(text, source, base), host=HOST, port=chosen, log_level="warning")
    uvicorn.Server(config).run()

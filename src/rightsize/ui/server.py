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


def bound_socket(port: int | None) -> socket.socket:
    """A socket listening on loopback at `port` when given (it must be free), else at a port the
    system picks; handed to uvicorn as it is, so no other process can take the port in between."""
    if port is not None and not 0 < port < 65536:
        raise BadInput(
            f"--port {port} is not a port.",
            "Ports are 1 to 65535.",
            "Pick a port in that range, or leave it out.",
        )
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((HOST, port or 0))
        s.listen(64)
    except OSError as err:
        s.close()
        raise BadInput(
            f"Cannot listen on {HOST}:{port}.",
            f"The port is taken or not allowed ({err.strerror or err}).",
            "Pick another --port, or leave it out for a free one.",
        ) from None
    return s


def serve(spec: str | None, port: int | None = None, open_browser: bool = True) -> None:
    """Run the planner until interrupted."""
    import uvicorn

    from rightsize.ui.app import create_app

    text, source, base = starting_spec(spec)
    sock = bound_socket(port)
    url = f"http://{HOST}:{sock.getsockname()[1]}/"
    sys.stderr.write(f"rightsize ui: planning {source} at {url} (Ctrl-C stops it)\n")
    if open_browser:
        webbrowser.open(url)
    config = uvicorn.Config(create_app(text, source, base), log_level="warning")
    with sock:
        uvicorn.Server(config).run(sockets=[sock])

"""``convis serve``: the web app over an index."""

from __future__ import annotations

import socket
from typing import Annotated, List, Optional

import typer

from retrieval.cli.options import (
    MAX_UPLOAD_BYTES,
    UPLOAD_QUOTA_BYTES,
    IndexDirOpt,
    MiB,
    UserError,
    WhereArg,
    resolve_index_dir,
)

HostOpt = Annotated[str, typer.Option(metavar="ADDRESS", help="Address to listen on (localhost only by default).")]
PortOpt = Annotated[int, typer.Option(min=1, max=65535, metavar="PORT", help="Port to listen on.")]
RerankerOpt = Annotated[Optional[str], typer.Option("--reranker", "-r", metavar="NAME",
                                                    help="LMM used when a request asks to rerank, and that the "
                                                         "compare view asks what differs (POST /diff).")]
AllowedHostOpt = Annotated[List[str], typer.Option(
    "--allowed-host", metavar="NAME", help="Also answer requests for this host name (repeatable); by default only "
    "loopback names and --host are answered, so no other site can reach the app.")]
MaxUploadOpt = Annotated[int, typer.Option("--max-upload-mb", min=1, metavar="MB", help="Largest anchor clip a "
                                           "client may upload; a bigger upload is cut off while it streams (413).")]
UploadQuotaOpt = Annotated[int, typer.Option(
    "--upload-quota-mb", min=1, metavar="MB", help="Disk space uploads may take together; past it the oldest "
    "uploads are removed. Uploads that are not videos are refused (415); all are removed when the server stops.")]
AllowWritesOpt = Annotated[bool, typer.Option(
    "--allow-writes", help="Let the web app add uploaded clips to the index, remove files from it (never from disk) "
    "and re-index the folder; refused otherwise. Meant for a server on your own machine. Writes from a web page "
    "of another origin (another scheme, host or port) are refused either way; curl and scripts are not pages.")]


def serve(folder: WhereArg = None, index_dir: IndexDirOpt = None, host: HostOpt = "127.0.0.1", port: PortOpt = 8000,
          reranker: RerankerOpt = None, allowed_host: AllowedHostOpt = None,
          max_upload_mb: MaxUploadOpt = MAX_UPLOAD_BYTES // MiB,
          upload_quota_mb: UploadQuotaOpt = UPLOAD_QUOTA_BYTES // MiB, allow_writes: AllowWritesOpt = False):
    """Browse and query the index in a web browser; the JSON API is described at /openapi.json.  It listens at once
    and builds the index's models in the background; /health says what is warm."""
    if upload_quota_mb < max_upload_mb:
        raise UserError(f"--upload-quota-mb ({upload_quota_mb}) must be at least --max-upload-mb "
                        f"({max_upload_mb}): the quota holds at least one upload")
    found = resolve_index_dir(index_dir or folder)
    check_port(host, port)
    run_server(found, host, port, reranker, extra_hosts=allowed_host or [], max_upload=max_upload_mb << 20,
               upload_quota=upload_quota_mb << 20, allow_writes=allow_writes)


def check_port(host: str, port: int) -> None:
    """Fail in one line before the server starts, rather than in the web server's own log lines."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds: TIME_WAIT is no conflict
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise UserError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); pass another --port "
                            "or stop what is using it") from None


def run_server(*args, **kwargs) -> None:
    """retrieval.serve.server.serve, imported when a server starts (FastAPI takes a second to import)."""
    from retrieval.serve.server import serve as run

    run(*args, **kwargs)

"""``python -m routing.serve`` (also ``python -m pool.serve``): serve a run's routing manifest as an
OpenAI-compatible endpoint. See docs/router.md.

The manifest's models on a managed ``llamacpp`` backend (the shipped pool's) are served by llama.cpp
servers the router starts as pool.run does and stops on exit (:mod:`pool.serve.managed`).

Exit codes: 0 after a clean stop (SIGINT/SIGTERM); 1 the port cannot be bound, or a managed llama.cpp
server did not start; 2 bad input (a run folder, manifest or pool file that cannot be used, or a
missing model file, named with the file and what to do).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import signal
import sys
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path

from aiohttp import web

from pool.config import PoolConfigError, load_pool
from pool.config.preflight import PreflightError
from pool.items_source import DataError
from pool.serve.app import DEFAULT_MAX_BODY, TOKEN_ENV, Serving, make_app
from pool.serve.managed import start_managed
from pool.serve.state import MANIFEST_FILENAME, StateError, learn_run, pool_file_of_run, read_manifest, serve_state
from routing.load.runs import LoadError
from runners.llamacpp.server import LlamaServerError

EXIT_OK, EXIT_BIND, EXIT_INPUT = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m routing.serve",
        description="Serve a run's routing manifest as an OpenAI-compatible endpoint (POST /v1/chat/completions, "
        "GET /v1/models, /health, /metrics): each question goes to the model the manifest picks for its bucket "
        "(a hint, or the classifier fitted on the run's items, with fallbacks). Models on a managed llamacpp "
        "backend are served by llama.cpp servers started here, as pool.run starts them, and stopped on exit.",
        epilog=f"Client auth: when ${TOKEN_ENV} is set, requests need 'Authorization: Bearer <it>'. Upstream keys come "
        "from the variables the pool file names. Exit codes: 0 clean stop; 1 cannot bind, or a managed llama.cpp "
        "server did not start; 2 bad input.",
    )
    add = parser.add_argument
    add(
        "--run",
        required=True,
        type=Path,
        metavar="RUN_DIR",
        help="the run folder (scores.jsonl, run.sqlite) to learn buckets from",
    )
    add("--port", required=True, type=int, help="port to listen on (0: any free port, printed at start)")
    add("--host", default="127.0.0.1", help="address to bind (default %(default)s: this machine only)")
    add(
        "--manifest",
        type=Path,
        metavar="FILE",
        help=f"routing manifest (default: RUN_DIR/{MANIFEST_FILENAME}); reloaded when it changes",
    )
    add("--pool", type=Path, metavar="FILE", help="pool file with the upstream endpoints (default: the run's own)")
    add("--model-name", default="medpool-router", help="the model id GET /v1/models lists (default %(default)s)")
    add(
        "--max-body-bytes",
        type=int,
        default=DEFAULT_MAX_BODY,
        help="largest request body accepted (default %(default)s)",
    )
    add(
        "--reload-interval",
        type=float,
        default=2.0,
        help="seconds between checks of the manifest file (0: never reload)",
    )
    add(
        "--neighbours", type=int, default=10, help="neighbours that vote in the bucket classifier (default %(default)s)"
    )
    add("--port-file", type=Path, help="write the bound port to this file once listening")
    return parser


async def serve(args: argparse.Namespace) -> int:
    async with AsyncExitStack() as stack:  # the managed llama.cpp servers stop with it, whatever ends the router
        return await _serve(args, stack)


async def _serve(args: argparse.Namespace, stack: AsyncExitStack) -> int:
    run_dir = args.run
    manifest = args.manifest or run_dir / MANIFEST_FILENAME
    pool_file = pool_file_of_run(run_dir, args.pool)
    pool = load_pool(pool_file)
    knowledge = await asyncio.to_thread(learn_run, run_dir, args.neighbours)
    own = [f"http://{host}:{args.port}" for host in {args.host, "127.0.0.1", "localhost"}] if args.port else []
    managed = await start_managed(stack, pool, pool_file, read_manifest(manifest)[0], run_dir)
    state = serve_state(knowledge, manifest, pool, own, managed)
    serving = Serving(state, lambda: serve_state(knowledge, manifest, pool, own, managed))
    app = make_app(
        serving, model_name=args.model_name, max_body=args.max_body_bytes, reload_interval=args.reload_interval or None
    )
    gc.collect()
    gc.freeze()  # the run's items and the classifier live as long as the process: keep them out of every collection
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=5.0)
    await runner.setup()
    site = web.TCPSite(runner, args.host, args.port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        print(
            f"error: cannot listen on {args.host}:{args.port} ({exc.strerror or exc}); pick another --port",
            file=sys.stderr,
        )
        return EXIT_BIND
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(
        f"routing.serve: listening on http://{args.host}:{port}/v1 — manifest {state.manifest_sha[:12]}, "
        f"{len(knowledge.texts)} items, {len(state.upstreams)} servable models, default {state.routes.default.model}, "
        f"thresholds {state.thresholds.as_tuple()}",
        flush=True,
    )
    for note in state.notes:
        print(f"  note: {note}", flush=True)
    if args.port_file:
        tmp = args.port_file.with_suffix(".tmp")
        tmp.write_text(str(port))
        tmp.replace(args.port_file)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return asyncio.run(serve(args))
    except (StateError, LoadError, DataError, PoolConfigError, PreflightError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except LlamaServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BIND


if __name__ == "__main__":
    sys.exit(main())

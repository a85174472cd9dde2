"""`python -m lab.standin --port N`: the stand-in model as a process of its own (the lab starts
it beside Redis and Toxiproxy; the app reaches it through its own Toxiproxy link)."""

from __future__ import annotations

import argparse
import sys

from lab.standin.server import StandIn


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m lab.standin",
        description="A stand-in model provider (OpenAI Chat Completions and Responses, Anthropic "
        "Messages, Ollama /api/chat): deterministic replies that show the memory each call carried; "
        "every call recorded (GET /_lab/calls); per-call behaviour and faults (POST /_lab/plans).",
    )
    ap.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    ap.add_argument("--port", type=int, required=True, help="the port to listen on, e.g. 18400")
    args = ap.parse_args(argv)
    try:
        server = StandIn((args.host, args.port))
    except OSError as exc:
        print(
            f"stand-in: cannot listen on {args.host}:{args.port}: {exc.strerror}; choose another --port",
            file=sys.stderr,
        )
        return 2
    # SIGTERM keeps its default (the process ends; it holds no file, only its socket).
    print(f"stand-in model on http://{args.host}:{args.port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

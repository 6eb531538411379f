"""The time tokprof record's proxy adds: time to first byte of a stream and throughput, direct to a
stub upstream on 127.0.0.1 and through the proxy. Prints the figures and their ratios.

    PYTHONPATH=. python benchmarks/bench_record.py

``--part hostile`` measures the proxy's memory against hostile upstreams (#45 item 5), each case in
a fresh process (its peak resident memory is the process's): a gzip body of about 1 MB that
inflates to ``--inflate-mb`` MB, and an event stream of ``--stream-mb`` MB. Each prints the peak
over the process's memory before the call, the bytes the client received (all of them, always),
what the recording kept and said, and the peak's ratio to the body cap (``TOKPROF_RECORD_MAX_BODY``).

    PYTHONPATH=. python benchmarks/bench_record.py --part hostile --inflate-mb 1024 --stream-mb 300
"""

from __future__ import annotations

import json
import resource
import statistics
import tempfile
import time
import zlib

import httpx
from starlette.applications import Starlette
from starlette.responses import StreamingResponse
from starlette.routing import Route

from tokprof.frontends.record.proxy import create_app
from tokprof.frontends.record.store import Recording
from tokprof.frontends.serve import Running

CHUNK = (
    b"event: content_block_delta\ndata: "
    + b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"'
    + b"x" * 900
    + b'"}}\n\n'
)
CHUNKS = 5000  # about 5 MB


async def _stream(request):
    await request.body()
    count = int(request.query_params.get("n", "1"))

    async def body():
        for _ in range(count):
            yield CHUNK

    return StreamingResponse(body(), media_type="text/event-stream")


def _ttfb(client: httpx.Client, url: str, runs: int = 50) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        with client.stream("POST", url + "?n=1", json={"model": "m", "messages": []}) as answer:
            chunks = answer.iter_raw()
            next(chunks)
            times.append(time.perf_counter() - start)
            for _ in chunks:
                pass
    return statistics.median(times)


def _throughput(client: httpx.Client, url: str) -> float:
    start = time.perf_counter()
    size = 0
    with client.stream("POST", url + f"?n={CHUNKS}", json={"model": "m", "messages": []}) as answer:
        for chunk in answer.iter_raw():
            size += len(chunk)
    return size / (time.perf_counter() - start) / 1e6


def _bomb(inflate_mb: int) -> bytes:
    """A gzip body of ``inflate_mb`` MB of JSON text, made a megabyte at a time."""
    pack = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [pack.compress(b'{"type":"message","content":[{"type":"text","text":"')]
    block = b"a" * (1024 * 1024)
    for _ in range(inflate_mb):
        parts.append(pack.compress(block))
    parts.append(pack.compress(b'"}]}') + pack.flush())
    return b"".join(parts)


def _hostile_case(case: str, size_mb: int) -> dict:
    """One case in this process: the stub, the proxy, one call read to its end."""
    from starlette.responses import Response

    body = _bomb(size_mb) if case == "gzip" else b""

    async def answer(request):
        await request.body()
        if case == "gzip":
            return Response(body, media_type="application/json", headers={"content-encoding": "gzip"})

        async def events():
            for _ in range(size_mb * 1024 * 1024 // len(CHUNK)):
                yield CHUNK

        return StreamingResponse(events(), media_type="text/event-stream")

    stub_app = Starlette(routes=[Route("/v1/messages", answer, methods=["POST"])])
    with tempfile.TemporaryDirectory() as directory, Running(stub_app) as stub:
        recording = Recording(directory, "bench")
        with Running(create_app(recording, {"anthropic": stub.url})) as proxy, httpx.Client(timeout=600) as client:
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            start = time.perf_counter()
            received = 0
            with client.stream("POST", proxy.url + "/anthropic/v1/messages", json={"model": "m"}) as got:
                for chunk in got.iter_raw():
                    received += len(chunk)
            seconds = time.perf_counter() - start
            time.sleep(0.5)  # the line of a chunked body is written after its end reached the client
        recording.close()
        line = open(recording.path, "rb").read()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    mark = json.loads(line)["tokprof_record"] if line.strip() else {}
    return {
        "case": case,
        "size_mb": size_mb,
        "sent": len(body) if case == "gzip" else size_mb * 1024 * 1024 // len(CHUNK) * len(CHUNK),
        "received": received,
        "seconds": round(seconds, 2),
        "before_mb": round(before / 1024, 1),
        "peak_mb": round(peak / 1024, 1),
        "line_bytes": len(line),
        "not_recorded": mark.get("not_recorded"),
    }


def hostile(inflate_mb: int, stream_mb: int) -> None:
    import subprocess
    import sys

    try:
        from tokprof.frontends.record.body import body_cap

        cap_mb = body_cap() / 1024 / 1024
    except ImportError:  # a tokprof without a cap (before #45)
        cap_mb = None
    print("case, size, received/sent, time, memory before -> peak (growth), recording line, growth / cap")
    for case, size in (("gzip", inflate_mb), ("stream", stream_mb)):
        done = subprocess.run(
            [sys.executable, __file__, "--case", case, "--size-mb", str(size)], capture_output=True, text=True
        )
        if done.returncode != 0:
            print(f"{case} {size} MB: failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
            continue
        r = json.loads(done.stdout)
        growth = r["peak_mb"] - r["before_mb"]
        ratio = f"{growth / cap_mb:.2f}" if cap_mb else "n/a"
        print(
            f"{case} ({'inflates to' if case == 'gzip' else 'of'} {size:,} MB): {r['received']:,}/{r['sent']:,} bytes, "
            f"{r['seconds']} s, {r['before_mb']} -> {r['peak_mb']} MB (+{growth:.0f}), line {r['line_bytes']:,} bytes "
            f"({r['not_recorded'] or 'all recorded'}), growth / cap {ratio}"
        )


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["speed", "hostile"], default="speed")
    parser.add_argument("--inflate-mb", type=int, default=1024, help="what the gzip body inflates to")
    parser.add_argument("--stream-mb", type=int, default=300, help="the event stream's size")
    parser.add_argument("--case", choices=["gzip", "stream"], help=argparse.SUPPRESS)
    parser.add_argument("--size-mb", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(_hostile_case(args.case, args.size_mb)))
    elif args.part == "hostile":
        hostile(args.inflate_mb, args.stream_mb)
    else:
        speed()


def speed() -> None:
    stub_app = Starlette(routes=[Route("/v1/messages", _stream, methods=["POST"])])
    with tempfile.TemporaryDirectory() as directory, Running(stub_app) as stub:
        recording = Recording(directory, "bench")
        with Running(create_app(recording, {"anthropic": stub.url})) as proxy, httpx.Client(timeout=60) as client:
            direct, through = stub.url + "/v1/messages", proxy.url + "/anthropic/v1/messages"
            _ttfb(client, direct, 5), _ttfb(client, through, 5)  # warm up
            t_direct, t_proxy = _ttfb(client, direct), _ttfb(client, through)
            mb_direct, mb_proxy = _throughput(client, direct), _throughput(client, through)
        recording.close()
    print(
        f"time to first byte: direct {t_direct * 1e3:.2f} ms, through the proxy {t_proxy * 1e3:.2f} ms "
        f"(added {(t_proxy - t_direct) * 1e3:.2f} ms; limit 5 ms: ratio {(t_proxy - t_direct) * 1e3 / 5:.2f})"
    )
    print(
        f"throughput: direct {mb_direct:.0f} MB/s, through the proxy {mb_proxy:.0f} MB/s "
        f"(ratio {mb_proxy / mb_direct:.2f})"
    )


if __name__ == "__main__":
    main()

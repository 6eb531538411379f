"""The time tokprof record's proxy adds: time to first byte of a stream and throughput, direct to a
stub upstream on 127.0.0.1 and through the proxy. Prints the figures and their ratios.

    PYTHONPATH=. python benchmarks/bench_record.py
"""

from __future__ import annotations

import statistics
import tempfile
import time

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


def main() -> None:
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

"""``tokprof mcp`` on huge tool lists (#45 item 10): a real MCP server (the official SDK's low-level
server, on stdio) that lists N tools, or one tool with a description of D MB, profiled by the command
as a user runs it; each run a process of its own. Prints the run's wall time, the CPU of tokprof's
process and the peak of its memory, what it priced and skipped, and its CPU per listed tool (the
measure of linearity: flat as N grows; past the pricing cap it falls, as only the listing grows),
against the limit of 2 ms a tool.

    PYTHONPATH=. python benchmarks/bench_mcp.py --tools 2000,20000,100000 --description-mb 50 --timeout 120
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

SERVER = """
import sys, anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

n, mb = int(sys.argv[1]), int(sys.argv[2])
schema = {"type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}}}
TOOLS = [types.Tool(name=f"tool_{i}", description=f"Tool {i} looks things up. " + "Detail. " * 20,
                    input_schema=schema) for i in range(n)]
if mb:
    TOOLS.append(types.Tool(name="huge", description="x " * (mb * 512 * 1024), input_schema=schema))

async def list_tools(ctx, params):
    return types.ListToolsResult(tools=TOOLS)

server = Server("bench", on_list_tools=list_tools)

async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"""

#: tokprof mcp in-process, timed by phase: the listing, and the whole run.
RUN = """
import json, resource, sys, time
from tokprof.frontends.cli import main

args = json.loads(sys.argv[1])
start = time.monotonic()
cpu = time.process_time()
code = main(args)
print(json.dumps({"code": code, "seconds": time.monotonic() - start, "cpu": time.process_time() - cpu,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}), file=sys.stderr)
"""

LIMIT_MS = 2.0


def run(server: str, tools: int, mb: int, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "report.json")
        args = ["mcp", "--server", f"bench={sys.executable} {server} {tools} {mb}", "--timeout", str(timeout)]
        args += ["-f", "json", "-o", os.path.join(folder, "catalogue.json")]
        with open(out, "w") as f:
            done = subprocess.run([sys.executable, "-c", RUN, json.dumps(args)], stdout=f, stderr=subprocess.PIPE)
        figures = json.loads(done.stderr.strip().splitlines()[-1])
        errors = [line for line in done.stderr.splitlines()[:-1] if line.strip()]
        try:
            report = json.load(open(out))
        except ValueError:
            report = {}
    figures["priced"] = len(report.get("tools", []))
    figures["skipped"] = len(report.get("skipped", []))
    figures["said"] = errors[-1] if errors else ""
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tools", default="2000,20000,100000", help="tool counts, comma-separated")
    parser.add_argument("--description-mb", type=int, default=50, help="one tool's description (0: none)")
    parser.add_argument("--timeout", type=float, default=120.0, help="tokprof mcp --timeout")
    args = parser.parse_args()
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(SERVER)
    cases = [(int(n), 0) for n in args.tools.split(",") if n] + (
        [(1, args.description_mb)] if args.description_mb else []
    )
    print("case: exit, wall s, CPU s, peak MB, priced/skipped, CPU ms per listed tool (limit 2 ms: ratio)")
    try:
        for tools, mb in cases:
            started = time.monotonic()
            r = run(f.name, tools, mb, args.timeout)
            listed = r["priced"] + r["skipped"]
            per = r["cpu"] * 1000 / listed if listed else None
            ratio = f"{per:.2f} ms ({per / LIMIT_MS:.2f})" if per is not None else "-"
            name = f"{tools:,} tools" + (f" + one of {mb} MB" if mb else "")
            print(
                f"{name}: exit {r['code']}, {r['seconds']:.1f} s ({time.monotonic() - started:.1f} s with start-up), "
                f"CPU {r['cpu']:.1f} s, {r['peak_mb']:.0f} MB, {r['priced']:,}/{r['skipped']:,}, {ratio}"
                + (f"; said: {r['said']}" if r["said"] else "")
            )
    finally:
        os.unlink(f.name)


if __name__ == "__main__":
    main()

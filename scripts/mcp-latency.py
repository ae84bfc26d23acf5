#!/usr/bin/env python3
"""Latency `toolsum mcp` adds to a small tool result: N `echo` calls to server-everything
straight and through the proxy, over raw newline-delimited JSON-RPC on stdio (one call in
flight at a time), alternating the two in rounds. Prints p50/p95 of each and the p50 added.

Usage: scripts/mcp-latency.py [N]   (needs scripts/mcp-test-deps.sh and a release build)
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CI = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "toolsum/ci")
SERVER = ["node", os.path.join(CI, "npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"]
TOOLSUM = os.path.join(ROOT, "target/release/toolsum")


class Session:
    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.id = 0
        self.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "mcp-latency", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.call("tools/list", {})

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def call(self, method, params):
        self.id += 1
        self.send({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        while True:
            m = json.loads(self.p.stdout.readline())
            if m.get("id") == self.id and "method" not in m:
                return m

    def echo_ms(self):
        t = time.perf_counter()
        r = self.call("tools/call", {"name": "echo", "arguments": {"message": "hello", "_intent": "latency"}})
        ms = (time.perf_counter() - t) * 1e3
        assert r["result"]["content"][0]["text"] == "Echo: hello", r
        return ms

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(5)
        except subprocess.TimeoutExpired:
            self.p.terminate()
            self.p.wait()


def pct(v, p):
    s = sorted(v)
    return s[min(len(s) - 1, max(0, int(round(p / 100 * len(s))) - 1))]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    with tempfile.TemporaryDirectory() as d:
        proxy = [TOOLSUM, "mcp", "--no-spawn", "--session-dir", d, "--"] + SERVER
        direct, proxied = Session(SERVER), Session(proxy)
        for s in (direct, proxied):  # warm up
            for _ in range(20):
                s.echo_ms()
        a, b = [], []
        for _ in range(n // 10):
            a += [direct.echo_ms() for _ in range(10)]
            b += [proxied.echo_ms() for _ in range(10)]
        direct.close()
        proxied.close()
    print(f"echo round trip, {len(a)} calls each (ms):")
    print(f"  direct      p50 {statistics.median(a):.3f}  p95 {pct(a, 95):.3f}")
    print(f"  via proxy   p50 {statistics.median(b):.3f}  p95 {pct(b, 95):.3f}")
    print(f"  added by toolsum mcp: p50 {statistics.median(b) - statistics.median(a):.3f} ms")


if __name__ == "__main__":
    main()

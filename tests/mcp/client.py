"""The MCP client side of the proxy tests (tests/mcp.rs): the official Python SDK (pinned in
tests/mcp/requirements.txt) driving `toolsum mcp` in front of a real server.

Usage: client.py SCENARIO CONFIG_JSON. CONFIG_JSON holds `proxy` (the argv that starts the
proxy) and the scenario's paths. Prints one JSON object of what the client saw; the Rust test
asserts on it and on the wire logs. A scenario that cannot finish raises (exit 1).
"""

import json
import os
import signal
import sys
import time

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError


def dump(result):
    return result.model_dump(by_alias=True, exclude_none=True, mode="json")


def tools_seen(listed):
    return [
        {
            "name": t.name,
            "properties": sorted((t.input_schema or {}).get("properties", {})),
            "required": list((t.input_schema or {}).get("required", [])),
            "intent_description": (t.input_schema or {})
            .get("properties", {})
            .get("_intent", {})
            .get("description"),
            "output_schema": t.output_schema is not None,
        }
        for t in listed.tools
    ]


def client(cfg, **kw):
    argv = cfg["proxy"]
    return Client(StdioServerParameters(command=argv[0], args=argv[1:]), **kw)


async def fs(cfg):
    """server-filesystem: a small read, a large log, an image, then toolsum_ask on the log."""
    out = {}
    async with client(cfg, mode="auto") as c:
        out["protocol"] = c.protocol_version
        out["tools"] = tools_seen(await c.list_tools())
        out["small"] = dump(
            await c.call_tool(
                "read_text_file", {"path": cfg["small"], "_intent": "read the small config"}
            )
        )
        out["large"] = dump(
            await c.call_tool(
                "read_text_file", {"path": cfg["large"], "_intent": cfg["intent"]}
            )
        )
        out["image"] = dump(
            await c.call_tool(
                "read_media_file", {"path": cfg["image"], "_intent": "look at the chart"}
            )
        )
        link = next(b for b in out["large"]["content"] if b["type"] == "resource_link")
        out["ask"] = dump(
            await c.call_tool("toolsum_ask", {"file": link["uri"], "question": cfg["question"]})
        )
        out["ask_outside"] = dump(
            await c.call_tool("toolsum_ask", {"file": cfg["small"], "question": "what is in it?"})
        )
    return out


async def everything(cfg):
    """server-everything: echo, a tiny image, sampling and elicitation (server-to-client
    requests), progress notifications, and a call the client cancels."""
    out = {"progress": []}

    async def sampling(ctx, params):
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="sampled by the test client"),
            model="test-client-model",
            stop_reason="endTurn",
        )

    async def elicit(ctx, params):
        out["elicited_message"] = getattr(params, "message", None)
        return types.ElicitResult(action="accept", content={"name": "octocat"})

    async def progress(p, total, message):
        out["progress"].append([p, total])

    async with client(
        cfg, mode="legacy", sampling_callback=sampling, elicitation_callback=elicit
    ) as c:
        out["protocol"] = c.protocol_version
        out["tools"] = tools_seen(await c.list_tools())
        out["echo"] = dump(
            await c.call_tool("echo", {"message": "hello proxy", "_intent": "check echo"})
        )
        out["tiny_image"] = dump(await c.call_tool("get-tiny-image", {"_intent": "see it"}))
        out["sampling"] = dump(
            await c.call_tool(
                "trigger-sampling-request",
                {"prompt": "say hi", "maxTokens": 10, "_intent": "test sampling"},
            )
        )
        names = {t["name"] for t in out["tools"]}
        if "trigger-elicitation-request" in names:
            try:
                out["elicitation"] = dump(
                    await c.call_tool(
                        "trigger-elicitation-request", {"_intent": "test elicitation"}
                    )
                )
            except MCPError as e:
                out["elicitation_error"] = str(e)
        out["long"] = dump(
            await c.call_tool(
                "trigger-long-running-operation",
                {"duration": 1, "steps": 3, "_intent": "test progress"},
                progress_callback=progress,
            )
        )
        with anyio.move_on_after(cfg.get("cancel_after", 1.5)) as scope:
            await c.call_tool(
                "trigger-long-running-operation",
                {"duration": 30, "steps": 30, "_intent": "to be cancelled"},
            )
        out["cancelled"] = scope.cancelled_caught
        # The connection still works after the cancellation.
        out["echo_after_cancel"] = dump(
            await c.call_tool("echo", {"message": "still here", "_intent": "after cancel"})
        )
    return out


async def kill(cfg):
    """The upstream server is killed while a call waits: the client gets an error, fast."""
    out = {}
    killed = {}

    async def progress(p, total, message):
        if "at" not in killed:
            pid = int(open(cfg["pidfile"]).read().strip())
            os.kill(pid, signal.SIGKILL)
            killed["at"] = time.monotonic()

    async with client(cfg, mode="legacy") as c:
        try:
            with anyio.fail_after(cfg.get("timeout", 30)):
                await c.call_tool(
                    "trigger-long-running-operation",
                    {"duration": 60, "steps": 60, "_intent": "wait a minute"},
                    progress_callback=progress,
                )
            out["result"] = "answered"
        except MCPError as e:
            out["error_code"] = e.code
            out["error_message"] = str(e)
        except TimeoutError:
            out["result"] = "hang"
        if "at" in killed:
            out["seconds_after_kill"] = time.monotonic() - killed["at"]
    return out


async def modern(cfg):
    """The 2026-07-28 revision (no initialize; _meta per request; input_required retries)
    against the SDK's own server: _intent added, a large read guarded, a small one intact."""
    out = {}

    async def elicit(ctx, params):
        return types.ElicitResult(action="accept", content={"name": "octocat"})

    async with client(cfg, mode="2026-07-28", elicitation_callback=elicit) as c:
        out["protocol"] = c.protocol_version
        out["tools"] = tools_seen(await c.list_tools())
        out["greet"] = dump(await c.call_tool("greet", {"_intent": "say hello"}))
        out["small"] = dump(await c.call_tool("ping_small", {"_intent": "ping"}))
        out["large"] = dump(
            await c.call_tool("read_log", {"path": cfg["large"], "_intent": cfg["intent"]})
        )
    return out


SCENARIOS = {"fs": fs, "everything": everything, "kill": kill, "modern": modern}


def main():
    scenario, cfg = sys.argv[1], json.loads(sys.argv[2])
    out = anyio.run(SCENARIOS[scenario], cfg)
    print(json.dumps(out))


if __name__ == "__main__":
    main()

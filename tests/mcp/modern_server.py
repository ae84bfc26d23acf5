"""A real MCP server on the official Python SDK (pinned in requirements.txt) for the proxy tests
of the 2026-07-28 revision: no npm server speaks it yet. It serves both revisions on stdio.

Tools: `read_log(path)` returns a file's text (the SDK adds structuredContent {"result": text}
and an outputSchema), `greet()` asks the client for a name through an `input_required` result
(2026-07-28 multi round-trip request), `ping_small()` returns a short text.
"""

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

app = MCPServer("toolsum-test-modern")


@app.tool()
def read_log(path: str) -> str:
    """Read a log file as text."""
    with open(path, newline="") as f:  # the text as it is, \r\n and all
        return f.read()


@app.tool()
def greet(ctx: Context) -> str | types.InputRequiredResult:
    """Greet the user by the name they give."""
    answers = ctx.input_responses
    if not answers or "who" not in answers:
        ask = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message="Your name?",
                requested_schema={
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            )
        )
        return types.InputRequiredResult(input_requests={"who": ask}, request_state="round-1")
    answer = answers["who"]
    content = answer.content if hasattr(answer, "content") else answer["content"]
    return f"Hello, {content['name']}"


@app.tool()
def ping_small() -> str:
    """A short answer."""
    return "pong"


if __name__ == "__main__":
    app.run("stdio")

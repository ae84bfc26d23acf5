# A scripted Anthropic Messages endpoint on 127.0.0.1 for scripts/agent-check.sh: it stands in
# for the agent's LLM only (Claude Code, its hook runner and toolsum are the real ones). Turn 1
# asks for one Bash call (`cat build.log`); the next request, which carries the tool_result the
# model would read after the PostToolUse hook, is appended to the log file, and answered "done".
# Usage: python3 anthropic_endpoint.py PORT LOG
import json, sys, http.server, threading
LOG = sys.argv[2]
state = {"n": 0}
def sse(h, events):
    h.send_response(200)
    h.send_header("content-type", "text/event-stream")
    h.end_headers()
    for name, data in events:
        h.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
    h.wfile.flush()
def message(content_blocks, stop):
    ev = [("message_start", {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}})]
    for i, b in enumerate(content_blocks):
        if b["type"] == "text":
            ev.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}))
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": b["text"]}}))
        else:
            ev.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}}))
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}}))
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    ev.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}}))
    ev.append(("message_stop", {"type": "message_stop"}))
    return ev
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        with open(LOG, "a") as f:
            f.write(json.dumps({"path": self.path, "body": body}) + "\n")
        if "count_tokens" in self.path:
            self.send_response(200); self.send_header("content-type", "application/json"); self.end_headers()
            self.wfile.write(b'{"input_tokens": 10}'); return
        msgs = body.get("messages", [])
        has_result = any(isinstance(m.get("content"), list) and any(c.get("type") == "tool_result" for c in m["content"]) for m in msgs)
        tools = [t.get("name") for t in body.get("tools", [])]
        if not has_result and "Bash" in tools:
            blocks = [{"type": "tool_use", "id": "toolu_e2e_1", "name": "Bash", "input": {"command": "cat build.log", "description": "Show the build log"}}]
            stop = "tool_use"
        else:
            blocks = [{"type": "text", "text": "done"}]
            stop = "end_turn"
        if body.get("stream"):
            sse(self, message(blocks, stop))
        else:
            self.send_response(200); self.send_header("content-type", "application/json"); self.end_headers()
            self.wfile.write(json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}}).encode())
    def do_GET(self):
        self.send_response(200); self.send_header("content-type", "application/json"); self.end_headers(); self.wfile.write(b"{}")
srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
srv.serve_forever()

# A scripted Gemini API endpoint on 127.0.0.1 for scripts/agent-check.sh: it stands in for the
# agent's LLM only (Gemini CLI, its hook runner and toolsum are the real ones). Turn 1 asks for one
# run_shell_command call (`cat build.log`); every request is appended to the log file, so the
# functionResponse the model would read after the AfterTool hook can be checked.
# Usage: python3 gemini_endpoint.py PORT LOG
import json, sys, http.server
LOG = sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def reply(self, obj, sse):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream" if sse else "application/json")
        self.end_headers()
        if sse:
            self.wfile.write(f"data: {json.dumps(obj)}\n\n".encode())
        else:
            self.wfile.write(json.dumps(obj).encode())
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        with open(LOG, "a") as f:
            f.write(json.dumps({"path": self.path, "body": body}) + "\n")
        usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
        if ":countTokens" in self.path:
            return self.reply({"totalTokens": 10}, False)
        sse = "streamGenerateContent" in self.path
        contents = body.get("contents", [])
        has_result = any("functionResponse" in p for c in contents for p in c.get("parts", []))
        tools = json.dumps(body.get("tools", []))
        if sse and not has_result and "run_shell_command" in tools:
            part = {"functionCall": {"name": "run_shell_command", "args": {"command": "cat build.log", "description": "Show the build log"}}}
        elif sse:
            part = {"text": "done"}
        else:
            part = {"text": json.dumps({"reasoning": "done", "next_speaker": "user"})}
        self.reply({"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}], "usageMetadata": usage}, sse)
    do_GET = do_POST
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()

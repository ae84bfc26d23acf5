// toolsum OpenCode plugin: guards every tool result through `toolsum hook opencode`.
//
// Installed by `toolsum install opencode` (into ~/.config/opencode/plugins/ or, with --project,
// .opencode/plugins/), which writes the toolsum binary's path below. OpenCode calls
// `tool.execute.after(input, output)` once a tool has run; replacing `output.output` replaces
// the result the model reads (@opencode-ai/plugin 1.18.33, dist/index.d.ts). The plugin sends
// `{tool, sessionID, callID, args, output, directory, worktree}` to the CLI, which guards it
// through the toolsum daemon and answers `{"output": TEXT}`, or nothing when the result stays.
// Any failure (no binary, a crash, a timeout, bad JSON) leaves the result as it was.
import type { Plugin } from "@opencode-ai/plugin"
import { spawn } from "node:child_process"

/** The toolsum binary (TOOLSUM_BIN overrides the path written at install time). */
const TOOLSUM_BIN: string = process.env.TOOLSUM_BIN || "__TOOLSUM_BIN__"

/** Longest a guard may take before the original result is kept (ms): the model's own budget
 * plus a first call's daemon start. */
const TIMEOUT_MS = 120_000

/** Runs `toolsum hook opencode` with `payload` on stdin; resolves to its stdout ("" on failure). */
function runHook(payload: unknown): Promise<string> {
  return new Promise((resolve) => {
    let out = ""
    let done = false
    const finish = (s: string) => {
      if (!done) {
        done = true
        resolve(s)
      }
    }
    let child
    try {
      child = spawn(TOOLSUM_BIN, ["hook", "opencode"], { stdio: ["pipe", "pipe", "inherit"] })
    } catch {
      return finish("")
    }
    const timer = setTimeout(() => {
      child.kill()
      finish("")
    }, TIMEOUT_MS)
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", (chunk: string) => {
      out += chunk
    })
    child.on("error", () => {
      clearTimeout(timer)
      finish("")
    })
    child.on("close", () => {
      clearTimeout(timer)
      finish(out)
    })
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify(payload))
  })
}

export const ToolsumPlugin: Plugin = async ({ directory, worktree }) => ({
  "tool.execute.after": async (input, output) => {
    if (typeof output.output !== "string" || output.output.length === 0) return
    const answer = await runHook({
      tool: input.tool,
      sessionID: input.sessionID,
      callID: input.callID,
      args: input.args,
      output: output.output,
      directory,
      worktree,
    })
    if (!answer.trim()) return
    try {
      const parsed: unknown = JSON.parse(answer)
      if (parsed && typeof parsed === "object" && typeof (parsed as { output?: unknown }).output === "string") {
        output.output = (parsed as { output: string }).output
      }
    } catch {
      // Not our answer: keep the original result.
    }
  },
})

export default ToolsumPlugin

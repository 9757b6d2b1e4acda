// exec: run a command inside a branch and get its exit code and output.
import { z } from 'zod';
import { bounded } from '../bounded.js';
import { Branch } from '../inputs.js';
import { defineTool, textResult } from '../tool.js';

/** Per stream: enough for a build log's tail, small enough for a model's context. */
const MAX_OUTPUT_CHARS = 50_000;

export const execTool = defineTool({
  name: 'exec',
  title: 'Run a command in a branch',
  description:
    'Runs a command inside a running branch (as root in its container, no terminal) and returns its exit code, stdout and stderr (each cut at 50,000 characters). A string runs with sh -c; an array runs that program with those arguments.',
  input: {
    branch: Branch,
    command: z.union([z.string().min(1), z.array(z.string()).min(1).max(256)]).describe('a shell command line (run with sh -c), or [program, ...arguments]'),
    timeout_seconds: z
      .number()
      .positive()
      .max(3600)
      .optional()
      .describe('kill it after this many seconds (default 60; past ~55 s your MCP client may give up on the call first)'),
    stdin: z
      .string()
      .max(1 << 20)
      .optional()
      .describe("text for the command's standard input"),
    cwd: z.string().startsWith('/').optional().describe('the directory to run it in (default /root)'),
  },
  annotations: { destructiveHint: false },
  async run(args, h) {
    const argv = typeof args.command === 'string' ? ['sh', '-c', args.command] : args.command;
    const res = await h.request('exec.run', {
      workspace: args.branch,
      argv,
      stdin: args.stdin,
      cwd: args.cwd,
      timeoutMs: Math.round((args.timeout_seconds ?? 60) * 1000),
    });
    const stdout = bounded(res.stdout, MAX_OUTPUT_CHARS);
    const stderr = bounded(res.stderr, MAX_OUTPUT_CHARS);
    const ending = res.timedOut ? 'timed out and was killed' : res.signal ? `was killed by ${res.signal}` : `exited ${res.exitCode}`;
    return textResult(`it ${ending}\n--- stdout ---\n${withoutFinalNewline(stdout.text)}\n--- stderr ---\n${withoutFinalNewline(stderr.text)}`, {
      exitCode: res.exitCode,
      signal: res.signal,
      timedOut: res.timedOut,
      stdout: stdout.text,
      stderr: stderr.text,
      cut: stdout.cut || stderr.cut,
    });
  },
});

function withoutFinalNewline(text: string): string {
  return text.endsWith('\n') ? text.slice(0, -1) : text;
}

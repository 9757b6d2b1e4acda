// `grove mcp` against the real helper, as an agent uses it: an MCP client from
// the SDK talks to `grove mcp --socket <agent socket>` run as a real
// unprivileged member of grove-agent (through setpriv), so every call carries
// that agent's identity. The reference agent runs end to end; a person decides
// its requests and the agent is told.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../src/helper-client/client.js';
import { callTool, connectGroveMcp, pngOf, textOf } from '../../src/mcp/client.js';
import type { Approval } from '../../../privileged-helper/src/protocol/approvals.js';
import type { Workspace } from '../../../privileged-helper/src/protocol/entities.js';
import { mcpScreenshotSamples } from '../../../privileged-helper/bench/mcp-roundtrip.js';
import { summarize } from '../../../privileged-helper/bench/stats.js';
import { agentUserNames, runAs, testUser, type TestUser } from '../../../privileged-helper/test/system/agent-users.js';
import { REPO } from '../../../privileged-helper/test/system/helper-process.js';
import { connect, createWorkspace, instance, sh, track } from '../../../privileged-helper/test/system/support.js';
import { until } from '../../../privileged-helper/test/until.js';

const REFERENCE_AGENT = path.join(REPO, 'main/src/agent/reference-agent.ts');
const MAIN = 'mcp-main';

interface AgentReport {
  ok: boolean;
  failure: string | null;
  children: { id: string; name: string; text: string; expected: number[]; seen: { rgb: number[]; share: number } | null }[];
  look: {
    branch: string;
    zoomShare: number;
    zoomSize: { width: number; height: number };
    windows: { app: string; title: string; focused: boolean }[];
    opened: { app: string; title: string } | null;
  };
  requests: Record<'promote' | 'discard', { request: string; branch: { id: string; name: string }; state: string; answer: string; isError: boolean }>;
  calls: Record<string, number>;
}

describe('grove mcp, as an agent', () => {
  let person: HelperClient;
  let agent: TestUser;
  let mcp: Client;
  let main: Workspace;

  beforeAll(async () => {
    agent = await testUser(agentUserNames(instance().instance)[0]!);
    person = await connect('mcp-person');
    main = await createWorkspace(person, MAIN);
    await person.request('scope.allow', { who: { user: agent.name }, workspaces: [main.id] });
    mcp = await connectGroveMcp({
      name: 'mcp-system-test',
      socketPath: instance().agentSocketPath,
      runAs: ['setpriv', '--reuid', agent.name, '--regid', agent.name, '--init-groups'],
    });
  });

  afterAll(async () => {
    await mcp?.close();
    await person?.request('scope.revoke', { who: { user: agent.name } }).catch(() => undefined);
    // Every branch of the test's workspace, the main line last.
    const mine = (await person.request('workspace.list', {})).filter((w) => w.tree === main?.tree);
    for (const w of [...mine.filter((x) => !x.main), ...mine.filter((x) => x.main)])
      await person.request('workspace.delete', { workspace: w.id }).catch(() => undefined);
    person?.close();
  });

  it('lists its tools and knows the caller as that agent', async () => {
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name)).toEqual(
      expect.arrayContaining([
        'list_branches',
        'computer',
        'windows',
        'open_url',
        'launch',
        'upload',
        'download',
        'exec',
        'fork',
        'discard',
        'request_promote',
        'request_discard',
        'request_status',
      ]),
    );
    const listed = (await callTool(mcp, 'list_branches', {})).structuredContent as { you: unknown; workspaces: { branches: { name: string }[] }[] };
    expect(listed.you).toEqual({ role: 'agent', user: agent.name, uid: agent.uid });
    expect(listed.workspaces.flatMap((w) => w.branches.map((b) => b.name))).toContain(MAIN);
  });

  it("returns a screenshot of the branch's desktop as a PNG image", async () => {
    const shot = await callTool(mcp, 'computer', { branch: MAIN, action: 'screenshot' });
    const png = PNG.sync.read(pngOf(shot));
    expect([png.width, png.height]).toEqual([1280, 800]);
    expect(textOf(shot)).toContain('of the 1280x800 screen');
  });

  it('zooms, and answers screenshots with the picture size, scale and screen as data', async () => {
    const zoom = await callTool(mcp, 'computer', { branch: MAIN, action: 'zoom', region: { x: 0, y: 0, width: 320, height: 200 }, width: 960 });
    const png = PNG.sync.read(pngOf(zoom));
    expect([png.width, png.height]).toEqual([960, 600]);
    expect(zoom.structuredContent).toMatchObject({ width: 960, height: 600, scale: 3, screen: { width: 1280, height: 800 } });
    const shot = await callTool(mcp, 'computer', { branch: MAIN, action: 'screenshot', scale: 0.5 });
    expect(shot.structuredContent).toMatchObject({ width: 640, height: 400, scale: 0.5, screen: { width: 1280, height: 800 }, frame: expect.any(String) });
  });

  it('refuses bad input with isError and the reason: zoom off screen, hold_key too long, file:// URLs, missing programs, big uploads', async () => {
    const refused = async (name: string, args: Record<string, unknown>, why: RegExp) => {
      const res = (await mcp.callTool({ name, arguments: { branch: MAIN, ...args } })) as CallToolResult;
      expect(res.isError, name).toBe(true);
      expect(textOf(res), name).toMatch(why);
    };
    await refused('computer', { action: 'zoom', region: { x: 1200, y: 0, width: 200, height: 100 } }, /reaches past the 1280x800 screen/);
    await refused('computer', { action: 'hold_key', text: 'shift', duration: 30 }, /at most 10000 ms/);
    await refused('open_url', { url: 'file:///etc/shadow' }, /only http:\/\/ and https:\/\/ addresses are opened, not file:/);
    await refused('launch', { command: ['no-such-program-here'] }, /there is no program 'no-such-program-here' in the branch/);
    await refused('upload', { path: '/tmp/big', base64: Buffer.alloc(5 << 19).toString('base64') }, /an upload is at most 2097152 bytes/);
  });

  it('forks: the child appears, made by that agent, which may discard it without asking', async () => {
    const forked = (await callTool(mcp, 'fork', { branch: MAIN, names: ['mcp-fork'] })).structuredContent as { children: { id: string; name: string }[] };
    expect(forked.children).toEqual([{ id: expect.any(String), name: 'mcp-fork', state: 'running' }]);
    const child = await track(await person.request('workspace.get', { workspace: 'mcp-fork' }));
    expect(child).toMatchObject({ parent: main.id, madeBy: { role: 'agent', uid: agent.uid, user: agent.name } });
    expect(textOf(await callTool(mcp, 'discard', { branch: child.id, reason: 'only a test' }))).toBe(`discarded mcp-fork (${child.id})`);
    await expect(person.request('workspace.get', { workspace: child.id })).rejects.toMatchObject({ code: 'E_NOT_FOUND' });
  });

  it('copies a file of its own into a branch, and nothing it may not read', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'grove-mcp-copy-'));
    try {
      await writeFile(path.join(dir, 'notes.txt'), 'from the agent\n');
      await writeFile(path.join(dir, 'secret.txt'), 'root only\n', { mode: 0o600 });
      await chown(dir, agent.uid, agent.uid);
      await chown(path.join(dir, 'notes.txt'), agent.uid, agent.uid);
      const copied = await callTool(mcp, 'copy_in', { branch: MAIN, from: path.join(dir, 'notes.txt'), to: '/root' });
      expect(copied.structuredContent).toEqual({ bytes: 10240, branch: MAIN, to: '/root' }); // one tar record
      expect(await sh(person, main, 'cat /root/notes.txt')).toBe('from the agent\n');
      const refused = (await mcp.callTool({ name: 'copy_in', arguments: { branch: MAIN, from: path.join(dir, 'secret.txt'), to: '/root' } })) as CallToolResult;
      expect(refused.isError).toBe(true);
      expect(await sh(person, main, 'ls /root/secret.txt 2>&1 || true')).toMatch(/No such file/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("asks before it rolls back a person's branch, and says what is wrong with the helper's words", async () => {
    const unasked = (await mcp.callTool({ name: 'rollback', arguments: { branch: MAIN, version: '00000000' } })) as CallToolResult;
    expect(unasked).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: `${MAIN} is not yours to roll back: give a reason, and a person is asked` }],
    });
    const res = (await mcp.callTool({ name: 'rollback', arguments: { branch: MAIN, version: '00000000', reason: 'a test' } })) as CallToolResult;
    expect(res).toMatchObject({ isError: true, content: [{ type: 'text', text: `no version '00000000' of ${MAIN}'s workspace (E_NOT_FOUND)` }] });
  });

  it('measures the round trip of one MCP screenshot call', async () => {
    const s = summarize(await mcpScreenshotSamples(mcp, MAIN, 20));
    console.log(`MCP screenshot round trip (1280x800 PNG through grove mcp): p50 ${s.p50.toFixed(1)} ms, p95 ${s.p95.toFixed(1)} ms, ${s.n} calls`);
  });

  it('runs the reference agent end to end; a person approves its promote and denies its discard, and the agent is told without polling', async () => {
    const running = runAs(agent.name, REFERENCE_AGENT, ['--branch', MAIN, '--socket', instance().agentSocketPath, '--wait-decisions', '120']);
    const [promote, discard] = await Promise.all([opened(person, 'branch.promote', agent), opened(person, 'branch.discard', agent)]);
    for (const a of [promote, discard]) await track(await person.request('workspace.get', { workspace: a.workspace }));

    // What the person sees before deciding.
    expect(promote.reason).toMatch(/holds the note/);
    expect(promote.preview.thumbnail).toMatch(/^data:image\/png;base64,/);
    expect(promote.preview.diff?.against).toEqual({ id: main.id, name: MAIN });
    expect(discard.preview.processes?.count).toBeGreaterThan(5);
    expect(discard.preview.processes?.names.join(' ')).toMatch(/Xvnc|chromium/);
    const listed = await person.request('approval.list', {});
    expect(listed.map((a) => a.id)).toEqual(expect.arrayContaining([promote.id, discard.id]));

    await person.request('approval.approve', { id: promote.id, note: 'good idea' });
    await person.request('approval.deny', { id: discard.id, note: 'keep it for now' });

    const res = await running;
    expect(res.exitCode, res.stderr).toBe(0);
    const report = JSON.parse(res.stdout) as AgentReport;
    expect(report.ok).toBe(true);
    expect(report.children).toHaveLength(3);
    expect(new Set(report.children.map((c) => c.text)).size).toBe(3);
    for (const c of report.children) expect(c.seen?.rgb, c.name).toEqual(c.expected);
    // It zoomed, listed the windows and opened a page of its own with open_url.
    expect(report.look).toMatchObject({ zoomSize: { width: 400, height: 200 }, opened: { app: expect.stringMatching(/chromium/i) } });
    expect(report.look.zoomShare).toBeGreaterThanOrEqual(0.8);
    expect(report.look.windows.map((w) => w.app).sort()).toEqual(expect.arrayContaining([expect.stringMatching(/chromium/i), 'Mousepad', 'XTerm']));
    expect(report.requests.promote).toMatchObject({ request: promote.id, state: 'done' });
    expect(report.requests.promote.answer).toMatch(/approved by person root \(uid 0\) \(note: good idea\) and carried out/);
    expect(report.requests.promote.isError).toBe(false);
    expect(report.requests.discard).toMatchObject({
      request: discard.id,
      state: 'denied',
      answer: `denied: request ${discard.id} was denied by person root (uid 0): keep it for now`,
      isError: true,
    });
    // One call asked and waited for each decision: no request_status in between.
    expect(report.calls).toMatchObject({ request_promote: 1, request_discard: 1 });
    expect(report.calls.request_status).toBeUndefined();
    // Its requests, as it lists them.
    const mine = (await callTool(mcp, 'list_my_requests', {})).structuredContent as { requests: { request: string; state: string }[] };
    expect(mine.requests).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ request: promote.id, state: 'done' }),
        expect.objectContaining({ request: discard.id, state: 'denied' }),
      ]),
    );

    // request_status tells any later session of the agent the same.
    expect((await callTool(mcp, 'request_status', { request: promote.id })).structuredContent).toMatchObject({ state: 'done', note: 'good idea' });
    const denied = (await mcp.callTool({ name: 'request_status', arguments: { request: discard.id } })) as CallToolResult;
    expect(denied).toMatchObject({ isError: true, structuredContent: { state: 'denied', note: 'keep it for now' } });
    expect((await person.request('workspace.get', { workspace: promote.workspace })).main).toBe(true);
    expect((await person.request('workspace.get', { workspace: discard.workspace })).state).toBe('running');
  });
});

/** The request of `kind` the agent opens next, once it is open. */
async function opened(person: HelperClient, kind: Approval['action']['kind'], agent: TestUser, timeoutMs = 240_000): Promise<Approval> {
  const mine = (a: Approval) => a.action.kind === kind && a.requestedBy?.uid === agent.uid && a.state === 'pending';
  return until(async () => (await person.request('approval.list', {})).find(mine), {
    what: `the reference agent to open a ${kind} request`,
    timeoutMs,
    everyMs: 250,
  });
}

// The tools of `grove mcp` as an MCP client sees them (the SDK's in-memory
// transport against the real tool registry), with a stub helper: which helper
// calls each tool makes, and how answers and errors come back. What the helper
// itself does is the system test's (main/test/system/mcp.test.ts).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { GroveError } from '../../src/helper-client/client.js';
import type { Helper, HelperSource } from '../../src/mcp/helper-link.js';
import { createGroveMcpServer } from '../../src/mcp/server.js';
import type { Actor } from '../../../privileged-helper/src/protocol/identity.js';
import type { MethodName } from '../../../privileged-helper/src/protocol/methods.js';
import { ALICE, APP, approval, branch, decided } from './app-fixtures.js';

type Answer = (params: Record<string, unknown>) => unknown;

/** A helper that answers from `answers` and records every call. */
function stubHelper(identity: Actor, answers: Partial<Record<MethodName, Answer>>) {
  const calls: { method: MethodName; params: Record<string, unknown> }[] = [];
  const helper: Helper = {
    identity,
    request: async (method, params) => {
      calls.push({ method, params: params as Record<string, unknown> });
      const answer = answers[method];
      if (!answer) throw new Error(`the stub has no answer for ${method}`);
      return answer(params as Record<string, unknown>) as never;
    },
  };
  const source: HelperSource = { use: (fn) => fn(helper) };
  return { calls, source };
}

const POINTER = { cursor: { x: 10, y: 20 }, screen: { width: 1280, height: 800 } };

describe('grove mcp tools', () => {
  let client: Client;
  let stub: ReturnType<typeof stubHelper>;

  async function connect(identity: Actor, answers: Partial<Record<MethodName, Answer>>) {
    stub = stubHelper(identity, answers);
    const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
    await createGroveMcpServer(stub.source).connect(serverSide);
    client = new Client({ name: 'unit', version: '1' });
    await client.connect(clientSide);
  }
  const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('\n');

  afterEach(async () => client?.close());

  it('lists every tool with a description and an input schema', async () => {
    await connect(ALICE, {});
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual([
      'list_branches',
      'computer',
      'windows',
      'open_url',
      'launch',
      'exec',
      'upload',
      'download',
      'copy_in',
      'fork',
      'checkpoint',
      'rollback',
      'diff',
      'discard',
      'request_promote',
      'request_discard',
      'request_outside_access',
      'request_status',
      'list_my_requests',
    ]);
    for (const t of tools) expect(t.description!.length, t.name).toBeGreaterThan(40);
    expect(tools.find((t) => t.name === 'computer')!.inputSchema.required).toEqual(['branch', 'action']);
  });

  it('returns a screenshot as PNG image content, and pointer actions as words', async () => {
    await connect(ALICE, {
      'desktop.screenshot': () => ({
        png: 'iVBORw0KGgo=',
        width: 1280,
        height: 800,
        region: { x: 0, y: 0, width: 1280, height: 800 },
        screen: POINTER.screen,
        cursor: POINTER.cursor,
        at: '',
      }),
      'desktop.click': () => POINTER,
    });
    const shot = await call('computer', { branch: 'one-1', action: 'screenshot' });
    expect(shot.content[0]).toEqual({ type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' });
    expect(text(shot)).toContain('of the 1280x800 screen');
    const click = await call('computer', { branch: 'one-1', action: 'triple_click', coordinate: [10, 20] });
    expect(text(click)).toBe('triple click done; the pointer is now at 10,20 (screen 1280x800)');
    expect(stub.calls.at(-1)).toEqual({ method: 'desktop.click', params: { workspace: 'one-1', x: 10, y: 20, button: 'left', count: 3 } });
  });

  it('waits for a change since the frame of the last action on the branch, and from now when that frame is gone', async () => {
    let frameKnown = true;
    await connect(ALICE, {
      'desktop.click': () => ({ ...POINTER, frame: 'aaaaaaaa.3' }),
      'desktop.wait': (p) => {
        if (p.since !== undefined && !frameKnown) throw new GroveError('E_CONFLICT', `frame ${String(p.since)} is not of the desktop's current connection`);
        return { satisfied: true, waitedMs: 0, screen: POINTER.screen, frame: 'aaaaaaaa.4' };
      },
    });
    await call('computer', { branch: 'one-1', action: 'left_click' });
    expect(text(await call('computer', { branch: 'one-1', action: 'wait_changed' }))).toBe('the screen changed (after 0 ms of waiting)');
    expect(stub.calls.at(-1)!.params).toEqual({ workspace: 'one-1', until: 'changed', timeoutMs: 5000, since: 'aaaaaaaa.3' });
    frameKnown = false;
    await call('computer', { branch: 'one-1', action: 'wait_changed' });
    expect(stub.calls.slice(-2).map((c) => c.params.since)).toEqual(['aaaaaaaa.4', undefined]);
    // A frame the agent gave is not dropped: it hears why.
    expect(await call('computer', { branch: 'one-1', action: 'wait_changed', since: 'bbbbbbbb.1' })).toMatchObject({ isError: true });
  });

  it('uploads text or base64, and downloads text as a text resource and bytes as a blob', async () => {
    const files: Record<string, string> = {
      '/root/a.txt': Buffer.from('héllo\n').toString('base64'),
      '/root/b.bin': Buffer.from([0xff, 0, 1]).toString('base64'),
    };
    await connect(ALICE, {
      'file.upload': (p) => ({ path: p.path, bytes: Buffer.from(String(p.data), 'base64').length }),
      'file.download': (p) => ({ path: p.path, bytes: Buffer.from(files[String(p.path)]!, 'base64').length, data: files[String(p.path)] }),
    });
    expect(text(await call('upload', { branch: 'one-1', path: '/root/a.txt', text: 'héllo\n' }))).toBe('wrote 7 bytes to one-1:/root/a.txt');
    expect(stub.calls.at(-1)!.params).toEqual({ workspace: 'one-1', path: '/root/a.txt', data: files['/root/a.txt'] });
    expect(await call('upload', { branch: 'one-1', path: '/root/a.txt', text: 'x', base64: 'eA==' })).toMatchObject({ isError: true });
    expect((await call('download', { branch: 'one-1', path: '/root/a.txt' })).content[1]).toEqual({
      type: 'resource',
      resource: { uri: 'grove://one-1/root/a.txt', text: 'héllo\n', mimeType: 'text/plain' },
    });
    expect((await call('download', { branch: 'one-1', path: '/root/b.bin' })).content[1]).toMatchObject({
      resource: { blob: files['/root/b.bin'], mimeType: 'application/octet-stream' },
    });
  });

  it("turns the helper's errors, other failures and bad arguments into isError results", async () => {
    await connect(ALICE, {
      'desktop.move': () => {
        throw new GroveError('E_INVALID_PARAMS', '5000,100 is off the screen');
      },
      'workspace.list': () => {
        throw new Error('the connection to the helper closed');
      },
    });
    expect(await call('computer', { branch: 'one-1', action: 'mouse_move', coordinate: [5000, 100] })).toEqual({
      content: [{ type: 'text', text: '5000,100 is off the screen (E_INVALID_PARAMS)' }],
      isError: true,
    });
    expect(await call('computer', { branch: 'one-1', action: 'key' })).toMatchObject({
      isError: true,
      content: [{ text: 'key needs text (E_INVALID_PARAMS)' }],
    });
    expect(await call('list_branches', {})).toMatchObject({ isError: true, content: [{ text: 'the connection to the helper closed' }] });
    const bad = await call('fork', { branch: '../etc', copies: 99 });
    expect(bad.isError).toBe(true);
    expect(text(bad)).toMatch(/Invalid arguments for tool fork/);
  });

  it('runs a command line with sh -c and an array as it is, 60 s by default', async () => {
    await connect(ALICE, { 'exec.run': () => ({ exitCode: 3, signal: null, stdout: 'out', stderr: 'err', timedOut: false }) });
    const res = await call('exec', { branch: 'one-1', command: 'make test' });
    expect(stub.calls[0]!.params).toMatchObject({ workspace: 'one-1', argv: ['sh', '-c', 'make test'], timeoutMs: 60_000 });
    expect(text(res)).toBe('it exited 3\n--- stdout ---\nout\n--- stderr ---\nerr');
    await call('exec', { branch: 'one-1', command: ['ls', '-l'], timeout_seconds: 2 });
    expect(stub.calls[1]!.params).toMatchObject({ argv: ['ls', '-l'], timeoutMs: 2000 });
  });

  it('asks a person, waits a bounded time and tells who decided; a denial is an error result', async () => {
    const asked = approval('q0000000a', { kind: 'branch.promote', oldMain: 'keep' });
    await connect(ALICE, { 'approval.create': () => asked, 'approval.wait': () => decided(asked, APP, false, 'not yet') });
    const res = await call('request_promote', { branch: 'one-1', reason: 'the tests pass', old_main: 'keep' });
    expect(stub.calls).toEqual([
      { method: 'approval.create', params: { workspace: 'one-1', action: { kind: 'branch.promote', oldMain: 'keep' }, reason: 'the tests pass' } },
      { method: 'approval.wait', params: { id: 'q0000000a', timeoutMs: 10_000 } },
    ]);
    expect(text(res)).toBe('denied: request q0000000a was denied by person root (uid 0): not yet');
    expect(res.isError).toBe(true);
    expect(res.structuredContent).toMatchObject({ request: 'q0000000a', state: 'denied', decidedBy: 'person root (uid 0)', note: 'not yet' });
  });

  it('waits for the decision of a client that takes progress, telling it so meanwhile', async () => {
    const asked = approval('q0000000e', { kind: 'branch.discard' });
    let waits = 0;
    await connect(ALICE, {
      'approval.create': () => asked,
      'approval.wait': () => (++waits < 3 ? asked : { ...asked, state: 'done', outcome: 'one-1 was discarded', decision: decided(asked, APP, true).decision }),
    });
    const progress: string[] = [];
    const res = (await client.callTool({ name: 'request_discard', arguments: { branch: 'one-1', reason: 'a dead end' } }, undefined, {
      onprogress: (p) => progress.push(p.message ?? ''),
    })) as CallToolResult;
    expect(text(res)).toBe('done: request q0000000e was approved by person root (uid 0) and carried out: one-1 was discarded');
    expect(res.isError).toBeUndefined();
    expect(stub.calls.map((c) => c.method)).toEqual(['approval.create', 'approval.wait', 'approval.wait', 'approval.wait']);
    expect(progress).toEqual([expect.stringMatching(/^waiting for a person to decide request q0000000e \(pending; it expires at /), expect.any(String)]);
  });

  it("lists the agent's own requests, not others'", async () => {
    const mine = approval('q0000000f', { kind: 'branch.discard' });
    const others = approval('q00000010', { kind: 'branch.discard' }, { requestedBy: { ...ALICE, uid: 4242, user: 'bob' } });
    await connect(ALICE, { 'approval.list': () => [mine, others] });
    const res = await call('list_my_requests', {});
    expect(stub.calls[0]!.params).toEqual({ all: true });
    expect((res.structuredContent as { requests: { request: string; state: string }[] }).requests).toEqual([
      expect.objectContaining({ request: 'q0000000f', state: 'pending', kind: 'branch.discard' }),
    ]);
  });

  it("rolls back the agent's own branch at once, and asks a person for a person's", async () => {
    const mine = branch('aaaaaaa2', 'one-1', { main: false, madeBy: { role: 'agent', uid: ALICE.uid, user: ALICE.user } });
    const claimed = { ...mine, id: 'aaaaaaa3', name: 'one-2', claimedBy: { role: 'person' as const, uid: 0, user: 'root' } };
    await connect(ALICE, {
      'workspace.get': (p) => (p.workspace === 'one-1' ? mine : claimed),
      'branch.rollback': () => mine,
      'approval.create': () => approval('q00000011', { kind: 'branch.rollback', version: 'bbbbbbb1' }, { workspaceName: 'one-2' }),
    });
    expect(text(await call('rollback', { branch: 'one-1', version: 'bbbbbbb1' }))).toBe('one-1 is back at version bbbbbbb1 (running)');
    expect((await call('rollback', { branch: 'one-2', version: 'bbbbbbb1' })).isError).toBe(true);
    expect(text(await call('rollback', { branch: 'one-2', version: 'bbbbbbb1', reason: 'the last change broke it', wait_seconds: 0 }))).toMatch(
      /^still waiting: request q00000011/,
    );
    expect(stub.calls.filter((c) => c.method !== 'workspace.get')).toEqual([
      { method: 'branch.rollback', params: { workspace: 'aaaaaaa2', version: 'bbbbbbb1' } },
      {
        method: 'approval.create',
        params: { workspace: 'aaaaaaa3', action: { kind: 'branch.rollback', version: 'bbbbbbb1' }, reason: 'the last change broke it' },
      },
    ]);
  });

  it('answers "still waiting" with the request id when nobody decided in time', async () => {
    const asked = approval('q0000000b', { kind: 'branch.discard' });
    await connect(ALICE, {
      'approval.create': () => asked,
      'approval.get': () => ({ ...asked, state: 'done', outcome: 'one-1 was discarded', decision: decided(asked, APP, true).decision }),
    });
    expect(text(await call('request_discard', { branch: 'one-1', reason: 'a dead end', wait_seconds: 0 }))).toMatch(
      /^still waiting: request q0000000b \(use request_status/,
    );
    expect(stub.calls.map((c) => c.method)).toEqual(['approval.create']);
    expect(text(await call('request_status', { request: 'q0000000b' }))).toBe(
      'done: request q0000000b was approved by person root (uid 0) and carried out: one-1 was discarded',
    );
  });

  it('discards a branch the agent forked itself at once, and asks for any other', async () => {
    const mine = branch('aaaaaaa2', 'one-1', { main: false, madeBy: { role: 'agent', uid: ALICE.uid, user: ALICE.user } });
    const theirs = branch('aaaaaaa3', 'one-2', { main: false });
    await connect(ALICE, {
      'workspace.get': (p) => (p.workspace === 'one-1' ? mine : theirs),
      'workspace.delete': (p) => ({ deleted: p.workspace }),
      'approval.create': () => approval('q0000000c', { kind: 'branch.discard' }, { workspaceName: 'one-2' }),
    });
    expect(text(await call('discard', { branch: 'one-1', reason: 'done with it' }))).toBe('discarded one-1 (aaaaaaa2)');
    expect(text(await call('discard', { branch: 'one-2', reason: 'done with it', wait_seconds: 0 }))).toMatch(/^still waiting: request q0000000c/);
    expect(stub.calls.map((c) => c.method)).toEqual(['workspace.get', 'workspace.delete', 'workspace.get', 'approval.create']);
  });

  it('asks for outside access as an allow-list entry, switching a closed branch to allow-list-only', async () => {
    let mode = 'deny';
    await connect(ALICE, {
      'egress.status': () => ({ workspace: 'aaaaaaa2', policy: { mode, allow: [], holdMutating: false }, dropped: { tcp: 0, udp: 0, other: 0 } }),
      'approval.create': () => approval('q0000000d', { kind: 'branch.discard' }),
    });
    await call('request_outside_access', { branch: 'one-1', host: 'pypi.org', port: 443, reason: 'packages', wait_seconds: 0 });
    expect(stub.calls[1]!.params.action).toEqual({ kind: 'egress.policy', change: { mode: 'allow', allow: [{ host: 'pypi.org', port: 443 }] } });
    mode = 'gate';
    await call('request_outside_access', { branch: 'one-1', host: 'pypi.org', reason: 'packages', wait_seconds: 0 });
    expect(stub.calls[3]!.params.action).toEqual({ kind: 'egress.policy', change: { allow: [{ host: 'pypi.org' }] } });
  });

  it('lists branches by workspace, with parents, makers, versions and who the caller is', async () => {
    const main = branch('aaaaaaa1', 'one');
    const child = branch('aaaaaaa2', 'one-1', {
      parent: 'aaaaaaa1',
      tree: 'aaaaaaa1',
      main: false,
      madeBy: { role: 'agent', uid: ALICE.uid, user: ALICE.user },
    });
    await connect(ALICE, {
      'workspace.list': () => [main, child],
      'version.list': () => [
        { id: 'bbbbbbb1', branch: 'aaaaaaa2', tree: 'aaaaaaa1', label: 'green', createdAt: 't1', saved: true },
        { id: 'bbbbbbb2', branch: 'aaaaaaa9', tree: 'aaaaaaa1', label: null, createdAt: 't2', saved: false },
      ],
    });
    const res = await call('list_branches', {});
    expect(JSON.parse(text(res))).toEqual(res.structuredContent);
    expect(res.structuredContent).toEqual({
      you: { role: 'agent', user: 'alice', uid: 1001 },
      workspaces: [
        {
          mainLine: { id: 'aaaaaaa1', name: 'one' },
          branches: [
            { id: 'aaaaaaa1', name: 'one', state: 'running', parent: null, main: true, madeBy: main.madeBy, versions: [] },
            {
              id: 'aaaaaaa2',
              name: 'one-1',
              state: 'running',
              parent: { id: 'aaaaaaa1', name: 'one' },
              main: false,
              madeBy: child.madeBy,
              versions: [{ id: 'bbbbbbb1', label: 'green', at: 't1', saved: true }],
            },
          ],
          versionsOfGoneBranches: [{ id: 'bbbbbbb2', label: null, branch: 'aaaaaaa9', at: 't2', saved: false }],
        },
      ],
    });
  });
});

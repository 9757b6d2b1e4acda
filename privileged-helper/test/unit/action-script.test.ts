// CRIU's action script (host/criu/action-script.sh), run as CRIU runs it: the
// action in CRTOOLS_SCRIPT_ACTION, everything else from the environment.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { ACTION_SCRIPT } from '../../src/host/criu/criu.js';

const act = (action: string, env: Record<string, string> = {}) =>
  execa('sh', [ACTION_SCRIPT], { env: { CRTOOLS_SCRIPT_ACTION: action, ...env }, extendEnv: false, reject: false });
const dir = mkdtempSync(path.join(tmpdir(), 'action-script-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("CRIU's action script", () => {
  it('leaves a file saying a dumped tree runs again, when asked to (criu-patches/0007)', async () => {
    const thawed = path.join(dir, 'thawed');
    expect(await act('post-resume', { GROVE_THAWED_FILE: thawed })).toMatchObject({ exitCode: 0 });
    expect(existsSync(thawed)).toBe(true);
    // A restore's post-resume, or a dump nobody waits on: nothing to leave.
    expect(await act('post-resume')).toMatchObject({ exitCode: 0, stdout: '' });
    expect(readdirSync(dir)).toEqual(['thawed']);
  });

  it('does nothing for the actions it has no part in', async () => {
    for (const action of ['pre-dump', 'post-restore', 'network-lock', 'network-unlock']) expect(await act(action), action).toMatchObject({ exitCode: 0, stdout: '' });
  });
});

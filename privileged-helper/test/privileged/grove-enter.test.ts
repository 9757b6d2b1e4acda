// native/grove-enter.c for real (built by build/host/setup.sh), entering this
// test process's own namespaces: what it starts is caged as a branch's
// processes are (capabilities, no_new_privs, seccomp, stdio only, its own session).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Launcher } from '../../src/host/launcher.js';
import { CGROUP_ROOT } from '../../src/host/cgroups.js';

const dir = mkdtempSync(path.join(tmpdir(), 'grove-enter-'));
const launcher = new Launcher(loadConfig().groveEnter, path.join(dir, 'seccomp.rules'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function inBranch(script: string, opts: { setsid?: boolean; fd?: number } = {}): { code: number | null; out: string; err: string } {
  const [file, args] = launcher.inBranch({ initPid: process.pid, cgroups: [], cwd: '/tmp', setsid: opts.setsid ?? true, mergeable: true }, [
    'sh',
    '-c',
    script,
  ]);
  const res = spawnSync(file, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe', ...(opts.fd === undefined ? [] : [opts.fd])] });
  return { code: res.status, out: res.stdout, err: res.stderr };
}

describe('grove-enter', () => {
  it('writes the seccomp rules it loads', async () => {
    await launcher.writeRules();
    expect(readFileSync(path.join(dir, 'seccomp.rules'), 'utf8')).toMatch(/^default 38\n/);
  });

  it('keeps only the branch capabilities, sets no_new_privs and the filter, in the working directory asked for', () => {
    const { out, code } = inBranch('grep -E "^(CapBnd|CapEff|CapInh|NoNewPrivs|Seccomp):" /proc/self/status; pwd');
    expect(code).toBe(0);
    const bnd = BigInt(`0x${/CapBnd:\s+(\w+)/.exec(out)![1]}`);
    // chown 0, dac_override 1, fowner 3, fsetid 4, kill 5, setgid 6, setuid 7, setpcap 8, net_bind_service 10
    expect(bnd).toBe([0, 1, 3, 4, 5, 6, 7, 8, 10].reduce((m, b) => m | (1n << BigInt(b)), 0n));
    expect(out).toMatch(/CapInh:\s+0+\n/);
    expect(out).toMatch(/NoNewPrivs:\s+1/);
    expect(out).toMatch(/Seccomp:\s+2/);
    expect(out.trim().endsWith('/tmp')).toBe(true);
  });

  it('refuses mounts, namespaces, packet sockets and device nodes', () => {
    expect(inBranch('mount -t tmpfs none /mnt').code).not.toBe(0);
    const unshare = inBranch('unshare -U -r true');
    expect(unshare.code).not.toBe(0);
    expect(unshare.err).toMatch(/Operation not permitted/);
    const packet = inBranch(`python3 -c 'import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)'`);
    expect(packet.err).toMatch(/OSError: \[Errno 38\]|PermissionError/); // refused by the filter (and without CAP_NET_RAW)
    expect(inBranch(`python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM); print("ok")'`).out).toBe('ok\n');
    expect(inBranch(`mknod ${dir}/loop b 7 0`).code).not.toBe(0);
  });

  it('passes no descriptor but stdio, and starts a session of its own when asked', () => {
    const leaked = openSync('/etc/hostname', 'r');
    const fds = inBranch('ls /proc/self/fd', { fd: leaked }).out.trim().split('\n').map(Number).sort();
    expect(fds.filter((fd) => fd > 3)).toEqual([]); // 0-2, and ls's own directory descriptor (3)
    expect(inBranch('ps -o sid= -p $$; echo $$').out.trim().split(/\s+/).map(Number)).toSatisfy(([sid, pid]: number[]) => sid === pid);
    expect(inBranch('ps -o sid= -p $$; echo $$', { setsid: false }).out.trim().split(/\s+/).map(Number)).toSatisfy(([sid, pid]: number[]) => sid !== pid);
  });

  it('joins cgroups before it runs the program (on the host too)', () => {
    const group = path.join(CGROUP_ROOT, 'pids', `grove-unit-${process.pid}`);
    mkdirSync(group);
    try {
      const [file, args] = launcher.onHost([group], true, ['cat', '/proc/self/cgroup']);
      expect(execFileSync(file, args, { encoding: 'utf8' })).toContain(`pids:/grove-unit-${process.pid}`);
      writeFileSync(path.join(group, 'pids.max'), '4');
      // A fork bomb inside the group stops at its limit.
      const [f2, a2] = launcher.onHost([group], true, ['sh', '-c', 'for i in 1 2 3 4 5 6; do sleep 2 & done; wait']);
      expect(spawnSync(f2, a2, { encoding: 'utf8' }).stderr).toMatch(/fork|Resource temporarily unavailable|Cannot/i);
    } finally {
      // The sleeps that did start may still be in the group: it can go once they have ended.
      for (let i = 0; i < 100 && readFileSync(path.join(group, 'cgroup.procs'), 'utf8').trim() !== ''; i++) execFileSync('sleep', ['0.1']);
      rmdirSync(group);
    }
  });

  it('exits as the program did', () => {
    expect(inBranch('exit 7').code).toBe(7);
    const [file, args] = launcher.inBranch({ initPid: process.pid, cgroups: [], cwd: '/', setsid: true, mergeable: true }, ['sh', '-c', 'kill -TERM $$']);
    expect(spawnSync(file, args).signal).toBe('SIGTERM');
  });
});

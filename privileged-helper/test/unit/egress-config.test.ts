import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hasProxyConfig, writeProxyConfig } from '../../src/egress/workspace-config.js';
import { MAX_READ_BYTES, writeInside } from '../../src/host/rootfs-files.js';

let root: string;
let elsewhere: string;

beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), 'grove-rootfs-'));
  elsewhere = mkdtempSync(path.join(tmpdir(), 'grove-elsewhere-'));
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
  rmSync(elsewhere, { recursive: true, force: true });
});

describe('writeProxyConfig', () => {
  it("writes the gate's name and the proxy settings next to the branch's identity, idempotently", async () => {
    mkdirSync(path.join(root, 'etc'));
    writeFileSync(path.join(root, 'etc/hosts'), '127.0.0.1\tlocalhost\n127.0.1.1\talpha\n');
    writeFileSync(path.join(root, 'etc/environment'), 'LANG=C.UTF-8\n');
    await writeProxyConfig(root, null);
    await writeProxyConfig(root, null);
    expect(readFileSync(path.join(root, 'etc/hosts'), 'utf8')).toBe('127.0.0.1\tlocalhost\n127.0.1.1\talpha\n169.254.77.1\tgrove-gate\t# grove-egress\n');
    const env = readFileSync(path.join(root, 'etc/environment'), 'utf8');
    expect(env.startsWith('LANG=C.UTF-8\n')).toBe(true);
    expect(env.match(/^http_proxy=/gm)).toHaveLength(1);
    expect(readFileSync(path.join(root, 'etc/profile.d/grove-proxy.sh'), 'utf8')).toContain('export https_proxy=http://grove-gate:3128');
    expect(await hasProxyConfig(root)).toBe(true);
  });

  it('never writes through a symlink a branch planted', async () => {
    mkdirSync(path.join(root, 'etc'));
    symlinkSync(elsewhere, path.join(root, 'etc/chromium.d'));
    await expect(writeProxyConfig(root, null)).rejects.toThrow(/not a directory/);
    expect(existsSync(path.join(elsewhere, 'grove-proxy'))).toBe(false);

    rmSync(path.join(root, 'etc/chromium.d'));
    rmSync(path.join(root, 'etc/environment'), { force: true });
    symlinkSync(path.join(elsewhere, 'victim'), path.join(root, 'etc/environment'));
    await expect(writeProxyConfig(root, null)).rejects.toThrow();
    expect(existsSync(path.join(elsewhere, 'victim'))).toBe(false);
  });

  it('never waits on a FIFO a branch left in place of a file, nor reads a file past its bound', async () => {
    mkdirSync(path.join(root, 'etc'));
    execFileSync('mkfifo', [path.join(root, 'etc/environment')]);
    await expect(writeProxyConfig(root, null)).rejects.toThrow(/not a regular file/);
    rmSync(path.join(root, 'etc/environment'));
    writeFileSync(path.join(root, 'etc/environment'), Buffer.alloc(MAX_READ_BYTES + 1, 'x'));
    await expect(writeProxyConfig(root, null)).rejects.toThrow(/over 1048576 bytes/);
    rmSync(path.join(root, 'etc/hosts'), { force: true });
    execFileSync('mkfifo', [path.join(root, 'etc/hosts')]);
    await expect(writeInside(root, 'etc/hosts', 'x\n', null)).rejects.toThrow();
  });
});

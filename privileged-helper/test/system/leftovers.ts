// What a test instance may have left on the host, read from the host itself
// (not from the helper's registry, which is what is being checked).
import { access, readdir, readFile, readlink } from 'node:fs/promises';
import { execa } from 'execa';
import { pidsByNamespace } from '../../src/host/proc.js';
import type { TestInstance } from './helper-process.js';

export async function netnsNames(): Promise<string[]> {
  const { stdout } = await execa('ip', ['-json', 'netns', 'list']);
  return stdout.trim() ? (JSON.parse(stdout) as { name: string }[]).map((n) => n.name) : [];
}

export async function linkNames(): Promise<string[]> {
  const { stdout } = await execa('ip', ['-json', 'link', 'show']);
  return (JSON.parse(stdout) as { ifname: string }[]).map((l) => l.ifname);
}

/** The host's own nftables tables, as 'FAMILY NAME'. */
export async function nftTables(): Promise<string[]> {
  const { stdout } = await execa('nft', ['-j', 'list', 'tables']);
  const items = (JSON.parse(stdout) as { nftables: { table?: { family: string; name: string } }[] }).nftables;
  return items.flatMap((i) => (i.table ? [`${i.table.family} ${i.table.name}`] : []));
}

export async function mountPointsUnder(prefix: string): Promise<string[]> {
  const table = await readFile('/proc/mounts', 'utf8');
  return table
    .split('\n')
    .map((l) => l.split(' ')[1] ?? '')
    .filter((m) => m.startsWith(prefix));
}

export async function loopDevicesFor(prefix: string): Promise<string[]> {
  const { stdout } = await execa('losetup', ['--list', '--json', '--output', 'NAME,BACK-FILE'], { reject: false });
  if (!stdout.trim()) return [];
  const devices = (JSON.parse(stdout) as { loopdevices: { name: string; 'back-file': string | null }[] }).loopdevices;
  return devices.filter((d) => (d['back-file'] ?? '').startsWith(prefix)).map((d) => d.name);
}

/** Groups of these names in any cgroup hierarchy, as HIERARCHY/NAME. */
async function cgroupsNamed(names: string[]): Promise<string[]> {
  const found: string[] = [];
  for (const hierarchy of await readdir('/sys/fs/cgroup').catch(() => [] as string[])) {
    for (const name of names)
      if (
        await access(`/sys/fs/cgroup/${hierarchy}/${name}`).then(
          () => true,
          () => false,
        )
      )
        found.push(`${hierarchy}/${name}`);
  }
  return found;
}

export async function pidNamespaceOf(pid: number): Promise<string> {
  return readlink(`/proc/${pid}/ns/pid`);
}

/** Running processes in the given pid namespace (e.g. 'pid:[4026532251]'): zombies have ended, as the helper counts them. */
export async function processesInPidNs(ns: string): Promise<number[]> {
  return (await pidsByNamespace(new Set([ns]))).get(ns) ?? [];
}

/** Pid namespaces of every workspace the tests created (see support.ts: createWorkspace). */
export async function trackedPidNamespaces(t: TestInstance): Promise<string[]> {
  const text = await readFile(t.pidNsFile, 'utf8').catch(() => '');
  return [...new Set(text.split('\n').filter(Boolean))];
}

export async function leftovers(t: TestInstance): Promise<string[]> {
  const found: string[] = [];
  for (const ns of await netnsNames()) if (ns.startsWith(`grove-${t.instance}-`)) found.push(`netns ${ns}`);
  for (const link of await linkNames()) if (link.startsWith(`gv${t.instance}`)) found.push(`veth ${link}`);
  for (const table of await nftTables()) if (table === `inet grove-${t.instance}`) found.push(`nft table ${table}`);
  for (const m of [...(await mountPointsUnder(t.stateDir)), ...(await mountPointsUnder(t.runDir))]) found.push(`mount ${m}`);
  for (const l of await loopDevicesFor(t.stateDir)) found.push(`loop ${l}`);
  for (const ns of await trackedPidNamespaces(t)) for (const p of await processesInPidNs(ns)) found.push(`process ${p} (${ns})`);
  for (const group of await cgroupsNamed([`grove-${t.instance}`, `grove-helper-${t.instance}`])) found.push(`cgroup ${group}`);
  return found;
}

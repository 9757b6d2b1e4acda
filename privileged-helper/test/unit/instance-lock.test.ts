// The instance lock against a real second process that holds the same name,
// as a running (or a still-ending) helper would.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { holdInstanceLock, instanceLockName } from '../../src/host/instance-lock.js';

const holders: ChildProcess[] = [];

/** Another process holding the instance's name; resolves once it holds it. */
async function otherHelper(instance: string): Promise<ChildProcess> {
  const script = `require('net').createServer().listen(${JSON.stringify(instanceLockName(instance))}, () => console.log('held'))`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  holders.push(child);
  await once(child.stdout!, 'data');
  return child;
}

async function killed(child: ChildProcess): Promise<void> {
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

afterEach(async () => {
  for (const child of holders.splice(0)) if (child.exitCode === null && child.signalCode === null) await killed(child);
});

describe('one helper per instance', () => {
  it('refuses to start while another helper of the instance runs, naming the instance', async () => {
    const instance = `t${randomUUID().slice(0, 8)}`;
    await otherHelper(instance);
    await expect(holdInstanceLock(instance, 300)).rejects.toThrow(`another helper of instance '${instance}' is running`);
  });

  it('starts once a killed helper has ended, with nothing to clean up', async () => {
    const instance = `t${randomUUID().slice(0, 8)}`;
    await killed(await otherHelper(instance));
    await expect(holdInstanceLock(instance, 0)).resolves.toBeUndefined();
  });

  it('waits for a helper that is still ending, then holds the name itself', async () => {
    const instance = `t${randomUUID().slice(0, 8)}`;
    const previous = await otherHelper(instance);
    const starting = holdInstanceLock(instance, 10_000);
    setTimeout(() => void killed(previous), 300);
    await expect(starting).resolves.toBeUndefined();
    await expect(holdInstanceLock(instance, 0)).rejects.toThrow('is running'); // held now, by this process
  });

  it('keeps other instances apart', async () => {
    const a = `t${randomUUID().slice(0, 8)}`;
    await otherHelper(a);
    await expect(holdInstanceLock(`${a}x`, 0)).resolves.toBeUndefined();
  });
});

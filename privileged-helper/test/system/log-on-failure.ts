// A system test that fails prints what the helper logged while it ran, where
// CI keeps it: the helper's log goes with the test instance at teardown, and a
// failure that depends on timing may not come back when it is rerun.
import { openSync, readSync, closeSync, statSync } from 'node:fs';
import { beforeEach } from 'vitest';
import { instance } from './support.js';

const MAX_LINES = 80;
/** Read no more than this of the log's end: the lines shown are its last ones anyway. */
const MAX_BYTES = 256 * 1024;

beforeEach(({ onTestFailed, task }) => {
  const log = instance().logFile;
  const from = sizeOf(log);
  onTestFailed(() => {
    const lines = readFrom(log, from).split('\n').filter(Boolean);
    const shown = lines.slice(-MAX_LINES);
    const cut = lines.length > shown.length ? ` (its last ${shown.length} of ${lines.length} lines)` : '';
    process.stderr.write(`\nThe helper's log while "${task.name}" ran${cut}:\n${shown.join('\n') || '(nothing)'}\n`);
  });
});

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

function readFrom(file: string, offset: number): string {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return '(no log)';
  }
  try {
    const start = Math.max(offset, sizeOf(file) - MAX_BYTES);
    const buf = Buffer.alloc(Math.max(0, sizeOf(file) - start));
    const n = readSync(fd, buf, 0, buf.length, start);
    return buf.subarray(0, n).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

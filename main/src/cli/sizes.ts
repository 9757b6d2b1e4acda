// Sizes a person types on the command line: 2G, 1536M, 64MiB, 1.5g, 4096 (bytes).
import { GroveError } from '../helper-client/client.js';

/** Bytes, in powers of 1024 (K, M, G, T; an optional i and B); a clear error for anything else. */
export function parseSize(text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?$/i.exec(text.trim());
  if (!m) throw new GroveError('E_INVALID_PARAMS', `not a size: ${text} (e.g. 2G, 1536M)`);
  const power = ' kmgt'.indexOf((m[2] || ' ').toLowerCase());
  return Math.round(Number(m[1]) * 1024 ** power);
}

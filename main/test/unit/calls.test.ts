// The app names every call the helper audits in words ("avagent1 · changing
// its limits"), never by its raw method name ("workspace.limits").
import { describe, expect, it } from 'vitest';
import { AUTHORITY } from '../../../privileged-helper/src/auth/authority.js';
import { callDoing, callDone } from '../../src/app/calls.js';

const audited = Object.entries(AUTHORITY)
  .filter(([, a]) => a.audit)
  .map(([method]) => method);

describe('words for calls', () => {
  it.each(audited)('%s has words, done and being done', (method) => {
    expect(callDone(method)).not.toBe(method);
    expect(callDone(method)).not.toMatch(/[.]/);
    expect(callDoing(method)).not.toBe('working');
  });

  it('has the limits change that once leaked as a method name', () => {
    expect([callDone('workspace.limits'), callDoing('workspace.limits')]).toEqual(['change limits', 'changing its limits']);
  });
});

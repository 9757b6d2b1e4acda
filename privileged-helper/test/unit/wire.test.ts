import { describe, expect, it } from 'vitest';
import { ErrorBody, EventEnvelope, GroveError, RequestEnvelope, ResponseEnvelope } from '../../src/protocol/wire.js';

describe('GroveError', () => {
  it('is an Error with a stable code and name', () => {
    const err = new GroveError('E_NOT_FOUND', 'no workspace "x"');
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('GroveError');
    expect(err.code).toBe('E_NOT_FOUND');
    expect(err.message).toBe('no workspace "x"');
  });

  it('toBody leaves out details when there are none', () => {
    const body = new GroveError('E_BUSY', 'busy').toBody();
    expect(body).toEqual({ code: 'E_BUSY', message: 'busy' });
    expect(Object.hasOwn(body, 'details')).toBe(false);
    // Valid as a strict error body.
    expect(ErrorBody.safeParse(body).success).toBe(true);
  });

  it('toBody carries details, including falsy ones, when given', () => {
    expect(new GroveError('E_CONFLICT', 'taken', { name: 'alpha' }).toBody()).toEqual({
      code: 'E_CONFLICT',
      message: 'taken',
      details: { name: 'alpha' },
    });
    expect(new GroveError('E_HOST', 'failed', 0).toBody()).toEqual({ code: 'E_HOST', message: 'failed', details: 0 });
    expect(new GroveError('E_HOST', 'failed', null).toBody()).toEqual({ code: 'E_HOST', message: 'failed', details: null });
  });

  it('toBody survives JSON and fits a response envelope', () => {
    const body = new GroveError('E_INVALID_PARAMS', 'bad', { issues: ['x'] }).toBody();
    const line = JSON.stringify({ id: 7, error: body });
    expect(ResponseEnvelope.safeParse(JSON.parse(line)).success).toBe(true);
  });
});

describe('RequestEnvelope', () => {
  it('accepts numeric and string ids, with or without params', () => {
    expect(RequestEnvelope.safeParse({ id: 1, method: 'hello', params: { protocol: 1 } }).success).toBe(true);
    expect(RequestEnvelope.safeParse({ id: 'req-1', method: 'workspace.list' }).success).toBe(true);
  });

  it('refuses extra fields', () => {
    const r = RequestEnvelope.safeParse({ id: 1, method: 'hello', params: {}, jsonrpc: '2.0' });
    expect(r.success).toBe(false);
    expect(r.error?.issues.some((i) => i.code === 'unrecognized_keys')).toBe(true);
  });

  it('refuses a malformed envelope', () => {
    expect(RequestEnvelope.safeParse({ method: 'hello' }).success).toBe(false); // no id
    expect(RequestEnvelope.safeParse({ id: 1 }).success).toBe(false); // no method
    expect(RequestEnvelope.safeParse({ id: 1.5, method: 'hello' }).success).toBe(false); // non-integer id
    expect(RequestEnvelope.safeParse({ id: 'x'.repeat(65), method: 'hello' }).success).toBe(false);
    expect(RequestEnvelope.safeParse({ id: 1, method: 'hello', params: [1, 2] }).success).toBe(false);
    expect(RequestEnvelope.safeParse({ id: 1, method: 'hello', params: null }).success).toBe(false);
    expect(RequestEnvelope.safeParse({ id: 1, method: 'm'.repeat(129) }).success).toBe(false);
  });
});

describe('response and event envelopes', () => {
  it('a response has exactly one of result or error', () => {
    expect(ResponseEnvelope.safeParse({ id: 1, result: { ok: true } }).success).toBe(true);
    expect(ResponseEnvelope.safeParse({ id: null, error: { code: 'E_PARSE', message: 'bad json' } }).success).toBe(true);
    expect(ResponseEnvelope.safeParse({ id: 1, result: 1, error: { code: 'E_INTERNAL', message: 'x' } }).success).toBe(false);
    expect(ResponseEnvelope.safeParse({ id: 1, error: { code: 'E_NOPE', message: 'x' } }).success).toBe(false);
  });

  it('an event has an integer seq and no extra fields', () => {
    expect(EventEnvelope.safeParse({ event: 'progress', seq: 3, data: {} }).success).toBe(true);
    expect(EventEnvelope.safeParse({ event: 'progress', seq: 3.5, data: {} }).success).toBe(false);
    expect(EventEnvelope.safeParse({ event: 'progress', seq: 3, data: {}, id: 1 }).success).toBe(false);
  });
});

// The controller's API as renderer tests fake it: answers per request name,
// every call recorded; an unanswered request fails as the controller would.
import { vi } from 'vitest';
import type { RequestName } from '../../main/src/api/contract.js';
import { ApiError, type Api } from '../src/api/client.js';

export function apiWith(answers: Partial<Record<RequestName, (params: Record<string, unknown>) => unknown>>) {
  const calls: [string, unknown][] = [];
  const api: Api = {
    request: vi.fn(async (method: RequestName, params: unknown) => {
      calls.push([method, params]);
      const fn = answers[method];
      if (!fn) throw new ApiError('E_UNKNOWN_METHOD', method);
      return fn(params as Record<string, unknown>);
    }) as unknown as Api['request'],
  };
  return { api, calls };
}

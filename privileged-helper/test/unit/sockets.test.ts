import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { helperSockets } from '../../src/protocol/sockets.js';

describe('helper sockets', () => {
  it('are where the default helper listens and its clients look, unless the environment names them', () => {
    expect(helperSockets({})).toEqual({ person: '/run/grove/helper.sock', agent: '/run/grove-agent/agent.sock' });
    const config = loadConfig({});
    expect([config.socketPath, config.agentSocketPath]).toEqual(['/run/grove/helper.sock', '/run/grove-agent/agent.sock']);
    expect(helperSockets({ GROVE_SOCKET: '/tmp/p.sock', GROVE_AGENT_SOCKET: '/tmp/a.sock' })).toEqual({ person: '/tmp/p.sock', agent: '/tmp/a.sock' });
  });

  it("follow a helper's run directory", () => {
    const config = loadConfig({ GROVE_RUN_DIR: '/run/grove-test-x' });
    expect([config.socketPath, config.agentSocketPath]).toEqual(['/run/grove-test-x/helper.sock', '/run/grove-test-x-agent/agent.sock']);
    expect(loadConfig({ GROVE_RUN_DIR: '/run/grove-test-x', GROVE_SOCKET: '/tmp/p.sock' }).socketPath).toBe('/tmp/p.sock');
  });
});

// request_outside_access: ask a person to let a branch reach one destination outside.
import { EgressHost, type EgressChange } from '../../../../privileged-helper/src/protocol/entities.js';
import { withAllowListOn } from '../../helper-client/requests.js';
import { Port } from '../../../../privileged-helper/src/protocol/names.js';
import type { Helper } from '../helper-link.js';
import { requestDecision } from '../asking.js';
import { Branch, Reason, waitSeconds } from '../inputs.js';
import { defineTool } from '../tool.js';

export const requestOutsideAccessTool = defineTool({
  name: 'request_outside_access',
  title: 'Ask for outside access',
  description:
    "Branches reach nothing outside this machine unless a person allows it. This asks a person to add a destination (host, optionally one port) to a branch's allow list. Answers with the decision as soon as a person makes it (see wait_seconds); a denial or expiry is an error result.",
  input: {
    branch: Branch,
    host: EgressHost.describe('a host name (lower case; "*.example.org" for its subdomains) or an IP address'),
    port: Port.optional().describe('only this port (default: any)'),
    reason: Reason,
    wait_seconds: waitSeconds('decision'),
  },
  annotations: { destructiveHint: false },
  async run(args, h, call) {
    return requestDecision(
      h,
      args.branch,
      { kind: 'egress.policy', change: await allowing(h, args.branch, { host: args.host, port: args.port }) },
      args.reason,
      args.wait_seconds,
      call,
    );
  },
});

/** Adds the destination to the allow list (switching a closed branch to allow-list-only). */
async function allowing(h: Helper, branch: string, rule: { host: string; port?: number }): Promise<EgressChange> {
  const { policy } = await h.request('egress.status', { workspace: branch });
  return withAllowListOn(policy.mode, { allow: [rule] });
}

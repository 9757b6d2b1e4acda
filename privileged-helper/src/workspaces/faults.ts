// Fault injection, for the tests that prove each lifecycle operation is a
// transaction: an operation given faultAt fails right after that stage.
import { GroveError } from '../protocol/wire.js';

/** A test's faultAt switch: refused unless the helper was started to allow fault injection (GROVE_FAULT_INJECTION=1). */
export function refuseFaultsUnlessAllowed(allowFaultInjection: boolean, faultAt: string | undefined): void {
  if (faultAt && !allowFaultInjection) throw new GroveError('E_INVALID_PARAMS', 'fault injection is disabled (start the helper with GROVE_FAULT_INJECTION=1)');
}

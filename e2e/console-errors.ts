// Console errors the renderer may log without anything being wrong: a desktop
// stream that closes or fails while a branch is stopped, discarded or scrolled
// out of view (the WebSocket errors, and noVNC's "Got data while in an invalid
// state" or "Got data while disconnected" when frames were still in flight as
// its connection closed: the socket delivers what it had received before the close).
const EXPECTED = /WebSocket|Failed to load resource|Failed when connecting|Connection closed|Got data while (?:in an invalid state|disconnected)/;

export function unexpectedErrors(errors: readonly string[]): string[] {
  return errors.filter((e) => !EXPECTED.test(e));
}

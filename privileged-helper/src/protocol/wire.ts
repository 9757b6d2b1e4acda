// Envelopes on the socket: newline-delimited JSON, one message per line.
//   request  {id, method, params}
//   response {id, result} | {id, error: {code, message}}
//   event    {event, seq, data, by?}   by: the identity of the call that caused it
import { z } from 'zod';
import { Actor } from './identity.js';

/** A request line longer than this is refused (and skipped) without being parsed. */
export const MAX_MESSAGE_BYTES = 4 << 20;
/** Replies may be larger (a full-size screenshot): clients read lines up to this. */
export const MAX_REPLY_BYTES = 32 << 20;

export const ErrorCode = z.enum([
  'E_PARSE', // the line is not JSON
  'E_TOO_LARGE', // the line exceeds MAX_MESSAGE_BYTES
  'E_INVALID_REQUEST', // not a {id, method, params} envelope
  'E_HANDSHAKE_REQUIRED', // a request before hello
  'E_FORBIDDEN', // the caller's role may not do this (the message says how to ask a person)
  'E_DENIED', // a person denied the request
  'E_TIMEOUT', // nobody decided the request in time
  'E_PROTOCOL_VERSION', // hello with a protocol this helper does not speak
  'E_UNKNOWN_METHOD',
  'E_INVALID_PARAMS', // params fail the method's schema (unknown fields included)
  'E_NOT_FOUND',
  'E_CONFLICT', // the name is taken, or the object is in the wrong state
  'E_PRECONDITION', // something the host needs is missing (image not built)
  'E_NO_SPACE', // the pool (or the scratch space) has too little room for the operation; the message gives the numbers
  'E_BUSY', // another operation holds the object
  'E_HOST', // a system tool failed
  'E_INTERNAL',
]);
export type ErrorCode = z.infer<typeof ErrorCode>;

export const RequestId = z.union([z.number().int(), z.string().max(64)]);

export const RequestEnvelope = z.strictObject({
  id: RequestId,
  method: z.string().max(128),
  params: z.record(z.string(), z.unknown()).optional(),
});

export const ErrorBody = z.strictObject({
  code: ErrorCode,
  message: z.string(),
  details: z.unknown().optional(),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

export const ResponseEnvelope = z.union([
  z.strictObject({ id: RequestId.nullable(), result: z.unknown() }),
  z.strictObject({ id: RequestId.nullable(), error: ErrorBody }),
]);

export const EventEnvelope = z.strictObject({
  event: z.string(),
  seq: z.number().int(),
  data: z.unknown(),
  by: Actor.optional(),
});

/** An error that crosses the socket with a stable code. */
export class GroveError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'GroveError';
  }

  toBody(): ErrorBody {
    return this.details === undefined ? { code: this.code, message: this.message } : { code: this.code, message: this.message, details: this.details };
  }
}

// Publishes events with a sequence number that only grows, together with the
// helper's epoch (one per start): a client that reconnects sees a new epoch and
// knows it must re-read state rather than trust what it had.
import { randomBytes } from 'node:crypto';
import type { EventPayload, Topic } from '../protocol/events.js';
import type { Actor } from '../protocol/identity.js';
import { callers } from './caller.js';

export interface EventListener {
  deliver(topic: Topic, seq: number, data: unknown, by: Actor | undefined): void;
  wants(topic: Topic): boolean;
}

export class EventBus {
  readonly epoch = randomBytes(6).toString('hex');
  private seq = 0;
  private readonly listeners = new Set<EventListener>();

  get lastSeq(): number {
    return this.seq;
  }

  add(listener: EventListener): void {
    this.listeners.add(listener);
  }

  remove(listener: EventListener): void {
    this.listeners.delete(listener);
  }

  /** To every subscriber that wants the topic, stamped with the identity of the call that caused it. */
  broadcast<T extends Topic>(topic: T, data: EventPayload<T>): void {
    const seq = ++this.seq;
    const by = callers.current();
    for (const l of this.listeners) if (l.wants(topic)) l.deliver(topic, seq, data, by);
  }

  /** To one connection only (its own terminal sessions). */
  unicast<T extends Topic>(listener: EventListener, topic: T, data: EventPayload<T>): void {
    listener.deliver(topic, ++this.seq, data, undefined);
  }
}

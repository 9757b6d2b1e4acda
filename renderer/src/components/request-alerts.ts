// A request that arrives while the app is not in front is announced with a
// notification of the system (the browser's, or the desktop's in Electron:
// the same Notification API). Clicking it brings the app forward on the
// Requests view. Permission is asked at the person's first click or key in
// the app (browsers ignore an ask nobody's gesture made), once.
import { useEffect, useRef } from 'react';
import type { Approval } from '../../../main/src/api/contract.js';
import { REQUEST_VERB, actorName, destination } from '../../../main/src/api/words.js';
import { isPending } from '../store/approvals.js';
import { useApp } from './context.js';

export function useRequestNotifications(): void {
  const approvals = useApp((s) => s.server?.approvals ?? null);
  const setView = useApp((s) => s.setView);
  /** Requests already seen: those there when the app opened are not news. */
  const seen = useRef<Set<string> | null>(null);

  useEffect(() => askPermissionOnFirstGesture(), []);

  useEffect(() => {
    if (approvals === null) return;
    const fresh = approvals.filter((a) => isPending(a) && seen.current !== null && !seen.current.has(a.id));
    seen.current = new Set([...(seen.current ?? []), ...approvals.map((a) => a.id)]);
    if (fresh.length === 0 || document.hasFocus() || !notificationsAllowed()) return;
    for (const a of fresh) {
      const n = new Notification(`Grove: ${requestWords(a)}`, { body: a.reason, tag: a.id });
      n.onclick = () => {
        window.focus();
        setView('approvals');
        n.close();
      };
    }
  }, [approvals, setView]);
}

function notificationsAllowed(): boolean {
  return typeof Notification !== 'undefined' && Notification.permission === 'granted';
}

function askPermissionOnFirstGesture(): () => void {
  if (typeof Notification === 'undefined' || Notification.permission !== 'default') return () => undefined;
  const ask = () => {
    stop();
    void Notification.requestPermission();
  };
  const stop = () => {
    window.removeEventListener('pointerdown', ask);
    window.removeEventListener('keydown', ask);
  };
  window.addEventListener('pointerdown', ask);
  window.addEventListener('keydown', ask);
  return stop;
}

/** 'agent alice asks to promote: one-1', 'one-1 wants to reach example.org:443'. */
export function requestWords(a: Approval): string {
  if (a.action.kind === 'egress.connection') return `${a.workspaceName} wants to reach ${destination(a.action)}`;
  const who = a.requestedBy ? actorName(a.requestedBy) : 'an agent';
  return `${who} asks to ${REQUEST_VERB[a.action.kind]}: ${a.workspaceName}`;
}

// One branch's desktop through noVNC: interactive (keyboard, mouse,
// clipboard, scaling) or view-only (thumbnails, compare grid).
import { useEffect, useRef, useState, type ReactNode } from 'react';
import type RFB from '@novnc/novnc';
import { vncUrl } from '../api/client.js';

export interface DesktopProps {
  branchId: string;
  viewOnly?: boolean;
  scale?: boolean;
  /** Lower quality and more compression, for thumbnails. */
  light?: boolean;
  /** Called with text the desktop put on its clipboard. */
  onClipboard?: (text: string) => void;
  rfbRef?: (rfb: RFB | null) => void;
  className?: string;
  /** Drawn over the screen (an agent's pointer), in the same box. */
  children?: ReactNode;
}

export function Desktop({ branchId, viewOnly = false, scale = true, light = false, onClipboard, rfbRef, className, children }: DesktopProps) {
  const el = useRef<HTMLDivElement>(null);
  const rfb = useRef<RFB | null>(null);
  const [status, setStatus] = useState<'connecting' | 'connected' | 'disconnected'>('connecting');
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    let cancelled = false;
    let gone = false; // noVNC logs an error when a disconnected RFB is disconnected again
    let retry: ReturnType<typeof setTimeout> | undefined;
    void import('@novnc/novnc').then(({ default: RFBClass }) => {
      if (cancelled || !el.current) return;
      const r = new RFBClass(el.current, vncUrl(branchId), { shared: true });
      r.viewOnly = viewOnly;
      r.scaleViewport = scale;
      r.background = 'transparent';
      if (light) {
        r.qualityLevel = 2;
        r.compressionLevel = 9;
      }
      r.addEventListener('connect', () => setStatus('connected'));
      r.addEventListener('disconnect', () => {
        gone = true;
        setStatus('disconnected');
        if (!cancelled) retry = setTimeout(() => setAttempt((a) => a + 1), 2000);
      });
      r.addEventListener('clipboard', (e) => onClipboard?.((e as CustomEvent<{ text: string }>).detail.text));
      rfb.current = r;
      rfbRef?.(r);
    });
    return () => {
      cancelled = true;
      clearTimeout(retry);
      if (!gone) rfb.current?.disconnect();
      rfb.current = null;
      rfbRef?.(null);
    };
  }, [branchId, attempt, viewOnly, light]);

  useEffect(() => {
    if (rfb.current) rfb.current.scaleViewport = scale;
  }, [scale]);

  return (
    <div className={`desktop ${className ?? ''}`} data-status={status} data-branch={branchId}>
      <div className="desktop-screen" ref={el} data-testid={`desktop-${branchId}`} />
      {children}
      {status !== 'connected' && (
        <div className="desktop-overlay">{status === 'connecting' ? 'Connecting to the desktop…' : 'Desktop not reachable; retrying…'}</div>
      )}
    </div>
  );
}

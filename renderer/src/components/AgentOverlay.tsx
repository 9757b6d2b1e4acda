// An agent at work, drawn over a branch's desktop: its pointer where its last
// action left it (scaled and placed like noVNC's canvas, or like the screen
// in a stream's frame, which Selkies's client fits to it), and a small feed of
// its last actions. Both are drawn through (pointer-events: none), so the
// person's own mouse and keyboard reach the desktop as before.
import { useEffect, useRef, useState, type RefObject } from 'react';
import { ACTIVE_MS, lastPointer, recentActions } from '../store/agents.js';
import { fittedBox, pointerPosition, relativeBox, type Box } from '../desktop/pointer.js';
import { useApp } from './context.js';
import { age, useNow } from './now.js';

const FEED_LINES = 5;

/** Goes inside a <Desktop> or a <StreamFrame>, next to its screen. */
export function AgentPointer({ branchId }: { branchId: string }) {
  const pointed = lastPointer(useApp((s) => s.server?.agents[branchId]));
  const now = useNow(5000);
  const layer = useRef<HTMLDivElement>(null);
  const drawn = useDrawnBox(layer);
  const area = pointed && drawn ? (drawn.fitted ? fittedBox(pointed.screen, drawn.box) : drawn.box) : null;
  const at = pointed && area ? pointerPosition(pointed.cursor, pointed.screen, area) : null;
  return (
    <div className="agent-layer" ref={layer}>
      {pointed && at && (
        <div
          className={`agent-pointer ${now - Date.parse(pointed.at) > ACTIVE_MS ? 'idle' : ''}`}
          style={{ left: at.left, top: at.top }}
          data-testid="agent-pointer"
          role="img"
          aria-label={`${pointed.by.user}'s pointer at ${pointed.cursor.x}, ${pointed.cursor.y}`}
        >
          <svg width="16" height="22" viewBox="0 0 16 22" aria-hidden="true">
            <path d="M1 1 L1 17 L5 13.5 L8 20.5 L11 19 L8 12.5 L13.5 12.5 Z" />
          </svg>
          <span className="agent-pointer-name">{pointed.by.user}</span>
        </div>
      )}
    </div>
  );
}

/** Where the screen is drawn: noVNC's canvas itself, or a stream's frame, which the screen is fitted into. */
interface Drawn {
  box: Box;
  fitted: boolean;
}

/**
 * The canvas noVNC draws into, or a stream's frame, in the layer's
 * coordinates. Measured again when noVNC adds, resizes or rescales its canvas
 * (its style), when its screen scrolls (scaling off), and when the layer
 * itself changes size.
 */
function useDrawnBox(layer: RefObject<HTMLDivElement | null>): Drawn | null {
  const [drawn, setDrawn] = useState<Drawn | null>(null);
  useEffect(() => {
    const el = layer.current;
    const screen = el?.parentElement?.querySelector('.desktop-screen');
    if (!el || !screen) return;
    const measure = () => {
      const fitted = screen instanceof HTMLIFrameElement;
      const surface = fitted ? screen : screen.querySelector('canvas');
      const next = surface ? { box: relativeBox(surface.getBoundingClientRect(), el.getBoundingClientRect()), fitted } : null;
      setDrawn((prev) => (prev && next && prev.fitted === next.fitted && sameBox(prev.box, next.box) ? prev : next));
    };
    measure();
    const mutations = new MutationObserver(measure);
    mutations.observe(screen, { subtree: true, childList: true, attributes: true, attributeFilter: ['style', 'width', 'height'] });
    const resizes = new ResizeObserver(measure);
    resizes.observe(el);
    screen.addEventListener('scroll', measure, true); // noVNC's own scrolling element, inside the screen
    return () => {
      mutations.disconnect();
      resizes.disconnect();
      screen.removeEventListener('scroll', measure, true);
    };
  }, [layer]);
  return drawn;
}

function sameBox(a: Box, b: Box): boolean {
  return a.left === b.left && a.top === b.top && a.width === b.width && a.height === b.height;
}

/** The last few things agents did on this branch, newest first. */
export function AgentFeed({ branchId }: { branchId: string }) {
  const lines = recentActions(
    useApp((s) => s.server?.agents[branchId]),
    FEED_LINES,
  );
  const now = useNow(5000);
  if (lines.length === 0) return null;
  return (
    <ol className="agent-feed" aria-label="What agents did on this desktop lately" data-testid="agent-feed">
      {lines.map((a) => (
        <li key={`${a.at} ${a.action} ${a.summary}`} className={a.ok ? '' : 'failed'}>
          <b>{a.by.user}</b> {a.summary} <span className="agent-feed-age">{age(a.at, now)} ago</span>
        </li>
      ))}
    </ol>
  );
}

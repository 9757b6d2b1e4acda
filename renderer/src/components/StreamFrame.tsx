// One branch's desktop through its Selkies stream (docs/stream.md), which the
// app's own server serves at /stream/ID/ over HTTPS (AppState.desktopView):
// keyboard, mouse, clipboard and scaling are Selkies's client's own. Same
// origin as the app, so its cookie reaches the stream and frame-ancestors
// 'self' lets it in. After a rollback Selkies's client reconnects by itself.
import type { ReactNode } from 'react';

export function streamPath(branchId: string): string {
  return `/stream/${encodeURIComponent(branchId)}/`;
}

export function StreamFrame({ branchId, children }: { branchId: string; children?: ReactNode }) {
  return (
    <div className="desktop full" data-branch={branchId}>
      <iframe
        key={branchId}
        className="desktop-screen desktop-stream"
        src={streamPath(branchId)}
        title="the branch's desktop"
        allow="clipboard-read; clipboard-write; autoplay; fullscreen"
        data-testid={`stream-${branchId}`}
      />
      {children}
    </div>
  );
}

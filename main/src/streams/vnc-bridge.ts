// Bridges one WebSocket (a noVNC client) to a branch's desktop socket (a Unix
// socket the helper serves to root and the grove group), byte for byte: RFB
// runs end to end, the bridge never parses it.
//
// With back-pressure both ways: a branch's server may send faster than the
// browser takes (a hostile one without end), and the bridge holds at most
// HIGH_WATER of it before it stops reading the desktop socket until the
// browser caught up; a browser that sends faster than the desktop reads is
// held the same way.
import net from 'node:net';
import type { WebSocket } from 'ws';

/** Bytes queued for the browser before the desktop socket is paused. */
export const HIGH_WATER = 4 << 20;

export function bridgeToVnc(ws: WebSocket, vncSocket: string): void {
  const upstream = net.connect(vncSocket);
  upstream.on('data', (chunk) => {
    if (ws.readyState !== ws.OPEN) return;
    ws.send(chunk, () => {
      if (upstream.isPaused() && ws.bufferedAmount < HIGH_WATER / 2) upstream.resume();
    });
    if (ws.bufferedAmount > HIGH_WATER) upstream.pause();
  });
  ws.on('message', (data: Buffer) => {
    if (!upstream.write(data)) ws.pause();
  });
  upstream.on('drain', () => ws.resume());
  const close = () => {
    upstream.destroy();
    if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close();
  };
  upstream.on('error', close);
  upstream.on('close', close);
  ws.on('close', close);
  ws.on('error', close);
}

// Bridges one WebSocket (a noVNC client) to a branch's desktop socket (a Unix
// socket the helper serves to root and the grove group), byte for byte: RFB
// runs end to end, the bridge never parses it.
import net from 'node:net';
import type { WebSocket } from 'ws';

export function bridgeToVnc(ws: WebSocket, vncSocket: string): void {
  const upstream = net.connect(vncSocket);
  upstream.on('data', (chunk) => {
    if (ws.readyState === ws.OPEN) ws.send(chunk);
  });
  ws.on('message', (data: Buffer) => upstream.write(data));
  // Back-pressure is left to the socket: noVNC reads as fast as it draws.
  const close = () => {
    upstream.destroy();
    if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close();
  };
  upstream.on('error', close);
  upstream.on('close', close);
  ws.on('close', close);
  ws.on('error', close);
}

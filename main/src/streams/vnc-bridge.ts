// Bridges one WebSocket (a noVNC client) to a workspace's VNC port on
// 127.0.0.1, byte for byte: RFB runs end to end, the bridge never parses it.
import net from 'node:net';
import type { WebSocket } from 'ws';

export function bridgeToVnc(ws: WebSocket, port: number): void {
  const tcp = net.connect({ host: '127.0.0.1', port });
  tcp.setNoDelay(true);
  tcp.on('data', (chunk) => {
    if (ws.readyState === ws.OPEN) ws.send(chunk);
  });
  ws.on('message', (data: Buffer) => tcp.write(data));
  // Back-pressure is left to TCP: noVNC reads as fast as it draws.
  const close = () => {
    tcp.destroy();
    if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close();
  };
  tcp.on('error', close);
  tcp.on('close', close);
  ws.on('close', close);
  ws.on('error', close);
}

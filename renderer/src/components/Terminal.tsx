// A terminal into a branch: @xterm/xterm on a PTY session the controller
// opens through the helper; it follows the panel's size. In a fork's child
// (or a rolled-back branch) it is the branch's copy of the terminal its
// source had open, scrollback first; once its shell ended (a rollback ends
// it), it can be opened again.
import { useEffect, useRef, useState } from 'react';
import { Terminal as XTerm } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import '@xterm/xterm/css/xterm.css';
import { humanError } from '../api/client.js';
import { useApi, useApp } from './context.js';

export function Terminal({ branchId }: { branchId: string }) {
  const api = useApi();
  const dark = useApp((s) => s.theme === 'dark');
  const el = useRef<HTMLDivElement>(null);
  const [status, setStatus] = useState('opening a shell…');
  const [ended, setEnded] = useState(false);
  /** Bumped to open the terminal again once its shell ended (a rollback ends it too). */
  const [opening, setOpening] = useState(0);

  useEffect(() => {
    if (!el.current) return;
    const term = new XTerm({
      fontFamily: 'DejaVu Sans Mono, Menlo, monospace',
      fontSize: 13,
      cursorBlink: true,
      theme: dark
        ? { background: '#15181c', foreground: '#e6e6e6' }
        : { background: '#fbfbfa', foreground: '#1d1f21', cursor: '#1d1f21', selectionBackground: '#c8d7f0' },
    });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(el.current);
    fit.fit();
    let session: string | null = null;
    let closed = false;
    /** Output that came before the open's answer (an attached terminal's scrollback may): written once the session is known. */
    const early: { session: string; data: string }[] = [];
    const offs: (() => void)[] = [
      api.on('terminal.output', (o) => {
        if (session === null) early.push(o);
        else if (o.session === session) term.write(o.data);
      }),
      api.on('terminal.exit', (x) => {
        if (x.session !== session) return;
        setStatus(`the shell ended (exit ${x.exitCode})`);
        setEnded(true);
        session = null;
      }),
    ];
    setEnded(false);
    void api
      .request('terminal.open', { workspace: branchId, cols: term.cols, rows: term.rows })
      .then((r) => {
        // Opened after the panel went away: closed at once, and nothing is left to show a failure in.
        if (closed) return void api.request('terminal.close', { session: r.session }).catch(() => undefined);
        session = r.session;
        for (const o of early.splice(0)) if (o.session === session) term.write(o.data);
        setStatus(r.attached ? `this branch's copy of terminal ${r.attached}, as it was at the fork or version` : '');
        term.focus();
      })
      .catch((err: unknown) => setStatus(humanError(err)));
    const input = term.onData((data) => {
      // Input a session cannot take: its end (its exit, or the lost connection's) is shown when it comes.
      if (session) void api.request('terminal.write', { session, data }).catch(() => undefined);
    });
    const ro = new ResizeObserver(() => {
      fit.fit();
      if (session) void api.request('terminal.resize', { session, cols: term.cols, rows: term.rows }).catch(() => undefined); // the next size replaces it
    });
    ro.observe(el.current);
    return () => {
      closed = true;
      ro.disconnect();
      input.dispose();
      offs.forEach((f) => f());
      if (session) void api.request('terminal.close', { session }).catch(() => undefined); // the panel, where it would show, is going
      term.dispose();
    };
  }, [api, branchId, dark, opening]);

  return (
    <div className="terminal-panel">
      {status && (
        <div className="terminal-status">
          {status}
          {ended && (
            <button type="button" onClick={() => setOpening((n) => n + 1)}>
              Open again
            </button>
          )}
        </div>
      )}
      <div className="terminal" ref={el} data-testid="terminal" />
    </div>
  );
}

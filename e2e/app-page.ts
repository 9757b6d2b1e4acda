// What every app spec starts with: a browser page for the app that records
// every error the renderer throws or logs, and a test client of the helper;
// and what a spec's teardown does with the branches it made.
import type { Browser, Page } from '@playwright/test';
import { HelperClient } from '../main/src/helper-client/client.js';
import type { Workspace } from '../privileged-helper/src/protocol/entities.js';

export interface AppSession {
  page: Page;
  helper: HelperClient;
  /** Page errors and console errors, in order (check them with unexpectedErrors). */
  errors: string[];
}

export async function openApp(browser: Browser, clientName: string): Promise<AppSession> {
  const errors: string[] = [];
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  const helper = await HelperClient.connect({ socketPath: process.env.GROVE_E2E_SOCKET!, name: clientName, kind: 'test' });
  return { page, helper, errors };
}

/** Deletes the branches, each main line after its other branches; a teardown goes on past one already gone. */
export async function deleteBranches(helper: HelperClient, branches: Workspace[]): Promise<void> {
  for (const w of [...branches.filter((x) => !x.main), ...branches.filter((x) => x.main)])
    await helper.request('workspace.delete', { workspace: w.id }).catch(() => undefined);
}

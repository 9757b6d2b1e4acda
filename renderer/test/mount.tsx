// Renders a component of the app in happy-dom with a store (linked, with
// this state) and a fake API, the way main.tsx does in the browser.
import { act, type ReactNode } from 'react';
import { createRoot } from 'react-dom/client';
import type { AppState } from '../../main/src/api/contract.js';
import type { Api, ApiClient } from '../src/api/client.js';
import { StoreContext } from '../src/components/context.js';
import { createAppStore, type AppStore } from '../src/store/app.js';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

export interface Mounted {
  host: HTMLDivElement;
  store: AppStore;
  /** Replaces the controller's state, as a state event does. */
  apply(state: AppState): void;
  unmount(): void;
}

export function mount(ui: ReactNode, state: AppState, api: Api): Mounted {
  const host = document.createElement('div');
  document.body.append(host);
  const store = createAppStore(api);
  store.getState().setThumbnails(false);
  const root = createRoot(host);
  act(() => {
    store.getState().applyState(state);
    store.getState().setLink('open');
    root.render(<StoreContext.Provider value={{ store, api: api as ApiClient }}>{ui}</StoreContext.Provider>);
  });
  return {
    host,
    store,
    apply: (s) => act(() => store.getState().applyState(s)),
    unmount: () => {
      act(() => root.unmount());
      host.remove();
    },
  };
}

/** Types into a controlled input or text area as a person does (React listens for input events). */
export function typeInto(input: HTMLInputElement | HTMLTextAreaElement, text: string): void {
  const proto = input instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
  act(() => {
    Object.getOwnPropertyDescriptor(proto, 'value')!.set!.call(input, text);
    input.dispatchEvent(new Event('input', { bubbles: true }));
  });
}

/** Picks an option of a controlled select as a person does. */
export function choose(select: HTMLSelectElement, value: string): void {
  act(() => {
    Object.getOwnPropertyDescriptor(HTMLSelectElement.prototype, 'value')!.set!.call(select, value);
    select.dispatchEvent(new Event('change', { bubbles: true }));
  });
}

/** The button with exactly this text inside `el`. */
export function button(el: Element, text: string): HTMLButtonElement {
  const found = [...el.querySelectorAll('button')].filter((b) => b.textContent?.trim() === text);
  if (found.length !== 1) throw new Error(`${found.length} buttons named '${text}'`);
  return found[0]!;
}

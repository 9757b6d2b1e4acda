import { createContext, useContext } from 'react';
import { useStore } from 'zustand';
import type { ApiClient } from '../api/client.js';
import type { AppStore, UiState } from '../store/app.js';

export const StoreContext = createContext<{ store: AppStore; api: ApiClient } | null>(null);

export function useApp<T>(selector: (s: UiState) => T): T {
  const ctx = useContext(StoreContext);
  if (!ctx) throw new Error('no store');
  return useStore(ctx.store, selector);
}

export function useApi(): ApiClient {
  const ctx = useContext(StoreContext);
  if (!ctx) throw new Error('no store');
  return ctx.api;
}

export function useAppStore(): AppStore {
  const ctx = useContext(StoreContext);
  if (!ctx) throw new Error('no store');
  return ctx.store;
}

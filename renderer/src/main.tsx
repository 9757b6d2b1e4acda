import { createRoot } from 'react-dom/client';
import { ApiClient } from './api/client.js';
import { App } from './components/App.js';
import { StoreContext } from './components/context.js';
import { createAppStore, parseSelectionHash, selectionHash, type Theme } from './store/app.js';
import './styles.css';

const api = new ApiClient();
const saved = localStorage.getItem('grove.theme');
const theme: Theme = saved === 'dark' || saved === 'light' ? saved : matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
const store = createAppStore(api, theme);
api.onLink((link) => store.getState().setLink(link));
api.on('state', (s) => store.getState().applyState(s));
api.on('image.output', (e) => store.getState().addImageOutput(e));
// The selection lives in the address: a reload (or Electron's restored window) comes back to it.
store.getState().restoreSelection(parseSelectionHash(location.hash));
store.subscribe((s, prev) => {
  if (s.theme !== prev.theme) localStorage.setItem('grove.theme', s.theme);
  if (s.server && (s.focus !== prev.focus || s.selection !== prev.selection)) {
    const hash = selectionHash(s);
    if (hash !== location.hash) history.replaceState(null, '', hash || location.pathname + location.search);
  }
});
api.connect();

createRoot(document.getElementById('root')!).render(
  <StoreContext.Provider value={{ store, api }}>
    <App />
  </StoreContext.Provider>,
);

import { createRoot } from 'react-dom/client';
import { ApiClient } from './api/client.js';
import { App } from './components/App.js';
import { StoreContext } from './components/context.js';
import { createAppStore, type Theme } from './store/app.js';
import './styles.css';

const api = new ApiClient();
const saved = localStorage.getItem('grove.theme');
const theme: Theme = saved === 'dark' || saved === 'light' ? saved : matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
const store = createAppStore(api, theme);
api.onLink((link) => store.getState().setLink(link));
api.on('state', (s) => store.getState().applyState(s));
api.on('image.output', (e) => store.getState().addImageOutput(e));
store.subscribe((s, prev) => {
  if (s.theme !== prev.theme) localStorage.setItem('grove.theme', s.theme);
});
api.connect();

createRoot(document.getElementById('root')!).render(
  <StoreContext.Provider value={{ store, api }}>
    <App />
  </StoreContext.Provider>,
);

/** The web app's entry: the styles and the React root (the app, or at /app/device the command line's login page). */
import './styles.css';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.js';
import { DeviceLogin } from './pages/DeviceLogin.js';

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    {/* The command line's login page stands apart from the app: it signs in with the session cookie, not an API key. */}
    {window.location.pathname === '/app/device' ? <DeviceLogin /> : <App />}
  </StrictMode>,
);

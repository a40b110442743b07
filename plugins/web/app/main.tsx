/**
 * The web client's entry point: sign-in, the layout (header navigation on a
 * desktop, a tab bar at phone width) and the route table. The player and
 * hls.js are loaded only when something is played, and the administration
 * dashboard only for administrators, so the first screen stays small.
 */
import './styles.css';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { getToken, onSignedOut, signOut } from './api.js';
import { href, matchRoute, navigate, usePath } from './router.js';
import { clearMe, loadMe, useMe } from './session.js';
import { ErrorNote, Spinner, Toasts } from './ui.js';
import type { Me } from './types.js';
import { AccountView } from './views/account.js';
import { ChannelsView } from './views/channels.js';
import { GuideView } from './views/guide.js';
import { HomeView } from './views/home.js';
import { ItemView } from './views/item.js';
import { LibraryView } from './views/library.js';
import { LoginView } from './views/login.js';
import { PlayerView } from './views/player.js';
import { RecordingsView } from './views/recordings.js';
import { RulesView } from './views/rules.js';
import { HeaderSearch } from './views/search.js';
import { VodPlayerView } from './views/vod-player.js';

const NAV = [
  { path: '/', label: 'Home', icon: '⌂' },
  { path: '/live', label: 'Live TV', icon: '▶' },
  { path: '/guide', label: 'Guide', icon: '☰' },
  { path: '/recordings', label: 'Recordings', icon: '●' },
  { path: '/account', label: 'Account', icon: '◉' },
];

/** The styles of a chunk loaded later, named by the build in a <meta> of index.html; resolves once they apply. */
function loadChunkCss(name: string): Promise<void> {
  const href = document.querySelector<HTMLMetaElement>(`meta[name="antenna-css-${name}"]`)?.content;
  if (!href || document.querySelector(`link[href="${href}"]`)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const link = Object.assign(document.createElement('link'), { rel: 'stylesheet', href });
    link.onload = () => resolve();
    link.onerror = () => { link.remove(); reject(new Error('The administration styles could not be loaded.')); };
    document.head.append(link);
  });
}

/** The dashboard's own chunk (script and styles), fetched the first time an administrator opens it. */
let adminModule: Promise<typeof import('./views/admin/index.js')> | undefined;

function AdminRoute({ screen }: { screen?: string }) {
  const [mod, setMod] = useState<typeof import('./views/admin/index.js')>();
  const [error, setError] = useState<Error>();
  useEffect(() => {
    (adminModule ??= Promise.all([import('./views/admin/index.js'), loadChunkCss('admin')]).then(([m]) => m))
      .then(setMod, (err: Error) => { adminModule = undefined; setError(err); });
  }, []);
  if (error) return <ErrorNote error={error} />;
  if (!mod) return <Spinner label="Loading administration" />;
  return <mod.default screen={screen} />;
}

function route(path: string, me: Me | undefined) {
  let p: Record<string, string> | null = null;
  // Not an administrator: there is no such page (and its code never loads).
  if (me?.admin && (path === '/admin' || (p = matchRoute('/admin/:screen', path)))) return <AdminRoute screen={p?.screen} />;
  if (path === '/' || path === '') return <HomeView />;
  if (matchRoute('/live', path)) return <ChannelsView />;
  if (matchRoute('/guide', path)) return <GuideView />;
  if (matchRoute('/recordings', path)) return <RecordingsView />;
  if (matchRoute('/recordings/rules', path)) return <RulesView />;
  if (matchRoute('/account', path)) return <AccountView />;
  if ((p = matchRoute('/library/:id', path))) return <LibraryView id={p.id} />;
  if ((p = matchRoute('/item/:id', path))) return <ItemView id={p.id} />;
  if ((p = matchRoute('/watch/vod/:id', path))) return <VodPlayerView id={p.id} />;
  if ((p = matchRoute('/watch/:kind/:id', path)) && ['live', 'recording'].includes(p.kind)) {
    return <PlayerView kind={p.kind as 'live' | 'recording'} id={p.id} />;
  }
  return <ErrorNote error={new Error('This page does not exist.')} />;
}

function Shell({ path }: { path: string }) {
  const me = useMe();
  const section = '/' + (path.split(/[/?]/)[1] ?? '');
  const playing = path.startsWith('/watch/');
  const nav = me?.admin ? [...NAV, { path: '/admin', label: 'Admin', icon: '⚙' }] : NAV;
  return (
    <div class={`shell${playing ? ' playing' : ''}`}>
      <a class="skip-link" href="#main" onClick={(e) => { e.preventDefault(); document.getElementById('main')?.focus(); }}>Skip to content</a>
      <header class="topbar">
        <a class="brand" href={href('/')} aria-label="Antenna home">Antenna</a>
        <nav class="nav" aria-label="Main">
          {nav.map((item) => (
            <a key={item.path} href={href(item.path)} class={section === item.path ? 'active' : undefined}
              aria-current={section === item.path ? 'page' : undefined}>
              <span class="nav-icon" aria-hidden="true">{item.icon}</span><span class="nav-label">{item.label}</span>
            </a>
          ))}
        </nav>
        <HeaderSearch />
        <div class="user">
          {me && <span class="username">{me.username}</span>}
          <button type="button" class="button ghost small" onClick={() => { void signOut(); }}>Sign out</button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>{route(path, me)}</main>
    </div>
  );
}

function App() {
  const path = usePath();
  const [signedIn, setSignedIn] = useState(() => Boolean(getToken()));
  const [notice, setNotice] = useState<string | undefined>();
  const [loadError, setLoadError] = useState<Error | undefined>();
  const me = useMe();

  useEffect(() => onSignedOut((reason) => {
    clearMe();
    setNotice(reason);
    setSignedIn(false);
  }), []);

  useEffect(() => {
    if (!signedIn) return;
    setLoadError(undefined);
    loadMe().catch((err: Error) => setLoadError(err));
  }, [signedIn]);

  useEffect(() => { document.body.dataset.ready = 'true'; }, []);

  let content;
  if (!signedIn) {
    content = <LoginView notice={notice} onSignedIn={() => { setNotice(undefined); setSignedIn(true); if (path === '/login') navigate('/', { replace: true }); }} />;
  } else if (loadError) {
    content = <div class="center-page"><ErrorNote error={loadError} onRetry={() => { setLoadError(undefined); loadMe().catch(setLoadError); }} /></div>;
  } else if (!me) {
    content = <div class="center-page"><Spinner /></div>;
  } else {
    content = <Shell path={path} />;
  }
  return <>{content}<Toasts /></>;
}

render(<App />, document.getElementById('app')!);

/**
 * Routes live in the URL fragment (#/guide, #/item/abc), so the server serves
 * one page at / and no app path can collide with an API path. Back, forward,
 * bookmarks and reloads all work.
 */
import { useEffect, useState } from 'preact/hooks';

export function currentPath(): string {
  const hash = location.hash.replace(/^#/, '');
  return hash.startsWith('/') ? hash : '/';
}

export function navigate(path: string, { replace = false } = {}): void {
  if (replace) history.replaceState(null, '', `#${path}`);
  else location.hash = path;
  if (replace) window.dispatchEvent(new HashChangeEvent('hashchange'));
}

/** The current path, re-rendering on every change. */
export function usePath(): string {
  const [path, setPath] = useState(currentPath);
  useEffect(() => {
    const update = () => setPath(currentPath());
    window.addEventListener('hashchange', update);
    return () => window.removeEventListener('hashchange', update);
  }, []);
  return path;
}

/** Matches `/item/:id` style patterns; the params are URI-decoded. Query strings (`?t=60`) are ignored. */
export function matchRoute(pattern: string, path: string): Record<string, string> | null {
  const parts = pattern.split('/');
  const actual = path.split('?')[0].split('/');
  if (parts.length !== actual.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    if (parts[i].startsWith(':')) {
      if (!actual[i]) return null;
      try { params[parts[i].slice(1)] = decodeURIComponent(actual[i]); } catch { return null; }
    } else if (parts[i] !== actual[i]) return null;
  }
  return params;
}

/** The query part of the current route (`#/watch/vod/x?t=60`). */
export function routeQuery(path: string): URLSearchParams {
  const at = path.indexOf('?');
  return new URLSearchParams(at < 0 ? '' : path.slice(at + 1));
}

export function href(path: string): string {
  return `#${path}`;
}

/**
 * The one way the app talks to the server: the public client API, with the
 * signed-in user's bearer token. Errors arrive as ApiError carrying the
 * server's `{"error"}` message, which the views show as is.
 */

const TOKEN_KEY = 'antenna.token';
const DEVICE_KEY = 'antenna.device';

export class ApiError extends Error {
  constructor(readonly status: number, message: string, readonly retryAfter?: number) {
    super(message);
    this.name = 'ApiError';
  }
}

/** A stable id for this browser, sent as Device-Id: signing in again replaces this device's session only. */
export function deviceId(): string {
  let id = localStorage.getItem(DEVICE_KEY);
  if (!id) {
    id = `web-${crypto.randomUUID()}`;
    localStorage.setItem(DEVICE_KEY, id);
  }
  return id;
}

export function getToken(): string | null {
  return localStorage.getItem(TOKEN_KEY);
}

type SignedOutListener = (reason: string | undefined) => void;
const signedOutListeners = new Set<SignedOutListener>();

/** Called when the server no longer accepts the token (revoked, password changed elsewhere, inactive). */
export function onSignedOut(listener: SignedOutListener): () => void {
  signedOutListeners.add(listener);
  return () => signedOutListeners.delete(listener);
}

export function forgetToken(reason?: string): void {
  localStorage.removeItem(TOKEN_KEY);
  for (const listener of signedOutListeners) listener(reason);
}

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as multipart/form-data instead of JSON. */
  form?: FormData;
  signal?: AbortSignal;
  /** Let the request outlive the page (a last progress report when leaving). */
  keepalive?: boolean;
}

/** Headers every request carries: the token and the device id. */
export function authHeaders(): Record<string, string> {
  const token = getToken();
  return { 'Device-Id': deviceId(), ...(token ? { Authorization: `Bearer ${token}` } : {}) };
}

async function errorOf(response: Response): Promise<ApiError> {
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body && typeof body.error === 'string') message = body.error;
  } catch { /* not JSON: keep the status line */ }
  const retry = Number(response.headers.get('retry-after'));
  return new ApiError(response.status, message, Number.isFinite(retry) && retry > 0 ? retry : undefined);
}

/** A raw authenticated request; throws ApiError unless the answer is 2xx. */
export async function request(path: string, options: RequestOptions = {}): Promise<Response> {
  const headers: Record<string, string> = authHeaders();
  let body: BodyInit | undefined;
  if (options.form) body = options.form;
  else if (options.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  let response: Response;
  try {
    response = await fetch(path, { method: options.method ?? 'GET', headers, body, signal: options.signal, keepalive: options.keepalive });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'The server cannot be reached. Check your connection and try again.');
  }
  if (response.ok) return response;
  const error = await errorOf(response);
  // A token the server no longer takes: back to the sign-in page, saying why.
  if (getToken() && (response.status === 401 || (response.status === 403 && error.message === 'User Account Inactive'))) {
    forgetToken(response.status === 401 ? 'Your session has ended. Please sign in again.' : 'This account is inactive. Ask an administrator to activate it.');
  }
  throw error;
}

/** An authenticated JSON request. */
export async function api<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const response = await request(path, options);
  return (response.status === 204 ? undefined : await response.json()) as T;
}

/** Signs in and keeps the token; errors are the server's (401 wrong password, 403 inactive, 429 too many tries). */
export async function signIn(username: string, password: string): Promise<void> {
  const response = await fetch('/login', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'Device-Id': deviceId() },
    body: JSON.stringify({ username, password }),
  }).catch(() => { throw new ApiError(0, 'The server cannot be reached. Check your connection and try again.'); });
  if (!response.ok) throw await errorOf(response);
  const { auth } = await response.json() as { auth: { token: string } };
  localStorage.setItem(TOKEN_KEY, auth.token);
}

/** Revokes this session on the server (best effort) and forgets the token. */
export async function signOut(): Promise<void> {
  try { await request('/logout', { method: 'POST' }); } catch { /* already gone */ }
  forgetToken();
}

/** A blob: URL for an authenticated resource that an element must load itself (<img>, <track>). */
export async function blobUrl(path: string, signal?: AbortSignal): Promise<string> {
  const response = await request(path, { signal });
  return URL.createObjectURL(await response.blob());
}

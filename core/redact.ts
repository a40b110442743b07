/**
 * The one set of rules that keeps credentials out of logs, error messages and
 * stored ffmpeg stderr: `user:pass@` in URLs, secret query values, Xtream-style
 * path credentials (`/live/<user>/<password>/<id>.ts`, `/<user>/<password>/<id>`),
 * auth headers, access keys in `/hdhr/<key>/` and `/iptv/<key>/` paths, and any
 * value the caller knows to be secret.
 */
export const REDACTED = '***';

const SECRET_QUERY_KEYS = 'api_key|apikey|api-key|key|token|access_token|auth|password|passwd|pass|pwd|secret|sig|signature|username|user';
const QUERY_SECRET_RE = new RegExp(`([?&;](?:${SECRET_QUERY_KEYS})=)([^&;\\s"'#<>]+)`, 'gi');
const URL_USERINFO_RE = /(\b[a-z][a-z0-9+.-]*:\/\/)([^/?#@\s"']+)@/gi;
const AUTH_HEADER_RE = /((?:authorization|proxy-authorization|x-api-key|cookie)\s*:\s*)([^\r\n"']+)/gi;
/** A path segment of a URL: up to the next `/`, query, fragment, space or quote. */
const SEG = `[^/?#\\s"'<>]+`;
/** Xtream Codes' stream paths: `/live|movie|series|timeshift/<user>/<password>/…`. */
const XTREAM_PATH_RE = new RegExp(`(\\b[a-z][a-z0-9+.-]*://${SEG}/(?:live|movie|series|timeshift)/)(${SEG})/(${SEG})(?=/)`, 'gi');
/** Xtream's short live form, `http://host:port/<user>/<password>/<id>` (the id a number, maybe with an extension). */
const XTREAM_SHORT_RE = new RegExp(`(\\bhttps?://${SEG}/)(${SEG})/(${SEG})(?=/\\d+(?:\\.[a-z0-9]{1,5})?(?:$|[?#\\s"'<>]))`, 'gi');

/** An access key in the paths of the clients that cannot sign in: `/hdhr/<key>/…`, `/iptv/<key>/…`. */
const ACCESS_KEY_PATH_RE = /(\/(?:hdhr|iptv)\/)([A-Za-z0-9_-]{16,})(?=[/?#\s"'<>]|$)/g;

/** The secrets in a text (a URL, an argument): query values, userinfo and its password, Xtream path credentials, auth header values. */
export function secretsIn(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(QUERY_SECRET_RE)) if (m[2]) found.push(m[2]);
  for (const m of text.matchAll(URL_USERINFO_RE)) {
    found.push(m[2]!);
    const [user, password] = m[2]!.split(':');
    if (user) found.push(user);
    if (password) found.push(password);
  }
  for (const re of [XTREAM_PATH_RE, XTREAM_SHORT_RE]) for (const m of text.matchAll(re)) found.push(m[2]!, m[3]!);
  for (const m of text.matchAll(AUTH_HEADER_RE)) if (m[2]) found.push(m[2].trim());
  return [...new Set(found)];
}

/** Values in args that must never be logged. */
export function secretsInArgs(args: readonly string[]): string[] {
  return args.flatMap(secretsIn);
}

/** Text with the patterns above replaced by `***`. */
export function redact(text: string): string {
  return text
    .replace(URL_USERINFO_RE, `$1${REDACTED}@`)
    .replace(XTREAM_PATH_RE, `$1${REDACTED}/${REDACTED}`)
    .replace(XTREAM_SHORT_RE, `$1${REDACTED}/${REDACTED}`)
    .replace(QUERY_SECRET_RE, `$1${REDACTED}`)
    .replace(AUTH_HEADER_RE, `$1${REDACTED}`)
    .replace(ACCESS_KEY_PATH_RE, `$1${REDACTED}`);
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * A function replacing every given secret, and the patterns above, by `***`.
 * Each secret is also matched URL-encoded and URL-decoded, as ffmpeg may print
 * either, wherever it stands alone: not inside a longer word or number (a
 * username `tv` leaves `tvg-id` alone, but not `/tv/` or `user=tv`).
 */
export function makeRedactor(secrets: readonly string[]): (text: string) => string {
  const set = new Set<string>();
  for (const s of secrets) {
    if (!s || s === REDACTED) continue;
    set.add(s);
    try { set.add(decodeURIComponent(s)); } catch { /* not encoded */ }
    set.add(encodeURIComponent(s));
  }
  const list = [...set].filter((s) => s.length > 0).sort((a, b) => b.length - a.length);
  if (!list.length) return redact;
  const known = new RegExp(`(?<![A-Za-z0-9])(?:${list.map(escapeRe).join('|')})(?![A-Za-z0-9])`, 'g');
  return (text: string) => redact(text.replace(known, REDACTED));
}

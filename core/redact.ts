/**
 * The one set of rules that keeps credentials out of logs, error messages and
 * stored ffmpeg stderr: `user:pass@` in URLs, secret query values, auth
 * headers, and any value the caller knows to be secret.
 */
export const REDACTED = '***';

const SECRET_QUERY_KEYS = 'api_key|apikey|api-key|key|token|access_token|auth|password|passwd|pass|pwd|secret|sig|signature|username|user';
const QUERY_SECRET_RE = new RegExp(`([?&;](?:${SECRET_QUERY_KEYS})=)([^&;\\s"'#<>]+)`, 'gi');
const URL_USERINFO_RE = /(\b[a-z][a-z0-9+.-]*:\/\/)([^/?#@\s"']+)@/gi;
const AUTH_HEADER_RE = /((?:authorization|proxy-authorization|x-api-key|cookie)\s*:\s*)([^\r\n"']+)/gi;

/** Values in args that must never be logged: secret query values, URLs' userinfo and its password, auth header values. */
export function secretsInArgs(args: readonly string[]): string[] {
  const found: string[] = [];
  for (const arg of args) {
    for (const m of arg.matchAll(QUERY_SECRET_RE)) if (m[2]) found.push(m[2]);
    for (const m of arg.matchAll(URL_USERINFO_RE)) {
      found.push(m[2]);
      const password = m[2].split(':')[1];
      if (password) found.push(password);
    }
    for (const m of arg.matchAll(AUTH_HEADER_RE)) if (m[2]) found.push(m[2].trim());
  }
  return found;
}

/** Text with the patterns above replaced by `***`. */
export function redact(text: string): string {
  return text
    .replace(URL_USERINFO_RE, `$1${REDACTED}@`)
    .replace(QUERY_SECRET_RE, `$1${REDACTED}`)
    .replace(AUTH_HEADER_RE, `$1${REDACTED}`);
}

/**
 * A function replacing every given secret, and the patterns above, by `***`.
 * Each secret is also matched URL-encoded and URL-decoded, as ffmpeg may print either.
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
  return (text: string) => {
    let out = text;
    for (const s of list) if (out.includes(s)) out = out.split(s).join(REDACTED);
    return redact(out);
  };
}

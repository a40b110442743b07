/**
 * Access keys: the URLs Plex, Jellyfin, Emby, Channels DVR (an HDHomeRun tuner)
 * and Kodi, TiviMate, VLC (an M3U playlist with an XMLTV guide) take, one key
 * per client or household; create, copy, revoke.
 */
import { useState } from 'preact/hooks';
import { api } from '../../api.js';
import { ErrorNote, Spinner } from '../../ui.js';
import { act, ConfirmButton, relativeTime, useFocusWhen, usePolled, useSubmit } from './shared.js';

interface AccessKey { id: number; name: string; key: string | null; created_at: string; revoked_at: string | null }

/** What to paste into which client, for one key. */
function urlsOf(key: string): { label: string; clients: string; url: string }[] {
  const base = location.origin;
  return [
    { label: 'HDHomeRun tuner', clients: 'Plex, Jellyfin, Emby, Channels DVR', url: `${base}/hdhr/${key}/` },
    { label: 'M3U playlist', clients: 'Kodi (IPTV Simple), TiviMate, VLC, Jellyfin, Emby', url: `${base}/iptv/${key}/channels.m3u` },
    { label: 'M3U playlist, HLS streams', clients: 'TiviMate, VLC (pause and seek back)', url: `${base}/iptv/${key}/channels.m3u?format=hls` },
    { label: 'XMLTV guide', clients: 'with the playlist', url: `${base}/iptv/${key}/guide.xml.gz` },
  ];
}

export function AccessKeysScreen() {
  const keys = usePolled((signal) => api<{ access_keys: AccessKey[] }>('/api/admin/access-keys', { signal }), () => false, 0, 30_000);
  if (keys.error && !keys.data) return <ErrorNote error={keys.error} onRetry={keys.reload} />;
  if (!keys.data) return <Spinner label="Loading access keys" />;
  const active = keys.data.access_keys.filter((k) => k.key);
  return (
    <>
      <p class="muted">Clients that cannot sign in read Antenna through a key in their URLs. Give each client its own key: revoking one stops it at once (its streams close) and leaves the others working. The <code>hdhomerun</code> and <code>iptv-output</code> plugins serve these URLs.</p>
      <NewKey onCreated={keys.reload} />
      {!active.length && <p>No access keys yet.</p>}
      <ul class="admin-list" aria-label="Access keys">
        {active.map((k) => <KeyCard key={k.id} accessKey={k} onChanged={keys.reload} />)}
      </ul>
    </>
  );
}

function NewKey({ onCreated }: { onCreated(): void }) {
  const [name, setName] = useState('');
  const { error, busy, run } = useSubmit();
  const first = useFocusWhen<HTMLInputElement>(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    if (await run(() => api('/api/admin/access-keys', { method: 'POST', body: { name: name.trim() } }), () => `Created access key ${name.trim()}`)) {
      setName('');
      onCreated();
    }
  };
  return (
    <form class="admin-form admin-inline" onSubmit={submit} aria-label="New access key">
      <label>Name<input ref={first} required maxLength={64} pattern="[^\s/\\]*\D[^\s/\\]*" title="No spaces or slashes, not only digits" placeholder="living-room-plex" value={name} onInput={(e) => setName(e.currentTarget.value)} /></label>
      <button type="submit" class="button primary" disabled={busy}>Create key</button>
      {error && <p class="error-note" role="alert">{error}</p>}
    </form>
  );
}

function CopyButton({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied(true);
      setTimeout(() => setCopied(false), 2000);
    } catch {
      window.prompt('Copy this URL', text);
    }
  };
  return <button type="button" class="button small" onClick={() => void copy()}>{copied ? 'Copied' : 'Copy'}<span class="visually-hidden"> {label}</span></button>;
}

function KeyCard({ accessKey, onChanged }: { accessKey: AccessKey; onChanged(): void }) {
  const titleId = `access-key-${accessKey.id}`;
  return (
    <li class="admin-card" aria-labelledby={titleId}>
      <div class="admin-card-head">
        <h3 id={titleId}>{accessKey.name}</h3>
        <span class="muted">created {relativeTime(accessKey.created_at)}</span>
      </div>
      <dl class="admin-urls">
        {urlsOf(accessKey.key!).map((u) => (
          <div key={u.label}>
            <dt>{u.label} <span class="muted">({u.clients})</span></dt>
            <dd><code>{u.url}</code> <CopyButton text={u.url} label={`${u.label} URL of ${accessKey.name}`} /></dd>
          </div>
        ))}
      </dl>
      <div class="row">
        <ConfirmButton label="Revoke" question={`Revoke ${accessKey.name}? Clients using it stop at once.`} yes="Yes, revoke"
          onConfirm={() => void act(() => api(`/api/admin/access-keys/${accessKey.id}`, { method: 'DELETE' }), `Revoked ${accessKey.name}`).then(onChanged)}>
          Revoke<span class="visually-hidden"> {accessKey.name}</span>
        </ConfirmButton>
      </div>
    </li>
  );
}

/**
 * Live TV sources: playlists (m3u-tuner) and guides (xmltv-guide) with their
 * channel counts, last import and the import running now; add, change,
 * remove, refresh now. Tuners and guides other plugins add are listed too,
 * read-only.
 */
import { useState } from 'preact/hooks';
import { ApiError, api } from '../../api.js';
import { ErrorNote, Spinner } from '../../ui.js';
import { act, changeMessage, ConfirmButton, count, DURATION, formatInterval, ProgressBar, ReadOnlyNote, relativeTime, useFocusWhen, usePolled, useSubmit } from './shared.js';
import type { ConfigChange, Editable, GuideSource, Playlist, SourceStatus } from './types.js';

type Status = { tuners: SourceStatus[]; guides: SourceStatus[] };
interface Configured {
  /** undefined: the plugin is not enabled. */
  playlists?: Editable & { playlists: Playlist[] };
  guides?: Editable & { guides: GuideSource[] };
}

const optional = <T,>(p: Promise<T>) => p.catch((err) => { if (err instanceof ApiError && err.status === 404) return undefined; throw err; });

/** What the config file lists: read when the screen opens and after each change (the status is what is polled). */
async function loadConfigured(signal: AbortSignal): Promise<Configured> {
  const [playlists, guides] = await Promise.all([
    optional(api<NonNullable<Configured['playlists']>>('/api/admin/sources/playlists', { signal })),
    optional(api<NonNullable<Configured['guides']>>('/api/admin/sources/guides', { signal })),
  ]);
  return { playlists, guides };
}

const running = (s: Status) => [...s.tuners, ...s.guides].some((x) => x.job?.state === 'running');

export function SourcesScreen() {
  const polled = usePolled((signal) => api<Status>('/api/admin/sources', { signal }), running);
  const lists = usePolled(loadConfigured, () => false, 0, 3_600_000);
  const page = { error: polled.error ?? lists.error, reload: () => { polled.reload(); lists.reload(); } };
  if (page.error && !(polled.data && lists.data)) return <ErrorNote error={page.error} onRetry={page.reload} />;
  if (!polled.data || !lists.data) return <Spinner label="Loading sources" />;
  const status = polled.data;
  const { playlists, guides } = lists.data;
  const configured = new Map<string, Playlist | GuideSource>([...(playlists?.playlists ?? []), ...(guides?.guides ?? [])].map((s) => [s.id, s]));
  const others = (list: SourceStatus[]) => list.filter((s) => !configured.has(s.id));
  const byId = new Map([...status.tuners, ...status.guides].map((s) => [s.id, s]));
  return (
    <>
      <ReadOnlyNote state={playlists ?? guides} />
      {page.error !== undefined && <ErrorNote error={page.error} onRetry={page.reload} />}
      <section class="section" aria-labelledby="playlists-title">
        <h3 id="playlists-title">Playlists</h3>
        {!playlists && <p class="muted">M3U playlists are not enabled: list <code>m3u-tuner</code> under <code>plugins</code> in the config file.</p>}
        {playlists?.editable && <PlaylistForm onDone={page.reload} />}
        <ul class="admin-list" aria-label="Playlists">
          {playlists?.playlists.map((p) => <SourceCard key={p.id} status={byId.get(p.id)} name={p.name} editable={playlists.editable} onChanged={page.reload}
            details={[p.url, `${p.maxStreams} stream${p.maxStreams === 1 ? '' : 's'} at once`, `refresh ${p.refresh}`, p.userAgent && `user agent ${p.userAgent}`]}
            edit={(close) => <PlaylistForm initial={p} onDone={() => { close(); page.reload(); }} />}
            remove={() => api<{ result: ConfigChange }>(`/api/admin/sources/playlists/${encodeURIComponent(p.id)}`, { method: 'DELETE' })} />)}
          {others(status.tuners).map((t) => <SourceCard key={t.id} status={t} name={t.name} editable={false} onChanged={page.reload} details={['added by a plugin']} />)}
        </ul>
      </section>
      <section class="section" aria-labelledby="guides-title">
        <h3 id="guides-title">Guides</h3>
        {!guides && <p class="muted">XMLTV guides are not enabled: list <code>xmltv-guide</code> under <code>plugins</code> in the config file.</p>}
        {guides?.editable && <GuideForm onDone={page.reload} />}
        <ul class="admin-list" aria-label="Guides">
          {guides?.guides.map((g) => <SourceCard key={g.id} status={byId.get(g.id)} name={g.name ?? byId.get(g.id)?.name ?? g.url} editable={guides.editable} onChanged={page.reload}
            details={[g.url, `refresh ${g.refresh}`, g.preferredLanguage && `language ${g.preferredLanguage}`]}
            edit={(close) => <GuideForm initial={g} onDone={() => { close(); page.reload(); }} />}
            remove={() => api<{ result: ConfigChange }>(`/api/admin/sources/guides/${encodeURIComponent(g.id)}`, { method: 'DELETE' })} />)}
          {others(status.guides).map((g) => <SourceCard key={g.id} status={g} name={g.name} editable={false} onChanged={page.reload} details={['added by a plugin']} />)}
        </ul>
      </section>
    </>
  );
}

function lastImport(s: SourceStatus): string {
  const last = s.last_import!;
  if (!last.ok) return `Import failed ${relativeTime(last.at)}: ${last.error}. The previous ${s.kind === 'tuner' ? 'channels' : 'guide'} stayed.`;
  const n = (key: string, noun: string) => count(Number(last[key]), noun);
  if (s.kind === 'tuner') return `Imported ${relativeTime(last.at)}: ${n('channels', 'channel')} (${last.added} new, ${last.removed} gone, ${n('duplicates', 'duplicate')} skipped).`;
  return `Imported ${relativeTime(last.at)}: ${n('programmes', 'programme')} on ${n('channels', 'channel')}, ${last.skipped} skipped, ${n('warnings', 'warning')}.`;
}

function SourceCard({ status, name, details, editable, onChanged, edit, remove }: {
  status?: SourceStatus; name: string; details: (string | undefined)[]; editable: boolean; onChanged(): void;
  edit?: (close: () => void) => preact.JSX.Element; remove?: () => Promise<{ result: ConfigChange }>;
}) {
  const [editing, setEditing] = useState(false);
  const id = `source-${(status?.id ?? name).replace(/[^\w-]/g, '_')}`;
  const busy = status?.job?.state === 'running';
  return (
    <li class="admin-card" aria-labelledby={id}>
      <div class="admin-card-head">
        <h3 id={id}>{name}</h3>
        {status?.kind === 'tuner' && <span class="admin-badges"><span class="admin-badge">{count(status.channels, 'channel')}</span></span>}
      </div>
      <p class="muted admin-details">{details.filter(Boolean).join(' · ')}</p>
      {status && <p class="muted">Refreshed {formatInterval(status.refresh_ms)}{status.next_refresh ? `, next ${relativeTime(status.next_refresh)}` : ''}.</p>}
      {busy && <ProgressBar job={status!.job!} label={`Importing ${name}`} />}
      {!busy && status?.last_import && <p class={status.last_import.ok ? 'muted' : 'admin-error'} role="status">{lastImport(status)}</p>}
      {!busy && status && !status.last_import && <p class="muted">Not imported since the server started.</p>}
      <div class="row">
        {status && <button type="button" class="button small" disabled={busy}
          onClick={() => void act(() => api(`/api/admin/sources/${encodeURIComponent(status.id)}/refresh`, { method: 'POST' }), `Importing ${name}`).then(onChanged)}>
          Refresh now<span class="visually-hidden"> {name}</span>
        </button>}
        {editable && edit && <button type="button" class="button small" aria-expanded={editing} onClick={() => setEditing(!editing)}>{editing ? 'Close' : 'Edit'}<span class="visually-hidden"> {name}</span></button>}
        {editable && remove && <ConfirmButton label="Remove" question={`Remove ${name}?`} yes="Yes, remove"
          onConfirm={() => void act(remove, (r) => changeMessage(r.result, `Removal of ${name}`)).then(onChanged)}>Remove<span class="visually-hidden"> {name}</span></ConfirmButton>}
      </div>
      {editing && edit?.(() => setEditing(false))}
    </li>
  );
}

function PlaylistForm({ initial, onDone }: { initial?: Playlist; onDone(): void }) {
  const blank = { name: '', url: '', maxStreams: 1, refresh: '12h', userAgent: '' };
  const [open, setOpen] = useState(!!initial);
  const [form, setForm] = useState(initial ? { ...blank, ...initial, userAgent: initial.userAgent ?? '' } : blank);
  const { error, busy, run } = useSubmit();
  const first = useFocusWhen<HTMLInputElement>(open);
  if (!open) return <p><button type="button" class="button primary" onClick={() => setOpen(true)}>Add playlist</button></p>;
  const submit = async (e: Event) => {
    e.preventDefault();
    const body = { name: form.name.trim(), url: form.url.trim(), maxStreams: form.maxStreams, refresh: form.refresh.trim(), ...(form.userAgent.trim() ? { userAgent: form.userAgent.trim() } : {}) };
    const url = initial ? `/api/admin/sources/playlists/${encodeURIComponent(initial.id)}` : '/api/admin/sources/playlists';
    if (await run(() => api<{ result: ConfigChange }>(url, { method: initial ? 'PUT' : 'POST', body }), (r) => changeMessage(r.result, `Playlist ${body.name}`))) {
      if (!initial) { setForm(blank); setOpen(false); }
      onDone();
    }
  };
  const set = (key: keyof typeof blank) => (e: { currentTarget: HTMLInputElement }) => setForm({ ...form, [key]: key === 'maxStreams' ? Number(e.currentTarget.value) : e.currentTarget.value });
  return (
    <form class="admin-card admin-form" onSubmit={submit} aria-label={initial ? `Edit ${initial.name}` : 'New playlist'}>
      {!initial && <h3>New playlist</h3>}
      <label>Name<input ref={first} required maxLength={100} value={form.name} onInput={set('name')} /></label>
      <label>URL or path<input required value={form.url} onInput={set('url')} placeholder="https://provider.example/tv.m3u or /media/tv.m3u" /></label>
      {initial && <p class="muted admin-hint">Credentials in the URL are hidden; leave it as it is to keep them.</p>}
      <div class="admin-inline">
        <label>Streams at once<input type="number" min={1} max={1000} required value={form.maxStreams} onInput={set('maxStreams')} /></label>
        <label>Refresh every<input required pattern={DURATION} value={form.refresh} onInput={set('refresh')} aria-describedby="refresh-hint" /></label>
      </div>
      <p id="refresh-hint" class="muted admin-hint">A duration such as 30m, 12h or 1d.</p>
      <label>User agent (optional)<input value={form.userAgent} onInput={set('userAgent')} /></label>
      {error && <p class="error-note" role="alert">{error}</p>}
      <div class="row">
        <button type="submit" class="button primary" disabled={busy}>{initial ? 'Save' : 'Add playlist'}</button>
        {!initial && <button type="button" class="button" onClick={() => setOpen(false)}>Cancel</button>}
      </div>
    </form>
  );
}

function GuideForm({ initial, onDone }: { initial?: GuideSource; onDone(): void }) {
  const blank = { name: '', url: '', refresh: '6h', preferredLanguage: '' };
  const [open, setOpen] = useState(!!initial);
  const [form, setForm] = useState(initial ? { ...blank, ...initial, name: initial.name ?? '', preferredLanguage: initial.preferredLanguage ?? '' } : blank);
  const { error, busy, run } = useSubmit();
  const first = useFocusWhen<HTMLInputElement>(open);
  if (!open) return <p><button type="button" class="button primary" onClick={() => setOpen(true)}>Add guide</button></p>;
  const submit = async (e: Event) => {
    e.preventDefault();
    const body = {
      url: form.url.trim(), refresh: form.refresh.trim(),
      ...(form.name.trim() ? { name: form.name.trim() } : {}), ...(form.preferredLanguage.trim() ? { preferredLanguage: form.preferredLanguage.trim() } : {}),
    };
    const url = initial ? `/api/admin/sources/guides/${encodeURIComponent(initial.id)}` : '/api/admin/sources/guides';
    if (await run(() => api<{ result: ConfigChange }>(url, { method: initial ? 'PUT' : 'POST', body }), (r) => changeMessage(r.result, 'Guide'))) {
      if (!initial) { setForm(blank); setOpen(false); }
      onDone();
    }
  };
  const set = (key: keyof typeof blank) => (e: { currentTarget: HTMLInputElement }) => setForm({ ...form, [key]: e.currentTarget.value });
  return (
    <form class="admin-card admin-form" onSubmit={submit} aria-label={initial ? `Edit guide ${initial.name ?? ''}` : 'New guide'}>
      {!initial && <h3>New guide</h3>}
      <label>URL or path<input ref={first} required value={form.url} onInput={set('url')} placeholder="https://provider.example/guide.xml.gz" /></label>
      <label>Name (optional)<input maxLength={100} value={form.name} onInput={set('name')} /></label>
      <div class="admin-inline">
        <label>Refresh every<input required pattern={DURATION} value={form.refresh} onInput={set('refresh')} /></label>
        <label>Language (optional)<input maxLength={35} placeholder="en" value={form.preferredLanguage} onInput={set('preferredLanguage')} /></label>
      </div>
      {error && <p class="error-note" role="alert">{error}</p>}
      <div class="row">
        <button type="submit" class="button primary" disabled={busy}>{initial ? 'Save' : 'Add guide'}</button>
        {!initial && <button type="button" class="button" onClick={() => setOpen(false)}>Cancel</button>}
      </div>
    </form>
  );
}

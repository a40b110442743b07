/** Libraries: their folders, items and scans (progress live); add, rename, change folders, remove, scan now. */
import { useState } from 'preact/hooks';
import { api } from '../../api.js';
import { ErrorNote, Spinner } from '../../ui.js';
import { act, changeMessage, ConfirmButton, count, ProgressBar, ReadOnlyNote, relativeTime, useFocusWhen, usePolled, useSubmit } from './shared.js';
import type { AdminLibrary, ConfigChange, Editable } from './types.js';

type Page = Editable & { libraries: AdminLibrary[] };
type Changed = { result: ConfigChange; library?: AdminLibrary };

const SOURCE_NOTE: Record<AdminLibrary['source'], string> = {
  config: '', demo: 'The demo\'s library (not in the config file).', plugin: 'Provided by a plugin (the DVR\'s recordings).',
};

export function LibrariesScreen() {
  const page = usePolled((signal) => api<Page>('/api/admin/libraries', { signal }), (d) => d.libraries.some((l) => l.scan?.state === 'running'));
  /** An action's answer carries the library as it is now (its scan started): shown at once, before the next poll. */
  const show = (library?: AdminLibrary) => {
    if (!library || !page.data) return;
    const others = page.data.libraries.filter((l) => l.id !== library.id);
    page.setData({ ...page.data, libraries: [...others, library].sort((a, b) => a.id - b.id) });
  };
  const changed = (what: string) => (r: Changed) => {
    show(r.library);
    return changeMessage(r.result, what);
  };
  if (page.error && !page.data) return <ErrorNote error={page.error} onRetry={page.reload} />;
  if (!page.data) return <Spinner label="Loading libraries" />;
  const { editable } = page.data;
  return (
    <>
      <ReadOnlyNote state={page.data} />
      {page.error !== undefined && <ErrorNote error={page.error} onRetry={page.reload} />}
      {editable && <LibraryForm key="new" title="New library" submitLabel="Add library"
        onSubmit={(body) => api<Changed>('/api/admin/libraries', { method: 'POST', body }).then(changed(`Library ${body.name}`)).finally(page.reload)} />}
      <ul class="admin-list" aria-label="Libraries">
        {page.data.libraries.map((l) => <LibraryCard key={l.id} library={l} editable={editable} onReload={page.reload}
          onScan={(lib) => { show(lib); }} changed={changed} />)}
      </ul>
    </>
  );
}

function LibraryCard({ library: l, editable, onReload, onScan, changed }: {
  library: AdminLibrary; editable: boolean; onReload(): void; onScan(l: AdminLibrary): void;
  changed(what: string): (r: Changed) => string;
}) {
  const [editing, setEditing] = useState(false);
  const titleId = `library-${l.id}`;
  const last = l.last_scan;
  const scanning = l.scan?.state === 'running';
  return (
    <li class="admin-card" aria-labelledby={titleId}>
      <div class="admin-card-head">
        <h3 id={titleId}>{l.name}</h3>
        <span class="admin-badges"><span class="admin-badge">{l.type}</span><span class="admin-badge">{count(l.item_count, l.type === 'shows' ? 'show' : 'item')}</span></span>
      </div>
      {SOURCE_NOTE[l.source] && <p class="muted">{SOURCE_NOTE[l.source]}</p>}
      {l.paths.length > 0 && <ul class="admin-paths" aria-label={`Folders of ${l.name}`}>{l.paths.map((p) => <li key={p}><code>{p}</code></li>)}</ul>}
      {scanning && <ProgressBar job={l.scan!} label={`Scanning ${l.name}`} />}
      {!scanning && last && (
        <p class={last.ok ? 'muted' : 'admin-error'} role="status">
          {last.ok
            ? `Scanned ${relativeTime(last.at)}: ${count(last.files, 'file')} (${last.added} new, ${last.changed} changed, ${last.removed} removed, ${last.unreadable} unreadable), ${count(last.items, 'item')}.`
            : `Last scan failed ${relativeTime(last.at)}: ${last.error}`}
        </p>
      )}
      <div class="row">
        {l.type !== 'recordings' && (
          <button type="button" class="button small" disabled={scanning}
            onClick={() => void act(async () => onScan((await api<{ library: AdminLibrary }>(`/api/admin/libraries/${l.id}/scan`, { method: 'POST' })).library), `Scanning ${l.name}`).then(onReload)}>
            Scan now<span class="visually-hidden"> {l.name}</span>
          </button>
        )}
        {editable && l.source === 'config' && (
          <>
            <button type="button" class="button small" aria-expanded={editing} onClick={() => setEditing(!editing)}>{editing ? 'Close' : 'Edit'}<span class="visually-hidden"> {l.name}</span></button>
            <ConfirmButton label="Remove" question={`Remove ${l.name}? Its files stay on disk.`} yes="Yes, remove"
              onConfirm={() => void act(() => api<Changed>(`/api/admin/libraries/${l.id}`, { method: 'DELETE' }), changed(`Removal of ${l.name}`)).then(onReload)}>
              Remove<span class="visually-hidden"> {l.name}</span>
            </ConfirmButton>
          </>
        )}
      </div>
      {editing && <LibraryForm title={`Edit ${l.name}`} submitLabel="Save" initial={l}
        onSubmit={(body) => api<Changed>(`/api/admin/libraries/${l.id}`, { method: 'PATCH', body }).then(changed(`Library ${body.name}`)).then((m) => { setEditing(false); onReload(); return m; })} />}
    </li>
  );
}

type LibraryBody = { name: string; type: 'movies' | 'shows'; paths: string[] };

function LibraryForm({ title, submitLabel, initial, onSubmit }: { title: string; submitLabel: string; initial?: AdminLibrary; onSubmit(body: LibraryBody): Promise<string> }) {
  const [open, setOpen] = useState(!!initial);
  const [name, setName] = useState(initial?.name ?? '');
  const [type, setType] = useState<LibraryBody['type']>(initial?.type === 'shows' ? 'shows' : 'movies');
  const [paths, setPaths] = useState<string[]>(initial?.paths.length ? initial.paths : ['']);
  const { error, busy, run } = useSubmit();
  const first = useFocusWhen<HTMLInputElement>(open);
  const id = initial ? `lib-${initial.id}` : 'lib-new';
  if (!open) return <p><button type="button" class="button primary" onClick={() => setOpen(true)}>Add library</button></p>;
  const submit = async (e: Event) => {
    e.preventDefault();
    const ok = await run(() => onSubmit({ name: name.trim(), type, paths: paths.map((p) => p.trim()).filter(Boolean) }), (message) => message);
    if (ok && !initial) { setOpen(false); setName(''); setPaths(['']); }
  };
  return (
    <form class="admin-card admin-form" onSubmit={submit} aria-label={title}>
      <h3>{title}</h3>
      <label>Name<input ref={first} required value={name} onInput={(e) => setName(e.currentTarget.value)} /></label>
      <label>Type
        <select value={type} onChange={(e) => setType(e.currentTarget.value as LibraryBody['type'])}>
          <option value="movies">Movies</option><option value="shows">Shows</option>
        </select>
      </label>
      <fieldset class="admin-folders">
        <legend>Folders</legend>
        {paths.map((p, i) => (
          <div class="admin-inline" key={i}>
            <label class="admin-grow">
              <span class="visually-hidden">Folder {i + 1}</span>
              <input id={`${id}-folder-${i}`} required={i === 0} placeholder="/media/movies" value={p}
                onInput={(e) => { const next = [...paths]; next[i] = e.currentTarget.value; setPaths(next); }} />
            </label>
            {paths.length > 1 && <button type="button" class="button small" onClick={() => setPaths(paths.filter((_, j) => j !== i))}>Remove folder<span class="visually-hidden"> {i + 1}</span></button>}
          </div>
        ))}
        <div><button type="button" class="button small" onClick={() => setPaths([...paths, ''])}>Add folder</button></div>
        <p class="muted admin-hint">A path on the server, absolute or relative to the config file.</p>
      </fieldset>
      {error && <p class="error-note" role="alert">{error}</p>}
      <div class="row">
        <button type="submit" class="button primary" disabled={busy}>{submitLabel}</button>
        {!initial && <button type="button" class="button" onClick={() => setOpen(false)}>Cancel</button>}
      </div>
    </form>
  );
}

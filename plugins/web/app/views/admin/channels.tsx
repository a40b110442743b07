/**
 * Channels: every channel (hidden ones too) with its number, name, logo, categories, guide
 * match and streams. Fields are edited in place (saved when they lose focus or on Enter), the
 * guide channel is picked from a search, streams are reordered or detached, and every channel
 * is renumbered at once. Edits are kept apart from the playlists: no refresh undoes them.
 */
import { useState } from 'preact/hooks';
import { api } from '../../api.js';
import { ErrorNote, Spinner } from '../../ui.js';
import { act, usePolled } from './shared.js';
import type { AdminChannel, AdminChannelStream, GuideChannelChoice } from './types.js';

/** Rows shown at once: a provider's list may hold tens of thousands; the filter narrows it. */
const SHOWN = 200;
const METHOD_LABEL: Record<string, string> = { manual: 'manual', tvg_id: 'tvg-id', tvg_id_folded: 'tvg-id (case)', name: 'name', fuzzy: 'fuzzy' };

const fold = (s: string) => s.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();

export function ChannelsScreen() {
  const polled = usePolled((signal) => api<{ channels: AdminChannel[] }>('/api/admin/channels', { signal }), () => false, 0, 60_000);
  const [filter, setFilter] = useState('');
  const [doubtful, setDoubtful] = useState(false);
  if (polled.error && !polled.data) return <ErrorNote error={polled.error} onRetry={polled.reload} />;
  if (!polled.data) return <Spinner label="Loading channels" />;
  const wanted = fold(filter.trim());
  const matching = polled.data.channels.filter((c) => (!wanted || fold(`${c.number} ${c.name}`).includes(wanted))
    && (!doubtful || !c.guide || (c.guide.method === 'fuzzy' && c.guide.score < 0.9)));
  return (
    <>
      <Renumber onDone={polled.reload} />
      <div class="admin-filters">
        <label>Filter<input type="search" value={filter} placeholder="Name or number" onInput={(e) => setFilter(e.currentTarget.value)} /></label>
        <label class="admin-check"><input type="checkbox" checked={doubtful} onChange={(e) => setDoubtful(e.currentTarget.checked)} /> Only without a guide, or a doubtful one</label>
      </div>
      <p class="muted" role="status">{matching.length > SHOWN ? `The first ${SHOWN} of ${matching.length} channels` : `${matching.length} channels`}</p>
      <div class="admin-table-wrap">
        <table class="admin-table admin-channels">
          <thead><tr><th scope="col">Number</th><th scope="col">Logo</th><th scope="col">Name</th><th scope="col">Categories</th><th scope="col">Guide</th><th scope="col">Streams</th><th scope="col">Hidden</th></tr></thead>
          <tbody>{matching.slice(0, SHOWN).map((c) => <ChannelRow key={c.id} channel={c} onChanged={polled.reload} />)}</tbody>
        </table>
      </div>
    </>
  );
}

function Renumber({ onDone }: { onDone(): void }) {
  const [start, setStart] = useState('100');
  const [by, setBy] = useState('category');
  return (
    <form class="admin-form admin-inline" aria-label="Renumber every channel" onSubmit={(e) => {
      e.preventDefault();
      void act(() => api<{ renumbered: number }>('/api/admin/channels/renumber', { method: 'POST', body: { start: Number(start), by } }), (r) => `${r.renumbered} channels renumbered`).then(onDone);
    }}>
      <label>Renumber from<input type="number" min={0} required value={start} onInput={(e) => setStart(e.currentTarget.value)} /></label>
      <label>in the order of<select value={by} onChange={(e) => setBy(e.currentTarget.value)}>
        <option value="category">category</option><option value="name">name</option><option value="number">number (closing gaps)</option>
      </select></label>
      <button type="submit" class="button small">Renumber</button>
    </form>
  );
}

/** A text field saved when it changes and loses focus (or on Enter); empty gives back the playlist's value. */
function InlineField({ label, value, onSave, size }: { label: string; value: string; onSave(value: string): Promise<boolean>; size?: number }) {
  const [text, setText] = useState(value);
  const save = () => { if (text.trim() !== value) void onSave(text.trim()).then((ok) => { if (!ok) setText(value); }); };
  return <input aria-label={label} value={text} size={size} onInput={(e) => setText(e.currentTarget.value)} onBlur={save}
    onKeyDown={(e) => { if (e.key === 'Enter') { e.preventDefault(); save(); } if (e.key === 'Escape') setText(value); }} />;
}

function ChannelRow({ channel: c, onChanged }: { channel: AdminChannel; onChanged(): void }) {
  const [picking, setPicking] = useState(false);
  const patch = (body: Record<string, unknown>, done: string) =>
    act(() => api(`/api/admin/channels/${c.id}`, { method: 'PATCH', body }), done).then((ok) => { if (ok) onChanged(); return ok; });
  const setStreams = (ids: number[], done: string) =>
    act(() => api(`/api/admin/channels/${c.id}/streams`, { method: 'PUT', body: { streams: ids } }), done).then((ok) => { if (ok) onChanged(); return ok; });
  const ids = c.streams.map((s) => s.id);
  const move = (i: number, by: number) => { const next = [...ids]; [next[i], next[i + by]] = [next[i + by]!, next[i]!]; return next; };
  return (
    <tr class={c.hidden ? 'admin-row-hidden' : undefined}>
      <td><InlineField label={`Number of ${c.name}`} value={c.number} size={5} onSave={(v) => patch({ number: v || null }, `${c.name}: number ${v || 'from the playlist'}`)} /></td>
      <td>
        {c.logo ? <img class="admin-logo" src={c.logo} alt="" loading="lazy" /> : <span class="muted">–</span>}
        <InlineField label={`Logo URL of ${c.name}`} value={c.logo ?? ''} size={12} onSave={(v) => patch({ logo: v || null }, `${c.name}: logo saved`)} />
      </td>
      <td><InlineField label={`Name of channel ${c.number}`} value={c.name} onSave={(v) => patch({ name: v || null }, `Name saved: ${v || 'from the playlist'}`)} /></td>
      <td><InlineField label={`Categories of ${c.name}`} value={c.categories.join('; ')} onSave={(v) => patch({ categories: v ? v.split(';').map((x) => x.trim()).filter(Boolean) : null }, `${c.name}: categories saved`)} /></td>
      <td>
        {c.guide
          ? <span>{c.guide.channel_id} <span class={`admin-badge${c.guide.method === 'fuzzy' && c.guide.score < 0.9 ? ' warn' : ''}`}>{METHOD_LABEL[c.guide.method]}{c.guide.method === 'fuzzy' ? ` ${c.guide.score}` : ''}</span></span>
          : <span class="admin-badge danger">no guide</span>}
        <div class="row">
          <button type="button" class="button small" aria-expanded={picking} onClick={() => setPicking(!picking)}>{picking ? 'Close' : 'Map…'}<span class="visually-hidden"> {c.name}</span></button>
          {c.guide?.method === 'manual' && <button type="button" class="button small" onClick={() => void patch({ guide_channel_id: null }, `${c.name}: automatic guide match`)}>Automatic</button>}
        </div>
        {picking && <GuidePicker channel={c} onPick={(id) => void patch({ guide_channel_id: id }, `${c.name} mapped to ${id}`).then((ok) => ok && setPicking(false))} />}
      </td>
      <td>
        <ol class="admin-streams">
          {c.streams.map((s, i) => (
            <li key={s.id}>
              <span title={s.url ?? undefined}>#{s.id} {s.name} <span class="muted">({s.source})</span></span>
              <StreamHealth stream={s} />
              {i > 0 && <button type="button" class="button small" aria-label={`Move stream ${s.id} up`} onClick={() => void setStreams(move(i, -1), 'Stream order saved')}>↑</button>}
              {i < ids.length - 1 && <button type="button" class="button small" aria-label={`Move stream ${s.id} down`} onClick={() => void setStreams(move(i, 1), 'Stream order saved')}>↓</button>}
              {s.id !== c.id && <button type="button" class="button small" onClick={() => void setStreams(ids.filter((x) => x !== s.id), `Stream ${s.id} detached`)}>Detach</button>}
            </li>
          ))}
        </ol>
        <AttachStream onAttach={(id) => setStreams([...ids, id], `Stream ${id} attached`)} />
      </td>
      <td><input type="checkbox" aria-label={`Hide ${c.name}`} checked={c.hidden} onChange={(e) => void patch({ hidden: e.currentTarget.checked }, e.currentTarget.checked ? `${c.name} hidden` : `${c.name} shown`)} /></td>
    </tr>
  );
}

/** Whether the stream plays (and for how many), or failed lately and why. */
function StreamHealth({ stream: s }: { stream: AdminChannelStream }) {
  const failed = s.last_failure && `last failure ${new Date(s.last_failure.at).toLocaleString()}: ${s.last_failure.reason}`;
  if (s.state === 'playing') return <span class="admin-badge accent" title={failed ?? undefined}>playing · {s.viewers} watching</span>;
  if (s.state === 'cooldown') return <span class="admin-badge danger" title={failed ?? undefined}>failed: {s.last_failure?.reason}</span>;
  return failed ? <span class="admin-badge" title={failed}>standby</span> : null;
}

function AttachStream({ onAttach }: { onAttach(id: number): Promise<boolean> }) {
  const [id, setId] = useState('');
  return (
    <form class="admin-inline" onSubmit={(e) => { e.preventDefault(); void onAttach(Number(id)).then((ok) => ok && setId('')); }}>
      <input aria-label="Stream id to attach" type="number" min={1} required size={6} value={id} placeholder="stream #" onInput={(e) => setId(e.currentTarget.value)} />
      <button type="submit" class="button small">Attach</button>
    </form>
  );
}

function GuidePicker({ channel, onPick }: { channel: AdminChannel; onPick(id: string): void }) {
  const [q, setQ] = useState(channel.name);
  const [found, setFound] = useState<GuideChannelChoice[]>();
  const search = (e: Event) => {
    e.preventDefault();
    void api<{ channels: GuideChannelChoice[] }>(`/api/admin/guide-channels?q=${encodeURIComponent(q)}&limit=20`).then((r) => setFound(r.channels), () => setFound([]));
  };
  return (
    <div class="admin-picker">
      <form class="admin-inline" role="search" onSubmit={search}>
        <input type="search" aria-label={`Search guide channels for ${channel.name}`} value={q} onInput={(e) => setQ(e.currentTarget.value)} />
        <button type="submit" class="button small">Search</button>
      </form>
      {found && (found.length
        ? <ul class="admin-picker-list">{found.map((g) => (
          <li key={`${g.source}:${g.channel_id}`}><button type="button" class="button small" onClick={() => onPick(g.channel_id)}>{g.names[0] ?? g.channel_id}</button> <span class="muted">{g.channel_id}</span></li>
        ))}</ul>
        : <p class="muted">No guide channel matches.</p>)}
    </div>
  );
}

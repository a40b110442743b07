/** The recent log lines (secrets redacted by the server), newest first, filtered by level and by plugin or component. */
import { useState } from 'preact/hooks';
import { api } from '../../api.js';
import { Empty, ErrorNote, Spinner } from '../../ui.js';
import { usePolled } from './shared.js';
import type { LogEntry } from './types.js';

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

export function LogsScreen() {
  const [level, setLevel] = useState('info');
  const [source, setSource] = useState('');
  const [live, setLive] = useState(true);
  const [sources, setSources] = useState<string[]>([]);
  const query = `/api/admin/logs?level=${level}&limit=300${source ? `&source=${encodeURIComponent(source)}` : ''}`;
  return (
    <>
      <div class="admin-filters" role="group" aria-label="Filter the log">
        <label>Level
          <select value={level} onChange={(e) => setLevel(e.currentTarget.value)}>
            {LEVELS.map((l) => <option key={l} value={l}>{l} and above</option>)}
          </select>
        </label>
        <label>Plugin or component
          <select value={source} onChange={(e) => setSource(e.currentTarget.value)}>
            <option value="">All</option>
            {[...new Set([...sources, ...(source ? [source] : [])])].map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </label>
        <label class="admin-check"><input type="checkbox" checked={live} onChange={(e) => setLive(e.currentTarget.checked)} /> Follow</label>
      </div>
      {/* A new filter is a new list: nothing of the previous one stays on screen while it loads. */}
      <LogLines key={`${query}|${live}`} query={query} live={live} onSources={setSources} empty={`No lines at this level${source ? ` from ${source}` : ''}.`} />
    </>
  );
}

function LogLines({ query, live, onSources, empty }: { query: string; live: boolean; onSources(s: string[]): void; empty: string }) {
  const page = usePolled(async (signal) => {
    const data = await api<{ entries: LogEntry[]; sources: string[] }>(query, { signal });
    onSources(data.sources);
    return data;
  }, () => live, 3000, 3_600_000);
  if (page.error !== undefined) return <ErrorNote error={page.error} onRetry={page.reload} />;
  if (!page.data) return <Spinner label="Loading the log" />;
  if (!page.data.entries.length) return <Empty>{empty}</Empty>;
  return (
    <>
      {!live && <p><button type="button" class="button small" onClick={page.reload}>Refresh</button></p>}
      <ol class="admin-log" aria-label="Log lines, newest first">
        {page.data.entries.map((e, i) => (
          <li key={`${e.time}-${i}`} class={`admin-log-line level-${e.level}`}>
            <time dateTime={e.time}>{new Date(e.time).toLocaleTimeString()}</time>
            <span class="admin-log-level">{e.level}</span>
            {e.source && <span class="admin-log-source">{e.source}</span>}
            <span class="admin-log-msg">{e.msg}</span>
            {Object.keys(e.fields).length > 0 && <span class="admin-log-fields">{Object.entries(e.fields).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' ')}</span>}
          </li>
        ))}
      </ol>
    </>
  );
}

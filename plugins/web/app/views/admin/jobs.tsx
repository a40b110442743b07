/** Jobs (imports, scans, transcodes, recordings, live channels) with their progress, and the scheduled tasks with their next run. */
import { api } from '../../api.js';
import { Empty, ErrorNote, Spinner, formatDateTime } from '../../ui.js';
import { formatInterval, ProgressBar, relativeTime, usePolled } from './shared.js';
import type { JobsPage } from './types.js';

export function JobsScreen() {
  const page = usePolled((signal) => api<JobsPage>('/api/admin/jobs', { signal }), (d) => d.jobs.some((j) => j.state === 'running'), 2000, 10_000);
  if (page.error && !page.data) return <ErrorNote error={page.error} onRetry={page.reload} />;
  if (!page.data) return <Spinner label="Loading jobs" />;
  const running = page.data.jobs.filter((j) => j.state === 'running');
  const ended = page.data.jobs.filter((j) => j.state !== 'running');
  return (
    <>
      <section class="section" aria-labelledby="jobs-running">
        <h3 id="jobs-running">Running</h3>
        {!running.length && <Empty>Nothing is running.</Empty>}
        <ul class="admin-list" aria-label="Running jobs">
          {running.map((j) => (
            <li key={j.key} class="admin-card admin-row">
              <div class="admin-card-head"><strong>{j.key}</strong><span class="admin-badge">{j.kind}</span></div>
              <p class="muted">Started {relativeTime(j.startedAt)}</p>
              <ProgressBar job={j} label={j.key} />
            </li>
          ))}
        </ul>
      </section>
      <section class="section" aria-labelledby="jobs-recent">
        <h3 id="jobs-recent">Recent</h3>
        {!ended.length && <Empty>No job has ended since the server started.</Empty>}
        <ul class="admin-list" aria-label="Recent jobs">
          {ended.map((j, i) => (
            <li key={`${j.key}-${i}`} class="admin-card admin-row">
              <div class="admin-card-head"><strong>{j.key}</strong><span class={`admin-badge${j.state === 'failed' ? ' danger' : ''}`}>{j.state}</span></div>
              <p class="muted">{j.kind}, started {formatDateTime(j.startedAt)}{j.message ? ` · ${j.message}` : ''}</p>
              {j.error && <p class="admin-error">{j.error}</p>}
            </li>
          ))}
        </ul>
      </section>
      <section class="section" aria-labelledby="jobs-tasks">
        <h3 id="jobs-tasks">Scheduled tasks</h3>
        {!page.data.tasks.length && <Empty>No task is scheduled.</Empty>}
        <ul class="admin-list" aria-label="Scheduled tasks">
          {page.data.tasks.map((t) => (
            <li key={t.id} class="admin-card admin-row">
              <div class="admin-card-head"><strong>{t.id}</strong><span class="admin-badge">{t.kind}</span></div>
              <p class="muted">Next run {relativeTime(t.next_run)} ({formatDateTime(t.next_run)}){t.every_ms ? `, then ${formatInterval(t.every_ms)}` : ''}</p>
            </li>
          ))}
        </ul>
      </section>
    </>
  );
}

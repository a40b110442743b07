/**
 * Series rules: each rule with what it picks, its next airings and any conflict
 * (with what holds the tuner), and Delete. Rules are made from a programme's
 * dialog in the guide ("Record series"); the server decides who may delete one.
 */
import './recordings.css';
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { href } from '../router.js';
import type { Channel, Rule } from '../types.js';
import { Empty, ErrorNote, Spinner, describeError, formatDateTime, toast, useTitle } from '../ui.js';

const DAY_NAMES = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const AIRINGS = { all: 'every airing', new: 'new episodes only', 'new-or-unknown': 'new and unmarked episodes' };

/** "Title “Acme Mystery” · new episodes only · any channel · keep 5". */
function describe(rule: Rule, channels: Map<number, Channel>): string {
  const what = rule.title !== null ? `“${rule.title}”` : rule.series_id !== null ? `series ${rule.series_id}`
    : rule.keyword !== null ? `titles with “${rule.keyword}”` : `titles matching /${rule.regex}/`;
  const channel = rule.channel_id === null ? 'any channel' : channels.get(rule.channel_id)?.name ?? `channel ${rule.channel_id}`;
  const keep = rule.keep === null ? 'keep all' : 'latest' in rule.keep ? `keep ${rule.keep.latest}` : `keep ${rule.keep.days} days`;
  const days = rule.days.length === 7 ? '' : ` · ${rule.days.map((d) => DAY_NAMES[d]).join(', ')}`;
  return `${what} · ${AIRINGS[rule.airings]} · ${channel}${days} · ${keep}${rule.priority ? ` · priority ${rule.priority}` : ''}`;
}

export function RulesView() {
  useTitle('Series rules');
  const [rules, setRules] = useState<Rule[] | undefined>();
  const [error, setError] = useState<unknown>();
  const [channels, setChannels] = useState<Map<number, Channel>>(new Map());
  const [nonce, setNonce] = useState(0);

  useEffect(() => {
    const controller = new AbortController();
    api<{ channels: Channel[] }>('/channels', { signal: controller.signal })
      .then(({ channels: all }) => setChannels(new Map(all.map((c) => [c.id, c]))))
      .catch(() => { /* names are a nicety */ });
    api<{ rules: Rule[] }>('/api/dvr/rules', { signal: controller.signal })
      .then(({ rules: list }) => { setRules(list); setError(undefined); })
      .catch((err) => { if (!controller.signal.aborted) setError(err); });
    return () => controller.abort();
  }, [nonce]);

  const remove = async (rule: Rule) => {
    try {
      await api(`/api/dvr/rules/${rule.id}`, { method: 'DELETE' });
      toast('Series rule deleted; what it recorded stays.');
    } catch (err) {
      toast(describeError(err), 'error');
    }
    setNonce((n) => n + 1);
  };

  return (
    <section class="recordings">
      <div class="section-head">
        <h1>Series rules</h1>
        <a class="button small" href={href('/recordings')}>Recordings</a>
      </div>
      {error !== undefined && <ErrorNote error={error} onRetry={() => { setError(undefined); setNonce((n) => n + 1); }} />}
      {!rules && error === undefined && <Spinner label="Loading rules" />}
      {rules?.length === 0 && (
        <Empty>No series rules. Open a programme in the <a href={href('/guide')}>Guide</a> and choose Record series.</Empty>
      )}
      {rules && rules.length > 0 && (
        <ul class="recordings-list">
          {rules.map((rule) => (
            <li key={rule.id} class="recordings-row" aria-labelledby={`rule-${rule.id}`}>
              <div class="recordings-main">
                <h3 id={`rule-${rule.id}`} class="recordings-title">{describe(rule, channels)}</h3>
                {rule.next.length === 0 && <p class="recordings-meta">No coming airings in the guide.</p>}
                <ul class="rules-next">
                  {rule.next.map((n) => (
                    <li key={n.recording_id} class={`recordings-meta status-${n.status}`}>
                      <span>{formatDateTime(new Date(n.start))}</span>
                      <span>{channels.get(n.channel_id)?.name ?? `Channel ${n.channel_id}`}</span>
                      <span class={`recordings-status ${n.status}`}>{n.status === 'conflict' ? 'Conflict' : n.status === 'recording' ? 'Recording' : 'Scheduled'}</span>
                      {n.reason && <span class="recordings-error">{n.reason}</span>}
                    </li>
                  ))}
                </ul>
              </div>
              <div class="recordings-actions">
                <button type="button" class="button small danger" onClick={() => void remove(rule)}>
                  Delete<span class="visually-hidden"> rule {rule.id}</span>
                </button>
              </div>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

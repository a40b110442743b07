/**
 * A programme's details, opened from the guide: when it is on, what it is,
 * and Record (or cancel the recording), Watch while it is on air. A modal
 * <dialog>: Escape, the close button and a click outside close it.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.js';
import { href } from '../router.js';
import type { Recording, Rule } from '../types.js';
import { describeError, ErrorNote, formatDateTime, formatRuntime, toast } from '../ui.js';
import { ChannelLogo } from './guide-channel-logo.js';
import type { GuideProgram, GuideRow } from './guide-data.js';

interface Props {
  channel: GuideRow;
  program: GuideProgram;
  recording: Recording | undefined;
  now: number;
  onClose(): void;
  /** The recordings changed (or may have: a 409 says someone else scheduled it). */
  onRecordingsChanged(): void;
}

export function ProgramDialog({ channel, program: p, recording, now, onClose, onRecordingsChanged }: Props) {
  const ref = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();

  useEffect(() => {
    const dialog = ref.current!;
    if (!dialog.open) dialog.showModal();
    return () => { if (dialog.open) dialog.close(); };
  }, []);

  const [series, setSeries] = useState({ open: false, newOnly: true, anyChannel: true, keep: 5 });

  const onAir = p.s <= now && p.e > now;
  const over = p.e <= now;

  const record = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const rec = await api<Recording>('/recordings', { method: 'POST', body: { channel_id: channel.id, program_id: p.id } });
      toast(rec.status === 'recording' ? `Recording “${p.title}” now.` : `“${p.title}” will be recorded (${formatDateTime(p.start)}).`);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
      onRecordingsChanged();
    }
  };

  /** A series rule for this programme's title (or its dd_progid series). */
  const recordSeries = async () => {
    setBusy(true);
    setError(undefined);
    const dd = p.series_key?.startsWith('dd:') ? p.series_key.slice(3) : undefined;
    try {
      const rule = await api<Rule>('/api/dvr/rules', {
        method: 'POST',
        body: {
          ...(dd ? { series_id: dd } : { title: p.title }), channel_id: series.anyChannel ? null : channel.id,
          airings: series.newOnly ? 'new' : 'all', keep: series.keep > 0 ? { latest: series.keep } : null,
        },
      });
      const conflicts = rule.next.filter((n) => n.status === 'conflict').length;
      toast(`Recording the series “${p.title}”: ${rule.next.length} coming airing${rule.next.length === 1 ? '' : 's'} scheduled${conflicts ? `, ${conflicts} in conflict` : ''}.`);
      setSeries({ ...series, open: false });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
      onRecordingsChanged();
    }
  };

  const cancel = async () => {
    if (!recording) return;
    setBusy(true);
    setError(undefined);
    try {
      await api(`/recordings/${recording.id}`, { method: 'DELETE' });
      toast(`The recording of “${p.title}” is cancelled.`);
    } catch (err) {
      setError(err);
      toast(describeError(err), 'error');
    } finally {
      setBusy(false);
      onRecordingsChanged();
    }
  };

  return (
    <dialog ref={ref} class="program-dialog" aria-labelledby="program-dialog-title" onClose={onClose}
      onClick={(e) => { if (e.target === ref.current) ref.current?.close(); }}>
      <div class="program-dialog-body">
        <div class="program-dialog-head">
          <ChannelLogo name={channel.name} logo={channel.logo} />
          <div class="program-dialog-channel"><span class="channel-number">{channel.tvg_chno}</span> {channel.name}</div>
          <button type="button" class="icon-button" aria-label="Close" onClick={() => ref.current?.close()}>✕</button>
        </div>
        <h2 id="program-dialog-title">{p.title}</h2>
        {p.sub_title && <p class="program-dialog-sub">{p.sub_title}</p>}
        <p class="program-dialog-when">
          {formatDateTime(p.start)} – {new Date(p.stop).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })}
          <span class="muted"> · {formatRuntime((p.e - p.s) / 1000)}</span>
          {p.season != null && p.episode != null ? <span class="muted"> · S{p.season} E{p.episode}</span> : p.episode_num && <span class="muted"> · {p.episode_num}</span>}
          {p.is_new && <span class="badge">New</span>}
          {onAir && <span class="badge live">On now</span>}
          {over && <span class="badge">Ended</span>}
        </p>
        {recording && (
          <p class="program-dialog-rec" role="status">
            <span class="rec-dot" aria-hidden="true">●</span> {recording.status === 'recording' ? 'Recording now' : 'Scheduled to record'}
          </p>
        )}
        {p.categories?.length ? <div class="chips program-dialog-cats">{p.categories.map((c) => <span key={c} class="chip static">{c}</span>)}</div> : null}
        {p.description && <p class="program-dialog-desc">{p.description}</p>}
        {series.open && (
          <fieldset class="program-dialog-series">
            <legend>Record series</legend>
            <label><input type="checkbox" checked={series.newOnly} onChange={(e) => setSeries({ ...series, newOnly: e.currentTarget.checked })} /> New episodes only</label>
            <label><input type="checkbox" checked={series.anyChannel} onChange={(e) => setSeries({ ...series, anyChannel: e.currentTarget.checked })} /> Any channel</label>
            <label>Keep <input type="number" min={0} max={999} value={series.keep} style={{ width: '4em' }}
              onInput={(e) => setSeries({ ...series, keep: Math.max(0, Number(e.currentTarget.value) || 0) })} /> episodes (0: all)</label>
            <div class="row">
              <button type="button" class="button primary" disabled={busy} onClick={() => void recordSeries()}>● Record series</button>
              <a class="button ghost" href={href('/recordings/rules')}>Series rules</a>
            </div>
          </fieldset>
        )}
        {error !== undefined && <ErrorNote error={error} />}
        <div class="row program-dialog-actions">
          {onAir && <a class="button primary" href={href(`/watch/live/${channel.id}`)}>▶ Watch</a>}
          {recording
            ? <button type="button" class="button danger" disabled={busy} onClick={() => void cancel()}>Cancel recording</button>
            : !over && <button type="button" class={`button${onAir ? '' : ' primary'}`} disabled={busy} onClick={() => void record()}>● Record</button>}
          {!series.open && <button type="button" class="button" disabled={busy} onClick={() => setSeries({ ...series, open: true })}>Record series…</button>}
          <button type="button" class="button ghost" onClick={() => ref.current?.close()}>Close</button>
        </div>
      </div>
    </dialog>
  );
}

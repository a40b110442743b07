/**
 * Settings: every section of the config file with simple values (the
 * server's, and each plugin's: DVR folder and padding, transcoding…), as the
 * file has them and as they are in effect. Saving writes the file (comments
 * kept) and says which changes apply at once and which wait for a restart.
 */
import { useState } from 'preact/hooks';
import { api } from '../../api.js';
import { ErrorNote, Spinner } from '../../ui.js';
import { changeMessage, DURATION, ReadOnlyNote, usePolled, useSubmit } from './shared.js';
import type { ConfigChange, SettingsField, SettingsPage, SettingsSection } from './types.js';

/** `prePadding` → "Pre padding". */
const label = (key: string) => key.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/^./, (c) => c.toUpperCase()).replace(/ ([A-Z])(?=[a-z])/g, (_, c: string) => ` ${c.toLowerCase()}`);
const shown = (v: unknown) => (v === undefined || v === null ? '' : String(v));

export function SettingsScreen() {
  const page = usePolled((signal) => api<SettingsPage>('/api/admin/settings', { signal }), () => false, 0, 60_000);
  if (page.error && !page.data) return <ErrorNote error={page.error} onRetry={page.reload} />;
  if (!page.data) return <Spinner label="Loading settings" />;
  const { file, sections } = page.data;
  return (
    <>
      {file.editable
        ? <p class="muted">Saved to <code>{file.path}</code>; its comments and order are kept.</p>
        : <ReadOnlyNote state={file} />}
      <p class="muted">Open a section to see and change its settings.</p>
      {sections.map((s) => <SectionForm key={s.id} section={s} editable={file.editable} onSaved={(fresh) => page.setData(fresh)} />)}
    </>
  );
}

function SectionForm({ section, editable, onSaved }: { section: SettingsSection; editable: boolean; onSaved(page: SettingsPage): void }) {
  const initial = () => Object.fromEntries(section.fields.map((f) => [f.key, f.secret ? '' : shown(f.value ?? f.effective)]));
  const [values, setValues] = useState<Record<string, string | boolean>>(() => ({ ...initial(), ...Object.fromEntries(section.fields.filter((f) => f.kind === 'boolean').map((f) => [f.key, Boolean(f.value ?? f.effective)])) }));
  const [outcome, setOutcome] = useState<{ message: string; error: boolean }>();
  const { error, busy, run } = useSubmit();
  const id = `settings-${section.id.replace(/[^\w-]/g, '_')}`;

  const save = async (changes: Record<string, unknown>) => {
    if (!Object.keys(changes).length) { setOutcome({ message: 'Nothing changed.', error: false }); return; }
    setOutcome(undefined);
    await run(async () => {
      const answer = await api<SettingsPage & { result: ConfigChange }>('/api/admin/settings', { method: 'PATCH', body: { section: section.id, values: changes } });
      setOutcome({ message: changeMessage(answer.result, 'Settings'), error: Boolean(answer.result.error) });
      onSaved(answer);
    });
  };
  const submit = (e: Event) => {
    e.preventDefault();
    const changes: Record<string, unknown> = {};
    for (const f of section.fields) {
      if (f.readOnly) continue;
      const v = values[f.key];
      if (f.kind === 'boolean') { if (v !== Boolean(f.value ?? f.effective)) changes[f.key] = v; continue; }
      const text = String(v).trim();
      if (f.secret ? text === '' : text === shown(f.value ?? f.effective)) continue;
      changes[f.key] = text === '' ? null : f.kind === 'integer' || f.kind === 'number' ? Number(text) : text;
    }
    void save(changes);
  };

  const pending = section.fields.some((f) => f.restartNeeded);
  return (
    <details class="admin-card admin-section" open={pending}>
      <summary>
        <span class="admin-section-title">{section.title}</span>
        {pending && <span class="admin-badge warn">Restart needed</span>}
        {section.description && <span class="muted admin-section-about">{section.description}</span>}
      </summary>
    <form class="admin-form admin-settings" onSubmit={submit} aria-label={section.title}>
      {section.fields.map((f) => <Field key={f.key} sectionId={id} field={f} value={values[f.key]!} disabled={!editable || f.readOnly}
        onChange={(v) => setValues({ ...values, [f.key]: v })} onDefault={() => void save({ [f.key]: null })} />)}
      {error && <p class="error-note" role="alert">{error}</p>}
      {outcome && <p class={outcome.error ? 'error-note' : 'notice'} role="status">{outcome.message}</p>}
      {editable && <div><button type="submit" class="button primary" disabled={busy}>Save {section.title}</button></div>}
    </form>
    </details>
  );
}

function Field({ sectionId, field: f, value, disabled, onChange, onDefault }: {
  sectionId: string; field: SettingsField; value: string | boolean; disabled: boolean; onChange(v: string | boolean): void; onDefault(): void;
}) {
  const id = `${sectionId}-${f.key}`;
  const hints = [
    f.description && f.description.replace(/([^.])$/, '$1.').replace(/^./, (c) => c.toUpperCase()),
    f.default !== undefined && `Default: ${String(f.default)}.`,
    f.readOnly ? 'Change it in the config file.' : f.live ? 'Applies at once.' : 'Applies when Antenna restarts.',
    f.value === undefined && !f.secret && 'Not set in the file: the default applies.',
  ].filter(Boolean).join(' ');
  const common = { id, disabled, 'aria-describedby': `${id}-hint` };
  let control;
  if (f.kind === 'boolean') control = <input type="checkbox" {...common} checked={value === true} onChange={(e) => onChange(e.currentTarget.checked)} />;
  else if (f.kind === 'choice') {
    control = (
      <select {...common} value={String(value)} onChange={(e) => onChange(e.currentTarget.value)}>
        {!f.choices!.includes(String(value)) && <option value="">(default)</option>}
        {f.choices!.map((c) => <option key={c} value={c}>{c}</option>)}
      </select>
    );
  } else {
    control = <input {...common} type={f.secret ? 'password' : f.kind === 'integer' || f.kind === 'number' ? 'number' : 'text'}
      min={f.minimum} max={f.maximum} step={f.kind === 'number' ? 'any' : undefined} pattern={f.kind === 'duration' ? DURATION : undefined}
      placeholder={f.secret ? 'unchanged' : f.default !== undefined ? String(f.default) : ''} value={String(value)} onInput={(e) => onChange(e.currentTarget.value)} />;
  }
  return (
    <div class={`admin-field${f.kind === 'boolean' ? ' admin-field-check' : ''}`}>
      <label for={id}>{label(f.key)}{f.restartNeeded && <span class="admin-badge warn">Restart needed</span>}</label>
      {control}
      <span id={`${id}-hint`} class="admin-hint muted">{hints}</span>
      {f.value !== undefined && f.default !== undefined && !disabled && (
        <button type="button" class="button small ghost admin-default" onClick={onDefault}>Use default<span class="visually-hidden"> for {label(f.key)}</span></button>
      )}
    </div>
  );
}

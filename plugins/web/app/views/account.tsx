/**
 * Account: who is signed in, the avatar, changing the password, signing out,
 * and which server version this is.
 */
import './account.css';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, api, blobUrl, signOut } from '../api.js';
import { useMe } from '../session.js';
import type { Me } from '../types.js';
import { describeError, toast, useTitle } from '../ui.js';

/** The server's default limit (server.avatarMaxBytes); checked here only to answer at once, the server has the last word. */
const AVATAR_MAX_BYTES = 5 * 1024 * 1024;
const AVATAR_TYPES = 'image/png,image/jpeg,image/webp,image/gif';
const MIN_PASSWORD = 8;

export function AccountView() {
  useTitle('Account');
  const me = useMe();
  if (!me) return null;
  return (
    <div class="account">
      <h1>Account</h1>
      <Profile me={me} />
      <PasswordForm />
      <section class="account-card" aria-labelledby="account-session">
        <h2 id="account-session">Session</h2>
        <p class="muted">Signing out forgets this browser's sign-in. Your other devices stay signed in.</p>
        <button type="button" class="button" onClick={() => { void signOut(); }}>Sign out of this browser</button>
      </section>
      <Version />
    </div>
  );
}

function initials(name: string): string {
  const parts = name.split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  const letters = parts.length > 1 ? parts[0][0] + parts[1][0] : [...(parts[0] ?? name)].slice(0, 2).join('');
  return letters.toUpperCase() || '?';
}

function Profile({ me }: { me: Me }) {
  const [avatar, setAvatar] = useState<string | undefined>();
  const [loaded, setLoaded] = useState(false);
  const [uploading, setUploading] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const [version, setVersion] = useState(0);
  const input = useRef<HTMLInputElement>(null);

  // The current avatar; 404 means the user has none, which shows initials.
  useEffect(() => {
    const controller = new AbortController();
    let url: string | undefined;
    blobUrl('/api/user/me/avatar', controller.signal).then(
      (u) => { url = u; if (controller.signal.aborted) URL.revokeObjectURL(u); else { setAvatar(u); setLoaded(true); } },
      (err: unknown) => {
        if (controller.signal.aborted) return;
        setAvatar(undefined);
        setLoaded(true);
        if (!(err instanceof ApiError && err.status === 404)) setError(`The avatar could not be loaded: ${describeError(err)}`);
      },
    );
    return () => { controller.abort(); if (url) URL.revokeObjectURL(url); };
  }, [version]);

  const upload = async (file: File) => {
    setError(undefined);
    if (file.size > AVATAR_MAX_BYTES) {
      setError(`That image is ${(file.size / 1024 / 1024).toFixed(2)} MiB; an avatar can be at most 5 MiB.`);
      return;
    }
    const form = new FormData();
    form.append('avatar', file, file.name);
    setUploading(true);
    try {
      await api('/api/user/me/avatar', { method: 'POST', form });
      setVersion((v) => v + 1);
      toast('Avatar updated');
    } catch (err) {
      setError(describeError(err));
    } finally {
      setUploading(false);
      // The same file can be picked again after a fix on disk.
      if (input.current) input.current.value = '';
    }
  };

  return (
    <section class="account-card account-profile" aria-labelledby="account-profile">
      <h2 id="account-profile" class="visually-hidden">Profile</h2>
      <div class="account-profile-row">
        <div class={`account-avatar${loaded ? '' : ' loading'}`}>
          {avatar
            ? <img src={avatar} alt={`Avatar of ${me.username}`} />
            : <span class="account-avatar-initials" aria-label={`${me.username} has no avatar`} role="img">{initials(me.username)}</span>}
        </div>
        <div class="account-profile-info">
          <p class="account-profile-name">{me.username}</p>
          <p class="account-profile-roles">
            <span class={`account-role${me.admin ? ' admin' : ''}`}>{me.admin ? 'Administrator' : 'User'}</span>
            <span class="muted">{me.all_libraries_access ? 'All libraries' : 'Selected libraries'}</span>
          </p>
          <label class={`button small account-file-button${uploading ? ' busy' : ''}`}>
            {uploading ? 'Uploading…' : avatar ? 'Change avatar' : 'Upload avatar'}
            <input ref={input} type="file" accept={AVATAR_TYPES} class="visually-hidden" disabled={uploading}
              aria-describedby={error ? 'avatar-error avatar-hint' : 'avatar-hint'}
              onChange={(e) => { const f = e.currentTarget.files?.[0]; if (f) void upload(f); }} />
          </label>
          <p id="avatar-hint" class="account-hint">PNG, JPEG, WebP or GIF, at most 5 MiB.</p>
        </div>
      </div>
      {error && <p id="avatar-error" class="error-note" role="alert">{error}</p>}
    </section>
  );
}

type Field = 'current' | 'next' | 'confirm';

function PasswordForm() {
  const me = useMe();
  const [values, setValues] = useState<Record<Field, string>>({ current: '', next: '', confirm: '' });
  const [errors, setErrors] = useState<Partial<Record<Field, string>>>({});
  const [formError, setFormError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const refs = { current: useRef<HTMLInputElement>(null), next: useRef<HTMLInputElement>(null), confirm: useRef<HTMLInputElement>(null) };

  const validate = (v: Record<Field, string>): Partial<Record<Field, string>> => {
    const found: Partial<Record<Field, string>> = {};
    if (!v.current) found.current = 'Enter your current password.';
    if (v.next.length < MIN_PASSWORD) found.next = `The new password needs at least ${MIN_PASSWORD} characters.`;
    if (v.confirm !== v.next) found.confirm = 'The two new passwords do not match.';
    return found;
  };

  const submit = async (event: Event) => {
    event.preventDefault();
    if (busy) return;
    setFormError(undefined);
    const found = validate(values);
    setErrors(found);
    const first = (['current', 'next', 'confirm'] as Field[]).find((f) => found[f]);
    if (first) { refs[first].current?.focus(); return; }
    setBusy(true);
    try {
      await api('/api/user/me/password', { method: 'PUT', body: { current_password: values.current, new_password: values.next } });
      setValues({ current: '', next: '', confirm: '' });
      toast('Password changed; other devices were signed out');
    } catch (err) {
      if (err instanceof ApiError && err.status === 403) {
        setErrors({ current: describeError(err) });
        refs.current.current?.focus();
      } else {
        setFormError(describeError(err));
      }
    } finally {
      setBusy(false);
    }
  };

  const field = (name: Field, label: string, autocomplete: string, hint?: string) => (
    <div class="account-field">
      <label for={`pw-${name}`}>{label}</label>
      <input id={`pw-${name}`} ref={refs[name]} type="password" autocomplete={autocomplete} value={values[name]}
        aria-invalid={errors[name] ? 'true' : undefined}
        aria-describedby={[errors[name] && `pw-${name}-error`, hint && `pw-${name}-hint`].filter(Boolean).join(' ') || undefined}
        onInput={(e) => {
          const value = e.currentTarget.value;
          setValues((v) => ({ ...v, [name]: value }));
          if (errors[name]) setErrors((x) => ({ ...x, [name]: undefined }));
        }} />
      {hint && <span id={`pw-${name}-hint`} class="account-hint">{hint}</span>}
      {errors[name] && <span id={`pw-${name}-error`} class="account-field-error" role="alert">{errors[name]}</span>}
    </div>
  );

  return (
    <section class="account-card" aria-labelledby="account-password">
      <h2 id="account-password">Change password</h2>
      <form class="account-password-form" onSubmit={submit} noValidate>
        {/* Lets password managers tie the new password to this account. */}
        <input type="text" name="username" autocomplete="username" value={me?.username ?? ''} hidden readOnly />
        {field('current', 'Current password', 'current-password')}
        {field('next', 'New password', 'new-password', `At least ${MIN_PASSWORD} characters.`)}
        {field('confirm', 'Confirm new password', 'new-password')}
        {formError && <p class="error-note" role="alert">{formError}</p>}
        <p class="muted account-note">Changing it signs out your other devices; this one stays signed in.</p>
        <div><button type="submit" class="button primary" disabled={busy}>{busy ? 'Changing…' : 'Change password'}</button></div>
      </form>
    </section>
  );
}

function Version() {
  const [version, setVersion] = useState<string | undefined>();
  useEffect(() => {
    const controller = new AbortController();
    api<{ version: string }>('/api/version', { signal: controller.signal })
      .then((v) => setVersion(v.version), () => { /* the page is useful without it */ });
    return () => controller.abort();
  }, []);
  return <p class="account-version muted">Antenna {version ? `version ${version}` : ''}</p>;
}

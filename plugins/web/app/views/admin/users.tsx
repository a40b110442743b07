/** Users: add one, and per user: active, administrator, library grants, a new password, a lockout lifted, removal. */
import { useState } from 'preact/hooks';
import { api } from '../../api.js';
import { useMe } from '../../session.js';
import { ErrorNote, Spinner } from '../../ui.js';
import { act, ConfirmButton, useFocusWhen, usePolled, useSubmit } from './shared.js';
import type { AdminLibrary, AdminUser } from './types.js';

type Libs = Pick<AdminLibrary, 'id' | 'name'>[];

export function UsersScreen() {
  const users = usePolled((signal) => api<{ users: AdminUser[] }>('/api/admin/users', { signal }), (d) => d.users.some((u) => u.locked_for !== null), 10_000, 30_000);
  const libs = usePolled((signal) => api<{ libraries: AdminLibrary[] }>('/api/admin/libraries', { signal }), () => false, 0, 60_000);
  const libraries: Libs = libs.data?.libraries ?? [];
  if (users.error && !users.data) return <ErrorNote error={users.error} onRetry={users.reload} />;
  if (!users.data) return <Spinner label="Loading users" />;
  return (
    <>
      <NewUser libraries={libraries} onCreated={users.reload} />
      <ul class="admin-list" aria-label="Users">
        {users.data.users.map((u) => <UserCard key={u.id} user={u} libraries={libraries} onChanged={users.reload} />)}
      </ul>
    </>
  );
}

/** All libraries, or a chosen few: checkboxes under a switch. */
function Grants({ id, all, chosen, libraries, onChange }: { id: string; all: boolean; chosen: string[]; libraries: Libs; onChange(all: boolean, chosen: string[]): void }) {
  return (
    <fieldset class="admin-grants">
      <legend>Libraries</legend>
      <label class="admin-check"><input type="radio" name={`${id}-grants`} checked={all} onChange={() => onChange(true, chosen)} /> All libraries</label>
      <label class="admin-check"><input type="radio" name={`${id}-grants`} checked={!all} onChange={() => onChange(false, chosen)} /> Only these:</label>
      <div class="admin-grant-list">
        {libraries.map((l) => (
          <label key={l.id} class="admin-check">
            <input type="checkbox" disabled={all} checked={chosen.includes(String(l.id))}
              onChange={(e) => onChange(false, e.currentTarget.checked ? [...chosen, String(l.id)] : chosen.filter((c) => c !== String(l.id)))} />
            {l.name}
          </label>
        ))}
      </div>
    </fieldset>
  );
}

function NewUser({ libraries, onCreated }: { libraries: Libs; onCreated(): void }) {
  const [open, setOpen] = useState(false);
  if (!open) return <p><button type="button" class="button primary" onClick={() => setOpen(true)}>Add user</button></p>;
  return <NewUserForm libraries={libraries} onClose={(created) => { setOpen(false); if (created) onCreated(); }} />;
}

function NewUserForm({ libraries, onClose }: { libraries: Libs; onClose(created: boolean): void }) {
  const [form, setForm] = useState({ username: '', password: '', admin: false, all: true, chosen: [] as string[] });
  const { error, busy, run } = useSubmit();
  const first = useFocusWhen<HTMLInputElement>();
  const submit = async (e: Event) => {
    e.preventDefault();
    const body = { username: form.username.trim(), password: form.password, admin: form.admin, libraries: form.all ? [] : form.chosen };
    if (await run(async () => {
      if (!form.all && !form.chosen.length) throw new Error('Choose at least one library, or All libraries.');
      await api('/api/admin/users', { method: 'POST', body });
    }, () => `Created user ${body.username}`)) onClose(true);
  };
  return (
    <form class="admin-card admin-form" onSubmit={submit} aria-label="New user">
      <h3>New user</h3>
      <label>Username<input ref={first} required autocomplete="off" value={form.username} onInput={(e) => setForm({ ...form, username: e.currentTarget.value })} /></label>
      <label>Password<input required type="password" autocomplete="new-password" minLength={8} value={form.password} onInput={(e) => setForm({ ...form, password: e.currentTarget.value })} /></label>
      <label class="admin-check"><input type="checkbox" checked={form.admin} onChange={(e) => setForm({ ...form, admin: e.currentTarget.checked })} /> Administrator</label>
      {!form.admin && <Grants id="new-user" all={form.all} chosen={form.chosen} libraries={libraries} onChange={(all, chosen) => setForm({ ...form, all, chosen })} />}
      {error && <p class="error-note" role="alert">{error}</p>}
      <div class="row">
        <button type="submit" class="button primary" disabled={busy}>Create user</button>
        <button type="button" class="button" onClick={() => onClose(false)}>Cancel</button>
      </div>
    </form>
  );
}

function UserCard({ user, libraries, onChanged }: { user: AdminUser; libraries: Libs; onChanged(): void }) {
  const me = useMe();
  const self = me?.id === user.id;
  const [editing, setEditing] = useState(false);
  const [grants, setGrants] = useState({ all: user.all_libraries_access, chosen: user.libraries });
  const [password, setPassword] = useState('');
  const patch = (body: Record<string, unknown>, done: string) => act(() => api(`/api/admin/users/${user.id}`, { method: 'PATCH', body }), done).then((ok) => { if (ok) onChanged(); return ok; });
  const names = user.libraries.map((id) => libraries.find((l) => String(l.id) === id)?.name ?? `#${id}`);
  const titleId = `user-${user.id}`;
  return (
    <li class="admin-card" aria-labelledby={titleId}>
      <div class="admin-card-head">
        <h3 id={titleId}>{user.username}{self && <span class="muted"> (you)</span>}</h3>
        <span class="admin-badges">
          {user.admin && <span class="admin-badge accent">Administrator</span>}
          {!user.active && <span class="admin-badge">Inactive</span>}
          {user.locked_for !== null && <span class="admin-badge danger">Locked out ({Math.ceil(user.locked_for / 60)} min)</span>}
        </span>
      </div>
      <p class="muted">{user.admin || user.all_libraries_access ? 'All libraries' : `Libraries: ${names.join(', ') || 'none'}`}</p>
      <div class="row">
        {user.locked_for !== null && <button type="button" class="button small" onClick={() => void patchLockout(user, onChanged)}>Clear lockout</button>}
        <button type="button" class="button small" aria-expanded={editing} onClick={() => setEditing(!editing)}>
          {editing ? 'Close' : 'Edit'}<span class="visually-hidden"> {user.username}</span>
        </button>
        {!self && <ConfirmButton label="Remove" question={`Remove ${user.username} with their favorites and progress?`} yes="Yes, remove"
          onConfirm={() => void act(() => api(`/api/admin/users/${user.id}`, { method: 'DELETE' }), `Removed ${user.username}`).then(onChanged)}>
          Remove<span class="visually-hidden"> {user.username}</span>
        </ConfirmButton>}
      </div>
      {editing && (
        <div class="admin-edit">
          {!self && (
            <div class="row">
              <label class="admin-check"><input type="checkbox" checked={user.active} onChange={(e) => void patch({ active: e.currentTarget.checked }, e.currentTarget.checked ? `${user.username} is active` : `${user.username} is inactive and signed out`)} /> Active</label>
              <label class="admin-check"><input type="checkbox" checked={user.admin} onChange={(e) => void patch({ admin: e.currentTarget.checked }, e.currentTarget.checked ? `${user.username} is an administrator` : `${user.username} is no longer an administrator`)} /> Administrator</label>
            </div>
          )}
          {!user.admin && (
            <form class="admin-form" onSubmit={(e) => { e.preventDefault(); void patch({ libraries: grants.all ? null : grants.chosen }, `Libraries of ${user.username} saved`); }}>
              <Grants id={`user-${user.id}`} all={grants.all} chosen={grants.chosen} libraries={libraries} onChange={(all, chosen) => setGrants({ all, chosen })} />
              <div><button type="submit" class="button small primary" disabled={!grants.all && !grants.chosen.length}>Save libraries</button></div>
            </form>
          )}
          <form class="admin-form admin-inline" onSubmit={(e) => { e.preventDefault(); void patch({ password }, `New password set; ${user.username} was signed out everywhere`).then((ok) => ok && setPassword('')); }}>
            <label>New password<input type="password" autocomplete="new-password" minLength={8} required value={password} onInput={(e) => setPassword(e.currentTarget.value)} /></label>
            <button type="submit" class="button small">Set password</button>
          </form>
        </div>
      )}
    </li>
  );
}

function patchLockout(user: AdminUser, onChanged: () => void) {
  return act(() => api(`/api/admin/users/${user.id}/lockout`, { method: 'DELETE' }), `${user.username} may sign in again`).then(onChanged);
}

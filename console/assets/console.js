// stelae-bridge operator console. Every value shown comes from the network:
// the DOM is built with createElement and textContent only.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const meta = document.querySelector('meta[name="csrf-token"]');
  const csrf = meta ? meta.getAttribute('content') || '' : '';
  const MAX_LOG = 500;

  // ---- helpers ------------------------------------------------------------
  const str = (v) => (v === undefined || v === null ? '' : String(v));
  const arr = (v) => (Array.isArray(v) ? v : []);
  const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  const pad = (n, w = 2) => String(n).padStart(w, '0');
  const rate = (v) => num(v).toFixed(1);
  let uid = 0;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = str(text);
    return e;
  }
  function setText(e, text) {
    const t = str(text);
    if (e.textContent !== t) e.textContent = t;
  }
  function dur(s) {
    if (typeof s !== 'number' || !Number.isFinite(s) || s < 0) return '—';
    if (s < 1) return Math.round(s * 1000) + ' ms';
    if (s < 10) return s.toFixed(1) + 's';
    s = Math.floor(s);
    if (s < 60) return s + 's';
    if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
    if (s < 86400) return `${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`;
    return `${Math.floor(s / 86400)}d ${pad(Math.floor((s % 86400) / 3600))}h`;
  }
  function clock(t) {
    const d = new Date(t);
    if (Number.isNaN(d.getTime())) return str(t);
    return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
  }
  function day(t) {
    if (!t) return '—';
    const d = new Date(t);
    if (Number.isNaN(d.getTime())) return str(t);
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
  }

  // sync makes parent's children the nodes for items, in order, reusing the
  // node of each key (so focus and confirm states survive) and removing the rest.
  const registry = new WeakMap();
  function sync(parent, items, keyOf, make, update) {
    const old = registry.get(parent) || new Map();
    const next = new Map();
    for (const item of items) {
      const k = keyOf(item);
      if (next.has(k)) continue;
      const node = old.get(k) || make(item);
      update(node, item);
      const at = parent.children[next.size];
      if (at !== node) parent.insertBefore(node, at || null);
      next.set(k, node);
    }
    const keep = new Set(next.values());
    for (const child of Array.from(parent.children)) if (!keep.has(child)) child.remove();
    registry.set(parent, next);
    return next.size;
  }

  // ---- notice and actions ---------------------------------------------------
  const notice = $('notice');
  function say(msg, kind) {
    notice.classList.toggle('ok', kind === 'ok');
    notice.classList.toggle('error', kind === 'error');
    notice.textContent = msg;
  }

  // act POSTs one action and says how it went; its answer (null when it
  // failed).
  async function act(path, body) {
    let res;
    try {
      res = await fetch(path, {
        method: 'POST', credentials: 'same-origin', cache: 'no-store',
        headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf },
        body: JSON.stringify(body),
      });
    } catch (err) {
      say('The bridge could not be reached: ' + str(err && err.message), 'error');
      return;
    }
    let data = null;
    try { data = await res.json(); } catch (_) { data = null; }
    if (res.ok) {
      say(str(data && data.message) || 'Done.', 'ok');
      checkSignedIn(); // the action's effect now, not at the next state event
      return data || {};
    }
    const m = data && data.error && data.error.message;
    say(str(m) || `The bridge answered HTTP ${res.status}.`, 'error');
    return null;
  }

  // confirmButton: the first click arms the button ("Confirm <verb>?"), a
  // second within 5 s runs the action, otherwise it reverts.
  function confirmButton(btn, label, verb, run) {
    let timer = 0;
    const reset = () => {
      clearTimeout(timer);
      timer = 0;
      btn.classList.remove('confirming');
      btn.textContent = label;
    };
    btn.textContent = label;
    btn.addEventListener('click', () => {
      if (btn.disabled) return;
      if (!btn.classList.contains('confirming')) {
        btn.classList.add('confirming');
        btn.textContent = `Confirm ${verb}?`;
        say(`Press again within 5 seconds to confirm: ${btn.getAttribute('aria-label')}.`);
        timer = setTimeout(reset, 5000);
        return;
      }
      reset();
      btn.disabled = true;
      Promise.resolve(run()).finally(() => { btn.disabled = false; });
    });
    btn.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape' && timer) reset();
    });
  }

  // ---- destinations -------------------------------------------------------
  const refs = new WeakMap();
  const destBox = $('destinations');

  function makeDest(d) {
    const name = str(d.name);
    const sec = el('section', 'destination');
    sec.setAttribute('data-destination', name);
    const h = el('h3', '', name);
    h.id = 'dest-' + ++uid;
    sec.setAttribute('aria-labelledby', h.id);
    const where = el('p', 'where');
    const state = el('span', 'state');
    const dl = el('dl', 'stats');
    const f = { where, state };
    const row = (label, cls) => {
      dl.append(el('dt', '', label));
      f[cls] = el('dd', cls);
      dl.append(f[cls]);
    };
    row('PID', 'pid');
    row('Uptime', 'uptime');
    row('Restarts', 'restarts');
    row('Calls', 'calls');
    row('Rate', 'rate');
    row('Errors', 'errors');
    row('Sessions', 'session-count');
    row('Detail', 'detail');
    const btn = el('button', 'restart');
    btn.type = 'button';
    btn.setAttribute('aria-label', 'Restart the child of ' + name);
    confirmButton(btn, 'Restart', 'restart', () => act('/console/api/restart', { destination: name }));
    const stateLine = el('p', 'state-line', 'State: ');
    stateLine.append(state);
    sec.append(h, where, stateLine, dl, btn);
    refs.set(sec, f);
    return sec;
  }

  function detail(d) {
    const parts = [];
    if (d.state === 'failed') parts.push(str(d.failed_reason) || 'failed');
    if (d.state === 'starting' || num(d.starting_s) > 0) parts.push('starting… ' + dur(num(d.starting_s)));
    if (num(d.next_restart_s) > 0) parts.push('next restart in ' + dur(num(d.next_restart_s)));
    if (d.stopping) parts.push('stopping');
    if (num(d.waiting) > 0) parts.push(`${num(d.waiting)} call${d.waiting === 1 ? '' : 's'} waiting`);
    if (d.last_exit) parts.push('last exit: ' + str(d.last_exit));
    return parts.length ? parts.join('; ') : '—';
  }

  function updateDest(sec, d) {
    const f = refs.get(sec);
    const st = str(d.state) || 'unknown';
    let sandbox = '';
    if (d.sandbox) {
      sandbox = ` · sandbox: ${str(d.sandbox)}`;
      if (d.sandbox_held) sandbox += ` (held by ${str(d.sandbox_held)})`;
      if (d.sandbox_not_held) sandbox += ` · NOT HELD: ${str(d.sandbox_not_held)}`;
    }
    const speaks = d.child_speaks ? ` · child speaks: ${str(d.child_speaks)}` : '';
    setText(f.where, `${str(d.url)} · isolation: ${str(d.isolation) || '—'}${sandbox}${speaks}`);
    setText(f.state, st);
    const cls = 'state state-' + (/^[a-z][a-z-]*$/.test(st) ? st : 'unknown');
    if (f.state.className !== cls) f.state.className = cls;
    setText(f.pid, num(d.pid) > 0 ? d.pid : '—');
    setText(f.uptime, num(d.uptime_s) > 0 ? dur(num(d.uptime_s)) : '—');
    setText(f.restarts, num(d.restarts) + (num(d.recent_restarts) > 0 ? ` (${num(d.recent_restarts)} recent)` : ''));
    setText(f.calls, num(d.calls));
    setText(f.rate, rate(d.calls_per_s) + ' calls/s');
    setText(f.errors, `${num(d.errors)} (${rate(d.errors_per_s)}/s)`);
    setText(f['session-count'], arr(d.sessions).length);
    setText(f.detail, detail(d));
  }

  // ---- sessions -----------------------------------------------------------
  const sessBody = $('sessions-body');
  const CELLS = ['destination', 'session', 'client', 'era', 'principal', 'age', 'idle', 'inflight', 'streams'];

  function makeSession(s) {
    const tr = el('tr');
    tr.setAttribute('data-session', s.id);
    tr.setAttribute('data-destination', s.dest);
    const f = {};
    for (const c of CELLS) tr.append((f[c] = el('td', c)));
    const td = el('td', 'action');
    const btn = el('button', 'end-session');
    btn.type = 'button';
    btn.setAttribute('aria-label', `End session ${s.id} of ${s.dest}`);
    confirmButton(btn, 'End', 'end session', () =>
      act('/console/api/sessions/end', { destination: s.dest, session: s.id }));
    td.append(btn);
    tr.append(td);
    refs.set(tr, f);
    return tr;
  }
  function updateSession(tr, s) {
    const f = refs.get(tr);
    setText(f.destination, s.dest);
    setText(f.session, s.id);
    setText(f.client, str(s.client) || '—');
    setText(f.era, s.era);
    if (s.protocol_version) f.era.title = 'protocol ' + str(s.protocol_version);
    // A principal is a hash; the OAuth client whose token made it is
    // named beside it (its name in the clients below, else its id).
    const oc = str(s.oauth_client);
    setText(f.principal, oc ? `${str(s.principal)} · ${str(s.oauth_client_name) || oc}` : s.principal);
    if (oc) {
      f.principal.title = 'OAuth client ' + oc;
      tr.setAttribute('data-oauth-client', oc);
    } else {
      f.principal.removeAttribute('title');
      tr.removeAttribute('data-oauth-client');
    }
    setText(f.age, dur(num(s.age_s)));
    setText(f.idle, dur(num(s.idle_s)));
    setText(f.inflight, num(s.inflight));
    setText(f.streams, num(s.streams));
  }

  function emptyRow(tbody, cols, text) {
    const tr = el('tr', 'empty');
    const td = el('td', 'empty', text);
    td.colSpan = cols;
    tr.append(td);
    tbody.append(tr);
  }

  // ---- tools --------------------------------------------------------------
  const toolBox = $('tool-groups');
  function makeToolGroup(d) {
    const g = el('div', 'tool-group');
    g.setAttribute('data-destination', str(d.name));
    g.append(el('h3', '', str(d.name)));
    refs.set(g, { sig: null, body: g.appendChild(el('div')) });
    return g;
  }
  function updateToolGroup(g, d) {
    const f = refs.get(g);
    const tools = arr(d.tools);
    const sig = JSON.stringify([!!d.tools_known, tools.map((t) => [str(t && t.name), !!(t && t.allowed)])]);
    if (sig === f.sig) return;
    f.sig = sig;
    if (!d.tools_known) {
      f.body.replaceChildren(el('p', 'empty', 'not known yet (the child has not run)'));
      return;
    }
    if (!tools.length) {
      f.body.replaceChildren(el('p', 'empty', 'No tools'));
      return;
    }
    const ul = el('ul');
    ul.setAttribute('aria-label', 'Tools of ' + str(d.name));
    for (const t of tools) {
      const ok = !!(t && t.allowed);
      const li = el('li', ok ? 'allowed' : 'denied');
      li.setAttribute('data-tool', `${str(d.name)}/${str(t && t.name)}`);
      li.append(el('span', 'tool-name', str(t && t.name)), el('span', 'mark', ok ? 'allowed' : 'denied'));
      ul.append(li);
    }
    f.body.replaceChildren(ul);
  }

  // ---- clients ------------------------------------------------------------
  const clientBody = $('clients-body');
  const CCELLS = ['name', 'id', 'source', 'approved', 'last-used', 'status-text'];
  function makeClient(c) {
    const tr = el('tr');
    const cid = str(c.client_id);
    tr.setAttribute('data-client', cid);
    const f = { cid };
    for (const k of CCELLS) tr.append((f[k] = el('td', k)));
    f.action = el('td', 'action');
    tr.append(f.action);
    refs.set(tr, f);
    return tr;
  }
  function updateClient(tr, c) {
    const f = refs.get(tr);
    const name = str(c.client_name);
    setText(f.name, name || '—');
    setText(f.id, f.cid);
    setText(f.source, str(c.source) || '—');
    setText(f.approved, c.approved ? day(c.approved) : 'not approved');
    setText(f['last-used'], c.last_used ? day(c.last_used) : 'never');
    setText(f['status-text'], c.revoked ? 'revoked' : 'active');
    f['status-text'].classList.toggle('revoked', !!c.revoked);
    if (c.revoked) {
      if (f.btn) { f.btn.remove(); f.btn = null; }
    } else if (!f.btn) {
      f.btn = el('button', 'revoke');
      f.btn.type = 'button';
      f.btn.setAttribute('aria-label', 'Revoke client ' + (name || f.cid));
      confirmButton(f.btn, 'Revoke', 'revoke', () => act('/console/api/clients/revoke', { client_id: f.cid }));
      f.action.append(f.btn);
    }
  }

  // ---- users' children ------------------------------------------------------
  const userBody = $('users-body');
  const UCELLS = ['destination', 'user', 'child', 'sessions', 'credentials'];
  function makeUser(u) {
    const tr = el('tr');
    tr.setAttribute('data-destination', u.dest);
    tr.setAttribute('data-user', u.key);
    const f = {};
    for (const k of UCELLS) tr.append((f[k] = el('td', k)));
    const td = el('td', 'action');
    const stop = el('button', 'stop-user');
    stop.type = 'button';
    stop.setAttribute('aria-label', `Stop the child of ${str(u.name)} on ${u.dest}`);
    confirmButton(stop, 'Stop', 'stop child', () => act('/console/api/users/stop', { destination: u.dest, user: u.key }));
    const del = el('button', 'delete-credentials');
    del.type = 'button';
    del.setAttribute('aria-label', `Delete the credentials of ${str(u.name)} for ${u.dest}`);
    confirmButton(del, 'Delete credentials', 'delete credentials', () => act('/console/api/credentials/delete', { destination: u.dest, user: u.key }));
    td.append(stop, del);
    tr.append(td);
    f.stop = stop;
    f.del = del;
    refs.set(tr, f);
    return tr;
  }
  function updateUser(tr, u) {
    const f = refs.get(tr);
    setText(f.destination, u.dest);
    setText(f.user, str(u.name) || u.key);
    setText(f.child, u.pid ? `${str(u.state)} (pid ${num(u.pid)})` : str(u.state));
    setText(f.sessions, num(u.sessions));
    const names = arr(u.credentials).map(str);
    setText(f.credentials, names.length ? names.join(', ') + (u.credentials_updated ? ' · ' + day(u.credentials_updated) : '') : '—');
    f.stop.hidden = !u.pid && str(u.state) === 'idle';
    f.del.hidden = names.length === 0;
  }

  // ---- people (the built-in server's users) --------------------------------
  // An invite's link is in the answer to the invite only: it is shown in
  // #invite-answer until Done, and never comes back in the state.
  const inviteAnswer = $('invite-answer');
  const inviteLink = $('invite-link');
  function showInvite(name, data) {
    if (!data || !data.link) return;
    setText($('invite-message'), `One-time link for ${name}: send it to them.`);
    inviteLink.value = str(data.link);
    const note = $('invite-note');
    setText(note, data.note);
    note.hidden = !data.note;
    inviteAnswer.hidden = false;
    inviteLink.focus();
    inviteLink.select();
  }
  function hideInvite() {
    inviteLink.value = '';
    setText($('invite-message'), '');
    setText($('invite-note'), '');
    inviteAnswer.hidden = true;
  }
  $('invite-done').addEventListener('click', () => { hideInvite(); $('invite-name').focus(); });
  $('invite-copy').addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(inviteLink.value);
      say('The link is copied.', 'ok');
    } catch (_) {
      inviteLink.focus();
      inviteLink.select();
      say('The browser did not let the page copy: the link is selected, copy it with the keyboard.');
    }
  });
  $('invite-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const input = $('invite-name');
    const name = input.value.trim();
    if (!name) {
      say('Type the name of the person to invite.', 'error');
      input.focus();
      return;
    }
    const btn = $('invite');
    btn.disabled = true;
    try {
      hideInvite();
      const data = await act('/console/api/people/invite', { name });
      if (data) {
        input.value = '';
        showInvite(name, data);
      }
    } finally {
      btn.disabled = false;
    }
  });

  const peopleBody = $('people-body');
  const PCELLS = ['name', 'subject', 'created', 'last-sign-in', 'person-state', 'children'];
  function makePerson(p) {
    const tr = el('tr');
    const name = str(p.name);
    const subject = str(p.subject);
    tr.setAttribute('data-person', name);
    tr.setAttribute('data-subject', subject);
    const f = {};
    for (const k of PCELLS) tr.append((f[k] = el('td', k)));
    const td = el('td', 'action');
    const who = { name, subject };
    const button = (cls, label, aria) => {
      const b = el('button', cls);
      b.type = 'button';
      b.setAttribute('aria-label', aria);
      b.textContent = label;
      td.append(b);
      return b;
    };
    f.disable = button('disable-person', 'Disable', `Disable ${name}: refuse their tokens and stop their children`);
    confirmButton(f.disable, 'Disable', 'disable', () => act('/console/api/people/disable', who));
    f.enable = button('enable-person', 'Enable', `Enable ${name} again`);
    f.enable.addEventListener('click', () => {
      if (f.enable.disabled) return;
      f.enable.disabled = true;
      act('/console/api/people/enable', who).finally(() => { f.enable.disabled = false; });
    });
    f.again = button('new-link', 'New link', `Make a new invite link for ${name} (their earlier links stop working)`);
    confirmButton(f.again, 'New link', 'new link', async () => {
      hideInvite();
      showInvite(name, await act('/console/api/people/invite', Object.assign({ again: true }, who)));
    });
    f.remove = button('remove-person', 'Remove', `Remove ${name}: refuse their tokens, stop their children, delete their credentials`);
    confirmButton(f.remove, 'Remove', 'remove', () => act('/console/api/people/remove', who));
    tr.append(td);
    refs.set(tr, f);
    return tr;
  }
  function updatePerson(tr, p) {
    const f = refs.get(tr);
    const st = str(p.state);
    setText(f.name, p.name);
    setText(f.subject, p.subject);
    setText(f.created, day(p.created));
    setText(f['last-sign-in'], p.last_sign_in ? day(p.last_sign_in) : 'never');
    setText(f['person-state'], st || '—');
    f['person-state'].classList.toggle('disabled', st.includes('disabled'));
    f.disable.hidden = st.includes('disabled');
    f.enable.hidden = !st.includes('disabled');
    // Their children are the "Users' children" panel's: a link there.
    const n = num(p.children);
    if (n !== f.n) {
      f.n = n;
      if (n > 0) {
        const a = el('a', '', `${n} running`);
        a.href = '#users';
        a.title = "See them in Users' children";
        f.children.replaceChildren(a);
      } else {
        f.children.replaceChildren('—');
      }
    }
  }

  // ---- profiles -----------------------------------------------------------
  const profList = $('profile-list');
  function makeProfile(p) {
    const li = el('li');
    li.setAttribute('data-profile', str(p.name));
    const f = { name: el('strong'), url: el('code'), members: el('span', 'members') };
    li.append(f.name, ' ', f.url, f.members);
    refs.set(li, f);
    return li;
  }
  function updateProfile(li, p) {
    const f = refs.get(li);
    const m = arr(p.members).map(str);
    setText(f.name, p.name);
    setText(f.url, p.url);
    setText(f.members, m.length ? 'members: ' + m.join(', ') : 'no members');
  }

  // ---- log ----------------------------------------------------------------
  const logBody = $('log-body');
  const logCount = $('log-count');
  const fDest = $('filter-destination');
  const fTool = $('filter-tool');
  const fUser = $('filter-user');
  const logRows = new Map(); // seq -> {tr, e}
  let logFloor = 0; // entries at or below this seq were dropped for size

  function matches(e) {
    const d = fDest.value;
    const t = fTool.value.trim().toLowerCase();
    const u = fUser.value.trim().toLowerCase();
    if (d && str(e.destination) !== d) return false;
    if (t && !str(e.tool).toLowerCase().includes(t) && !str(e.method).toLowerCase().includes(t)) return false;
    if (u && !str(e.principal).toLowerCase().includes(u) && !str(e.user).toLowerCase().includes(u) && !str(e.client).toLowerCase().includes(u)) return false;
    return true;
  }
  function countLog() {
    let shown = 0;
    for (const r of logRows.values()) if (!r.tr.hidden) shown++;
    setText(logCount, `${shown} shown of ${logRows.size}`);
  }
  function applyFilters() {
    for (const r of logRows.values()) {
      const hide = !matches(r.e);
      if (r.tr.hidden !== hide) r.tr.hidden = hide;
    }
    countLog();
  }
  function makeLogRow(e, seq) {
    const tr = el('tr');
    tr.setAttribute('data-seq', String(seq));
    tr.setAttribute('data-destination', str(e.destination));
    tr.setAttribute('data-tool', str(e.tool));
    tr.setAttribute('data-principal', str(e.principal));
    const td = (cls, text) => tr.appendChild(el('td', cls, text));
    const tm = el('time', '', clock(e.time));
    tm.setAttribute('datetime', str(e.time));
    tr.appendChild(el('td', 'time')).append(tm);
    td('destination', e.destination);
    td('method', e.method);
    td('tool', str(e.tool) || '—');
    const st = num(e.status);
    td('status' + (st >= 400 ? ' bad' : ''), st || '—');
    const oc = str(e.outcome);
    td('outcome' + (oc && oc !== 'ok' ? ' bad' : ''), oc || '—');
    const ms = num(e.latency_ms);
    td('latency', ms < 10 ? ms.toFixed(2) : ms.toFixed(1));
    td('session', str(e.session) || '—');
    td('principal', e.principal);
    td('client', str(e.client) || '—');
    const trace = td('trace', str(e.trace_id).slice(0, 8) || '—');
    if (e.trace_id) trace.title = 'trace ' + str(e.trace_id);
    tr.hidden = !matches(e);
    return tr;
  }
  let firstBatch = true; // the first log event of a stream: check the seqs did not go back
  function addLog(entries) {
    const batch = arr(entries);
    if (firstBatch && batch.length) {
      firstBatch = false;
      const top = Math.max(logFloor, ...logRows.keys());
      const last = Number(batch[batch.length - 1] && batch[batch.length - 1].seq);
      if (Number.isFinite(last) && last < top) {
        // The bridge restarted: its seqs began again. Start the tail afresh.
        logRows.clear();
        logBody.replaceChildren();
        logFloor = 0;
      }
    }
    for (const e of batch) {
      if (!e || typeof e !== 'object') continue;
      const seq = Number(e.seq);
      if (!Number.isFinite(seq) || seq <= logFloor || logRows.has(seq)) continue;
      const tr = makeLogRow(e, seq);
      let ref = logBody.firstElementChild; // rows are newest (highest seq) first
      while (ref && Number(ref.getAttribute('data-seq')) > seq) ref = ref.nextElementSibling;
      logBody.insertBefore(tr, ref);
      logRows.set(seq, { tr, e });
    }
    while (logRows.size > MAX_LOG) {
      const last = logBody.lastElementChild;
      const s = Number(last.getAttribute('data-seq'));
      logRows.delete(s);
      last.remove();
      if (s > logFloor) logFloor = s;
    }
    countLog();
  }
  for (const input of [fDest, fTool, fUser]) input.addEventListener('input', applyFilters);
  fDest.addEventListener('change', applyFilters);

  let destNames = '';
  function updateFilterOptions(names) {
    const sig = JSON.stringify(names);
    if (sig === destNames) return;
    destNames = sig;
    const keep = fDest.value;
    const opts = [el('option', '', 'All destinations')];
    opts[0].value = '';
    const list = names.slice();
    if (keep && !list.includes(keep)) list.push(keep);
    for (const n of list) {
      const o = el('option', '', n);
      o.value = n;
      opts.push(o);
    }
    fDest.replaceChildren(...opts);
    fDest.value = keep;
  }

  // ---- state --------------------------------------------------------------
  // ---- doctor ---------------------------------------------------------------
  const doctorForm = $('doctor-form');
  const doctorURL = $('doctor-url');
  const doctorRun = $('doctor-run');
  const doctorSummary = $('doctor-summary');
  const doctorBody = $('doctor-body');
  // suggestDoctorURL fills the URL once: the public URL (or this page's
  // origin) and the first destination.
  function suggestDoctorURL(s) {
    if (doctorURL.value || doctorURL.dataset.suggested) return;
    const d = arr(s.destinations).find((x) => x && x.name);
    if (!d) return;
    const base = (str(s.bridge && s.bridge.public_url) || location.origin).replace(/\/+$/, '');
    doctorURL.value = `${base}/${str(d.name)}/mcp`;
    doctorURL.dataset.suggested = '1';
  }
  doctorForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    doctorRun.disabled = true;
    setText(doctorSummary, 'Checking… (a stream is watched for up to 20 s)');
    doctorBody.replaceChildren();
    let res, data = null;
    try {
      res = await fetch('/console/api/doctor', {
        method: 'POST', credentials: 'same-origin', cache: 'no-store',
        headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf },
        body: JSON.stringify({ url: doctorURL.value.trim(), token: $('doctor-token').value, fetch: $('doctor-fetch').checked }),
      });
      try { data = await res.json(); } catch (_) { data = null; }
    } catch (err) {
      setText(doctorSummary, 'The bridge could not be reached: ' + str(err && err.message));
      doctorRun.disabled = false;
      return;
    }
    doctorRun.disabled = false;
    if (!res.ok || !data) {
      setText(doctorSummary, str(data && data.error && data.error.message) || `The bridge answered HTTP ${res.status}.`);
      return;
    }
    for (const r of arr(data.results)) {
      const tr = el('tr');
      const st = str(r.status);
      tr.setAttribute('data-check', str(r.check));
      tr.setAttribute('data-status', st);
      tr.appendChild(el('td', 'status' + (st === 'fail' ? ' bad' : ''), st.toUpperCase()));
      tr.appendChild(el('td', 'check', str(r.check)));
      tr.appendChild(el('td', 'found', str(r.found)));
      const why = [r.cause ? 'Cause: ' + str(r.cause) : '', r.fix ? 'Fix: ' + str(r.fix) : ''].filter(Boolean).join(' ');
      tr.appendChild(el('td', 'fix', why || '—'));
      doctorBody.appendChild(tr);
    }
    setText(doctorSummary, data.ok ? `${str(data.url)}: passed (no check failed).` : `${str(data.url)}: some checks failed; each says its cause and fix.`);
  });

  function renderState(s) {
    if (!s || typeof s !== 'object') return;
    const b = s.bridge || {};
    if (b.version) setText($('version'), b.version);
    setText($('auth-mode'), b.auth ? '· auth: ' + str(b.auth) : '');
    suggestDoctorURL(s);

    const dests = arr(s.destinations).filter((d) => d && typeof d === 'object');
    const key = (d) => str(d.name);
    if (!sync(destBox, dests, key, makeDest, updateDest)) {
      destBox.append(el('p', 'empty', 'No destinations are configured.'));
    }

    const sessions = [];
    for (const d of dests) {
      for (const x of arr(d.sessions)) {
        if (x && typeof x === 'object') sessions.push(Object.assign({}, x, { id: str(x.id), dest: str(d.name) }));
      }
    }
    if (!sync(sessBody, sessions, (x) => x.dest + '\u0000' + x.id, makeSession, updateSession)) {
      emptyRow(sessBody, CELLS.length + 1, 'No sessions');
    }

    const users = [];
    for (const d of dests) {
      for (const x of arr(d.users)) {
        if (x && typeof x === 'object') users.push(Object.assign({}, x, { key: str(x.key), dest: str(d.name) }));
      }
    }
    $('users').hidden = users.length === 0 && !dests.some((d) => str(d.isolation) === 'user');
    if (!sync(userBody, users, (x) => x.dest + '\u0000' + x.key, makeUser, updateUser)) {
      emptyRow(userBody, UCELLS.length + 1, 'No users yet');
    }

    if (!sync(toolBox, dests, key, makeToolGroup, updateToolGroup)) {
      toolBox.append(el('p', 'empty', 'No destinations are configured.'));
    }

    const enabled = !!s.clients_enabled;
    $('clients-off').hidden = enabled;
    $('clients-table').hidden = !enabled;
    const cerr = $('clients-error');
    setText(cerr, s.clients_error);
    cerr.hidden = !s.clients_error;
    const clients = enabled ? arr(s.clients).filter((c) => c && typeof c === 'object') : [];
    if (!sync(clientBody, clients, (c) => str(c.client_id), makeClient, updateClient)) {
      emptyRow(clientBody, CCELLS.length + 1, 'No clients');
    }

    const peopleOn = !!s.people_enabled;
    $('people').hidden = !peopleOn;
    const perr = $('people-error');
    setText(perr, s.people_error);
    perr.hidden = !s.people_error;
    const childrenOf = new Map();
    for (const u of users) if (num(u.pid) > 0) childrenOf.set(u.key, (childrenOf.get(u.key) || 0) + 1);
    const people = peopleOn ? arr(s.people).filter((p) => p && typeof p === 'object')
      .map((p) => Object.assign({}, p, { children: childrenOf.get(str(p.key)) || 0 })) : [];
    if (!sync(peopleBody, people, (p) => str(p.subject), makePerson, updatePerson)) {
      emptyRow(peopleBody, PCELLS.length + 1, 'Nobody invited yet');
    }

    const profiles = arr(s.profiles).filter((p) => p && typeof p === 'object');
    if (!sync(profList, profiles, (p) => str(p.name), makeProfile, updateProfile)) {
      profList.append(el('li', 'empty', 'No profiles'));
    }

    updateFilterOptions(dests.map(key));
  }

  // ---- live stream ----------------------------------------------------------
  const conn = $('conn');
  let es = null;
  let fails = 0;
  let retry = 0;
  function setConn(live) {
    setText(conn, live ? 'live' : 'reconnecting…');
    conn.classList.toggle('live', live);
    conn.classList.toggle('down', !live);
  }
  async function checkSignedIn() {
    try {
      const r = await fetch('/console/api/state', { credentials: 'same-origin', cache: 'no-store' });
      if (r.status === 401) {
        location.reload();
        return;
      }
      if (r.ok) renderState(await r.json());
    } catch (_) { /* the bridge is away; the stream keeps retrying */ }
  }
  function connect() {
    es = new EventSource('/console/events');
    es.addEventListener('open', () => { fails = 0; firstBatch = true; setConn(true); });
    es.addEventListener('state', (ev) => {
      fails = 0;
      setConn(true);
      try { renderState(JSON.parse(ev.data)); } catch (err) { console.error('console: bad state', err); }
    });
    es.addEventListener('log', (ev) => {
      try { addLog(JSON.parse(ev.data)); } catch (err) { console.error('console: bad log', err); }
    });
    es.addEventListener('error', () => {
      fails++;
      setConn(false);
      if (fails % 3 === 0) checkSignedIn();
      // A refused stream (401, 503) is not retried by the browser: retry here.
      if (es.readyState === EventSource.CLOSED) {
        es.close();
        clearTimeout(retry);
        retry = setTimeout(connect, Math.min(30000, 1000 * 2 ** Math.min(fails - 1, 5)));
      }
    });
  }
  countLog();
  connect();
})();

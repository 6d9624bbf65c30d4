// Groups (#/groups): the groups this node is in and their members, invites (code and QR code), joining with a code,
// creating a group, requests to join waiting for an admin here, and blocked authors. The badge in the header
// counts the requests to join (status.pendingRequests).
// A node in no group shares nothing: every node that connects is refused and what it posts stays on it.

import { api, groupLabel, loadGroups, normalizeStatus } from './api.js';
import { h, timeElement, shortId, showError, announce, clearErrors, svgDataURL } from './dom.js';
import * as events from './events.js';

let pending = null;

/** The requests badge in the header (hidden at 0). */
export function setBadge(count) {
  if (typeof count !== 'number') return;
  pending = count;
  const badge = document.getElementById('requests-badge');
  const link = document.getElementById('nav-groups');
  if (!badge || !link) return;
  badge.hidden = !count;
  badge.textContent = count > 99 ? '99+' : String(count);
  link.setAttribute('aria-label', count ? `Groups, ${count} ${count === 1 ? 'request' : 'requests'} to join` : 'Groups');
}

let refreshing = null;
export function refreshBadge() {
  if (refreshing) return refreshing;
  refreshing = api('/api/status')
    .then((status) => setBadge(normalizeStatus(status).pendingRequests))
    .catch(() => {})
    .finally(() => { refreshing = null; });
  return refreshing;
}

/** Live: a node asked to join (the same node asking again is one request: ask the node for the count). */
export function startBadge() {
  events.on('joinRequested', refreshBadge);
  events.on('reconnected', refreshBadge);
}

const memberLabel = (member) => member.name ?? '(no name)';

export function mount(container) {
  const off = [];
  let alive = true;
  let groups = [];
  const invites = new Map(); // group id -> the invite shown in its card (kept when the cards are drawn again)

  const loadingLine = h('p', { class: 'status-line', role: 'status' }, 'Loading…');
  const noGroup = h('div', { class: 'panel warning', id: 'no-groups', hidden: true },
    h('p', {}, h('strong', {}, 'This node shares nothing yet: it is in no group.')),
    h('p', {}, 'Nodes that connect to it are refused, and what you post stays on this node, shared with nobody. ' +
      'Create a group below and invite the nodes to share with, or join a group with an invite code from one of its admins.'));

  // Requests to join, shown only when there are some.
  const requestsList = h('ul', { class: 'cards', id: 'request-list', 'aria-label': 'Requests to join' });
  const requestsStatus = h('p', { class: 'status-line', role: 'status', id: 'requests-status' });
  const requestsSection = h('section', { class: 'groups-section', id: 'requests', 'aria-labelledby': 'requests-title', hidden: true },
    h('h2', { id: 'requests-title' }, 'Requests to join'),
    h('p', { class: 'help' }, 'Nodes that asked this one to let them in. Approve lets one into a group of which this node is an admin; ' +
      'deny tells it so the next time it asks.'),
    requestsStatus, requestsList);

  // Your groups.
  const groupList = h('ul', { class: 'cards', id: 'group-list', 'aria-label': 'Your groups' });
  const groupsStatus = h('p', { class: 'status-line', role: 'status', id: 'groups-status' });
  const hostInput = h('input', { type: 'text', id: 'invite-host', name: 'host', inputmode: 'decimal', autocomplete: 'off',
    spellcheck: 'false', placeholder: '192.168.1.20', 'aria-describedby': 'invite-host-help' });
  const expiresSelect = h('select', { id: 'invite-expires', name: 'expiresMinutes' },
    h('option', { value: '15' }, '15 minutes'), h('option', { value: '60', selected: true }, '1 hour'),
    h('option', { value: '1440' }, '1 day'), h('option', { value: '10080' }, '7 days'));
  const inviteOptions = h('details', { class: 'invite-options', id: 'invite-options', hidden: true },
    h('summary', {}, 'Invite options'),
    h('div', { class: 'field' },
      h('label', { for: 'invite-host' }, 'Address the new node dials (optional)'), hostInput,
      h('p', { class: 'help', id: 'invite-host-help' },
        'Left empty, the code carries this node’s LAN address. Give an IPv4 address when the new node reaches this one at another address.')),
    h('div', { class: 'field' }, h('label', { for: 'invite-expires' }, 'Valid for'), expiresSelect));
  const groupsSection = h('section', { class: 'groups-section', 'aria-labelledby': 'your-groups-title' },
    h('h2', { id: 'your-groups-title' }, 'Your groups'),
    groupsStatus, inviteOptions, groupList);

  // Join a group.
  const joinInput = h('input', { type: 'text', id: 'join-code', name: 'code', autocomplete: 'off', autocapitalize: 'characters',
    spellcheck: 'false', required: true, placeholder: '0441J-DN9MC-…', 'aria-describedby': 'join-help' });
  const joinButton = h('button', { type: 'submit', id: 'join-button' }, 'Join');
  const joinStatus = h('p', { class: 'status-line', role: 'status', id: 'join-status' });
  const joinError = h('p', { class: 'form-error', id: 'join-error', role: 'alert', hidden: true });
  const joinForm = h('form', { class: 'group-form', id: 'join-form', novalidate: true, onsubmit: join },
    h('div', { class: 'field' },
      h('label', { for: 'join-code' }, 'Invite code, or the name of an open group nearby'),
      h('div', { class: 'row' }, joinInput, joinButton),
      h('p', { class: 'help', id: 'join-help' },
        'The code an admin of the group made on their node with Invite (it works once; this node dials theirs, so both must be running and reachable), or the name of an open group announced on the LAN.')),
    joinError, joinStatus);
  // Open groups that nodes on the LAN announce: one button each.
  const nearbyList = h('ul', { class: 'cards', id: 'nearby-open-groups', 'aria-label': 'Open groups nearby', hidden: true });

  // Create a group.
  const nameInput = h('input', { type: 'text', id: 'group-name', name: 'name', autocomplete: 'off', required: true,
    placeholder: 'Family', 'aria-describedby': 'group-name-help' });
  const openBox = h('input', { type: 'checkbox', id: 'group-open', name: 'open', 'aria-describedby': 'group-open-help' });
  const createButton = h('button', { type: 'submit', id: 'create-group' }, 'Create group');
  const createStatus = h('p', { class: 'status-line', role: 'status', id: 'create-status' });
  const createError = h('p', { class: 'form-error', id: 'create-error', role: 'alert', hidden: true });
  const createForm = h('form', { class: 'group-form', id: 'create-form', novalidate: true, onsubmit: create },
    h('div', { class: 'field' },
      h('label', { for: 'group-name' }, 'Name'), nameInput,
      h('p', { class: 'help', id: 'group-name-help' }, 'Its members see it. This node is the group’s first member and its admin.')),
    h('div', { class: 'field' },
      h('label', { for: 'group-open', class: 'check' }, openBox, ' Anyone may join (open group)'),
      h('p', { class: 'help', id: 'group-open-help' },
        'It is announced on the LAN, and any node nearby may join it by its name, without an admin: for events and demos. Leave it off for a private group, whose name is never announced.')),
    createError,
    h('div', { class: 'actions' }, createButton), createStatus);

  // Blocked authors, shown only when there are some.
  const blockedList = h('ul', { class: 'cards', id: 'blocked-list', 'aria-label': 'Blocked authors' });
  const blockedStatus = h('p', { class: 'status-line', role: 'status', id: 'blocked-status' });
  const blockedSection = h('section', { class: 'groups-section', id: 'blocked', 'aria-labelledby': 'blocked-title', hidden: true },
    h('h2', { id: 'blocked-title' }, 'Blocked authors'),
    h('p', { class: 'help' }, 'Blocking is this node’s own: their posts, comments and photos were erased here, and what they write is neither shown nor passed on. Nobody is told.'),
    blockedStatus, blockedList);

  container.replaceChildren(h('section', { class: 'view groups-view', 'aria-labelledby': 'groups-title' },
    h('div', { class: 'view-head' }, h('h1', { id: 'groups-title', tabindex: '-1' }, 'Groups'),
      h('button', { type: 'button', id: 'groups-refresh', onclick: () => loadAll() }, 'Refresh')),
    loadingLine, noGroup, requestsSection, groupsSection,
    h('section', { class: 'groups-section', 'aria-labelledby': 'join-title' }, h('h2', { id: 'join-title' }, 'Join a group'), joinForm, nearbyList),
    h('section', { class: 'groups-section', 'aria-labelledby': 'create-title' }, h('h2', { id: 'create-title' }, 'Create a group'), createForm),
    blockedSection));

  /** Draws a list again, giving the focus back to the control that had it (by id) when it is still there. */
  function redraw(list, items) {
    const focused = list.contains(document.activeElement) ? document.activeElement.id : null;
    list.replaceChildren(...items);
    if (focused) document.getElementById(focused)?.focus();
  }

  // -- Your groups --------------------------------------------------------------------------------------------

  async function loadGroupsSection() {
    const fresh = await loadGroups(true);
    const members = await Promise.all(fresh.map((group) =>
      api(`/api/groups/${encodeURIComponent(group.id)}/members`).then((body) => body.members, (error) => error)));
    if (!alive) return;
    groups = fresh;
    noGroup.hidden = groups.length > 0;
    groupsSection.hidden = groups.length === 0;
    inviteOptions.hidden = !groups.some((group) => group.admin);
    redraw(groupList, groups.map((group, i) => groupCard(group, members[i])));
    for (const id of invites.keys()) if (!groups.some((group) => group.id === id)) invites.delete(id);
  }

  function groupCard(group, members) {
    const label = groupLabel(group);
    const count = group.members === 1 ? '1 member' : `${group.members} members`;
    const tags = h('span', { class: 'tags' },
      group.admin ? h('span', { class: 'tag', title: 'This node is an admin of this group: it invites and removes members' }, 'admin') : null,
      group.open ? h('span', { class: 'tag', title: 'A node that knows the group may add itself' }, 'open') : null,
      group.network ? h('span', { class: 'tag', title: 'A network group: every node given its name or key is a member; it has no admin' }, 'network') : null);
    const list = h('ul', { class: 'members', 'aria-label': `Members of ${label}` });
    if (members instanceof Error) {
      list.append(h('li', { class: 'meta' }, `The members could not be read: ${members.message}`));
    } else {
      for (const member of members) list.append(memberItem(group, member));
    }
    const card = h('li', { class: 'card group', dataset: { id: group.id } },
      h('h3', {}, group.name ?? '(no name yet)', ' ', h('code', { class: 'meta-id', title: group.id }, shortId(group.id))),
      h('p', { class: 'meta' }, count, ' ', tags),
      group.name === null ? h('p', { class: 'meta' }, 'Its name arrives with the first sync with a member.') : null,
      h('details', { class: 'member-list', open: members instanceof Error || members.length <= 12 },
        h('summary', {}, 'Members'), list));
    if (group.admin) {
      const inviteButton = h('button', { type: 'button', class: 'invite-button', id: `invite-${group.id.slice(0, 16)}`,
        onclick: () => invite(group, inviteButton) }, 'Invite');
      card.append(h('div', { class: 'actions' }, inviteButton));
    }
    if (invites.has(group.id)) card.append(invites.get(group.id));
    return card;
  }

  function memberItem(group, member) {
    const item = h('li', { class: member.removed ? 'member removed' : 'member', dataset: { log: member.log, node: member.node } },
      h('strong', {}, memberLabel(member)), ' ', h('code', { title: `node ${member.node}\nlog key ${member.log}` }, shortId(member.node)),
      member.admin ? h('span', { class: 'tag' }, 'admin') : null,
      member.me ? h('span', { class: 'tag' }, 'this node') : null,
      member.removed ? h('span', { class: 'tag removed' },
        member.keptThrough !== null ? `removed, kept through record ${member.keptThrough}` : 'removed') : null);
    if (group.admin && !member.me && !member.removed) {
      const button = h('button', { type: 'button', class: 'danger small revoke',
        'aria-label': `Remove ${memberLabel(member)} from ${groupLabel(group)}`, onclick: () => revoke(group, member, button) }, 'Revoke');
      item.append(' ', button);
    }
    return item;
  }

  async function revoke(group, member, button) {
    const who = memberLabel(member) === '(no name)' ? `the node ${shortId(member.node)}` : memberLabel(member);
    if (!window.confirm(`Remove ${who} from ${groupLabel(group)}? It no longer receives the group’s new posts, comments and ` +
      'photos, and what it writes from now on is refused. It keeps what it already received.')) return;
    clearErrors();
    button.disabled = true;
    try {
      await api(`/api/groups/${encodeURIComponent(group.id)}/members/${encodeURIComponent(member.log)}`, { method: 'DELETE' });
      groupsStatus.textContent = `${who} was removed from ${groupLabel(group)}. It keeps what it already received; ` +
        'it gets nothing new of the group.';
      announce(groupsStatus.textContent);
      await loadGroupsSection();
    } catch (error) {
      button.disabled = false;
      showError(error, 'The member was not removed');
    }
  }

  async function invite(group, button) {
    clearErrors();
    const body = { expiresMinutes: Number(expiresSelect.value) };
    const host = hostInput.value.trim();
    if (host) body.host = host;
    hostInput.removeAttribute('aria-invalid');
    button.disabled = true;
    try {
      const made = await api(`/api/groups/${encodeURIComponent(group.id)}/invites`, { method: 'POST', json: body });
      // One invite shown at a time (its elements have ids).
      for (const shown of invites.values()) shown.remove();
      invites.clear();
      const element = inviteElement(group, made, button);
      invites.set(group.id, element);
      button.closest('.card')?.append(element);
      element.querySelector('#invite-code')?.focus();
      announce(`Invite code made for ${groupLabel(group)}.`);
    } catch (error) {
      if (error.field === 'host') {
        hostInput.setAttribute('aria-invalid', 'true');
        inviteOptions.open = true;
        hostInput.focus();
      }
      showError(error, 'No invite was made');
    } finally {
      button.disabled = false;
    }
  }

  function inviteElement(group, made, button) {
    const code = h('code', { id: 'invite-code', class: 'invite-code', tabindex: '0' }, made.code);
    const copy = h('button', { type: 'button', id: 'invite-copy' }, 'Copy');
    const copied = h('span', { class: 'meta', role: 'status' });
    copy.addEventListener('click', async () => {
      if (navigator.clipboard?.writeText) {
        try {
          await navigator.clipboard.writeText(made.code);
          copied.textContent = 'Copied.';
          return;
        } catch {
          // Not allowed here: select it instead.
        }
      }
      window.getSelection()?.selectAllChildren(code);
      copied.textContent = 'Selected: press Ctrl+C (⌘C) to copy.';
    });
    if (!navigator.clipboard?.writeText) copy.textContent = 'Select';
    // The QR code holds this node's page with #invite=CODE: a phone's camera opens it and says what the code is for;
    // a node joins with that address as with the code.
    const qr = h('img', { id: 'invite-qr', class: 'invite-qr', alt: `QR code of ${made.url ?? 'the invite'} (invite code ${made.code})`, width: 220, height: 220 });
    if (typeof made.qrSvg === 'string' && made.qrSvg) qr.src = svgDataURL(made.qrSvg);
    else qr.hidden = true;
    const box = h('div', { class: 'invite', id: 'invite', role: 'group', 'aria-label': `Invite to ${groupLabel(group)}` },
      h('p', {}, 'Invite code for ', h('strong', {}, made.groupName ?? groupLabel(group)), ':'),
      h('p', { class: 'row code-row' }, code, copy, copied),
      qr,
      h('p', { class: 'meta', id: 'invite-valid' }, 'Valid once, until ', timeElement(made.expiresAt),
        `. The new node dials ${made.host}:${made.port}: type or paste the code there, under Join a group.`));
    box.append(h('button', { type: 'button', class: 'link', id: 'invite-close', onclick: () => {
      invites.delete(group.id);
      box.remove();
      document.getElementById(button.id)?.focus();
    } }, 'Hide the code'));
    return box;
  }

  // -- Requests to join ---------------------------------------------------------------------------------------

  async function loadRequests() {
    const [body, known] = await Promise.all([api('/api/requests'), loadGroups().catch(() => groups)]);
    if (!alive) return;
    const adminOf = known.filter((group) => group.admin);
    requestsSection.hidden = body.requests.length === 0 && !requestsStatus.textContent;
    redraw(requestsList, body.requests.map((request) => requestItem(request, adminOf)));
  }

  function requestItem(request, adminOf) {
    const approve = h('button', { type: 'button', class: 'approve', disabled: adminOf.length === 0 }, 'Approve');
    const deny = h('button', { type: 'button', class: 'danger deny' }, 'Deny');
    let select = null;
    const id = `approve-group-${request.node.slice(0, 16)}`;
    if (adminOf.length > 1) {
      select = h('select', { id, name: 'group' },
        adminOf.map((group) => h('option', { value: group.id }, groupLabel(group))));
    }
    approve.addEventListener('click', () => decide(request, 'approve', select?.value ?? adminOf[0]?.id, [approve, deny], adminOf));
    deny.addEventListener('click', () => decide(request, 'deny', null, [approve, deny], adminOf));
    return h('li', { class: 'card request', dataset: { node: request.node } },
      h('p', {}, 'Name it gave itself: ', request.name !== null ? h('strong', {}, request.name) : h('em', {}, 'none'),
        ' ', h('code', { title: `node ${request.node}` }, shortId(request.node))),
      h('p', { class: 'meta' }, `from ${request.host}:${request.port} · asked `, timeElement(request.askedAt),
        request.firstAskedAt !== request.askedAt ? [' · first asked ', timeElement(request.firstAskedAt)] : null),
      h('div', { class: 'actions' },
        select ? [h('label', { for: id }, 'Into'), select] : null,
        approve, deny,
        adminOf.length === 0 ? h('span', { class: 'meta' }, 'This node is an admin of no group: create one to let it in.') : null));
  }

  async function decide(request, action, group, buttons, adminOf) {
    clearErrors();
    for (const button of buttons) button.disabled = true;
    const who = request.name ?? `the node ${shortId(request.node)}`;
    try {
      const path = `/api/requests/${encodeURIComponent(request.node)}/${action}`;
      const result = await api(path, { method: 'POST', json: action === 'approve' && group ? { group } : {} });
      if (action === 'approve') {
        const into = adminOf.find((g) => g.id === result.group);
        requestsStatus.textContent = `${who} is let into ${into ? groupLabel(into) : 'the group'}: it joins when it next asks.`;
      } else {
        requestsStatus.textContent = `The request of ${who} was denied: it is told so the next time it asks.`;
      }
      announce(requestsStatus.textContent);
      refreshBadge();
      await Promise.all([loadRequests(), action === 'approve' ? loadGroupsSection() : null]);
    } catch (error) {
      for (const button of buttons) button.disabled = false;
      showError(error, action === 'approve' ? 'The request was not approved' : 'The request was not denied');
    }
  }

  // -- Blocked authors ----------------------------------------------------------------------------------------

  async function loadBlocked() {
    const body = await api('/api/blocked');
    if (!alive) return;
    blockedSection.hidden = body.blocked.length === 0 && !blockedStatus.textContent;
    redraw(blockedList, body.blocked.map((blocked) => {
      const who = blocked.name ?? `the author ${shortId(blocked.author)}`;
      const button = h('button', { type: 'button', class: 'unblock', 'aria-label': `Unblock ${who}` }, 'Unblock');
      button.addEventListener('click', async () => {
        clearErrors();
        button.disabled = true;
        try {
          await api(`/api/authors/${encodeURIComponent(blocked.author)}/block`, { method: 'DELETE' });
          blockedStatus.textContent = `${who} is unblocked: what they write from now on is shown again; what was erased stays erased.`;
          announce(blockedStatus.textContent);
          await loadBlocked();
        } catch (error) {
          button.disabled = false;
          showError(error, 'Not unblocked');
        }
      });
      return h('li', { class: 'card blocked', dataset: { author: blocked.author } },
        h('p', {}, h('strong', {}, blocked.name ?? '(no name)'), ' ', h('code', { title: `author ${blocked.author}` }, shortId(blocked.author)),
          blocked.node ? [' · node ', h('code', { title: `node ${blocked.node}` }, shortId(blocked.node))] : null),
        h('p', { class: 'meta' }, 'blocked ', timeElement(blocked.blockedAt)),
        h('div', { class: 'actions' }, button));
    }));
  }

  // -- Join and create ----------------------------------------------------------------------------------------

  async function join(event) {
    event.preventDefault();
    clearErrors();
    joinError.hidden = true;
    joinInput.removeAttribute('aria-invalid');
    const code = joinInput.value.trim();
    if (!code) {
      fail(joinError, joinInput, 'Paste or type the invite code first.');
      return;
    }
    joinButton.disabled = true;
    joinStatus.textContent = 'Joining… (up to 20 seconds)';
    try {
      const result = await api('/api/join', { method: 'POST', json: { code } });
      joinInput.value = '';
      await loadAll();
      const group = groups.find((g) => g.id === result.group);
      joinStatus.textContent = `Joined ${group?.name ? `“${group.name}”` : `the group ${shortId(result.group)}`}. ` +
        'Its posts arrive by sync, from the members this node connects to.';
      announce(joinStatus.textContent);
    } catch (error) {
      joinStatus.textContent = '';
      if (alive) fail(joinError, joinInput, error.message);
    } finally {
      joinButton.disabled = false;
    }
  }

  async function create(event) {
    event.preventDefault();
    clearErrors();
    createError.hidden = true;
    nameInput.removeAttribute('aria-invalid');
    const name = nameInput.value;
    if (!name.trim()) {
      fail(createError, nameInput, 'Give the group a name, such as Family.');
      return;
    }
    createButton.disabled = true;
    try {
      const group = await api('/api/groups', { method: 'POST', json: { name, open: openBox.checked } });
      nameInput.value = '';
      openBox.checked = false;
      createStatus.textContent = `Created “${group.name ?? name}”. Invite the nodes to share with: Invite, under Your groups.`;
      announce(createStatus.textContent);
      await loadAll();
    } catch (error) {
      fail(createError, nameInput, error.message);
    } finally {
      createButton.disabled = false;
    }
  }

  function fail(errorElement, input, message) {
    errorElement.textContent = message;
    errorElement.hidden = false;
    input.setAttribute('aria-invalid', 'true');
    input.focus();
  }

  // -- Loading ------------------------------------------------------------------------------------------------

  async function loadNearby() {
    const status = await api('/api/status');
    const mine = new Set(groups.map((group) => group.id));
    const seen = new Set();
    const nearby = (status.discovery?.openGroups ?? []).filter((open) => {
      if (mine.has(open.id) || seen.has(open.id)) return false;
      seen.add(open.id);
      return true;
    });
    nearbyList.replaceChildren(...nearby.map((open) => h('li', { class: 'card' },
      h('p', {}, h('strong', {}, open.name), ' ', h('code', { title: open.id }, shortId(open.id)),
        ' · an open group announced by ', h('code', { title: open.node }, shortId(open.node))),
      h('button', { type: 'button', onclick: () => { joinInput.value = open.name; joinForm.requestSubmit(); } },
        `Join ${open.name}`))));
    nearbyList.hidden = nearby.length === 0;
  }

  async function loadAll() {
    const results = await Promise.allSettled([loadGroupsSection(), loadRequests(), loadBlocked()]);
    await loadNearby().catch(() => {});
    if (!alive) return;
    loadingLine.hidden = true;
    const failed = results.find((result) => result.status === 'rejected');
    if (failed) showError(failed.reason, 'Could not load the groups');
  }

  const timers = new Map(); // fn -> its pending timer: each kind of reload waits for a quiet 300 ms
  const soon = (fn) => () => {
    window.clearTimeout(timers.get(fn));
    timers.set(fn, window.setTimeout(() => fn().catch(() => {}), 300));
  };
  off.push(events.on('joinRequested', soon(loadRequests)));
  off.push(events.on('peerJoined', soon(loadGroupsSection)));
  off.push(events.on('peerJoined', soon(loadNearby)), events.on('peerLeft', soon(loadNearby)));
  // Just joined: the group's name and members come with the first syncs.
  const reloadGroups = soon(loadGroupsSection);
  off.push(events.on('syncFinished', () => { if (groups.some((group) => group.name === null || group.members === 0)) reloadGroups(); }));
  off.push(events.on('reconnected', soon(loadAll)));
  loadAll();
  return () => { alive = false; for (const timer of timers.values()) window.clearTimeout(timer); for (const fn of off) fn(); };
}

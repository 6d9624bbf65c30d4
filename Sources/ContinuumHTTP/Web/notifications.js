// Notifications (#/notifications) and the unread badge in the header.

import { api, query } from './api.js';
import { h, timeElement, shortId, authorLabel, showError, announce } from './dom.js';
import * as events from './events.js';

let unread = null;

function setBadge(count) {
  unread = count;
  const badge = document.getElementById('unread-badge');
  const link = document.getElementById('nav-notifications');
  badge.hidden = !count;
  badge.textContent = count > 99 ? '99+' : String(count);
  link.setAttribute('aria-label', count ? `Notifications, ${count} unread` : 'Notifications');
}

let refreshing = null;
export function refreshBadge() {
  if (refreshing) return refreshing;
  refreshing = api('/api/notifications' + query({ unread: 'true', limit: 1 }))
    .then((body) => setBadge(body.unread))
    .catch(() => {})
    .finally(() => { refreshing = null; });
  return refreshing;
}

export function startBadge() {
  refreshBadge();
  events.on('notification', (event) => {
    if (!event.notification.read) setBadge((unread ?? 0) + 1);
  });
  events.on('reconnected', refreshBadge);
}

/** The post's caption as the node has it now (null once deleted, or from a node that does not say). */
const captionOf = (n) => (typeof n.postHeadline?.caption === 'string' ? n.postHeadline.caption : null);

/** " on “Café by the lake”" when the caption is known, else nothing (the headline below names the post). */
function onPost(n) {
  const caption = captionOf(n);
  return caption === null ? [] : [' on ', h('q', { class: 'post-caption' }, caption)];
}

function describe(n) {
  const who = h('strong', {}, authorLabel(n.authorName, n.author ?? ''));
  const caption = captionOf(n);
  switch (n.kind) {
    // A comment is never blank: no text means it was erased since (deleted, or hidden by the post's author).
    case 'comment': return [who, ' commented', ...onPost(n), ...(n.text ? [': ', h('q', {}, n.text)] : [' (since erased)'])];
    // No text: the edit changed only the photo or the location, or the post was deleted since (the delete erased
    // the edit's caption with the rest: what it changed is not known any more).
    case 'edited': return n.text === null || n.text === undefined
      ? (n.postHeadline?.deleted
        ? [who, ' edited a post you follow (deleted since)']
        : [who, ' changed the photo or the location of ', caption === null ? 'a post you follow' : h('q', { class: 'post-caption' }, caption)])
      : [who, ' changed the caption to ', h('q', {}, n.text)];
    case 'deleted': return [who, ' deleted a post you follow'];
    case 'post': return [who, ' posted ', h('q', {}, n.text ?? '')];
    // A reaction to this node's post or to its comment on a post (`comment` set; the text is the emoji), named by
    // the post.
    case 'reaction': return [who, ' reacted', ...(n.text ? [' ', h('span', { class: 'reaction-emoji' }, n.text)] : []),
      n.comment ? ' to your comment on ' : ' to ',
      caption === null ? (n.comment ? 'a post' : 'a post of yours') : h('q', { class: 'post-caption' }, caption)];
    default: return [`${n.kind} from `, who, ...onPost(n)];
  }
}

export function mount(container) {
  const off = [];
  const list = h('ol', { class: 'notifications', id: 'notification-list', 'aria-label': 'Notifications' });
  const status = h('p', { class: 'status-line', role: 'status' }, 'Loading…');
  const allButton = h('button', { type: 'button', id: 'mark-all-read', onclick: () => mark({ all: true }) }, 'Mark all read');
  container.replaceChildren(h('section', { class: 'view', 'aria-labelledby': 'notifications-title' },
    h('div', { class: 'view-head' }, h('h1', { id: 'notifications-title', tabindex: '-1' }, 'Notifications'), allButton),
    status, list));

  const items = new Map(); // id -> { n, li }

  function item(n) {
    const button = h('button', { type: 'button', class: 'link mark-one', onclick: () => mark({ ids: [n.id] }) }, 'Mark read');
    // A deleted post has nothing to open: it is named by its headline ("Alice's post of 2026-11-20 14:02 UTC,
    // 3 comments"), not linked; a post still there is linked, named by its caption in the sentence and by its
    // headline below.
    const headline = n.postHeadline ?? null;
    const deleted = n.kind === 'deleted' || headline?.deleted === true;
    const which = headline?.words ? headline.words : `post ${shortId(n.post)}`;
    const li = h('li', { class: n.read ? 'notification' : 'notification unread', dataset: { id: n.id } },
      h('p', {}, deleted ? h('span', {}, describe(n)) : h('a', { href: `#/post/${n.post}` }, describe(n))),
      h('p', { class: 'meta' }, timeElement(n.createdAt), ' · ', h('span', { class: 'post-headline' }, which),
        n.whileOffline ? ' · written while you were apart' : '', ' ', n.read ? null : button));
    return li;
  }

  function renderStatus() {
    const unreadHere = [...items.values()].filter((entry) => !entry.n.read).length;
    status.textContent = items.size === 0 ? 'No notifications. Follow a post to hear of its comments.'
      : `${unread ?? unreadHere} unread`;
    allButton.disabled = (unread ?? unreadHere) === 0;
  }

  async function load() {
    try {
      const body = await api('/api/notifications' + query({ limit: 100 }));
      items.clear();
      list.replaceChildren();
      for (const n of body.notifications) {
        const li = item(n);
        items.set(n.id, { n, li });
        list.append(li);
      }
      setBadge(body.unread);
      renderStatus();
    } catch (error) {
      status.textContent = '';
      showError(error, 'Could not load the notifications');
    }
  }

  async function mark(request) {
    try {
      const result = await api('/api/notifications/read', { method: 'POST', json: request });
      const ids = request.all ? [...items.keys()] : request.ids;
      for (const id of ids) {
        const entry = items.get(id);
        if (!entry || entry.n.read) continue;
        entry.n.read = true;
        const li = item(entry.n);
        entry.li.replaceWith(li);
        entry.li = li;
      }
      setBadge(result.unread);
      renderStatus();
      announce(request.all ? 'All notifications marked read.' : 'Marked read.');
      if (!request.all) list.querySelector('.mark-one')?.focus();
      else allButton.focus();
    } catch (error) {
      showError(error, 'Could not mark read');
    }
  }

  off.push(events.on('notification', (event) => {
    const n = event.notification;
    if (items.has(n.id)) return;
    const li = item(n);
    items.set(n.id, { n, li });
    list.prepend(li);
    renderStatus();
  }));
  off.push(events.on('reconnected', load));
  load();
  return () => { for (const fn of off) fn(); };
}

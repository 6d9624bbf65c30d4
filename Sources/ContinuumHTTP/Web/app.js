// continuum-node web UI: hash routes, one EventSource, no build step, no framework.
//   #/                 timeline        #/post/{id}   post detail
//   #/new              add a post      #/notifications, #/peers, #/groups, #/settings
//   #/?q=…&mine=1&recent=1&near=LAT,LON&radiusKm=K   the timeline with its search and filters (timeline.js)

import { adoptTokenFromURL, loadGroups, nodeStatus } from './api.js';
import { clearErrors, showError } from './dom.js';
import * as events from './events.js';
import * as timeline from './timeline.js';
import * as postView from './post.js';
import * as newPost from './newpost.js';
import * as notifications from './notifications.js';
import * as peers from './peers.js';
import * as groups from './groups.js';
import * as settings from './settings.js';

adoptTokenFromURL();

const main = document.getElementById('main');
const other = document.createElement('div'); // every view but the timeline is rendered here
other.id = 'view';
let unmount = null;
let timelineScroll = 0;
let current = null;
let first = true;

function parse(hash) {
  const invite = hash.match(/^#invite=([0-9A-Za-z-]+)$/);
  if (invite) return { name: 'invite', code: invite[1] };
  // The timeline keeps its search and filters after a "?" (timeline.js); other pages take none.
  const path = (hash.replace(/^#/, '') || '/').split('?')[0];
  let match;
  if (path === '/' || path === '') return { name: 'timeline' };
  if ((match = path.match(/^\/post\/([0-9a-fA-F]{4,64})$/))) return { name: 'post', id: match[1].toLowerCase() };
  if (path === '/new') return { name: 'new' };
  if (path === '/notifications') return { name: 'notifications' };
  if (path === '/peers') return { name: 'peers' };
  if (path === '/groups') return { name: 'groups' };
  if (path === '/settings') return { name: 'settings' };
  return { name: 'missing', path };
}

function route() {
  const next = parse(window.location.hash);
  if (current?.name === 'timeline') timelineScroll = window.scrollY;
  if (unmount) { unmount(); unmount = null; }
  if (!first) clearErrors();

  const timelineElement = timeline.element();
  if (!timelineElement.isConnected) main.append(timelineElement);
  if (!other.isConnected) main.append(other);

  if (next.name === 'timeline') {
    other.replaceChildren();
    other.hidden = true;
    timelineElement.hidden = false;
    window.scrollTo(0, timelineScroll);
    timeline.shown();
  } else {
    timelineElement.hidden = true;
    other.hidden = false;
    window.scrollTo(0, 0);
    if (next.name === 'post') unmount = postView.mount(other, next.id);
    else if (next.name === 'new') unmount = newPost.mount(other);
    else if (next.name === 'notifications') unmount = notifications.mount(other);
    else if (next.name === 'peers') unmount = peers.mount(other);
    else if (next.name === 'groups') unmount = groups.mount(other);
    else if (next.name === 'settings') unmount = settings.mount(other);
    else if (next.name === 'invite') import('./phonelink.js').then((phonelink) => phonelink.invitePage(other, next.code));
    else {
      const p = document.createElement('p');
      p.className = 'panel';
      p.textContent = `There is no page ${next.path}. `;
      const a = document.createElement('a');
      a.href = '#/';
      a.textContent = 'Go to the timeline';
      p.append(a);
      other.replaceChildren(p);
    }
  }

  for (const link of document.querySelectorAll('nav a[data-route]')) {
    if (link.dataset.route === next.name) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  // Move focus to the new view's heading (not on the first load: the person has not navigated yet).
  if (!first) {
    const heading = (next.name === 'timeline' ? timelineElement : other).querySelector('h1');
    heading?.focus({ preventScroll: true });
  }
  first = false;
  current = next;
}

async function start() {
  // Who we are: "mine" in the timeline and "(you)" in comments (this node's id, and its log key in each of its
  // groups). The views work without it.
  loadGroups().catch(() => {});
  try {
    const status = await nodeStatus();
    groups.setBadge(status.pendingRequests);
  } catch (error) {
    showError(error, 'Could not reach the node');
  }
}

/**
 * A phone's browser: opened from the owner's link (#link=CODE) it links itself first, from a guest link
 * (#guest=CODE) it joins as a guest (phonelink.js); holding a device key (set then), it opens its session by signing
 * before anything is read (browser.js). Resolves to 'owner', 'phone' or 'guest'. The owner's browser loads neither
 * module.
 */
async function asDevice() {
  const hash = window.location.hash;
  const link = hash.match(/^#link=([A-Za-z0-9_-]+)$/);
  const guest = hash.match(/^#guest=([A-Za-z0-9_-]+)$/);
  if (!link && !guest && localStorage.getItem('continuum-browser-device') === null) return 'owner';
  // The first page of the feed asked for before the session: asked again once it stands.
  window.continuumFirstFeed = null;
  try {
    if (link || guest) {
      const phonelink = await import('./phonelink.js');
      await (link ? phonelink.linkPage(main, link[1]) : phonelink.guestPage(main, guest[1]));
      main.replaceChildren();
    }
    const browser = await import('./browser.js');
    if (!(await browser.start())) return 'owner';
    // The peers are the node's business, not a phone's (the API refuses them to it); a guest has its group alone.
    const hidden = browser.linked.current.guest ? ['peers', 'groups', 'settings', 'notifications'] : ['peers'];
    for (const name of hidden) document.querySelector(`nav a[data-route="${name}"]`)?.closest('li')?.remove();
    return browser.linked.current.guest ? 'guest' : 'phone';
  } catch (error) {
    showError(error, 'This phone could not open its session with the node');
    return 'phone';
  }
}

// The marker the browser tests use to tell that live updates came without a page load.
window.continuumLoadedAt = performance.timeOrigin;
// An invite's QR code opened here (#invite=CODE): a page that says what the code is for, and nothing else (the
// person opening it has no session on this node).
const invite = window.location.hash.match(/^#invite=([0-9A-Za-z-]+)$/);
if (invite) {
  import('./phonelink.js').then((phonelink) => phonelink.invitePage(main, invite[1]));
  // Leaving it for the app: the app starts as on any load.
  window.addEventListener('hashchange', () => window.location.reload());
} else asDevice().then((who) => {
  // A guest reads its group's posts and hears of them live; the node's status, notifications and requests are not
  // its (the API says 403).
  if (who !== 'guest') start();
  events.connect();
  if (who !== 'guest') {
    notifications.startBadge();
    groups.startBadge();
  }
  window.addEventListener('hashchange', route);
  route();
});

// Peers (#/peers): the peers met, which are connected, and LAN discovery, from /api/peers and /api/status.

import { api, normalizeStatus } from './api.js';
import { h, timeElement, shortId, formatBytes, showError } from './dom.js';
import * as events from './events.js';

const DISCOVERY = {
  on: 'On', unavailable: 'Unavailable', starting: 'Starting', off: 'Off (--no-discovery)', stopped: 'Not running',
};

export function mount(container) {
  const off = [];
  const content = h('div', {}, h('p', { class: 'status-line', role: 'status' }, 'Loading…'));
  container.replaceChildren(h('section', { class: 'view', 'aria-labelledby': 'peers-title' },
    h('div', { class: 'view-head' }, h('h1', { id: 'peers-title', tabindex: '-1' }, 'Peers'),
      h('button', { type: 'button', onclick: () => safeLoad() }, 'Refresh')),
    content));

  async function load() {
    let peers, status;
    try {
      [peers, status] = await Promise.all([api('/api/peers'), api('/api/status')]);
      status = normalizeStatus(status);
    } catch (error) {
      showError(error, 'Could not load the peers');
      return;
    }
    const discovery = peers.discovery ?? status.discovery ?? {};
    const connected = peers.peers.filter((peer) => peer.state === 'connected');
    const summary = h('dl', { class: 'facts' },
      h('dt', {}, 'This node'), h('dd', {}, status.name ?? '(no name)', ' ', h('code', { title: status.id ?? '' }, shortId(status.id))),
      h('dt', {}, 'Connected'), h('dd', { id: 'peers-connected' }, `${connected.length} of ${peers.peers.length} met`),
      h('dt', {}, 'LAN discovery'), h('dd', { id: 'discovery-state' }, DISCOVERY[discovery.state] ?? discovery.state ?? 'unknown',
        discovery.serviceName ? ` as “${discovery.serviceName}”` : '',
        discovery.state === 'on' ? ` · ${discovery.peersPresent} on the LAN now, ${discovery.peersSeen} seen` : ''),
      discovery.lastError && discovery.state !== 'on' ? [h('dt', {}, 'Why'), h('dd', {}, discovery.lastError)] : null,
      status.api ? [h('dt', {}, 'Web UI and API'), h('dd', {}, h('code', {}, String(status.api)))] : null,
      status.posts !== null ? [h('dt', {}, 'Holds'), h('dd', {}, `${status.posts} posts, ${status.comments} comments, ${status.photos} photos`
        + (status.photoBytes !== null ? ` (${formatBytes(status.photoBytes)})` : ''))] : null);

    const list = h('ul', { class: 'peers', id: 'peer-list', 'aria-label': 'Peers met' });
    for (const peer of peers.peers) {
      const isOn = peer.state === 'connected';
      // A refusal either way ("refused: not a member", "refused us: …") is said as the node recorded it.
      const refused = typeof peer.state === 'string' && peer.state.startsWith('refused');
      list.append(h('li', { class: isOn ? 'peer connected' : refused ? 'peer refused' : 'peer' },
        h('p', {}, h('span', { class: 'dot', 'aria-hidden': 'true' }), h('strong', {}, peer.name ?? '(no name)'), ' ',
          h('code', { title: peer.id }, shortId(peer.id)), ' · ', isOn ? 'connected' : refused ? peer.state : 'disconnected'),
        h('p', { class: 'meta' }, peer.address, ' · last seen ', timeElement(peer.lastSeen),
          ` · records in/out ${peer.recordsIn}/${peer.recordsOut} · ${formatBytes(peer.bytesIn)} in, ${formatBytes(peer.bytesOut)} out`,
          peer.pushInterest != null ? ` · wants pushes for ${peer.pushInterest} ${peer.pushInterest === 1 ? 'post' : 'posts'}` : '')));
    }
    content.replaceChildren(summary,
      h('h2', {}, 'Peers met'),
      peers.peers.length ? list : h('p', { class: 'panel' },
        'No peer met yet. Nodes on the same LAN find each other by themselves; otherwise start the node with --peer HOST:PORT.'),
      h('p', { class: 'meta' }, 'Traffic counters add up ended sessions; an open session is counted when it ends.'));
  }

  const safeLoad = () => load().catch((error) => showError(error, 'Could not show the peers'));
  let timer = 0;
  const soon = () => { window.clearTimeout(timer); timer = window.setTimeout(safeLoad, 300); };
  off.push(events.on('peerJoined', soon), events.on('peerLeft', soon), events.on('reconnected', soon));
  safeLoad();
  return () => { window.clearTimeout(timer); for (const fn of off) fn(); };
}

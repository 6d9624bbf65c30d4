// Guests at an event (Docs/WEB.md, "Guests"): the owner opens a group to guests with a link whose QR code a guest's
// phone camera opens; the guests are listed here, each with Remove and Block; "Close the links" stops new guests.

import { api, groupLabel, loadGroups } from './api.js';
import { h, shortId, showError, announce, svgDataURL } from './dom.js';

/** Settings, the owner's: make a guest link, see the guests, remove or block one, close the links. */
export function ownerSection() {
  const groupSelect = h('select', { id: 'guest-group', name: 'group' });
  const make = h('button', { type: 'button', id: 'make-guest-link', class: 'primary' }, 'Make a guest link');
  const close = h('button', { type: 'button', id: 'close-guest-links' }, 'Close the links');
  const shown = h('div', { id: 'guest-link-shown' });
  const list = h('div', { id: 'guest-list' }, h('p', { class: 'status-line', role: 'status' }, 'Loading…'));

  loadGroups().then((groups) => {
    const mine = groups.filter((group) => group.admin && !group.network);
    groupSelect.replaceChildren(...mine.map((group) => h('option', { value: group.id }, groupLabel(group))));
    if (!mine.length) { make.disabled = true; shown.replaceChildren(h('p', { class: 'meta' }, 'Make a group first: guests join one of your groups.')); }
  }, (error) => showError(error, 'Could not read the groups'));

  make.addEventListener('click', async () => {
    make.disabled = true;
    try {
      const made = await api('/api/guests/link', { method: 'POST', json: { group: groupSelect.value || undefined } });
      const qr = h('img', { id: 'guest-link-qr', class: 'phone-qr', alt: `QR code of ${made.url}`, width: 240, height: 240 });
      if (made.qrSvg) qr.src = svgDataURL(made.qrSvg);
      shown.replaceChildren(qr,
        h('p', {}, h('a', { href: made.url, id: 'guest-link-url', class: 'phone-url', rel: 'noreferrer' }, made.url)),
        h('p', { class: 'meta' }, `Guests scan it, pick a name and post in ${made.groupName ?? 'the group'} as themselves, `
          + `until ${new Date(made.expiresAt).toLocaleString()} or until you close the links.`));
      announce('A guest link was made.');
    } catch (error) {
      showError(error, 'No guest link');
    } finally {
      make.disabled = false;
    }
  });

  close.addEventListener('click', async () => {
    try {
      const { closed } = await api('/api/guests/close', { method: 'POST', json: {} });
      shown.replaceChildren(h('p', { class: 'meta', id: 'guest-links-closed' },
        closed === 1 ? 'One guest link closed: nobody new joins with it.' : `${closed} guest links closed.`));
      refresh();
    } catch (error) {
      showError(error, 'The links were not closed');
    }
  });

  async function act(guest, how) {
    const path = `/api/guests/${guest.device}${how === 'block' ? '/block' : ''}`;
    try {
      await api(path, { method: how === 'block' ? 'POST' : 'DELETE' });
      announce(`${guest.name} was ${how === 'block' ? 'blocked' : 'removed'}.`);
      refresh();
    } catch (error) {
      showError(error, `${guest.name} was not ${how === 'block' ? 'blocked' : 'removed'}`);
    }
  }

  function row(guest) {
    const buttons = [];
    if (guest.state === 'active') {
      buttons.push(h('button', { type: 'button', class: 'guest-remove', 'data-device': guest.device,
        onclick: () => act(guest, 'remove') }, 'Remove'));
    }
    if (guest.state !== 'blocked') {
      buttons.push(h('button', { type: 'button', class: 'guest-block danger', 'data-device': guest.device,
        onclick: () => act(guest, 'block') }, 'Block'));
    }
    const state = guest.state === 'active' ? '' : ` · ${guest.state}`;
    return h('li', { class: 'guest', 'data-device': guest.device },
      h('strong', {}, guest.name), ' ',
      h('span', { class: 'meta' }, `in ${guest.groupName ?? shortId(guest.group)} · ${guest.posts} posts${state}`), ' ',
      ...buttons);
  }

  async function refresh() {
    try {
      const { guests, links } = await api('/api/guests');
      const open = links.filter((link) => link.state === 'open').length;
      close.disabled = open === 0;
      list.replaceChildren(guests.length ? h('ul', { class: 'guests' }, ...guests.map(row))
        : h('p', { class: 'meta' }, 'No guests yet.'),
      h('p', { class: 'meta', id: 'guest-links-open' }, open === 1 ? 'One guest link is open.' : `${open} guest links are open.`));
    } catch (error) {
      list.replaceChildren(h('p', { class: 'form-error' }, `Could not read the guests: ${error.message}`));
    }
  }
  refresh();

  return h('div', { class: 'guests-section' },
    h('p', { class: 'help' }, 'At a party: guests scan a QR code and post photos, comments and reactions as themselves, '
      + 'in one group. They see that group alone, change only what they wrote, and never see this node\'s settings.'),
    h('div', { class: 'row' }, h('label', { for: 'guest-group' }, 'Group '), groupSelect, make, close), shown, list);
}

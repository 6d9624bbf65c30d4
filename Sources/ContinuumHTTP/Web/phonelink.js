// Linking a phone's browser as a device (browser.js): the owner's "Link a phone" in Settings (a QR code holding the
// link's address), the page a phone opens from it (#link=CODE), and what Settings shows on a linked phone.

import { api } from './api.js';
import { h, shortId, showError, announce, svgDataURL } from './dom.js';
import * as browser from './browser.js';

/** Settings, the owner's: "Link a phone" makes a one-time link (POST /api/browser/link) and shows its QR code. */
export function ownerSection() {
  const button = h('button', { type: 'button', id: 'link-phone', class: 'primary' }, 'Link a phone');
  const error = h('p', { class: 'form-error', id: 'link-phone-error', role: 'alert', hidden: true });
  const shown = h('div', { id: 'link-phone-shown' });
  button.addEventListener('click', async () => {
    button.disabled = true;
    error.hidden = true;
    try {
      const made = await api('/api/browser/link', { method: 'POST', json: {} });
      const qr = h('img', { id: 'link-phone-qr', class: 'phone-qr', alt: `QR code of ${made.url}`, width: 240, height: 240 });
      if (made.qrSvg) qr.src = svgDataURL(made.qrSvg);
      shown.replaceChildren(qr,
        h('p', {}, h('a', { href: made.url, id: 'link-phone-url', class: 'phone-url', rel: 'noreferrer' }, made.url)),
        h('p', { class: 'meta' }, `Scan it with the phone's camera. Valid once, until ${new Date(made.expiresAt).toLocaleString()}.`));
      announce('A link for a phone was made.');
    } catch (failure) {
      error.textContent = `No link: ${failure.message}`;
      error.hidden = false;
    } finally {
      button.disabled = false;
    }
  });
  const insecure = window.location.protocol !== 'https:' && !['localhost', '127.0.0.1', '[::1]'].includes(window.location.hostname)
    ? h('p', { class: 'panel warning' }, 'A phone needs this page over https to make its key: start the node with --api-tls.') : null;
  return h('div', { class: 'link-phone' },
    h('p', { class: 'help' }, 'Your phone signs your posts, comments and reactions as you, with a key of its own that never '
      + 'leaves it. It cannot change this node\'s settings, invites or members, and it never sees the access token.'),
    insecure, h('p', {}, button), error, shown);
}

/** Settings on a linked phone: whose device this browser is; the node's administration stays with its owner. */
export function linkedSection() {
  const me = browser.linked.current;
  return h('section', { class: 'view settings-view', 'aria-labelledby': 'settings-title' },
    h('h1', { id: 'settings-title', tabindex: '-1' }, 'Settings'),
    h('p', { id: 'linked-as' }, `This browser is a device of ${me.name ?? 'your'} account `,
      h('code', { title: me.device }, shortId(me.device)), '.'),
    h('p', { class: 'help' }, 'It signs your posts, comments and reactions itself, with its own key. The node\'s name, '
      + 'invites, members and devices are changed on the node\'s own page.'));
}

/**
 * The page a phone opens from the owner's link (#link=CODE): whose account it joins, and a button that makes this
 * browser's key and links it. Resolves once linked (the caller then shows the app).
 */
export function linkPage(container, code) {
  return new Promise((resolve) => {
    const status = h('p', { id: 'link-status', role: 'status' }, 'Reading the link…');
    const button = h('button', { type: 'button', id: 'accept-link', class: 'primary', hidden: true }, 'Link this phone');
    container.replaceChildren(h('section', { class: 'view', 'aria-labelledby': 'link-title' },
      h('h1', { id: 'link-title', tabindex: '-1' }, 'Link this phone'), status, h('p', {}, button)));
    if (!browser.canSign()) {
      status.textContent = 'This page must be opened over https (the node\'s --api-tls) for the phone to make its key.';
      return;
    }
    browser.inspectLink(code).then((found) => {
      status.textContent = `This phone becomes a device of ${found.name ?? 'the'} account: it makes its own key, `
        + 'kept in this browser, and posts as ' + (found.name ?? 'its owner') + '.';
      button.hidden = false;
      button.addEventListener('click', async () => {
        button.disabled = true;
        try {
          await browser.acceptLink(code, found.account);
          window.history.replaceState(null, '', window.location.pathname + '#/');
          announce('This phone is linked.');
          resolve();
        } catch (error) {
          button.disabled = false;
          showError(error, 'The phone was not linked');
        }
      }, { once: false });
    }, (error) => { status.textContent = `This link cannot be used: ${error.message}`; });
  });
}

/**
 * The page a guest opens from a guest link (#guest=CODE): which group it joins, a name, and a button that makes this
 * browser's keys and joins. Resolves once joined (the caller then shows the app, scoped to that group).
 */
export function guestPage(container, code) {
  return new Promise((resolve) => {
    const status = h('p', { id: 'guest-status', role: 'status' }, 'Reading the link…');
    const name = h('input', { type: 'text', id: 'guest-name', name: 'name', autocomplete: 'nickname', maxlength: 64,
      required: true, 'aria-describedby': 'guest-help' });
    const button = h('button', { type: 'submit', id: 'join-as-guest', class: 'primary' }, 'Join');
    const form = h('form', { id: 'guest-form', class: 'settings-form', novalidate: true, hidden: true },
      h('div', { class: 'field' }, h('label', { for: 'guest-name' }, 'Your name'),
        h('div', { class: 'row' }, name, button),
        h('p', { class: 'help', id: 'guest-help' }, 'The others see it beside your photos, comments and reactions.')));
    container.replaceChildren(h('section', { class: 'view', 'aria-labelledby': 'guest-title' },
      h('h1', { id: 'guest-title', tabindex: '-1' }, 'Join as a guest'), status, form));
    if (!browser.canSign()) {
      status.textContent = 'This page must be opened over https (the node\'s --api-tls) for the phone to make its key.';
      return;
    }
    browser.inspectGuest(code).then((found) => {
      const group = found.groupName ?? 'this group';
      status.textContent = `${found.host ?? 'The host'} invites you to share photos in “${group}”. You post as `
        + 'yourself, with a key this browser makes and keeps; you see this group alone.';
      form.hidden = false;
      name.focus();
      form.addEventListener('submit', async (event) => {
        event.preventDefault();
        if (!name.value.trim()) { showError(new Error('Pick the name the others will see.'), 'Not joined'); return; }
        button.disabled = true;
        try {
          await browser.acceptGuest(code, name.value.trim(), found.group);
          window.history.replaceState(null, '', window.location.pathname + '#/');
          announce(`You joined ${group}.`);
          resolve();
        } catch (error) {
          button.disabled = false;
          showError(error, 'You could not join');
        }
      });
    }, (error) => { status.textContent = `This link cannot be used: ${error.message}`; });
  });
}

/**
 * The page an invite's QR code opens (#invite=CODE), on a phone or any browser without this node's token: what the
 * code is for (a computer running continuum-node joins the group with it), and how a phone takes part instead.
 */
export function invitePage(container, code) {
  const command = `continuum-node join ${code}`;
  const copy = h('button', { type: 'button', id: 'invite-page-copy' }, 'Copy the command');
  const copied = h('span', { class: 'meta', role: 'status' });
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(command);
      copied.textContent = 'Copied.';
    } catch {
      window.getSelection()?.selectAllChildren(container.querySelector('#invite-page-command'));
      copied.textContent = 'Selected: copy it.';
    }
  });
  container.replaceChildren(h('section', { class: 'view', id: 'invite-page', 'aria-labelledby': 'invite-page-title' },
    h('h1', { id: 'invite-page-title', tabindex: '-1' }, 'An invite to a group'),
    h('p', {}, 'This code lets a computer running continuum-node join the group, once. On that computer, run:'),
    h('p', { class: 'row code-row' }, h('code', { id: 'invite-page-command', class: 'invite-code' }, command), copy, copied),
    h('p', {}, 'or paste the code, or this page\'s address, in its web page under Groups → Join a group.'),
    h('p', { class: 'help', id: 'invite-page-phone' }, 'On a phone, ask the person who invited you for a guest link '
      + '(a phone posts as a guest, with one scan), or to link your phone to your own node.')));
}

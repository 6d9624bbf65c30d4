// Settings (#/settings): this node's display name (PUT /api/name), the devices of your account (GET /api/devices)
// and a code that links a new one (POST /api/devices/link),
// what the node is (id, version, data directory, the largest photo it fetches by itself) from /api/status, and "Open
// on your phone" (GET /api/phone): the addresses a phone on the LAN opens, the QR code of the first, and the
// certificate's fingerprint under https.

import { api, nodeStatus, signedWrites } from './api.js';
import { h, shortId, formatMiB, showError, announce, clearErrors, svgDataURL } from './dom.js';

export function mount(container) {
  let alive = true;
  if (signedWrites.current) {
    // A linked phone: none of the node's administration is its to change.
    import('./phonelink.js').then((phonelink) => { if (alive) container.replaceChildren(phonelink.linkedSection()); });
    return () => { alive = false; };
  }
  const linkPhone = h('div', { id: 'link-phone-section' });
  import('./phonelink.js').then((phonelink) => { if (alive) linkPhone.replaceChildren(phonelink.ownerSection()); });
  const guests = h('div', { id: 'guests-section' });
  import('./guests.js').then((module) => { if (alive) guests.replaceChildren(module.ownerSection()); });
  const nameInput = h('input', { type: 'text', id: 'name-input', name: 'name', autocomplete: 'nickname', maxlength: 64,
    'aria-describedby': 'name-help' });
  const nameError = h('p', { class: 'form-error', id: 'name-error', role: 'alert', hidden: true });
  const nameStatus = h('p', { class: 'meta', id: 'name-status', role: 'status' });
  const saveButton = h('button', { type: 'submit', id: 'save-name' }, 'Save');
  const nameForm = h('form', { class: 'settings-form', id: 'name-form', novalidate: true },
    h('div', { class: 'field' }, h('label', { for: 'name-input' }, 'Display name'),
      h('div', { class: 'row' }, nameInput, saveButton),
      h('p', { class: 'help', id: 'name-help' }, 'The name your peers see beside your posts and comments: one line, up to 64 bytes.')),
    nameError, nameStatus);
  const facts = h('dl', { class: 'facts', id: 'node-facts' }, h('dt', {}, 'Node'), h('dd', {}, 'Loading…'));
  const phone = h('div', { class: 'phone', id: 'phone' }, h('p', { class: 'status-line', role: 'status' }, 'Loading…'));
  const devices = h('div', { class: 'devices', id: 'devices' }, h('p', { class: 'status-line', role: 'status' }, 'Loading…'));

  container.replaceChildren(h('section', { class: 'view settings-view', 'aria-labelledby': 'settings-title' },
    h('h1', { id: 'settings-title', tabindex: '-1' }, 'Settings'),
    h('section', { class: 'settings-section', 'aria-labelledby': 'name-title' }, h('h2', { id: 'name-title' }, 'Your name'), nameForm),
    h('section', { class: 'settings-section', 'aria-labelledby': 'devices-title' }, h('h2', { id: 'devices-title' }, 'Your devices'), devices),
    h('section', { class: 'settings-section', 'aria-labelledby': 'link-phone-title' },
      h('h2', { id: 'link-phone-title' }, 'Your phone, as you'), linkPhone),
    h('section', { class: 'settings-section', 'aria-labelledby': 'guests-title' },
      h('h2', { id: 'guests-title' }, 'Guests at an event'), guests),
    h('section', { class: 'settings-section', 'aria-labelledby': 'phone-title' }, h('h2', { id: 'phone-title' }, 'Open on your phone'), phone),
    h('section', { class: 'settings-section', 'aria-labelledby': 'node-title' }, h('h2', { id: 'node-title' }, 'This node'), facts)));

  function nameFailed(message) {
    nameError.textContent = message;
    nameError.hidden = false;
    nameInput.setAttribute('aria-invalid', 'true');
    nameInput.focus();
  }

  nameForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearErrors();
    nameError.hidden = true;
    nameInput.removeAttribute('aria-invalid');
    nameStatus.textContent = '';
    saveButton.disabled = true;
    try {
      // The node judges the name (blank, too long, a control character): its message is shown as it is.
      const result = await api('/api/name', { method: 'PUT', json: { name: nameInput.value } });
      nameInput.value = result.name;
      nameStatus.textContent = `Saved: your peers now see you as “${result.name}”.`;
      announce('Name saved.');
      nodeStatus(true).then(showFacts, () => {});
    } catch (error) {
      nameFailed(error.message);
    } finally {
      saveButton.disabled = false;
    }
  });

  function showFacts(status) {
    if (!alive) return;
    const fact = (term, id, ...value) => [h('dt', {}, term), h('dd', { id }, ...value)];
    facts.replaceChildren(
      ...fact('Node id', 'settings-node-id', h('code', { class: 'node-id', title: status.id ?? '' }, status.id ?? 'unknown')),
      ...fact('Version', 'settings-version', status.version ?? 'not said by this node'),
      ...(status.dataDirectory ? fact('Data directory', 'settings-data', h('code', {}, status.dataDirectory)) : []),
      ...(status.maxPhotoBytes !== null ? fact('Photos fetched by themselves', 'settings-max-photo',
        status.maxPhotoBytes === 0 ? 'none (--max-photo-mb 0): fetch each on its post'
          : `up to ${formatMiB(status.maxPhotoBytes)} (--max-photo-mb); a larger one on its post, with Fetch`) : []),
      ...(status.api ? fact('Web UI and API', 'settings-api', h('code', {}, String(status.api))) : []));
  }

  async function loadName() {
    try {
      const status = await nodeStatus(true);
      if (!alive) return;
      if (document.activeElement !== nameInput) nameInput.value = status.name ?? '';
      nameInput.placeholder = status.name ? '' : `No name yet (peers see ${shortId(status.id)})`;
      showFacts(status);
    } catch (error) {
      showError(error, 'Could not read the node’s status');
    }
  }

  async function loadPhone() {
    try {
      const body = await api('/api/phone');
      if (alive) phone.replaceChildren(...phoneContent(body));
    } catch (error) {
      if (alive) phone.replaceChildren(h('p', { class: 'panel warning' }, `The addresses could not be read: ${error.message}`));
    }
  }

  async function loadDevices() {
    try {
      const body = await api('/api/devices');
      if (alive) devices.replaceChildren(...devicesContent(body, removeDevice), ...(body.account ? [linkForm()] : []));
    } catch (error) {
      if (alive) devices.replaceChildren(h('p', { class: 'panel warning' }, `The devices could not be read: ${error.message}`));
    }
  }

  /** Removes another device of the account (DELETE /api/devices/{id}), once the person confirms; then the list again. */
  async function removeDevice(device, button) {
    const who = `${device.name ?? 'the device without a name'} (${shortId(device.id)})`;
    if (!window.confirm(`Remove ${who} from your account? Every node of your groups then refuses what it signs from now on; ` +
      'what it posted stays, as yours. Do it from another device if this one was stolen.')) return;
    button.disabled = true;
    try {
      const removed = await api(`/api/devices/${device.id}`, { method: 'DELETE' });
      if (!alive) return;
      announce(`Removed ${who}: ${removed.kept} of its records stay.`);
      await loadDevices();
    } catch (failure) {
      if (!alive) return;
      button.disabled = false;
      button.after(h('p', { class: 'form-error', role: 'alert' }, `Not removed: ${failure.message}`));
    }
  }

  /** "Link a device": a one-time code (POST /api/devices/link) and its QR code, for `init --link` on the new machine. */
  function linkForm() {
    const button = h('button', { type: 'button', id: 'link-device' }, 'Link a device');
    const error = h('p', { class: 'form-error', id: 'link-error', role: 'alert', hidden: true });
    const shown = h('div', { id: 'link-shown' });
    button.addEventListener('click', async () => {
      button.disabled = true;
      error.hidden = true;
      try {
        const made = await api('/api/devices/link', { method: 'POST', json: {} });
        if (!alive) return;
        const qr = h('img', { id: 'link-qr', class: 'invite-qr', alt: `QR code of the link code ${made.code}`, width: 220, height: 220 });
        if (typeof made.qrSvg === 'string' && made.qrSvg) qr.src = svgDataURL(made.qrSvg);
        else qr.hidden = true;
        shown.replaceChildren(h('div', { class: 'invite', id: 'link-box', role: 'group', 'aria-label': 'Link code' },
          h('p', {}, 'On the new machine, run:'),
          h('p', {}, h('code', { id: 'link-code', class: 'invite-code', tabindex: '0' }, `continuum-node init --link ${made.code}`)),
          qr,
          h('p', { class: 'meta', id: 'link-valid' }, `Valid once, until ${new Date(made.expiresAt).toLocaleString()}. `
            + `The new device dials ${made.host}:${made.port}, gets its own key, your name, your groups and their history.`)));
        announce('A link code was made.');
      } catch (failure) {
        if (!alive) return;
        error.textContent = `No link code: ${failure.message}`;
        error.hidden = false;
      } finally {
        button.disabled = false;
      }
    });
    return h('div', { class: 'link-device' },
      h('p', { class: 'help' }, 'Another machine of yours can join your account: it keeps its own key, never a copy of this one.'),
      h('p', {}, button), error, shown);
  }

  loadName();
  loadDevices();
  loadPhone();
  return () => { alive = false; };
}

/** The devices section: the account, then each device (this one first) with what this node knows of it, and a Remove
 * button for each other device (`remove(device, button)`). */
function devicesContent(body, remove) {
  if (!body.account) {
    return [h('p', { class: 'help' }, 'This node has no account: its key signed records before accounts existed.')];
  }
  const list = h('ul', { class: 'device-list', id: 'device-list', 'aria-label': 'Devices of your account' },
    body.devices.map((device) => h('li', { class: 'device', 'data-id': device.id },
      h('strong', {}, device.name ?? 'No name'), ' ', h('code', { title: device.id }, shortId(device.id)),
      h('span', { class: 'meta' }, [device.thisDevice ? 'this device' : null, device.founder ? 'founded the account' : null,
        device.lastSeen ? `last seen ${new Date(device.lastSeen).toLocaleString()}` : null].filter(Boolean)
        .map((note) => ` · ${note}`).join('')),
      device.thisDevice ? null : removeButton(device, remove))));
  const account = h('p', { class: 'help', id: 'devices-account' }, 'Account ', h('code', { title: body.account }, shortId(body.account)),
    body.recoveryCode ? ', with a recovery code (shown once, when it was made).' : ', without a recovery code.');
  return [account, list];
}

/** A device's Remove button. */
function removeButton(device, remove) {
  const button = h('button', { type: 'button', class: 'remove-device', 'aria-label': `Remove ${device.name ?? 'the device'} ${shortId(device.id)}` }, 'Remove');
  button.addEventListener('click', () => remove(device, button));
  return h('span', {}, ' ', button);
}

/** The phone section: the node's message, the QR code of the first address, every address, the fingerprint. */
function phoneContent(body) {
  const message = h('p', { id: 'phone-message', class: body.reachable ? 'help' : 'panel warning' }, body.message);
  if (!body.reachable || !body.url) return [message];
  const qr = h('img', { id: 'phone-qr', class: 'phone-qr', alt: `QR code of ${body.url}`, width: 240, height: 240 });
  if (typeof body.qr === 'string' && body.qr) qr.src = svgDataURL(body.qr);
  else qr.hidden = true;
  const urls = h('ul', { class: 'phone-urls', id: 'phone-urls', 'aria-label': 'Addresses to open' },
    body.urls.map((url, index) => h('li', {}, h('a', { href: url, class: 'phone-url', id: index === 0 ? 'phone-url' : null,
      rel: 'noreferrer' }, url))));
  const fingerprint = body.tls && body.fingerprint ? h('p', { class: 'help', id: 'phone-fingerprint' },
    'The browser warns that the certificate is not trusted: go on only if it shows this fingerprint: ',
    h('code', {}, body.fingerprint)) : null;
  const tokenNote = body.url.includes('token=') ? h('p', { class: 'help' },
    'The address holds this node’s access token: anyone who has it can post as you. Show it only to your own devices.') : null;
  return [message, qr, urls, fingerprint, tokenNote].filter(Boolean);
}

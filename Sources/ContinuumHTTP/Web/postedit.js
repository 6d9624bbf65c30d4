// The edit form of one of your own posts, in place of its caption on the post's page (post.js): the caption, the
// location (latitude,longitude; empty or *Remove location*: none) and a new photo. *Save* sends what changed in one
// request, so one edit: with a new photo, PUT …/photo with the caption and the location beside it; without, one
// PATCH. A refusal shows the node's message in the form and keeps everything filled in.

import { api, replacePhoto, signedWrites } from './api.js';
import { h, clearErrors, announce } from './dom.js';

/**
 * The form for the post `current()` (read again at each save: a live edit may change it meanwhile).
 * `onSaved(post)` with the node's answer after a save; `onClose()` when it is done with (saved or cancelled);
 * `gone()` whether the post was deleted meanwhile. Returns `{ element, focus }`.
 */
export function postEditForm(current, { onSaved, onClose, gone }) {
  const textarea = h('textarea', { id: 'caption-edit', name: 'caption', rows: 3, required: true, maxlength: 2048 });
  textarea.value = current().caption;
  const locationInput = h('input', { id: 'location-edit', name: 'location', type: 'text', inputmode: 'decimal',
    autocomplete: 'off', placeholder: '48.8566,2.3522', 'aria-describedby': 'location-edit-help' });
  const locationText = (l) => (l ? `${l.latitude},${l.longitude}` : '');
  locationInput.value = locationText(current().location);
  const removeLocation = h('button', { type: 'button', id: 'remove-location', class: 'danger', onclick: () => {
    locationInput.value = '';
    updateRemove();
    announce('The location will be removed when you save.');
    locationInput.focus();
  } }, 'Remove location');
  const updateRemove = () => { removeLocation.disabled = locationInput.value.trim() === ''; };
  locationInput.addEventListener('input', updateRemove);
  updateRemove();
  const photoInput = h('input', { type: 'file', id: 'photo-replace', name: 'photo',
    accept: 'image/jpeg,image/png,image/heic,image/webp,image/gif,image/*', 'aria-describedby': 'photo-replace-help' });
  const keep = h('input', { type: 'checkbox', id: 'edit-keep-metadata', name: 'keepMetadata' });
  const keepRow = h('div', { class: 'field', id: 'edit-keep-metadata-row', hidden: true },
    h('label', { for: 'edit-keep-metadata', class: 'check' }, keep, ' Post the file as it is, with where it was taken'));
  photoInput.addEventListener('change', () => { keep.checked = false; keepRow.hidden = true; });
  const formError = h('p', { class: 'form-error', id: 'edit-error', role: 'alert', hidden: true });
  const save = h('button', { type: 'submit', id: 'save-edit' }, 'Save');

  const close = () => onClose();

  function fail(message, field) {
    formError.textContent = message;
    formError.hidden = false;
    for (const control of [textarea, locationInput, photoInput]) control.removeAttribute('aria-invalid');
    const target = { caption: textarea, location: locationInput, photo: photoInput }[field];
    if (target) {
      target.setAttribute('aria-invalid', 'true');
      target.focus();
    }
  }

  /** The location field as the API takes it: undefined (unchanged), null (removed) or {latitude, longitude}. */
  function locationChange() {
    const text = locationInput.value.trim();
    if (text === locationText(current().location)) return undefined;
    if (text === '') return current().location ? null : undefined;
    const parts = text.split(',').map((part) => part.trim());
    const [latitude, longitude] = parts.map(Number);
    if (parts.length !== 2 || parts.some((part) => part === '') || !Number.isFinite(latitude) || !Number.isFinite(longitude)) {
      throw Object.assign(new Error('Write the location as latitude,longitude in decimal degrees, for example 48.8566,2.3522.'),
        { field: 'location' });
    }
    return { latitude, longitude };
  }

  const form = h('form', { class: 'edit-form', id: 'edit-form', novalidate: true, onsubmit: async (event) => {
    event.preventDefault();
    clearErrors();
    formError.hidden = true;
    const file = photoInput.files[0] ?? null;
    const change = {};
    try {
      const location = locationChange();
      if (location !== undefined) change.location = location;
    } catch (error) {
      fail(error.message, error.field);
      return;
    }
    if (textarea.value !== current().caption) change.caption = textarea.value;
    if (change.caption !== undefined && !change.caption.trim()) {
      fail('The caption is blank; write one.', 'caption');
      return;
    }
    if (!file && Object.keys(change).length === 0) { close(); return; }
    save.disabled = true;
    try {
      if (file) {
        // One request, so one edit (and one notification for a follower): the caption and the location go with
        // the photo (location: LAT,LON, or empty to remove it).
        const data = new FormData();
        data.append('photo', file, file.name);
        if (keep.checked) data.append('keepMetadata', 'true');
        if (change.caption !== undefined) data.append('caption', change.caption);
        if (change.location !== undefined) {
          data.append('location', change.location ? `${change.location.latitude},${change.location.longitude}` : '');
        }
        onSaved(await replacePhoto(current().id, data));
        photoInput.value = '';
        keep.checked = false;
        keepRow.hidden = true;
      } else {
        onSaved(await (signedWrites.current ? signedWrites.current.edit(current().id, change)
          : api(`/api/posts/${current().id}`, { method: 'PATCH', json: change })));
      }
      close();
      announce(file ? 'The photo was replaced.' : 'Saved.');
    } catch (error) {
      if (error.code === 'location_not_removable') {
        keepRow.hidden = false;
        fail(error.message.replace(/send keepMetadata=true/, 'tick “Post the file as it is” below'), 'photo');
      } else {
        fail(error.message, error.field);
      }
    } finally {
      save.disabled = gone();
    }
  } },
  h('div', { class: 'field' }, h('label', { for: 'caption-edit' }, 'Caption'), textarea),
  h('div', { class: 'field' },
    h('label', { for: 'location-edit' }, 'Location'),
    h('div', { class: 'row' }, locationInput, removeLocation),
    h('p', { class: 'help', id: 'location-edit-help' }, 'Latitude,longitude in decimal degrees. Empty: the post has no location.')),
  h('div', { class: 'field' },
    h('label', { for: 'photo-replace' }, 'Replace the photo'), photoInput,
    h('p', { class: 'help', id: 'photo-replace-help' },
      'Optional. The new photo takes the old one’s place, which is erased on every node. Where it was taken is removed from the file, as for a new post.')),
  keepRow,
  formError,
  h('div', { class: 'actions' }, save, h('button', { type: 'button', id: 'cancel-edit', onclick: close }, 'Cancel')));
  return { element: form, focus: () => textarea.focus() };
}

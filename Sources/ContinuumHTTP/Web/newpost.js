// Add post (#/new): file picker and drop zone, preview, caption, optional location, upload with progress. Several
// photos chosen or dropped at once are each a post of their own, uploaded one after the other (batch.js).
// The location stays home: the photo's own GPS position is shared only when "Share where this was taken" is ticked
// (unticked by default; it shows the position the node found in the chosen photo), else the node removes it.
// A refusal shows the API's message and keeps everything filled in. The form survives leaving the page and coming
// back (its state is kept in this module) until a post is made.
// A post goes to one group: a picker when this node is in several (the first by name chosen), nothing to choose
// in one, and in none a note that the post stays on this node.

import { uploadPost, inspectPhoto, loadGroups, groupLabel, session } from './api.js';
import { h, showError, clearErrors, announce, formatBytes } from './dom.js';
import * as timeline from './timeline.js';
// batch.js is loaded when several photos are first chosen (import()), not with the app.
let batchModule = null;
const loadBatch = () => (batchModule ??= import('./batch.js'));

let form = null; // kept between visits
let file = null;
let previewURL = null;
let upload = null;
let inspecting = null; // the AbortController of the look at the chosen photo
let groupsKnown = null; // the groups as this visit asked for them (a promise)
let showGroups = () => {};
let batching = false; // several photos being uploaded

export function mount(container) {
  if (!form) form = build();
  container.replaceChildren(h('section', { class: 'view new-view', 'aria-labelledby': 'new-title' },
    h('h1', { id: 'new-title', tabindex: '-1' }, 'New post'), form));
  // Asked on each visit: a group may have been joined or made meanwhile.
  groupsKnown = loadGroups(true);
  groupsKnown.then((groups) => showGroups(groups), (error) => showGroups(null, error));
  return () => {};
}

/** The groups sorted by name as people read them (case and accents aside), nameless ones last. */
function byName(groups) {
  return [...groups].sort((a, b) => (a.name === null) - (b.name === null)
    || (a.name ?? '').localeCompare(b.name ?? '', undefined, { sensitivity: 'base' }) || a.id.localeCompare(b.id));
}

function build() {
  const input = h('input', { type: 'file', id: 'photo-input', name: 'photo', multiple: true,
    accept: 'image/jpeg,image/png,image/heic,image/webp,image/gif,image/*', class: 'file-input' });
  let batch = null; // the list of several photos (batch.js), once some were chosen
  const batchSlot = h('div', { class: 'batch-slot' });
  const preview = h('img', { class: 'preview', alt: '', hidden: true, id: 'preview' });
  const fileInfo = h('p', { class: 'meta', id: 'file-info', 'aria-live': 'polite' }, 'No photo chosen.');
  const zone = h('label', { for: 'photo-input', class: 'drop-zone', id: 'drop-zone' },
    preview,
    h('span', { class: 'drop-text' }, h('strong', {}, 'Choose photos'), ' or drop them here'),
    h('span', { class: 'meta' }, 'JPEG, PNG, HEIC, WebP or GIF'));
  const caption = h('textarea', { id: 'caption', name: 'caption', rows: 3, maxlength: 2048, 'aria-describedby': 'caption-help' });
  const location = h('input', { id: 'location', name: 'location', type: 'text', inputmode: 'decimal', autocomplete: 'off',
    placeholder: '48.8566,2.3522', 'aria-describedby': 'location-help' });
  const share = h('input', { type: 'checkbox', id: 'share-location', name: 'locationFromPhoto', disabled: true,
    'aria-describedby': 'share-location-help' });
  const shareHelp = h('p', { class: 'help', id: 'share-location-help', 'aria-live': 'polite' },
    'Choose a photo to see whether it says where it was taken.');
  share.addEventListener('change', () => { location.disabled = share.checked; });
  // Shown only after the node said this photo's location cannot be removed (a HEIC with a GPS position, a GIF with
  // XMP): ticked, the upload sends keepMetadata=true and the file is posted as it is.
  const keep = h('input', { type: 'checkbox', id: 'keep-metadata', name: 'keepMetadata' });
  const keepRow = h('div', { class: 'field', id: 'keep-metadata-row', hidden: true },
    h('label', { for: 'keep-metadata', class: 'check' }, keep, ' Post the file as it is, with where it was taken'));
  const progress = h('progress', { id: 'upload-progress', max: 100, value: 0, hidden: true, 'aria-label': 'Upload progress' });
  const progressText = h('span', { class: 'meta', id: 'upload-progress-text', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', id: 'upload', class: 'primary' }, 'Share post');
  const cancel = h('button', { type: 'button', id: 'cancel-upload', hidden: true,
    onclick: () => { upload?.abort(); batch?.abort(); } }, 'Cancel upload');
  const formError = h('p', { class: 'form-error', id: 'form-error', role: 'alert', hidden: true });
  const groupSelect = h('select', { id: 'post-group', name: 'group', required: true, 'aria-describedby': 'post-group-help' });
  const groupRow = h('div', { class: 'field', id: 'post-group-row', hidden: true },
    h('label', { for: 'post-group' }, 'Share with'), groupSelect,
    h('p', { class: 'help', id: 'post-group-help' }, 'Only the members of this group receive the post, its photo and its comments.'));
  const groupNote = h('p', { class: 'help', id: 'post-group-note', hidden: true });
  showGroups = (groups, error) => {
    const chosen = groupSelect.value;
    groupSelect.replaceChildren();
    groupRow.hidden = true;
    groupNote.hidden = true;
    groupNote.classList.remove('panel', 'warning');
    if (!groups) {
      groupNote.hidden = false;
      groupNote.textContent = `This node’s groups could not be read (${error?.message ?? 'unknown error'}); the node chooses when it is in one.`;
    } else if (groups.length === 0) {
      groupNote.hidden = false;
      groupNote.classList.add('panel', 'warning');
      groupNote.replaceChildren('This node is in no group: the post stays on this node, shared with nobody (also after it joins one). ',
        h('a', { href: '#/groups' }, 'Create or join a group'), ' to share.');
    } else if (groups.length === 1) {
      groupNote.hidden = false;
      groupNote.replaceChildren('Shared with the members of ', h('strong', {}, groupLabel(groups[0])), '.');
    } else {
      // Two groups of one name (joined from two nodes that chose it): each also by the start of its id.
      const named = new Map();
      for (const group of groups) named.set(groupLabel(group), (named.get(groupLabel(group)) ?? 0) + 1);
      for (const group of byName(groups)) {
        const label = groupLabel(group);
        groupSelect.append(h('option', { value: group.id }, named.get(label) > 1 ? `${label} · ${group.id.slice(0, 8)}` : label));
      }
      if (groups.some((group) => group.id === chosen)) groupSelect.value = chosen;
      else groupSelect.selectedIndex = 0;
      groupRow.hidden = false;
    }
  };

  const locationRow = h('div', { class: 'field' },
    h('label', { for: 'location' }, 'Location (optional)'),
    h('div', { class: 'row' }, location),
    h('p', { class: 'help', id: 'location-help' }, 'Latitude,longitude in decimal degrees. Left empty, the post has no location.'));
  const shareRow = h('div', { class: 'field' },
    h('label', { for: 'share-location', class: 'check' }, share, ' Share where this was taken'),
    shareHelp);
  if (window.isSecureContext && 'geolocation' in navigator) {
    const here = h('button', { type: 'button', id: 'use-location', onclick: () => {
      here.disabled = true;
      navigator.geolocation.getCurrentPosition((position) => {
        location.value = `${position.coords.latitude.toFixed(6)},${position.coords.longitude.toFixed(6)}`;
        here.disabled = false;
      }, (error) => {
        showError({ message: `Your location is not available: ${error.message}` });
        here.disabled = false;
      }, { timeout: 15000 });
    } }, 'Use my location');
    locationRow.querySelector('.row').append(here);
  }

  const element = h('form', { id: 'new-post', class: 'new-post', novalidate: true },
    h('div', { class: 'field' }, zone, input, fileInfo, batchSlot),
    h('div', { class: 'field' },
      h('label', { for: 'caption' }, 'Caption'), caption,
      h('p', { class: 'help', id: 'caption-help' }, 'Required. Everyone you share with sees it; you can edit it later.')),
    groupRow,
    groupNote,
    shareRow,
    keepRow,
    locationRow,
    formError,
    h('div', { class: 'actions' }, submit, cancel, progress, progressText));

  /** Asks the node where the chosen photo says it was taken; the box can be ticked only when it says. */
  function lookForPosition(chosen) {
    inspecting?.abort();
    inspecting = null;
    share.checked = false;
    share.disabled = true;
    location.disabled = false;
    if (!chosen) {
      shareHelp.textContent = 'Choose a photo to see whether it says where it was taken.';
      return;
    }
    shareHelp.textContent = 'Looking for a position in the photo…';
    const controller = new AbortController();
    inspecting = controller;
    inspectPhoto(chosen, controller.signal).then((found) => {
      if (inspecting !== controller) return;
      if (found.location) {
        share.disabled = false;
        shareHelp.textContent = `The photo says it was taken at ${formatPosition(found.location)}. Unticked, the post ` +
          'has no location and the photo is shared without its GPS position.';
      } else {
        shareHelp.textContent = 'The photo does not say where it was taken.';
      }
    }, (error) => {
      if (inspecting !== controller || error.name === 'AbortError') return;
      shareHelp.textContent = `The photo could not be read here: ${error.message}`;
    });
  }

  function choose(chosen) {
    file = chosen ?? null;
    lookForPosition(file);
    keep.checked = false;
    keepRow.hidden = true;
    if (previewURL) URL.revokeObjectURL(previewURL);
    previewURL = null;
    if (!file) {
      preview.hidden = true;
      fileInfo.textContent = 'No photo chosen.';
      zone.classList.remove('has-file');
      return;
    }
    fileInfo.textContent = `${file.name} · ${formatBytes(file.size)}`;
    zone.classList.add('has-file');
    if (file.type.startsWith('image/')) {
      previewURL = URL.createObjectURL(file);
      preview.src = previewURL;
      preview.alt = `Preview of ${file.name}`;
      preview.hidden = false;
      // A format this browser cannot show (HEIC in most): no preview, the node still takes it.
      preview.onerror = () => { preview.hidden = true; };
    } else {
      preview.hidden = true;
    }
  }

  /** One photo: its preview and its own position; several: the list, each a post of its own. */
  async function chooseFiles(files) {
    if (files.length <= 1) {
      batch?.clear();
      choose(files[0]);
      return;
    }
    choose(null);
    if (!batch) {
      try {
        batch = (await loadBatch()).batchList();
      } catch (error) {
        showFormError(`The list of photos could not be shown: ${error.message}`, 'photo');
        return;
      }
      batchSlot.replaceChildren(batch.element);
    }
    batch.show(files);
    fileInfo.textContent = `${files.length} photos: each becomes a post of its own, with its caption or the one below.`;
    shareHelp.textContent = 'With several photos, each is posted without the position it holds; type a location below ' +
      'to give them all one.';
  }

  input.addEventListener('change', () => chooseFiles([...input.files]));
  for (const type of ['dragenter', 'dragover']) {
    zone.addEventListener(type, (event) => { event.preventDefault(); zone.classList.add('dragging'); });
  }
  for (const type of ['dragleave', 'dragend']) zone.addEventListener(type, () => zone.classList.remove('dragging'));
  zone.addEventListener('drop', (event) => {
    event.preventDefault();
    zone.classList.remove('dragging');
    const dropped = [...(event.dataTransfer?.files ?? [])];
    if (dropped.length) {
      input.value = '';
      chooseFiles(dropped);
    }
  });

  function showFormError(message, field) {
    formError.textContent = message;
    formError.hidden = false;
    for (const control of [caption, location, input, share, groupSelect]) control.removeAttribute('aria-invalid');
    const target = { caption, location, photo: input, locationFromPhoto: share, group: groupSelect }[field];
    if (target) {
      target.setAttribute('aria-invalid', 'true');
      (target === input ? zone : target).scrollIntoView({ block: 'center' });
      target.focus();
    }
  }

  let preparing = false;
  element.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (upload || preparing || batching) return;
    clearErrors();
    formError.hidden = true;
    // Everything else (type, size, caption rules, location format) is the node's to judge: its message is shown.
    if (!file && !batch?.active) {
      showFormError('Choose a photo first.', 'photo');
      return;
    }
    // Which group: the picker once the groups are known (with one group or none, the node decides; no field).
    preparing = true;
    submit.disabled = true;
    await groupsKnown?.catch(() => null);
    preparing = false;
    submit.disabled = false;
    if (!groupRow.hidden && !groupSelect.value) {
      showFormError('Choose the group to share the post with.', 'group');
      return;
    }
    if (batch?.active) {
      await postSeveral();
      return;
    }
    const data = new FormData();
    data.append('photo', file, file.name);
    data.append('caption', caption.value);
    if (!groupRow.hidden) data.append('group', groupSelect.value);
    if (share.checked) data.append('locationFromPhoto', 'true');
    if (keep.checked) data.append('keepMetadata', 'true');
    else if (location.value.trim()) data.append('location', location.value.trim());

    submit.disabled = true;
    cancel.hidden = false;
    progress.hidden = false;
    progress.value = 0;
    progressText.textContent = 'Uploading…';
    upload = uploadPost(data, (loaded, total) => {
      progress.value = Math.round((loaded / total) * 100);
      progressText.textContent = loaded < total ? `${formatBytes(loaded)} of ${formatBytes(total)}` : 'Checking the photo…';
    });
    upload.promise.then((post) => {
      // Made: clear the form for the next one, show the post.
      const group = groupSelect.value; // the next post most likely goes to the same group
      element.reset();
      groupSelect.value = group;
      choose(null);
      progress.hidden = true;
      progressText.textContent = '';
      timeline.addLocalPost(post);
      announce('Posted.');
      window.location.hash = `#/post/${post.id}`;
    }, (error) => {
      progress.hidden = true;
      progressText.textContent = '';
      if (error.code === 'location_not_removable') {
        keepRow.hidden = false;
        showFormError(error.message.replace(/send keepMetadata=true/, 'tick “Post the file as it is” below'), 'photo');
      } else if (error.code !== 'aborted') {
        showFormError(error.message, error.field);
      }
    }).finally(() => {
      upload = null;
      submit.disabled = false;
      cancel.hidden = true;
    });
  });
  /** Each chosen photo as a post of its own; the form is cleared once all are posted. */
  async function postSeveral() {
    const group = groupRow.hidden ? null : groupSelect.value;
    batching = true;
    submit.disabled = true;
    cancel.hidden = false;
    const { posted, refused } = await batch.upload((own) => ({
      caption: own ?? caption.value,
      group,
      keepMetadata: keep.checked ? 'true' : null,
      location: !keep.checked && location.value.trim() ? location.value.trim() : null,
    }), (post) => timeline.addLocalPost(post));
    batching = false;
    submit.disabled = false;
    cancel.hidden = true;
    if (refused === 0) {
      element.reset();
      if (group) groupSelect.value = group;
      batch.clear();
      choose(null);
      announce(`${posted} posts made.`);
      window.location.hash = '#/';
    } else {
      showFormError(`${posted} posted, ${refused} not: each one says why above. Share again to send those.`, null);
    }
  }

  void session;
  return element;
}

/** 33.859972° S, 151.211111° E */
function formatPosition({ latitude, longitude }) {
  return `${Math.abs(latitude).toFixed(6)}° ${latitude < 0 ? 'S' : 'N'}, ` +
    `${Math.abs(longitude).toFixed(6)}° ${longitude < 0 ? 'W' : 'E'}`;
}

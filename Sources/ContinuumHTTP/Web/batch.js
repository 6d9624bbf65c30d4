// Several photos posted at once (#/new with more than one photo chosen or dropped): each is a post of its own, with
// its own caption or the form's, uploaded one after the other, each with its progress and its outcome. A photo the
// node refuses keeps its row and its message; the others are posted. Sharing again sends only those not posted.

import { uploadPost } from './api.js';
import { h, formatBytes } from './dom.js';

/**
 * The list of chosen photos. `show(files)` fills it; `upload(fields, onPosted)` posts each one not posted yet, with
 * `fields()` giving the form's fields for one caption ({caption, group, location, keepMetadata}); it resolves to the
 * number posted and the number refused.
 */
export function batchList() {
  const list = h('ol', { class: 'batch', id: 'batch', 'aria-label': 'Photos to post', hidden: true });
  let rows = [];
  let current = null; // the upload under way: { abort }

  function clear() {
    for (const row of rows) URL.revokeObjectURL(row.url);
    rows = [];
    list.replaceChildren();
    list.hidden = true;
  }

  function show(files) {
    clear();
    rows = files.map((file, index) => {
      const url = URL.createObjectURL(file);
      const preview = h('img', { class: 'batch-preview', src: url, alt: `Preview of ${file.name}` });
      // A format this browser cannot show (HEIC), or not a photo at all (the node will say): a placeholder.
      preview.onerror = () => preview.replaceWith(h('span', { class: 'batch-preview none' }, 'No preview'));
      const caption = h('input', { type: 'text', class: 'batch-caption', id: `batch-caption-${index}`, maxlength: 2048,
        placeholder: 'Its own caption (else the one below)', 'aria-label': `Caption of ${file.name}` });
      const progress = h('progress', { class: 'batch-progress', max: 100, value: 0, 'aria-label': `Upload of ${file.name}` });
      const status = h('span', { class: 'meta batch-status', 'aria-live': 'polite' }, formatBytes(file.size));
      const item = h('li', { class: 'batch-item', 'data-name': file.name }, preview,
        h('div', { class: 'batch-text' }, h('span', { class: 'batch-name' }, file.name), caption,
          h('div', { class: 'batch-line' }, progress, status)));
      return { file, url, item, caption, progress, status, posted: false };
    });
    list.replaceChildren(...rows.map((row) => row.item));
    list.hidden = rows.length === 0;
  }

  async function upload(fields, onPosted) {
    let posted = 0;
    let refused = 0;
    for (const row of rows.filter((candidate) => !candidate.posted)) {
      const caption = row.caption.value.trim() ? row.caption.value : null;
      const data = new FormData();
      data.append('photo', row.file, row.file.name);
      for (const [name, value] of Object.entries(fields(caption))) if (value !== null) data.append(name, value);
      row.item.classList.remove('failed');
      row.status.textContent = 'Uploading…';
      current = uploadPost(data, (loaded, total) => {
        row.progress.value = Math.round((loaded / total) * 100);
        row.status.textContent = loaded < total ? `${formatBytes(loaded)} of ${formatBytes(total)}` : 'Checking the photo…';
      });
      try {
        const post = await current.promise;
        row.posted = true;
        row.progress.value = 100;
        row.status.textContent = 'Posted';
        row.item.classList.add('posted');
        posted += 1;
        onPosted(post);
      } catch (error) {
        row.progress.value = 0;
        row.status.textContent = error.message;
        row.item.classList.add('failed');
        refused += 1;
        if (error.code === 'aborted') break;
      } finally {
        current = null;
      }
    }
    return { posted, refused };
  }

  return {
    element: list,
    show,
    clear,
    /** Whether photos are chosen, not all posted yet. */
    get active() { return rows.some((row) => !row.posted); },
    get count() { return rows.length; },
    abort: () => current?.abort(),
    upload,
  };
}

// Post detail (#/post/{id}): photo, caption, author, date, location, comments (oldest first), add a comment,
// follow/unfollow, share, and for your own posts edit caption and delete. Live: comments, edits, deletion.

import { api, photoURL, thumbnailURL, downloadURL, session } from './api.js';
import { h, timeElement, shortId, authorLabel, formatLocation, formatBytes, showError, announce } from './dom.js';
import * as events from './events.js';
import * as timeline from './timeline.js';

/** Renders the view into `container`; returns a function that ends it (drops its event handlers). */
export function mount(container, id) {
  const off = [];
  let post = null;
  let gone = false;
  const commentIds = new Set();

  const title = h('h1', { tabindex: '-1', class: 'visually-hidden' }, 'Post');
  const body = h('div', { class: 'post-body' }, h('p', { class: 'status-line', role: 'status' }, 'Loading…'));
  container.replaceChildren(h('section', { class: 'view post-view', 'aria-labelledby': 'post-title' },
    h('p', { class: 'back' }, h('a', { href: '#/' }, '← Timeline')), title, body));
  title.id = 'post-title';

  let commentList, commentForm, followButton, captionText, figure, deletedBanner, countLine;

  async function load() {
    try {
      post = await api(`/api/posts/${encodeURIComponent(id)}`);
    } catch (error) {
      body.replaceChildren(h('p', { class: 'panel' }, error.message));
      if (error.code !== 'unknown_post') showError(error, 'Could not open the post');
      return;
    }
    id = post.id; // a prefix in the URL becomes the full id
    render();
  }

  function render() {
    title.textContent = `Post: ${post.caption}`;
    figure = h('figure', { class: 'photo' });
    renderPhoto();
    captionText = h('p', { class: 'caption-text', id: 'caption-text' }, post.caption);
    const meta = h('p', { class: 'meta' },
      'by ', h('strong', { class: 'author', title: post.author }, authorLabel(post.authorName, post.author)),
      post.mine ? ' (you)' : '', ' · ', timeElement(post.createdAt),
      post.edited ? h('span', { class: 'edited' }, ' · edited') : null);
    const location = post.location ? h('p', { class: 'meta location' }, 'Location: ',
      h('a', { href: `https://www.openstreetmap.org/?mlat=${post.location.latitude}&mlon=${post.location.longitude}#map=15/${post.location.latitude}/${post.location.longitude}`,
        rel: 'noopener noreferrer', target: '_blank' }, formatLocation(post.location))) : null;

    followButton = h('button', { type: 'button', id: 'follow', 'aria-pressed': String(post.following), onclick: toggleFollow },
      post.following ? 'Following' : 'Follow');
    const actions = h('div', { class: 'actions' }, followButton, shareControls());
    if (post.mine) {
      actions.append(
        h('button', { type: 'button', id: 'edit-caption', onclick: startEdit }, 'Edit caption'),
        h('button', { type: 'button', id: 'delete-post', class: 'danger', onclick: deletePost }, 'Delete'));
    }
    deletedBanner = h('p', { class: 'panel warning', role: 'alert', hidden: true }, 'This post was deleted by its author.');

    commentList = h('ol', { class: 'comments', id: 'comments', 'aria-label': 'Comments' });
    for (const comment of post.comments) addComment(comment);
    countLine = h('h2', { id: 'comments-title' });
    updateCount();
    const textarea = h('textarea', { id: 'comment-text', name: 'text', rows: 2, required: true, maxlength: 4096,
      placeholder: 'Write a comment' });
    commentForm = h('form', { class: 'comment-form', id: 'comment-form', onsubmit: submitComment },
      h('label', { for: 'comment-text' }, 'Add a comment'), textarea,
      h('button', { type: 'submit' }, 'Comment'));
    textarea.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) commentForm.requestSubmit();
    });

    body.replaceChildren(deletedBanner,
      h('article', { class: 'post', 'aria-labelledby': 'caption-text' },
        figure,
        h('div', { class: 'post-text' }, captionText, meta, location, actions,
          h('section', { 'aria-labelledby': 'comments-title' }, countLine, commentList, commentForm))));
  }

  function renderPhoto() {
    const p = post.photo;
    const img = h('img', { src: photoURL(p.sha256), alt: post.caption, width: p.width, height: p.height, id: 'photo' });
    img.addEventListener('error', () => {
      // Not on this node yet: the thumbnail from a peer if there is one, and the full photo when it arrives.
      const thumb = h('img', { src: thumbnailURL(p.sha256), alt: post.caption, width: p.width, height: p.height });
      thumb.addEventListener('error', () => thumb.replaceWith(h('div', { class: 'placeholder big' }, 'Photo not here yet')));
      figure.replaceChildren(thumb, h('figcaption', {}, `The photo (${formatBytes(p.bytes)}) is not on this node yet; it appears when it arrives from a peer.`));
    }, { once: true });
    figure.replaceChildren(img);
  }

  function shareControls() {
    const p = post.photo;
    const extension = p.mediaType.split('/')[1] === 'jpeg' ? 'jpg' : p.mediaType.split('/')[1];
    const download = h('a', { href: downloadURL(p.sha256), download: `${shortId(post.id)}.${extension}`, class: 'button', id: 'download' },
      'Download photo');
    const canShareFiles = typeof navigator.share === 'function' && typeof navigator.canShare === 'function' &&
      navigator.canShare({ files: [new File([''], 'x.' + extension, { type: p.mediaType })] });
    if (!canShareFiles) return download;
    const share = h('button', { type: 'button', id: 'share', onclick: async () => {
      share.disabled = true;
      try {
        const response = await fetch(photoURL(p.sha256), { credentials: 'same-origin' });
        if (!response.ok) throw new Error('The photo is not on this node yet.');
        const file = new File([await response.blob()], `${shortId(post.id)}.${extension}`, { type: p.mediaType });
        await navigator.share({ files: [file], title: post.caption, text: post.caption });
      } catch (error) {
        if (error.name !== 'AbortError') showError(error, 'Could not share');
      } finally {
        share.disabled = false;
      }
    } }, 'Share');
    return [share, download];
  }

  function addComment(comment) {
    if (commentIds.has(comment.id)) return false;
    commentIds.add(comment.id);
    commentList.append(h('li', { class: 'comment', dataset: { id: comment.id } },
      h('p', { class: 'comment-text' }, comment.text),
      h('p', { class: 'meta' }, h('strong', { title: comment.author }, authorLabel(comment.authorName, comment.author)),
        comment.author === session.me ? ' (you)' : '', ' · ', timeElement(comment.createdAt))));
    return true;
  }

  function updateCount() {
    const n = commentIds.size;
    countLine.textContent = n === 0 ? 'No comments yet' : n === 1 ? '1 comment' : `${n} comments`;
  }

  async function submitComment(event) {
    event.preventDefault();
    const textarea = commentForm.elements.text;
    const button = commentForm.querySelector('button[type=submit]');
    const text = textarea.value;
    if (!text.trim()) {
      showError({ message: 'The comment is blank; write something.' });
      textarea.focus();
      return;
    }
    button.disabled = true;
    try {
      const comment = await api(`/api/posts/${id}/comments`, { method: 'POST', json: { text } });
      textarea.value = '';
      if (addComment(comment)) updateCount();
      // The tile's comment count follows the comment event, which comes for your comments too.
    } catch (error) {
      showError(error, 'Your comment was not posted');
      textarea.focus();
    } finally {
      button.disabled = gone;
    }
  }

  async function toggleFollow() {
    const want = followButton.getAttribute('aria-pressed') !== 'true';
    followButton.disabled = true;
    try {
      const result = await api(`/api/posts/${id}/follow`, { method: want ? 'PUT' : 'DELETE' });
      followButton.setAttribute('aria-pressed', String(result.following));
      followButton.textContent = result.following ? 'Following' : 'Follow';
      announce(result.following ? 'You follow this post: its comments notify you.' : 'You no longer follow this post.');
    } catch (error) {
      showError(error, want ? 'Could not follow' : 'Could not unfollow');
    } finally {
      followButton.disabled = gone && want;
    }
  }

  function startEdit() {
    const textarea = h('textarea', { id: 'caption-edit', name: 'caption', rows: 3, required: true, maxlength: 2048 });
    textarea.value = post.caption;
    const form = h('form', { class: 'edit-form', onsubmit: async (event) => {
      event.preventDefault();
      const save = form.querySelector('button[type=submit]');
      save.disabled = true;
      try {
        const updated = await api(`/api/posts/${id}`, { method: 'PATCH', json: { caption: textarea.value } });
        applyPost(updated);
        form.replaceWith(captionText);
        document.getElementById('edit-caption')?.focus();
      } catch (error) {
        showError(error, 'The caption was not changed');
        textarea.focus();
      } finally {
        save.disabled = false;
      }
    } },
    h('label', { for: 'caption-edit' }, 'Caption'), textarea,
    h('div', { class: 'actions' },
      h('button', { type: 'submit' }, 'Save'),
      h('button', { type: 'button', onclick: () => { form.replaceWith(captionText); document.getElementById('edit-caption')?.focus(); } }, 'Cancel')));
    captionText.replaceWith(form);
    textarea.focus();
  }

  function applyPost(updated) {
    post = { ...post, ...updated };
    captionText.textContent = post.caption;
    title.textContent = `Post: ${post.caption}`;
    for (const img of figure.querySelectorAll('img')) img.alt = post.caption;
    if (post.edited && !body.querySelector('.edited')) {
      body.querySelector('.post-text > .meta').append(h('span', { class: 'edited' }, ' · edited'));
    }
    timeline.updatePost(post);
  }

  async function deletePost() {
    if (!window.confirm(`Delete this post (“${post.caption}”) and its comments on every node? This cannot be undone.`)) return;
    try {
      await api(`/api/posts/${id}`, { method: 'DELETE' });
      timeline.removePosts([id]);
      announce('Post deleted.');
      window.location.hash = '#/';
    } catch (error) {
      showError(error, 'The post was not deleted');
    }
  }

  function markGone() {
    gone = true;
    deletedBanner.hidden = false;
    for (const control of body.querySelectorAll('button, textarea')) control.disabled = true;
  }

  // Live updates for this post.
  off.push(events.on('comment', async (event) => {
    if (!post || event.post !== id || commentIds.has(event.comment)) return;
    try {
      // The event has the text but not the author's name: fetch the post's comments, add the missing ones.
      const fresh = await api(`/api/posts/${id}`);
      let added = 0;
      for (const comment of fresh.comments) if (addComment(comment)) added += 1;
      if (added) {
        updateCount();
        const last = fresh.comments[fresh.comments.length - 1];
        if (last && last.author !== session.me) announce(`New comment from ${authorLabel(last.authorName, last.author)}: ${last.text}`);
      }
    } catch (error) {
      showError(error, 'Could not show a new comment');
    }
  }));
  off.push(events.on('postEdited', (event) => {
    if (post && event.post === id && event.author === post.author) applyPost({ caption: event.caption, edited: true });
  }));
  off.push(events.on('deleted', (event) => {
    if (!post) return;
    if (event.targets.includes(id) && event.author === post.author) {
      markGone();
      return;
    }
    let removed = 0;
    for (const target of event.targets) {
      const item = commentList.querySelector(`li[data-id="${CSS.escape(target)}"]`);
      if (item) { item.remove(); commentIds.delete(target); removed += 1; }
    }
    if (removed) {
      updateCount();
      timeline.updatePost({ id, commentCount: commentIds.size });
    }
  }));
  off.push(events.on('photoArrived', (event) => {
    if (post && event.sha256 === post.photo.sha256 && !figure.querySelector('#photo')) renderPhoto();
  }));
  off.push(events.on('reconnected', async () => {
    if (!post) return;
    try {
      const fresh = await api(`/api/posts/${id}`);
      for (const comment of fresh.comments) addComment(comment);
      updateCount();
      applyPost(fresh);
    } catch (error) {
      if (error.code === 'unknown_post' || error.code === 'deleted') markGone();
    }
  }));

  load();
  return () => { for (const fn of off) fn(); };
}

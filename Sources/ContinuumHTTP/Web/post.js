// Post detail (#/post/{id}): photo, caption, author, date, location, comments (oldest first), add a comment,
// follow/unfollow, share, and for your own posts edit (caption, location, a new photo) and delete, and hide others'
// comments on them. Block, by another author's name: this node erases what they wrote and shows nothing more of
// theirs. Reactions to the post and to each comment (reactions.js). Live: comments, reactions, edits, deletion. A
// photo not here yet shows its thumbnail and says so; one over the node's --max-photo-mb, which never comes by
// itself, has a Fetch button with a progress bar.

import { api, addComment as sendComment, photoURL, thumbnailURL, downloadURL, isOwnAuthor, loadGroups, nodeStatus, session, signedWrites } from './api.js';
import { h, timeElement, postedAndTaken, shortId, authorLabel, formatMiB, showError, announce } from './dom.js';
import * as events from './events.js';
import * as timeline from './timeline.js';
import { postReactions } from './reactions.js';
// The viewer, the map and the edit form are loaded when first needed (import()), not with the app: the first screen
// of the timeline asks for no more modules than it uses.
let viewer = null; // viewer.js, once loaded
const loadViewer = () => import('./viewer.js').then((module) => (viewer = module));
const loadMap = () => import('./map.js');
const loadEditForm = () => import('./postedit.js');

/** Renders the view into `container`; returns a function that ends it (drops its event handlers). */
export function mount(container, id) {
  const off = [];
  // Photos whose photoArrived came while this page was open: an answer that left before one arrived says it is not
  // here, and must not hide it (a peer's edit brings a new photo, which can arrive before the post is read again).
  const arrived = new Set();
  let post = null;
  let gone = false;
  const commentIds = new Set();

  const title = h('h1', { tabindex: '-1', class: 'visually-hidden' }, 'Post');
  const body = h('div', { class: 'post-body' }, h('p', { class: 'status-line', role: 'status' }, 'Loading…'));
  container.replaceChildren(h('section', { class: 'view post-view', 'aria-labelledby': 'post-title' },
    h('p', { class: 'back' }, h('a', { href: '#/' }, '← Timeline')), title, body));
  title.id = 'post-title';

  let commentList, commentForm, followButton, captionText, figure, deletedBanner, countLine, metaLine, locationLine;
  let editForm = null;
  let reactions = null; // the rows of reactions to the post and its comments
  let stopProgress = null; // closes the progress stream of a fetch under way
  let alive = true; // false once the view is left: a stream opened after that is closed at once

  async function load() {
    // This node's log keys (its author id in each group): "(you)", and no Block on its own comments.
    const groupsKnown = loadGroups().catch(() => null);
    const statusKnown = nodeStatus().catch(() => null); // maxPhotoBytes: whether a missing photo comes by itself
    try {
      post = await api(`/api/posts/${encodeURIComponent(id)}`);
      if (post.mine && post.account) session.account = post.account;
      await Promise.all([groupsKnown, statusKnown]);
    } catch (error) {
      // In words, without the id the node's message names (`post fa65… was deleted by its author`).
      const missing = error.code === 'unknown_post';
      const words = !missing ? error.message : /deleted/.test(error.message)
        ? 'This post was deleted by its author.' : 'This post is not on this node (or not yet).';
      if (missing) title.textContent = /deleted/.test(error.message) ? 'Post deleted' : 'Post not found';
      body.replaceChildren(h('p', { class: 'panel' }, words));
      if (!missing) showError(error, 'Could not open the post');
      return;
    }
    id = post.id; // a prefix in the URL becomes the full id
    if (post.photo?.available === false && arrived.has(post.photo.sha256)) {
      post.photo = { ...post.photo, available: true }; // it arrived while the post was on its way
    }
    render();
  }

  function render() {
    title.textContent = `Post: ${post.caption}`;
    figure = h('figure', { class: 'photo' });
    renderPhoto();
    captionText = h('p', { class: 'caption-text', id: 'caption-text' }, post.caption);
    metaLine = h('p', { class: 'meta', id: 'post-meta' });
    locationLine = h('p', { class: 'meta location', id: 'post-location' });
    renderMeta();

    followButton = h('button', { type: 'button', id: 'follow', 'aria-pressed': String(post.following), onclick: toggleFollow },
      post.following ? 'Following' : 'Follow');
    const actions = h('div', { class: 'actions' }, followButton, shareControls(),
      h('button', { type: 'button', id: 'full-screen', onclick: viewFullScreen }, 'Full screen'));
    if (post.mine) {
      actions.append(
        h('button', { type: 'button', id: 'edit-post', 'aria-expanded': 'false', onclick: startEdit }, 'Edit'),
        h('button', { type: 'button', id: 'delete-post', class: 'danger', onclick: deletePost }, 'Delete'));
    }
    reactions = postReactions(id, (given) => { post = { ...post, ...given }; timeline.updatePost({ id, ...given }); });
    deletedBanner = h('p', { class: 'panel warning', role: 'alert', hidden: true }, 'This post was deleted by its author.');

    const postRow = reactions.post(post);
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
        h('div', { class: 'post-text' }, captionText, metaLine, locationLine, postRow, actions,
          h('section', { 'aria-labelledby': 'comments-title' }, countLine, commentList, commentForm))));
  }

  /** Author, when posted (and taken), edited; the location as a link to OpenStreetMap, hidden when there is none. */
  function renderMeta() {
    const theirs = !post.mine && !isOwnAuthor(post.author, post.account);
    metaLine.replaceChildren('by ', h('strong', { class: 'author', title: post.author }, authorLabel(post.authorName, post.author)),
      post.mine ? ' (you)' : '',
      ...(theirs ? [' ', blockButton(post.author, post.authorName, 'block-author')] : []),
      ' · ', ...postedAndTaken(post),
      post.edited ? h('span', { class: 'edited' }, ' · edited') : '');
    const l = post.location;
    locationLine.hidden = !l;
    // A map drawn here, and the place's name, both from the node: no tile server (map.js).
    if (!l) {
      locationLine.replaceChildren();
      return;
    }
    loadMap().then(({ locationMap }) => {
      if (post?.location === l) locationLine.replaceChildren(locationMap(l, post.place ?? null));
    }, (error) => showError(error, 'Could not show the map'));
  }

  function renderPhoto() {
    const p = post.photo;
    if (p.available === false) {
      showNotHere(p);
      return;
    }
    const img = h('img', { src: photoURL(p.sha256), alt: post.caption, width: p.width, height: p.height, id: 'photo',
      title: 'Full screen', onclick: viewFullScreen });
    img.addEventListener('error', () => {
      if (!post || post.photo.sha256 !== p.sha256) return; // deleted, or replaced meanwhile by a new photo
      post.photo = { ...post.photo, available: false };
      showNotHere(post.photo);
      updateDownload();
    }, { once: true });
    figure.replaceChildren(img);
  }

  /**
   * The photo full screen, among the grid's photos (this post's alone when the grid is not loaded); closed on
   * another photo, the page follows it.
   */
  function viewFullScreen() {
    if (!post) return;
    const loaded = timeline.loadedPosts();
    const index = loaded.findIndex((item) => item.id === id);
    const posts = index < 0 ? [post] : loaded.map((item) => (item.id === id ? { ...item, ...post } : item));
    loadViewer().then(({ openViewer }) => openViewer(posts, Math.max(index, 0), {
      onClose: (shown) => { if (shown.id !== id) window.location.hash = `#/post/${shown.id}`; },
      onReacted: (postId, given) => {
        timeline.updatePost({ id: postId, ...given });
        if (post && postId === id) {
          post = { ...post, ...given };
          reactions.showPost(post);
        }
      },
    }), (error) => showError(error, 'Could not open the viewer'));
  }

  /** Not on this node (yet): the thumbnail from a peer if there is one, and why the photo is missing. */
  function showNotHere(p) {
    const thumb = h('img', { src: thumbnailURL(p.sha256), alt: post.caption, width: p.width, height: p.height });
    thumb.addEventListener('error', () => {
      if (post.photo.sha256 === p.sha256) thumb.replaceWith(h('div', { class: 'placeholder big' }, 'Photo not here yet'));
    });
    figure.replaceChildren(thumb, h('figcaption', { id: 'photo-note' }, notHereNote(p)));
  }

  /** A photo over --max-photo-mb is skipped and never comes by itself: say so, with a Fetch button. */
  function notHereNote(p) {
    const limit = session.maxPhotoBytes;
    if (limit === null || limit === undefined || p.bytes <= limit) {
      return `The photo (${formatMiB(p.bytes)}) is not on this node yet; it appears when it arrives from a peer.`;
    }
    const limitText = limit === 0 ? '0 MiB' : formatMiB(limit);
    return [`This photo (${formatMiB(p.bytes)}) is over this node’s limit of ${limitText} (--max-photo-mb): it is not ` +
      'fetched by itself. ', fetchControls(p)];
  }

  function fetchControls(p) {
    const button = h('button', { type: 'button', id: 'fetch-photo', class: 'primary small' }, 'Fetch');
    const bar = h('progress', { id: 'fetch-progress', max: 100, value: 0, hidden: true, 'aria-label': 'Fetching the photo' });
    const said = h('span', { id: 'fetch-status', 'aria-live': 'polite' });
    button.addEventListener('click', () => fetchPhoto(p, { button, bar, said }));
    return h('span', { class: 'fetch-row' }, button, bar, said);
  }

  /** POST /api/photos/{sha256}/fetch, following its progress on a stream with ?progress=true. */
  async function fetchPhoto(p, { button, bar, said }) {
    button.disabled = true;
    said.textContent = 'Asking the peers…';
    stopProgress?.();
    const stop = await events.progressStream({
      photoProgress: (event) => { if (event.sha256 === p.sha256) showProgress(event, bar, said); },
      photoArrived: (event) => { if (event.sha256 === p.sha256) photoHere(p.sha256); },
    });
    if (!alive) return stop();
    stopProgress = stop;
    try {
      const result = await api(`/api/photos/${p.sha256}/fetch`, { method: 'POST' });
      if (result.here) return photoHere(p.sha256);
      bar.hidden = false;
      figure.dataset.fetch = 'asked';
      said.textContent = result.connectedPeers === 0 ? result.message : 'Fetching…';
      button.disabled = result.connectedPeers !== 0; // with no peer, ask again later
    } catch (error) {
      endProgress();
      button.disabled = false;
      said.textContent = error.message;
    }
  }

  function showProgress(event, bar, said) {
    const percent = event.ofBytes > 0 ? Math.min(100, Math.floor((event.bytes / event.ofBytes) * 100)) : 0;
    bar.hidden = false;
    bar.value = percent;
    said.textContent = `${percent}% (${formatMiB(event.bytes)} of ${formatMiB(event.ofBytes)})`;
    figure.dataset.progress = String(percent); // the highest seen, for the browser tests
  }

  function endProgress() {
    stopProgress?.();
    stopProgress = null;
  }

  /** The photo arrived (an event on either stream, or the node had it): show it, and its download link. */
  function photoHere(sha) {
    if (!post || !figure || post.photo.sha256 !== sha || figure.querySelector('#photo')) return;
    endProgress();
    post.photo = { ...post.photo, available: true };
    renderPhoto();
    updateDownload();
  }

  const extensionOf = (p) => (p.mediaType.split('/')[1] === 'jpeg' ? 'jpg' : p.mediaType.split('/')[1]);

  /**
   * Download: a link while the photo is here; else a disabled button that points at why (never a link to the node's
   * 404). The share button, when there is one, likewise.
   */
  function downloadControl() {
    const p = post.photo;
    if (p.available === false) {
      return h('button', { type: 'button', id: 'download', disabled: true, 'aria-describedby': 'photo-note',
        title: 'The photo is not on this node' }, 'Download photo');
    }
    return h('a', { href: downloadURL(p.sha256), download: `${shortId(post.id)}.${extensionOf(p)}`, class: 'button', id: 'download' },
      'Download photo');
  }

  /** The download control follows the photo (a replaced photo has another address, a missing one none). */
  function updateDownload() {
    body.querySelector('#download')?.replaceWith(downloadControl());
    const share = body.querySelector('#share');
    if (share) share.disabled = post.photo.available === false || gone;
  }

  function shareControls() {
    const extension = extensionOf(post.photo);
    const download = downloadControl();
    const canShareFiles = typeof navigator.share === 'function' && typeof navigator.canShare === 'function' &&
      navigator.canShare({ files: [new File([''], 'x.' + extension, { type: post.photo.mediaType })] });
    if (!canShareFiles) return download;
    const share = h('button', { type: 'button', id: 'share', onclick: async () => {
      share.disabled = true;
      const p = post.photo; // the photo as it is now
      const extension = extensionOf(p);
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
    share.disabled = post.photo.available === false;
    return [share, download];
  }

  function addComment(comment) {
    if (commentIds.has(comment.id)) return false;
    commentIds.add(comment.id);
    const own = isOwnAuthor(comment.author, comment.account);
    const who = authorLabel(comment.authorName, comment.author);
    const item = h('li', { class: 'comment', dataset: { id: comment.id, author: comment.author } },
      h('p', { class: 'comment-text' }, comment.text),
      h('p', { class: 'meta' }, h('strong', { title: comment.author }, who), own ? ' (you)' : null,
        own ? null : [' ', blockButton(comment.author, comment.authorName)],
        ' · ', timeElement(comment.createdAt),
        // On this node's post, a comment by someone else can be hidden: erased on every node of the group.
        post.mine && !own ? [' · ', h('button', { type: 'button', class: 'link inline hide-comment', 'aria-label': `Hide the comment by ${who}`,
          onclick: (event) => hideComment(comment, event.currentTarget) }, 'Hide')] : null));
    item.append(reactions.comment(comment, who));
    commentList.append(item);
    return true;
  }

  /** Takes comments off the page (hidden, deleted, or by a blocked author); returns how many. */
  function removeComments(ids) {
    let removed = 0;
    for (const target of ids) {
      const item = commentList.querySelector(`li[data-id="${CSS.escape(target)}"]`);
      if (item) { item.remove(); commentIds.delete(target); reactions.forget(target); removed += 1; }
    }
    if (removed) {
      updateCount();
      timeline.updatePost({ id, commentCount: commentIds.size });
    }
    return removed;
  }

  async function hideComment(comment, button) {
    const who = authorLabel(comment.authorName, comment.author);
    const text = comment.text.length > 80 ? comment.text.slice(0, 79) + '…' : comment.text;
    if (!window.confirm(`Hide this comment by ${who} (“${text}”)? It is erased from your post here and on every node of ` +
      'the post’s group. This cannot be undone.')) return;
    button.disabled = true;
    try {
      await api(`/api/comments/${encodeURIComponent(comment.id)}/hide`, { method: 'POST' });
      removeComments([comment.id]);
      announce(`The comment by ${who} is hidden.`);
      commentForm?.querySelector('textarea')?.focus();
    } catch (error) {
      button.disabled = false;
      showError(error, 'The comment was not hidden');
    }
  }

  function blockButton(author, name, elementId) {
    const who = authorLabel(name, author);
    return h('button', { type: 'button', class: 'link inline block-author', id: elementId, 'aria-label': `Block ${who}`,
      onclick: (event) => blockAuthor(author, name, event.currentTarget) }, 'Block');
  }

  async function blockAuthor(author, name, button) {
    const who = authorLabel(name, author);
    if (!window.confirm(`Block ${who} on this node? Only this node blocks them: every post, comment and photo of theirs ` +
      'is erased from it, and what they write later is neither shown nor passed on by it. They are not told. You can ' +
      'unblock them on the Groups page, but what was erased stays erased.')) return;
    button.disabled = true;
    try {
      const result = await api(`/api/authors/${encodeURIComponent(author)}/block`, { method: 'PUT' });
      timeline.removeAuthor(author);
      const erased = `${result.erasedPosts} ${result.erasedPosts === 1 ? 'post' : 'posts'} and ` +
        `${result.erasedComments} ${result.erasedComments === 1 ? 'comment' : 'comments'} erased`;
      if (author === post.author) {
        announce(`${who} is blocked; ${erased}.`);
        window.location.hash = '#/';
        return;
      }
      removeComments([...commentList.querySelectorAll('li.comment')]
        .filter((item) => item.dataset.author === author).map((item) => item.dataset.id));
      announce(`${who} is blocked; ${erased}.`);
    } catch (error) {
      button.disabled = false;
      showError(error, `${who} was not blocked`);
    }
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
      const comment = await sendComment(post, text);
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

  /** The edit form (postedit.js), in place of the caption. */
  async function startEdit() {
    if (editForm) { editForm.querySelector('textarea').focus(); return; }
    const editButton = document.getElementById('edit-post');
    const { postEditForm } = await loadEditForm();
    if (editForm || !post) return; // opened meanwhile by a second click, or the post is gone
    const edit = postEditForm(() => post, {
      onSaved: applyPost,
      onClose: () => {
        editForm.replaceWith(captionText);
        editForm = null;
        editButton?.setAttribute('aria-expanded', 'false');
        editButton?.focus();
      },
      gone: () => gone,
    });
    editForm = edit.element;
    captionText.replaceWith(editForm);
    editButton?.setAttribute('aria-expanded', 'true');
    edit.focus();
  }

  /** Shows a changed post (an edit here, a live edit, a catch-up): caption, photo, when, location. */
  function applyPost(updated) {
    if (!post) return; // deleted while the answer was on its way
    if (updated.photo?.available === false && arrived.has(updated.photo.sha256)) {
      updated = { ...updated, photo: { ...updated.photo, available: true } };
    }
    const oldSha = post.photo.sha256;
    post = { ...post, ...updated };
    captionText.textContent = post.caption;
    title.textContent = `Post: ${post.caption}`;
    if (post.photo.sha256 !== oldSha) {
      renderPhoto();
      updateDownload();
    } else if (post.photo.available) {
      photoHere(oldSha); // arrived while the stream was down
    }
    for (const img of figure.querySelectorAll('img')) img.alt = post.caption;
    renderMeta();
    reactions.showPost(post);
    timeline.updatePost(post);
  }

  async function deletePost() {
    if (!window.confirm(`Delete this post (“${post.caption}”) and its comments on every node? This cannot be undone.`)) return;
    try {
      if (signedWrites.current) await signedWrites.current.remove([id]);
      else await api(`/api/posts/${id}`, { method: 'DELETE' });
      timeline.removePosts([id]);
      announce('Post deleted.');
      window.location.hash = '#/';
    } catch (error) {
      showError(error, 'The post was not deleted');
    }
  }

  /**
   * The post was deleted by its author while open: a delete erases (the node keeps no photo, caption or comment of
   * it), so the page keeps none either, nor a link to download the photo; the banner and the way back stay.
   */
  function markGone() {
    gone = true;
    viewer?.closeViewer();
    endProgress();
    reactions?.stop();
    post = null; // the live updates below ignore this post from now on
    title.textContent = 'Post deleted';
    deletedBanner.hidden = false;
    body.replaceChildren(deletedBanner);
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
        if (last && !isOwnAuthor(last.author, last.account)) announce(`New comment from ${authorLabel(last.authorName, last.author)}: ${last.text}`);
      }
    } catch (error) {
      showError(error, 'Could not show a new comment');
    }
  }));
  // A reaction to the post or to one of its comments (the event has no counts): the post is read again.
  off.push(events.on('reaction', (event) => { if (event.post === id) reactions?.refreshSoon(); }));
  off.push(events.on('postEdited', async (event) => {
    if (!post || event.post !== id || event.author !== post.author) return;
    // The event has the new caption, or null when the edit changed only the photo or the location: show the
    // caption at once, then the whole post as this node now has it.
    if (typeof event.caption === 'string') applyPost({ caption: event.caption, edited: true });
    try {
      applyPost(await api(`/api/posts/${id}`));
    } catch (error) {
      if (error.code === 'unknown_post' || error.code === 'deleted') markGone();
    }
  }));
  off.push(events.on('deleted', (event) => {
    if (!post) return;
    if (event.targets.includes(id) && event.author === post.author) {
      markGone();
      return;
    }
    removeComments(event.targets);
  }));
  off.push(events.on('photoArrived', (event) => {
    arrived.add(event.sha256);
    photoHere(event.sha256);
  }));
  off.push(events.on('reconnected', async () => {
    if (!post) return;
    try {
      const fresh = await api(`/api/posts/${id}`);
      for (const comment of fresh.comments) addComment(comment);
      updateCount();
      applyPost(fresh);
      reactions.show(fresh);
    } catch (error) {
      if (error.code === 'unknown_post' || error.code === 'deleted') markGone();
    }
  }));

  load();
  return () => {
    alive = false;
    viewer?.closeViewer();
    reactions?.stop();
    endProgress();
    for (const fn of off) fn();
  };
}

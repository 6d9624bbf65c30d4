// The full-screen viewer: one photo at a time over the page, black around it. The next and the previous photo with a
// swipe, the arrow keys or the buttons at its sides; Escape, the close button or a tap beside the photo closes it.
// The photos are those of the grid, in its order (or the one post when the grid has not been loaded). A photo not on
// this node yet shows its thumbnail. Under each photo, its reactions, given and taken back from here.

import { photoURL, thumbnailURL } from './api.js';
import { h, authorLabel } from './dom.js';
import { reactionBar } from './reactions.js';

const SWIPE_PX = 40; // a horizontal move at least this long, and longer than it is high, is a swipe

let current = null; // { close } while the viewer is shown

/**
 * Shows `posts[index]` full screen. `onClose(post)` is called with the post shown when the viewer closes;
 * `onReacted(id, {reactions, myReaction})` when a reaction is given or taken back here.
 */
export function openViewer(posts, index, { onClose, onReacted } = {}) {
  closeViewer();
  let at = Math.max(0, Math.min(index, posts.length - 1));
  const photo = h('img', { class: 'viewer-photo', id: 'viewer-photo', alt: '', draggable: 'false' });
  const stage = h('div', { class: 'viewer-stage', id: 'viewer-stage' }, photo);
  const caption = h('p', { class: 'viewer-caption', id: 'viewer-caption' });
  const count = h('p', { class: 'viewer-count', id: 'viewer-count', 'aria-live': 'polite' });
  const reactions = h('div', { class: 'viewer-reactions', id: 'viewer-reactions' });
  const previous = h('button', { type: 'button', class: 'viewer-previous', id: 'viewer-previous',
    'aria-label': 'Previous photo', onclick: () => go(-1) }, '‹');
  const next = h('button', { type: 'button', class: 'viewer-next', id: 'viewer-next', 'aria-label': 'Next photo',
    onclick: () => go(1) }, '›');
  const close = h('button', { type: 'button', class: 'viewer-close', id: 'viewer-close', 'aria-label': 'Close',
    onclick: () => closeViewer() }, '✕');
  const dialog = h('div', { class: 'viewer', id: 'viewer', role: 'dialog', 'aria-modal': 'true',
    'aria-label': 'Photo viewer', tabindex: '-1' },
  stage, previous, next, close, h('div', { class: 'viewer-text' }, caption, reactions, count));

  function show() {
    const post = posts[at];
    const here = post.photo.available !== false;
    photo.src = here ? photoURL(post.photo.sha256) : thumbnailURL(post.photo.sha256);
    photo.alt = post.caption;
    photo.dataset.id = post.id;
    caption.replaceChildren(h('strong', {}, authorLabel(post.authorName, post.author)), ' ', post.caption);
    count.textContent = `${at + 1} of ${posts.length}`;
    const shown = at;
    reactions.replaceChildren(reactionBar('post', post.id, post, {
      label: `Reactions to ${post.caption}`,
      onChange: (given) => {
        posts[shown] = { ...posts[shown], ...given };
        onReacted?.(post.id, given);
      },
    }).element);
    previous.disabled = at === 0;
    next.disabled = at === posts.length - 1;
    // The neighbours load while this one is looked at, so that a swipe shows the next at once.
    for (const near of [posts[at - 1], posts[at + 1]]) {
      if (near && near.photo.available !== false) new Image().src = photoURL(near.photo.sha256);
    }
  }

  function go(step) {
    const to = at + step;
    if (to < 0 || to >= posts.length) return;
    at = to;
    show();
  }

  function onKey(event) {
    if (event.key === 'ArrowRight') go(1);
    else if (event.key === 'ArrowLeft') go(-1);
    else if (event.key === 'Escape') closeViewer();
    else return;
    event.preventDefault();
  }

  // A swipe with a finger, a pen or the mouse: where the pointer went down and where it came up.
  let start = null;
  stage.addEventListener('pointerdown', (event) => { start = { x: event.clientX, y: event.clientY }; });
  stage.addEventListener('pointercancel', () => { start = null; });
  stage.addEventListener('pointerup', (event) => {
    if (!start) return;
    const dx = event.clientX - start.x;
    const dy = event.clientY - start.y;
    start = null;
    if (Math.abs(dx) >= SWIPE_PX && Math.abs(dx) > Math.abs(dy)) go(dx < 0 ? 1 : -1);
    else if (event.target === stage) closeViewer(); // a tap beside the photo
  });

  const focused = document.activeElement;
  document.addEventListener('keydown', onKey);
  document.body.append(dialog);
  document.body.classList.add('viewer-open');
  show();
  dialog.focus();
  current = {
    close() {
      document.removeEventListener('keydown', onKey);
      dialog.remove();
      document.body.classList.remove('viewer-open');
      if (focused?.isConnected) focused.focus();
      onClose?.(posts[at]);
    },
  };
}

/** Closes the viewer, if it is shown. */
export function closeViewer() {
  const shown = current;
  current = null;
  shown?.close();
}

// The timeline's select mode: a checkbox on each of this node's own posts (under any of its log keys), then
// "Delete N posts": one POST /api/delete, all or none, after a confirmation. Others' posts cannot be selected.

import { api, isOwnAuthor, loadGroups, signedWrites } from './api.js';
import { h, showError, announce } from './dom.js';

const plural = (n) => `${n} ${n === 1 ? 'post' : 'posts'}`;

/**
 * `grid`: the timeline's list of tiles (li.tile[data-id]); `postOf(id)`: the post of a tile; `removed(ids)`: the
 * posts were deleted. Returns {button, bar, decorate(tile), forget(id)}.
 */
export function selectControls({ grid, postOf, removed }) {
  const selected = new Set();
  let active = false;
  const button = h('button', { type: 'button', id: 'select-mode', 'aria-pressed': 'false', 'aria-controls': 'selection-bar' }, 'Select');
  const count = h('span', { id: 'selected-count', role: 'status' });
  const remove = h('button', { type: 'button', id: 'delete-selected', class: 'danger', disabled: true }, 'Delete 0 posts');
  const done = h('button', { type: 'button', id: 'select-done' }, 'Done');
  const bar = h('div', { class: 'selection-bar', id: 'selection-bar', hidden: true, role: 'group', 'aria-label': 'Selected posts' },
    count, remove, done);

  const own = (post) => post && (post.mine ?? isOwnAuthor(post.author, post.account));

  function update() {
    count.textContent = selected.size ? `${plural(selected.size)} selected` : 'Tick your posts to delete them.';
    remove.textContent = `Delete ${plural(selected.size)}`;
    remove.disabled = selected.size === 0;
  }

  /** A checkbox on a tile of this node's own post; a tile of someone else's is marked as not selectable. */
  function decorate(tile) {
    if (!active || tile.querySelector('.select-box')) return;
    const post = postOf(tile.dataset.id);
    if (!own(post)) {
      tile.classList.add('unselectable');
      return;
    }
    const box = h('input', { type: 'checkbox', class: 'select-post', 'aria-label': `Select “${post.caption}”` });
    box.checked = selected.has(post.id);
    box.addEventListener('change', () => {
      if (box.checked) selected.add(post.id);
      else selected.delete(post.id);
      tile.classList.toggle('selected', box.checked);
      update();
    });
    tile.prepend(h('label', { class: 'select-box' }, box));
  }

  async function setActive(on) {
    if (on) await loadGroups().catch(() => null); // this node's log keys: which posts are its own
    active = on;
    button.setAttribute('aria-pressed', String(on));
    bar.hidden = !on;
    grid.classList.toggle('selecting', on);
    if (on) {
      for (const tile of grid.children) decorate(tile);
    } else {
      selected.clear();
      for (const box of grid.querySelectorAll('.select-box')) box.remove();
      for (const tile of grid.querySelectorAll('.tile.selected, .tile.unselectable')) tile.classList.remove('selected', 'unselectable');
    }
    update();
  }

  async function deleteSelected() {
    const ids = [...selected];
    if (!ids.length || !window.confirm(`Delete ${plural(ids.length)} and their comments on every node? This cannot be undone.`)) return;
    remove.disabled = true;
    try {
      if (signedWrites.current) await signedWrites.current.remove(ids);
      else await api('/api/delete', { method: 'POST', json: { ids } });
      removed(ids);
      announce(`${plural(ids.length)} deleted.`);
    } catch (error) {
      showError(error, 'Nothing was deleted');
    }
    update();
  }

  // In select mode a tap on a tile ticks it instead of opening the post.
  grid.addEventListener('click', (event) => {
    if (!active || !event.target.closest('a.tile-link')) return;
    event.preventDefault();
    event.target.closest('li.tile')?.querySelector('.select-post')?.click();
  });
  button.addEventListener('click', () => setActive(!active));
  done.addEventListener('click', () => { setActive(false); button.focus(); });
  remove.addEventListener('click', deleteSelected);

  return {
    button,
    bar,
    decorate,
    forget(id) {
      if (selected.delete(id)) update();
    },
  };
}

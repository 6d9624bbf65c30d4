// Timeline (#/): the grid of posts, search, filters "mine", "last 5 days" and "near me", infinite scroll with the
// feed's cursor, live updates, and a select mode to delete several of your posts. The section is built once and
// kept while other views are shown, so that going back keeps the pages loaded and the scroll position. The search
// and the filters are kept in the address (#/?q=…&mine=1&recent=1&near=LAT,LON&radiusKm=K): a reload or a link
// shows the same.

import { api, responseBody, query, thumbnailURL, isOwnAuthor, whoWeAre } from './api.js';
import { h, refreshRelativeTimes, showError, announce, authorLabel, dayElement, formatLocation } from './dom.js';
import * as events from './events.js';
import { nearControls, parsePlace, placeText, parseRadius, distanceKm, DEFAULT_RADIUS_KM } from './nearby.js';
import { selectControls } from './select.js';
import { reactionSummary, reactionWords } from './reactions.js';

const PAGE = 24; // index.html asks for the first page (limit=24) before this module has loaded
const EAGER = 12; // the first tiles of the first page: on the first screen of most windows, fetched first
const SEARCH_LIMIT = 100;
const FIVE_DAYS_MS = 5 * 24 * 3600 * 1000;

const state = {
  mode: 'feed', // 'feed' or 'search'
  q: '',
  mine: false,
  recent: false,
  near: null, // {latitude, longitude}: only posts within radiusKm of it
  radiusKm: DEFAULT_RADIUS_KM,
  posts: new Map(), // id -> { post, tile }
  cursor: null,
  more: false,
  loading: false,
  generation: 0, // bumped on every new query; late answers of an older one are dropped
  firstScreenMarked: false,
  failed: false, // the last page request failed: wait for the button
};

let section, grid, statusLine, sentinel, moreButton, searchInput, mineBox, recentBox, observer, near, selection;

export function element() {
  if (!section) build();
  return section;
}

function build() {
  searchInput = h('input', { type: 'search', id: 'search', name: 'q', autocomplete: 'off', enterkeyhint: 'search',
    placeholder: 'Search captions' });
  mineBox = h('input', { type: 'checkbox', id: 'filter-mine' });
  recentBox = h('input', { type: 'checkbox', id: 'filter-recent' });
  near = nearControls((filter) => { Object.assign(state, filter); reload(); });
  grid = h('ul', { class: 'grid', id: 'grid', 'aria-label': 'Posts' });
  selection = selectControls({ grid, postOf: (id) => state.posts.get(id)?.post, removed: removePosts });
  const form = h('form', { class: 'toolbar', role: 'search', onsubmit: (event) => { event.preventDefault(); searchNow(); } },
    h('label', { for: 'search', class: 'visually-hidden' }, 'Search captions'),
    searchInput,
    // One row of chips under the search on a phone (it scrolls sideways rather than wrap), beside it on a desktop.
    h('div', { class: 'chips' },
      h('label', { class: 'chip', for: 'filter-mine' }, mineBox, ' Mine'),
      h('label', { class: 'chip', for: 'filter-recent' }, recentBox, ' Last 5 days'),
      near.chip,
      selection.button));
  let debounce = 0;
  // input: typing; search: the field's own clear button; change: a value set otherwise (autofill, scripts).
  for (const type of ['input', 'search', 'change']) {
    searchInput.addEventListener(type, () => {
      window.clearTimeout(debounce);
      debounce = window.setTimeout(searchNow, type === 'input' ? 250 : 0);
    });
  }
  mineBox.addEventListener('change', () => { state.mine = mineBox.checked; reload(); });
  recentBox.addEventListener('change', () => { state.recent = recentBox.checked; reload(); });

  statusLine = h('p', { class: 'status-line', role: 'status', 'aria-live': 'polite' });
  sentinel = h('div', { class: 'sentinel', 'aria-hidden': 'true' });
  moreButton = h('button', { type: 'button', class: 'more', hidden: true, onclick: () => loadMore(true) }, 'Load more');
  section = h('section', { id: 'view-timeline', class: 'view', 'aria-labelledby': 'timeline-title' },
    h('h1', { id: 'timeline-title', class: 'visually-hidden', tabindex: '-1' }, 'Timeline'),
    form, near.form, selection.bar, statusLine, grid, sentinel, moreButton);

  observer = new IntersectionObserver((entries) => {
    if (entries.some((entry) => entry.isIntersecting)) loadMore();
  }, { rootMargin: '800px 0px' });
  observer.observe(sentinel);

  events.on('post', onPostEvent);
  events.on('comment', onCommentEvent);
  events.on('postEdited', onEditedEvent);
  events.on('deleted', onDeletedEvent);
  events.on('reaction', onReactionEvent);
  events.on('photoArrived', (event) => retryThumbnails(event.sha256));
  events.on('thumbnailArrived', (event) => retryThumbnails(event.sha256));
  events.on('reconnected', catchUp);
  window.setInterval(() => { if (!section.hidden) refreshRelativeTimes(grid); }, 60_000);

  if (onTimelineRoute()) Object.assign(state, filtersFromHash());
  showFilters();
  reload();
}

// -- The search and the filters in the address --------------------------------------------------------------

const onTimelineRoute = () => /^#?\/?(\?|$)/.test(window.location.hash);

/** The search and filters that the address names (#/?q=…&mine=1&recent=1&near=LAT,LON&radiusKm=K). */
function filtersFromHash() {
  const params = new URLSearchParams(window.location.hash.split('?')[1] ?? '');
  const nearPlace = parsePlace(params.get('near'));
  return { q: (params.get('q') ?? '').trim(), mine: params.get('mine') === '1', recent: params.get('recent') === '1',
    near: nearPlace, radiusKm: (nearPlace && parseRadius(params.get('radiusKm'))) || DEFAULT_RADIUS_KM };
}

function hashOfFilters() {
  return '#/' + query({ q: state.q, mine: state.mine && '1', recent: state.recent && '1',
    near: state.near && placeText(state.near), radiusKm: state.near && state.radiusKm });
}

const sameFilters = (a, b) => a.q === b.q && a.mine === b.mine && a.recent === b.recent && a.radiusKm === b.radiusKm
  && (a.near === b.near || (a.near && b.near && placeText(a.near) === placeText(b.near)));

/** The address follows the timeline's search and filters (replacing the entry: no history entry per keystroke). */
function writeHash() {
  if (onTimelineRoute() && window.location.hash !== hashOfFilters()) {
    window.history.replaceState(window.history.state, '', hashOfFilters());
  }
}

/** The controls show the search and filters of `state`. */
function showFilters() {
  searchInput.value = state.q;
  mineBox.checked = state.mine;
  recentBox.checked = state.recent;
  near.set(state);
}

/** Called by the router when the timeline is shown again. */
export function shown() {
  // An address that names other filters (typed, a link, back) shows them; a bare #/ keeps the ones in use.
  if (window.location.hash.includes('?')) {
    const wanted = filtersFromHash();
    if (!sameFilters(wanted, state)) {
      Object.assign(state, wanted);
      showFilters();
      reload();
      return;
    }
  }
  writeHash();
  fillScreen();
}

/** With the sentinel on screen (a page back into view, a tall window, a short page), load the next page. */
function fillScreen() {
  if (state.more && !state.loading) {
    const rect = sentinel.getBoundingClientRect();
    if (rect.top < window.innerHeight + 800) loadMore();
  }
}

function searchNow() {
  const q = searchInput.value.trim();
  if (q === state.q && (q === '') === (state.mode === 'feed')) return;
  state.q = q;
  reload();
}

function clear() {
  state.generation += 1;
  for (const id of state.posts.keys()) selection.forget(id); // only what is shown can be selected
  state.posts.clear();
  grid.replaceChildren();
  state.cursor = null;
  state.more = false;
  state.loading = false;
  state.failed = false;
  moreButton.hidden = true;
}

async function reload() {
  clear();
  writeHash();
  state.mode = state.q ? 'search' : 'feed';
  const generation = state.generation;
  state.loading = true;
  statusLine.textContent = 'Loading…';
  try {
    if (state.mode === 'search') {
      // "Mine" is filtered here, by who this node is: read beside the search (after a reload, it may not be yet).
      const [body] = await Promise.all([api('/api/search' + query({ q: state.q, limit: SEARCH_LIMIT })),
        state.mine ? whoWeAre() : null]);
      if (generation !== state.generation) return;
      const posts = body.posts.filter(passesFilters);
      addPage(posts);
      const n = posts.length;
      statusLine.textContent = n === 0 ? `No posts match “${state.q}”.`
        : `${n}${body.posts.length >= SEARCH_LIMIT ? '+' : ''} ${n === 1 ? 'post matches' : 'posts match'} “${state.q}”.`;
    } else {
      const early = window.continuumFirstFeed;
      window.continuumFirstFeed = null;
      const plain = !state.mine && !state.recent && !state.near;
      const body = await (early && plain ? responseBody(early) : api('/api/feed' + feedQuery(null)));
      if (generation !== state.generation) return;
      addPage(body.posts, grid.children.length === 0);
      state.cursor = body.nextCursor;
      state.more = body.nextCursor !== null;
      updateFeedStatus();
    }
  } catch (error) {
    if (generation !== state.generation) return;
    statusLine.textContent = '';
    showError(error, state.mode === 'search' ? 'Search failed' : 'Could not load the timeline');
  } finally {
    if (generation === state.generation) {
      state.loading = false;
      moreButton.hidden = !state.more;
      markFirstScreen();
    }
  }
  fillScreen();
}

function feedQuery(cursor) {
  return query({ mine: state.mine ? 'true' : null, since: state.recent ? '5d' : null,
    near: state.near && placeText(state.near), radiusKm: state.near && state.radiusKm, limit: PAGE, cursor });
}

async function loadMore(fromButton = false) {
  if (fromButton) state.failed = false;
  if (state.mode !== 'feed' || !state.more || state.loading || state.failed || section.hidden) return;
  const generation = state.generation;
  state.loading = true;
  moreButton.disabled = true;
  try {
    await firstScreen; // the first screen's thumbnails before the next page's
    const body = await api('/api/feed' + feedQuery(state.cursor));
    if (generation !== state.generation) return;
    addPage(body.posts);
    state.cursor = body.nextCursor;
    state.more = body.nextCursor !== null;
    updateFeedStatus();
  } catch (error) {
    if (generation !== state.generation) return;
    showError(error, 'Could not load more posts');
    // No automatic retry (that could loop); the button tries again.
    state.loading = false;
    state.failed = true;
    moreButton.hidden = false;
    moreButton.disabled = false;
    return;
  }
  if (generation !== state.generation) return;
  state.loading = false;
  moreButton.disabled = false;
  moreButton.hidden = !state.more;
  // Still at the bottom (tall screen, small page): keep going.
  requestAnimationFrame(fillScreen);
}

function updateFeedStatus() {
  const n = state.posts.size;
  const filters = [state.mine && 'yours', state.recent && 'from the last 5 days',
    state.near && `within ${state.radiusKm} km of ${formatLocation(state.near)}`].filter(Boolean).join(', ');
  if (n === 0) {
    statusLine.textContent = filters ? `No posts ${filters === 'yours' ? 'of yours' : filters} yet.`
      : 'No posts yet. Add one, or connect to a peer.';
  } else {
    statusLine.textContent = `${n}${state.more ? '+' : ''} ${n === 1 ? 'post' : 'posts'}${filters ? ' (' + filters + ')' : ''}`;
  }
}

function passesFilters(post) {
  if (state.mine && !isOwnAuthor(post.author, post.account)) return false;
  if (state.recent && Date.parse(post.createdAt) < Date.now() - FIVE_DAYS_MS) return false;
  if (state.near && !(post.location && distanceKm(state.near, post.location) <= state.radiusKm)) return false;
  return true;
}

function addPage(posts, first = false) {
  const fragment = document.createDocumentFragment();
  for (const post of posts) {
    if (state.posts.has(post.id)) continue; // never the same post twice
    const tile = makeTile(post, first && state.posts.size < EAGER);
    state.posts.set(post.id, { post, tile });
    fragment.append(tile);
    selection.decorate(tile);
  }
  grid.append(fragment);
}

function makeTile(post, eager = false) {
  const sha = post.photo.sha256;
  const img = h('img', { src: thumbnailURL(sha), alt: post.caption, loading: eager ? 'eager' : 'lazy',
    fetchpriority: eager ? 'high' : null, decoding: 'async', width: 400, height: 400 });
  const placeholder = h('div', { class: 'placeholder', hidden: true },
    h('span', { class: 'ring', 'aria-hidden': 'true' }), h('span', {}, 'Photo not here yet'));
  const tile = h('li', { class: 'tile', dataset: { id: post.id, sha } },
    h('a', { href: `#/post/${post.id}`, class: 'tile-link' },
      h('div', { class: 'thumb' }, img, placeholder),
      h('div', { class: 'tile-text' },
        h('p', { class: 'caption' }, post.caption),
        h('p', { class: 'meta line' }, h('span', { class: 'meta by' }, byLine(post)),
          h('span', { class: 'meta count', 'aria-label': countWords(post) }, countLine(post))))));
  const requestedAt = performance.now();
  img.addEventListener('error', () => {
    tile.classList.add('no-thumb');
    placeholder.hidden = false;
    // The photo arrived while this request was on its way: ask again now rather than wait for another event.
    if ((arrivals.get(sha) ?? -1) > requestedAt) retryThumbnails(sha);
  }, { once: true });
  img.addEventListener('load', () => {
    tile.classList.remove('no-thumb');
    placeholder.hidden = true;
  });
  return tile;
}

/** Who posted it (the display name, or the short id) and the day: "Alice · 22 Nov 2026". */
function byLine(post) {
  return [h('span', { class: 'author', title: post.author }, authorLabel(post.authorName, post.author)), ' · ', dayElement(post.createdAt)];
}

function commentCountText(count) {
  return count === 0 ? 'No comments' : count === 1 ? '1 comment' : `${count} comments`;
}

/**
 * "💬 2 · ❤️ 2 😂 1": the comments and the reactions given, in short, beside the author and the day (no buttons on
 * a tile; nothing when there are none). The photo is what a tile shows; its words are few.
 */
function countLine(post) {
  const summary = reactionSummary(post.reactions);
  const comments = post.commentCount > 0 ? `💬 ${post.commentCount}` : null;
  return [comments, comments && summary ? ' · ' : null, summary ? h('span', { class: 'reaction-summary',
    title: `Reactions: ${reactionWords(post.reactions)}` }, summary) : null].filter(Boolean);
}

/** The same in words, for a screen reader: "2 comments, 2 heart, 1 laugh". */
function countWords(post) {
  return [commentCountText(post.commentCount), reactionWords(post.reactions)].filter(Boolean).join(', ');
}

const arrivals = new Map(); // sha256 -> performance.now() of its photoArrived/thumbnailArrived

function retryThumbnails(sha) {
  arrivals.set(sha, performance.now());
  if (!grid) return;
  for (const tile of grid.querySelectorAll(`li.no-thumb[data-sha="${CSS.escape(sha)}"]`)) {
    const img = tile.querySelector('img');
    // A new <img> (same URL): a failed load is not cached, so this asks the node again.
    const fresh = img.cloneNode();
    fresh.addEventListener('error', () => { tile.classList.add('no-thumb'); tile.querySelector('.placeholder').hidden = false; });
    fresh.addEventListener('load', () => { tile.classList.remove('no-thumb'); tile.querySelector('.placeholder').hidden = true; });
    fresh.loading = 'eager';
    img.replaceWith(fresh);
  }
}

/** The posts of the grid, in its order (the full-screen viewer goes through them). */
export function loadedPosts() {
  return grid ? [...grid.querySelectorAll('li.tile')].map((tile) => state.posts.get(tile.dataset.id)?.post).filter(Boolean) : [];
}

/** A post made on this page (#/new): put it in place at once. */
export function addLocalPost(post) {
  if (section) insertSorted(post);
}

/** A post changed (edit, new photo, comment count) on the detail page or by a live event. */
export function updatePost(post) {
  const entry = state.posts.get(post.id);
  if (!entry) return;
  const { comments, ...summary } = post; // the detail's comments are not the tile's
  void comments;
  entry.post = { ...entry.post, ...summary };
  if (entry.post.photo.sha256 !== entry.tile.dataset.sha) {
    // A new photo: a new tile in the old one's place (its thumbnail, placeholder and retries start afresh).
    const tile = makeTile(entry.post);
    entry.tile.replaceWith(tile);
    entry.tile = tile;
    selection.decorate(tile);
    return;
  }
  entry.tile.querySelector('.caption').textContent = entry.post.caption;
  entry.tile.querySelector('img').alt = entry.post.caption;
  entry.tile.querySelector('.meta.by').replaceChildren(...byLine(entry.post));
  const count = entry.tile.querySelector('.meta.count');
  count.replaceChildren(...countLine(entry.post));
  count.setAttribute('aria-label', countWords(entry.post));
}

/** An author blocked on this node: its posts are erased here. */
export function removeAuthor(author) {
  removePosts([...state.posts.values()].filter(({ post }) => post.author === author).map(({ post }) => post.id));
}

export function removePosts(ids) {
  let removed = 0;
  for (const id of ids) {
    const entry = state.posts.get(id);
    if (!entry) continue;
    entry.tile.remove();
    state.posts.delete(id);
    selection.forget(id);
    removed += 1;
  }
  if (removed && state.mode === 'feed') updateFeedStatus();
}

function insertSorted(post) {
  if (state.posts.has(post.id) || state.mode !== 'feed' || !passesFilters(post)) return false;
  // Newest first, by createdAt then id, as the feed. A post older than everything loaded while more pages remain
  // comes with those pages instead (the cursor is a position, so it will).
  const key = (p) => [Date.parse(p.createdAt), p.id];
  const [t, id] = key(post);
  let before = null;
  for (const { post: other, tile } of state.posts.values()) {
    const [ot, oid] = key(other);
    if (ot < t || (ot === t && oid < id)) { before = tile; break; }
  }
  if (!before && state.more) return false;
  const tile = makeTile(post);
  state.posts.set(post.id, { post, tile });
  grid.insertBefore(tile, before);
  selection.decorate(tile);
  // Keep the Map in grid order for the next insertion.
  const entries = [...grid.children].map((child) => [child.dataset.id, state.posts.get(child.dataset.id)]);
  state.posts = new Map(entries);
  updateFeedStatus();
  return true;
}

async function onPostEvent(event) {
  if (!section || state.mode !== 'feed' || state.posts.has(event.post)) return;
  try {
    const post = await api(`/api/posts/${event.post}`);
    if (insertSorted(post) && !isOwnAuthor(post.author, post.account)) {
      announce(`New post from ${post.authorName ?? 'a peer'}: ${post.caption}`);
    }
  } catch (error) {
    if (error.code !== 'unknown_post') showError(error, 'Could not show a new post');
  }
}

const countedComments = new Set();

function onCommentEvent(event) {
  const entry = state.posts.get(event.post);
  if (!entry || countedComments.has(event.comment)) return;
  countedComments.add(event.comment);
  updatePost({ id: event.post, commentCount: entry.post.commentCount + 1 });
}

async function onEditedEvent(event) {
  const entry = state.posts.get(event.post);
  if (!entry || entry.post.author !== event.author) return;
  // The caption when the edit changed it (null when only the photo or the location changed); then the post as
  // this node has it now, for a new photo and when it was taken.
  if (typeof event.caption === 'string') updatePost({ id: event.post, caption: event.caption });
  try {
    updatePost(await api(`/api/posts/${event.post}`));
  } catch {
    // Deleted meanwhile (its own event removes the tile), or the node is unreachable (the catch-up refreshes it).
  }
}

const reactionsToRead = new Set(); // posts in the grid reacted to since the last read
let reactionTimer = 0;

/** A reaction to a post in the grid (one to a comment changes nothing on a tile): its counts are read again. */
function onReactionEvent(event) {
  if (event.target !== event.post || !state.posts.has(event.post)) return;
  reactionsToRead.add(event.post);
  window.clearTimeout(reactionTimer);
  // Once for a burst (a sync brings many): the posts reacted to are read a moment after the last event.
  reactionTimer = window.setTimeout(async () => {
    const ids = [...reactionsToRead];
    reactionsToRead.clear();
    for (const id of ids) {
      try {
        const post = await api(`/api/posts/${id}`);
        updatePost({ id, reactions: post.reactions, myReaction: post.myReaction });
      } catch {
        // Deleted meanwhile (its own event removes the tile), or the node is unreachable (the catch-up refreshes it).
      }
    }
  }, 500);
}

function onDeletedEvent(event) {
  const own = event.targets.filter((id) => state.posts.get(id)?.post.author === event.author);
  removePosts(own);
}

/** After a gap in the live updates: fetch the first page again, add what is new, refresh what is shown. */
async function catchUp() {
  if (!section || state.mode !== 'feed') return;
  try {
    const body = await api('/api/feed' + feedQuery(null));
    for (const post of body.posts) {
      if (state.posts.has(post.id)) updatePost(post);
      else insertSorted(post);
    }
  } catch {
    // The next reconnection tries again.
  }
}

/**
 * The benchmark's mark: the first page of tiles is in the grid and every thumbnail on the first screen has
 * finished loading (or failed, showing its placeholder). `performance.getEntriesByName('continuum:first-screen')`.
 */
let firstScreenDone;
const firstScreen = new Promise((resolve) => { firstScreenDone = resolve; });

function markFirstScreen() {
  if (state.firstScreenMarked) return;
  state.firstScreenMarked = true;
  const images = [...grid.querySelectorAll('img')].filter((img) => {
    const rect = img.getBoundingClientRect();
    return rect.bottom > 0 && rect.top < window.innerHeight;
  });
  const pending = images.filter((img) => !img.complete).map((img) => new Promise((resolve) => {
    img.addEventListener('load', resolve, { once: true });
    img.addEventListener('error', resolve, { once: true });
  }));
  Promise.all(pending).then(() => {
    performance.mark('continuum:first-screen');
    window.continuumFirstScreen = { at: performance.now(), images: images.length,
      loaded: images.filter((img) => img.naturalWidth > 0).length, tiles: grid.children.length };
    firstScreenDone();
  });
}

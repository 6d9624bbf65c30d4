// Small DOM helpers. Text from the network only ever goes through textContent or attributes, never HTML.

/** h('a', {href: '#/', class: 'x', onclick: fn}, 'text', childNode, [more]) */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      element.addEventListener(key.slice(2), value);
    } else if (key === 'class') {
      element.className = value;
    } else if (key === 'dataset') {
      Object.assign(element.dataset, value);
    } else if (value === true) {
      element.setAttribute(key, '');
    } else {
      element.setAttribute(key, String(value));
    }
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export const shortId = (id) => (id ?? '').slice(0, 12);

/** The author's display name, or the short id when the node holds none. */
export const authorLabel = (name, id) => name ?? shortId(id);

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** A <time> with the local date and time, the RFC 3339 value as datetime. */
export function timeElement(iso) {
  const date = new Date(iso);
  return h('time', { datetime: iso, title: date.toISOString() }, isNaN(date) ? iso : dateFormat.format(date));
}

const dayFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });
const clockFormat = new Intl.DateTimeFormat(undefined, { timeStyle: 'short' });
const relativeFormat = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto', style: 'short' });

/** "2 h ago" for the last 7 days, the local date and time before that. */
export function relativeTime(date, now = Date.now()) {
  const seconds = Math.round((date.getTime() - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 45) return 'just now';
  if (abs < 3600) return relativeFormat.format(Math.round(seconds / 60), 'minute');
  if (abs < 86400) return relativeFormat.format(Math.round(seconds / 3600), 'hour');
  if (abs < 7 * 86400) return relativeFormat.format(Math.round(seconds / 86400), 'day');
  return dateFormat.format(date);
}

/** Brings the relative times ("2 h ago") under `root` up to date. */
export function refreshRelativeTimes(root) {
  const now = Date.now();
  for (const time of root.querySelectorAll('time.posted-at')) {
    const date = new Date(time.dateTime);
    if (!isNaN(date)) time.textContent = relativeTime(date, now);
  }
}

const sameDay = (a, b) => a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() && a.getDate() === b.getDate();

/**
 * When a post was posted (createdAt, which orders the feed) and, when it says and they differ by a minute or
 * more, when its photo was taken: "posted 2 h ago · taken 12 May 2023" (the time of day only when taken the
 * same day). Each a <time> whose title is the full local date and time. An array of nodes for h().
 */
export function postedAndTaken(post) {
  const posted = new Date(post.createdAt);
  const parts = ['posted ', h('time', { class: 'posted-at', datetime: post.createdAt, title: isNaN(posted) ? null : dateFormat.format(posted) },
    isNaN(posted) ? post.createdAt : relativeTime(posted))];
  const taken = post.takenAt ? new Date(post.takenAt) : null;
  if (taken && !isNaN(taken) && !isNaN(posted) && Math.abs(posted - taken) >= 60_000) {
    parts.push(' · taken ', h('time', { class: 'taken-at', datetime: post.takenAt, title: dateFormat.format(taken) },
      sameDay(posted, taken) ? clockFormat.format(taken) : dayFormat.format(taken)));
  }
  return parts;
}

/** The day a post was posted (or anything happened), as a <time>: "22 Nov 2026", the full date and time as title. */
export function dayElement(iso, className = 'posted-day') {
  const date = new Date(iso);
  return h('time', { class: className, datetime: iso, title: isNaN(date) ? null : dateFormat.format(date) },
    isNaN(date) ? iso : dayFormat.format(date));
}

/** Binary units, as the node's options count them (--max-photo-mb is MiB): "12 MiB", "1.5 MiB", "300 KiB". */
export function formatMiB(bytes) {
  const mib = bytes / 1048576;
  if (mib >= 1) return `${Number.isInteger(mib) || mib >= 10 ? Math.round(mib) : mib.toFixed(1)} MiB`;
  return `${Math.max(1, Math.round(bytes / 1024))} KiB`;
}

/** An SVG document as a data: URL (base64 of its UTF-8 bytes), for an <img>: never inserted as markup. */
export function svgDataURL(svg) {
  const bytes = new TextEncoder().encode(svg);
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return 'data:image/svg+xml;base64,' + btoa(binary);
}

export function formatBytes(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(bytes < 10240 ? 1 : 0)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

export function formatLocation(location) {
  return `${location.latitude.toFixed(5)}, ${location.longitude.toFixed(5)}`;
}

/** Shows an error to the person (role=alert region), with a dismiss button. Returns the element. */
export function showError(error, context) {
  const region = document.getElementById('errors');
  const message = error?.message ?? String(error);
  const text = context ? `${context}: ${message}` : message;
  // The same message twice in a row (a retry loop) is shown once.
  for (const existing of region.querySelectorAll('.error-text')) {
    if (existing.textContent === text) return existing.parentElement;
  }
  const item = h('div', { class: 'error' },
    h('span', { class: 'error-text' }, text),
    h('button', { type: 'button', class: 'link', 'aria-label': 'Dismiss this message', onclick: () => item.remove() }, '×'));
  region.append(item);
  return item;
}

export function clearErrors() {
  document.getElementById('errors').replaceChildren();
}

/** A polite screen-reader announcement. */
export function announce(text) {
  const region = document.getElementById('notice');
  region.textContent = '';
  window.setTimeout(() => { region.textContent = text; }, 50);
}

// The timeline's "Near me" filter: a place (the browser's position, a city's name, or LAT,LON typed) and a radius in
// km. A name is looked up in the node's gazetteer (GET /api/places, offline). The feed filters with
// near=LAT,LON&radiusKm=K (Docs/API.md); search results are filtered here by the same distance.

import { api, query } from './api.js';
import { h, formatLocation } from './dom.js';

export const DEFAULT_RADIUS_KM = 10;
const MAX_RADIUS_KM = 20040; // half the Earth's circumference, the node's limit

/** "48.8566,2.3522" -> {latitude, longitude}, or null when it is not a place in range. */
export function parsePlace(text) {
  const parts = String(text ?? '').split(',').map((part) => part.trim());
  if (parts.length !== 2 || parts.some((part) => part === '')) return null;
  const [latitude, longitude] = parts.map(Number);
  if (!Number.isFinite(latitude) || !Number.isFinite(longitude)) return null;
  if (Math.abs(latitude) > 90 || Math.abs(longitude) > 180) return null;
  return { latitude, longitude };
}

export const placeText = (place) => `${place.latitude},${place.longitude}`;

/** A radius the node takes (more than 0, at most 20040 km), or null. */
export function parseRadius(text) {
  const km = Number(String(text ?? '').trim().replace(',', '.'));
  return String(text ?? '').trim() !== '' && km > 0 && km <= MAX_RADIUS_KM ? km : null;
}

/** The great-circle distance in km between two {latitude, longitude}. */
export function distanceKm(a, b) {
  const rad = Math.PI / 180;
  const dLat = (b.latitude - a.latitude) * rad;
  const dLon = (b.longitude - a.longitude) * rad;
  const s = Math.sin(dLat / 2) ** 2 + Math.cos(a.latitude * rad) * Math.cos(b.latitude * rad) * Math.sin(dLon / 2) ** 2;
  return 2 * 6371.0088 * Math.asin(Math.min(1, Math.sqrt(s)));
}

const GEO_ERRORS = {
  1: 'You did not let this page know your position (or the browser refused to tell it).',
  2: 'Your position is not available now.',
  3: 'Finding your position took too long.',
};
const TYPE_INSTEAD = ' Type a city instead, or latitude,longitude, for example Paris or 48.8566,2.3522.';

/**
 * The chip "Near me" (a checkbox) and, while it is ticked, a form with the place, "Use my location" and the
 * radius. `onChange({near, radiusKm})` when the filter changes (near null: no filter). Returns {chip, form, set}.
 */
export function nearControls(onChange) {
  const box = h('input', { type: 'checkbox', id: 'filter-near', 'aria-controls': 'near-form' });
  const chip = h('label', { class: 'chip', for: 'filter-near' }, box, ' Near me');
  const place = h('input', { type: 'text', id: 'near-place', name: 'near', autocomplete: 'off',
    placeholder: 'Paris, or 48.8566,2.3522', 'aria-describedby': 'near-message' });
  const radius = h('input', { type: 'text', id: 'near-radius', name: 'radiusKm', inputmode: 'decimal', autocomplete: 'off',
    value: String(DEFAULT_RADIUS_KM), 'aria-describedby': 'near-message' });
  const locate = h('button', { type: 'button', id: 'near-locate' }, 'Use my location');
  const message = h('p', { class: 'help', id: 'near-message', role: 'status' });
  const form = h('form', { class: 'near-form', id: 'near-form', hidden: true, novalidate: true, 'aria-label': 'Posts near a place' },
    h('div', { class: 'field place' }, h('label', { for: 'near-place' }, 'Place (a city, or latitude,longitude)'),
      h('div', { class: 'row' }, place, locate)),
    h('div', { class: 'field radius' }, h('label', { for: 'near-radius' }, 'Radius (km)'), radius),
    h('button', { type: 'submit', id: 'near-apply' }, 'Show nearby'),
    message);
  let asking = 0; // the position request under way; typing a place (or another request) drops its answer

  function say(text, invalid = null) {
    message.textContent = text;
    for (const input of [place, radius]) input.removeAttribute('aria-invalid');
    invalid?.setAttribute('aria-invalid', 'true');
  }

  async function apply() {
    const radiusKm = parseRadius(radius.value);
    if (radiusKm === null) return say(`The radius is a number of km, more than 0 and at most ${MAX_RADIUS_KM}.`, radius);
    let near = parsePlace(place.value);
    let name = near ? formatLocation(near) : null;
    const typed = place.value.trim();
    if (!near && typed && !/^[-+\d.,\s]+$/.test(typed)) {
      const ask = ++asking;
      say(`Looking up ${typed}…`);
      let found = null;
      try {
        found = (await api('/api/places' + query({ q: typed, limit: 1 }))).places[0] ?? null;
      } catch (error) {
        if (ask === asking) say(`The place could not be looked up: ${error.message}`, place);
        return;
      }
      if (ask !== asking) return; // typed again meanwhile
      if (found) {
        near = { latitude: found.latitude, longitude: found.longitude };
        name = `${found.name}, ${found.country}`;
      }
    }
    if (!near) {
      return say('Write a city, such as Paris, or latitude,longitude in decimal degrees, such as 48.8566,2.3522.', place);
    }
    say(`Posts within ${radiusKm} km of ${name}.`);
    onChange({ near, radiusKm });
  }

  function useMyLocation() {
    const ask = ++asking;
    if (!window.isSecureContext || !('geolocation' in navigator)) {
      say('This browser does not tell this page where you are (it does so only over https, or on this machine).' + TYPE_INSTEAD);
      place.focus();
      return;
    }
    locate.disabled = true;
    say('Asking the browser where you are…');
    navigator.geolocation.getCurrentPosition((position) => {
      if (ask !== asking) return;
      locate.disabled = false;
      place.value = `${position.coords.latitude.toFixed(5)},${position.coords.longitude.toFixed(5)}`;
      apply();
    }, (error) => {
      if (ask !== asking) return;
      locate.disabled = false;
      say((GEO_ERRORS[error.code] ?? `Your position is not available: ${error.message}.`) + TYPE_INSTEAD);
      place.focus();
    }, { timeout: 15000, maximumAge: 300000 });
  }

  box.addEventListener('change', () => {
    form.hidden = !box.checked;
    if (!box.checked) {
      asking += 1;
      locate.disabled = false;
      onChange({ near: null, radiusKm: DEFAULT_RADIUS_KM });
    } else if (parsePlace(place.value)) {
      apply();
    } else {
      useMyLocation();
    }
  });
  place.addEventListener('input', () => { asking += 1; locate.disabled = false; });
  locate.addEventListener('click', useMyLocation);
  form.addEventListener('submit', (event) => { event.preventDefault(); apply(); });

  /** Shows a filter restored from the address, without calling onChange. */
  function set({ near, radiusKm }) {
    box.checked = near !== null;
    form.hidden = near === null;
    if (near) place.value = placeText(near);
    radius.value = String(radiusKm);
    say(near ? `Posts within ${radiusKm} km of ${formatLocation(near)}.` : '');
  }
  return { chip, form, set };
}

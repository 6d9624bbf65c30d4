// Where a post was taken, offline: a small map drawn from the node's own world.svg (Natural Earth's countries, in
// degrees: x the longitude, y minus the latitude) around a pin, and the place's name from the node's gazetteer
// (GeoNames). No tile server: nothing leaves the LAN.

import { h, formatLocation } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';
const SPAN = [48, 24]; // degrees of longitude and latitude shown around the pin

function svg(tag, attributes) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  return element;
}

/** "Paris, France", or "near Paris, France (35 km)" when the nearest city is further than 15 km. */
export function placeWords(place) {
  if (!place) return null;
  const name = `${place.name}, ${place.country}`;
  return place.distanceKm > 15 ? `near ${name} (${Math.round(place.distanceKm)} km)` : name;
}

/** The map of a location (`{latitude, longitude}`) with its place (the API's `place`, or null). */
export function locationMap(location, place) {
  const [width, height] = SPAN;
  const x = Math.min(180 - width, Math.max(-180, location.longitude - width / 2));
  const y = Math.min(90 - height, Math.max(-90, -location.latitude - height / 2));
  const words = placeWords(place);
  const map = svg('svg', { class: 'map', id: 'post-map', viewBox: `${x} ${y} ${width} ${height}`, role: 'img',
    'aria-label': `Map: ${words ?? formatLocation(location)}` });
  map.append(
    svg('rect', { class: 'sea', x, y, width, height }),
    svg('use', { class: 'land', href: 'world.svg#land' }),
    svg('circle', { class: 'pin', id: 'map-pin', cx: location.longitude, cy: -location.latitude, r: 0.7 }));
  return h('figure', { class: 'location-map' }, map,
    h('figcaption', {},
      h('span', { class: 'place', id: 'post-place' }, words ?? 'Somewhere without a city nearby'), ' ',
      h('span', { class: 'coordinates' }, formatLocation(location)), ' ',
      h('span', { class: 'credit' }, 'Map: Natural Earth · places: GeoNames')));
}

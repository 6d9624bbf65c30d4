#!/usr/bin/env python3
"""Draws the world map of the post page (Sources/ContinuumHTTP/Web/world.svg) from Natural Earth's country shapes.

    pip download --no-deps --only-binary=:all: geopandas==0.14.4      # its datasets hold Natural Earth 1:110m
    unzip geopandas-0.14.4-py3-none-any.whl 'geopandas/datasets/naturalearth_lowres/*'
    scripts/make-world-map.py geopandas/datasets/naturalearth_lowres/naturalearth_lowres.shp

Natural Earth (naturalearthdata.com) is in the public domain. The map is equirectangular, in degrees: x is the
longitude (-180 … 180), y minus the latitude (-90 … 90), so that a position goes on it with no projection code. Points
are rounded to 0.1° and a point that rounds onto the one before it is dropped. Run once; the SVG is committed.
Python 3's standard library only: the shapefile is read here (ESRI's format: polygons, type 5).
"""
import struct
import sys
from pathlib import Path


def polygons(shp):
    """Each ring of each polygon of the shapefile, as a list of (lon, lat)."""
    data = Path(shp).read_bytes()
    assert struct.unpack('>i', data[:4])[0] == 9994, 'not a shapefile'
    offset = 100
    while offset < len(data):
        _, words = struct.unpack('>ii', data[offset:offset + 8])
        content = data[offset + 8:offset + 8 + 2 * words]
        offset += 8 + 2 * words
        shape = struct.unpack('<i', content[:4])[0]
        if shape == 0:
            continue
        assert shape == 5, f'shape type {shape}: only polygons are expected'
        parts, points = struct.unpack('<ii', content[36:44])
        starts = list(struct.unpack(f'<{parts}i', content[44:44 + 4 * parts])) + [points]
        base = 44 + 4 * parts
        xy = struct.unpack(f'<{2 * points}d', content[base:base + 16 * points])
        for start, end in zip(starts, starts[1:]):
            yield [(xy[2 * i], xy[2 * i + 1]) for i in range(start, end)]


def path(rings):
    commands = []
    for ring in rings:
        points = []
        for lon, lat in ring:
            point = (round(lon, 1), round(-lat, 1))
            if not points or point != points[-1]:
                points.append(point)
        if len(points) < 3:
            continue
        text = ' '.join(f'{x:g} {y:g}' for x, y in points)
        commands.append(f'M{text}Z')
    return ''.join(commands)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = Path(__file__).resolve().parent.parent / 'Sources' / 'ContinuumHTTP' / 'Web' / 'world.svg'
    d = path(polygons(sys.argv[1]))
    out.write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="-180 -90 360 180">'
        '<!-- Countries: Natural Earth 1:110m (public domain), by scripts/make-world-map.py. -->'
        f'<path id="land" d="{d}"/></svg>\n')
    print(f'{out}: {out.stat().st_size} bytes')


if __name__ == '__main__':
    main()

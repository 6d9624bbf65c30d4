#!/usr/bin/env python3
"""PHOTOS_WANT and PHOTOS frame vectors (Docs/PROTOCOL.md §7.4.26, §7.4.27), computed by Python alone.

Independent of the Swift code: the layouts are written from §7.1, §7.4.26 and §7.4.27, the photo hashes with hashlib.
The Swift tests (Tests/ContinuumWireTests/PhotosFrameTests.swift) compare the encoder with the frames printed here.

Three frames:
  (a) photos-want-two      PHOTOS_WANT (89): two photos, `1111…11` and `2222…22`
  (b) photos-two-entries   PHOTOS (8a): the photo `abc` (3 bytes, named by its SHA-256) given, `2222…22` not given
  (c) photos-largest       PHOTOS (8a): one photo of 65536 bytes (all `5a`), the largest an entry carries

Usage:
    python3 photos_vectors.py     check the self-checks, print each frame (its first 48 hex digits for (c))
"""

from __future__ import annotations

import hashlib
import struct
import sys

PHOTOS_WANT = 0x89
PHOTOS = 0x8A
MAX_PHOTOS = 64                 # §7.4.26, §7.4.27: 1 … 64 photos
MAX_PHOTO_BYTES = 65536         # §7.4.27: an entry's photo is 1 … 65536 bytes (0: not given)


def frame(kind: int, payload: bytes) -> bytes:
    """§7.1: `u32` length (2 + the payload's size), `u8` version 1, `u8` type, the payload."""
    return struct.pack(">IBB", 2 + len(payload), 1, kind) + payload


def photos_want(hashes: list[bytes]) -> bytes:
    """§7.4.26: `u8` count (1 … 64), then the photos' SHA-256 hashes (distinct)."""
    assert 1 <= len(hashes) <= MAX_PHOTOS and len(set(hashes)) == len(hashes)
    return frame(PHOTOS_WANT, bytes([len(hashes)]) + b"".join(hashes))


def photos(entries: list[tuple[bytes, bytes | None]]) -> bytes:
    """§7.4.27: `u8` count (1 … 64), then per entry the hash, `u32` length (0: not given), the photo's bytes."""
    assert 1 <= len(entries) <= MAX_PHOTOS and len({h for h, _ in entries}) == len(entries)
    payload = bytes([len(entries)])
    for digest, data in entries:
        assert len(digest) == 32 and (data is None or 1 <= len(data) <= MAX_PHOTO_BYTES)
        payload += digest + struct.pack(">I", 0 if data is None else len(data)) + (data or b"")
    return frame(PHOTOS, payload)


def decode(data: bytes) -> tuple[int, list]:
    """An independent reader of a whole PHOTOS_WANT or PHOTOS frame, checking §7.1 and every rule of §7.4.26–27.
    Each refusal is an AssertionError naming the rule."""
    assert len(data) >= 6, "truncated"
    length, version, kind = struct.unpack(">IBB", data[:6])
    assert length == len(data) - 4 and 2 <= length <= 4194304 and version == 1, "frame header"
    assert kind in (PHOTOS_WANT, PHOTOS), "type"
    p = data[6:]
    assert len(p) >= 1, "truncated"
    count, o, out = p[0], 1, []
    assert 1 <= count <= MAX_PHOTOS, f"count {count}"
    for _ in range(count):
        assert len(p) - o >= 32, "truncated"
        digest = p[o:o + 32]
        o += 32
        if kind == PHOTOS_WANT:
            out.append(digest.hex())
            continue
        assert len(p) - o >= 4, "truncated"
        size = struct.unpack(">I", p[o:o + 4])[0]
        o += 4
        assert size <= MAX_PHOTO_BYTES, f"length {size}"
        assert len(p) - o >= size, "truncated"
        out.append({"hash": digest.hex(), "bytes": p[o:o + size].hex() if size else None})
        o += size
    assert o == len(p), "trailing bytes"
    hashes = out if kind == PHOTOS_WANT else [e["hash"] for e in out]
    assert len(set(hashes)) == len(hashes), "a photo named twice"
    return kind, out


ONES, TWOS = b"\x11" * 32, b"\x22" * 32
ABC = hashlib.sha256(b"abc").digest()    # ba7816bf…15ad, FIPS 180-2's example
BIG = b"\x5a" * MAX_PHOTO_BYTES

# The frames, written out by hand from §7.4.26–27 (not by the encoders above), and what they decode to.
EXPECTED = {
    "photos-want-two": ("00000043" "01" "89" "02" + "11" * 32 + "22" * 32, (PHOTOS_WANT, ["11" * 32, "22" * 32])),
    "photos-two-entries": (
        "0000004e" "01" "8a" "02"
        + "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" + "00000003" + "616263"
        + "22" * 32 + "00000000",
        (PHOTOS, [{"hash": ABC.hex(), "bytes": "616263"}, {"hash": "22" * 32, "bytes": None}]),
    ),
    "photos-largest": (
        "00010027" "01" "8a" "01" + "5a" * 32 + "00010000" + "5a" * MAX_PHOTO_BYTES,
        (PHOTOS, [{"hash": "5a" * 32, "bytes": "5a" * MAX_PHOTO_BYTES}]),
    ),
}


def build() -> dict[str, bytes]:
    return {
        "photos-want-two": photos_want([ONES, TWOS]),
        "photos-two-entries": photos([(ABC, b"abc"), (TWOS, None)]),
        "photos-largest": photos([(b"\x5a" * 32, BIG)]),
    }


def refusals() -> list[str]:
    """Frames that break §7.4.26–27, each refused for its own reason."""
    entry = ABC + struct.pack(">I", 3) + b"abc"
    cases = [
        ("PHOTOS_WANT of no photo", frame(PHOTOS_WANT, b"\x00"), "count 0"),
        ("PHOTOS_WANT of 65 photos", frame(PHOTOS_WANT, bytes([65]) + b"".join(bytes([i]) * 32 for i in range(65))),
         "count 65"),
        ("PHOTOS_WANT naming a photo twice", frame(PHOTOS_WANT, b"\x02" + ONES + ONES), "a photo named twice"),
        ("PHOTOS_WANT cut inside a hash", frame(PHOTOS_WANT, b"\x02" + ONES + TWOS[:5]), "truncated"),
        ("PHOTOS with a photo of 65537 bytes", frame(PHOTOS, b"\x01" + ONES + struct.pack(">I", 65537)),
         "length 65537"),
        ("PHOTOS shorter than its length", frame(PHOTOS, b"\x01" + ABC + struct.pack(">I", 4) + b"abc"),
         "truncated"),
        ("PHOTOS naming a photo twice", frame(PHOTOS, b"\x02" + entry + entry), "a photo named twice"),
        ("PHOTOS with a byte after the last entry", frame(PHOTOS, b"\x01" + entry + b"\x00"), "trailing bytes"),
    ]
    failures = []
    for what, data, reason in cases:
        try:
            decode(data)
        except AssertionError as refused:
            if str(refused) != reason:
                failures.append(f"{what}: refused for `{refused}`, not `{reason}`")
        else:
            failures.append(f"{what}: decodes")
    return failures


def main() -> int:
    failures = refusals()
    for name, data in build().items():
        hex_frame, decoded = EXPECTED[name]
        if data.hex() != hex_frame:
            failures.append(f"{name}: {data.hex()[:96]}… is not the frame written by hand")
        if decode(data) != decoded:
            failures.append(f"{name}: does not decode to what was written by hand")
    if failures:
        for failure in failures:
            print("FAIL:", failure, file=sys.stderr)
        return 1
    for name, data in build().items():
        shown = data.hex() if len(data) < 200 else data.hex()[:48] + "…"
        print(f"{name}: {len(data)} bytes {shown}")
    print("ok: PHOTOS_WANT and PHOTOS frames built, decoded and checked by hand; bad frames refused")
    return 0


if __name__ == "__main__":
    sys.exit(main())

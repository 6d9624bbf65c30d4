#!/usr/bin/env python3
"""Golden test vectors for the continuum record format (Docs/PROTOCOL.md), from an independent implementation.

This is a second implementation of the canonical record encoding, written from the protocol text and not by
calling the Swift code, so that the Swift tests can check their bytes against it. It builds six records from
fixed inputs, decodes them back with its own decoder, verifies their Ed25519 signatures, checks that every
single-bit flip of every record makes decoding or verification fail, and checks a list of invalid records
that the decoder must refuse.

Usage:
    python3 scripts/protocol_vectors.py            check: vectors.json and the vector section of PROTOCOL.md are
                                                   what this script generates, and every self-check passes
    python3 scripts/protocol_vectors.py --write    regenerate vectors.json and the generated section of PROTOCOL.md
    python3 scripts/protocol_vectors.py --markdown print the generated PROTOCOL.md section

Needs Python 3.9+ and the `cryptography` package. Exits non-zero on any failure.
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

ROOT = Path(__file__).resolve().parent.parent
VECTORS_PATH = ROOT / "Tests" / "ContinuumCoreTests" / "Resources" / "vectors.json"
PROTOCOL_PATH = ROOT / "Docs" / "PROTOCOL.md"
BEGIN_MARK = "<!-- BEGIN GENERATED VECTORS: scripts/protocol_vectors.py --write regenerates this section -->"
END_MARK = "<!-- END GENERATED VECTORS -->"

# ---------------------------------------------------------------------------------------------------------------
# The format (Docs/PROTOCOL.md §2 - §4.1)
# ---------------------------------------------------------------------------------------------------------------

MAGIC = b"CNTM"
VERSION = 1
SIGNATURE_BYTES = 64

KIND_CODES = {"profile": 1, "post": 2, "comment": 3, "edit": 4, "delete": 5}
KIND_NAMES = {code: name for name, code in KIND_CODES.items()}

MEDIA_TYPES = {1: "image/jpeg", 2: "image/png", 3: "image/heic", 4: "image/webp", 5: "image/gif"}
MEDIA_CODES = {mime: code for code, mime in MEDIA_TYPES.items()}

NAME_BYTES = 64
CAPTION_BYTES = 2048
COMMENT_BYTES = 4096
DELETE_TARGETS = 256
PHOTO_BYTES = 1 << 30
PHOTO_DIMENSION = 1 << 24
LATEST_TIMESTAMP = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z
RECORD_BYTES = 16_384
MAX_SEQUENCE = (1 << 53) - 1  # 9007199254740991: exact in a signed 64-bit integer and in a JSON number
LATITUDE_E7 = 900_000_000
LONGITUDE_E7 = 1_800_000_000

# The Unicode White_Space property (PropList.txt), spelled out so that this does not depend on str.isspace().
WHITE_SPACE = frozenset(
    [0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F,
     0x205F, 0x3000]
)


class Invalid(Exception):
    """A record or content that the protocol refuses."""


def check_text(text: str, field: str, limit: int, multiline: bool) -> None:
    length = len(text.encode("utf-8"))
    if length > limit:
        raise Invalid(f"{field} is {length} bytes; the limit is {limit}")
    if all(ord(ch) in WHITE_SPACE for ch in text):
        raise Invalid(f"{field} is blank")
    for ch in text:
        value = ord(ch)
        allowed = value == 0x09 or (multiline and value == 0x0A)
        if (value < 0x20 or value == 0x7F) and not allowed:
            raise Invalid(f"{field} contains control character U+{value:04X}")


def validate(content: dict) -> None:
    """The checks that need no other record (Docs/PROTOCOL.md §3, §4.1), signature aside."""
    if len(content["author"]) != 32:
        raise Invalid("author must be 32 bytes")
    sequence = content["sequence"]
    if not 1 <= sequence <= MAX_SEQUENCE:
        raise Invalid(f"sequence {sequence} must be 1 ... {MAX_SEQUENCE}")
    previous = content["previous"]
    if (sequence == 1) != (previous is None):
        raise Invalid("previous must be present exactly when sequence > 1")
    if previous is not None and len(previous) != 32:
        raise Invalid("previous must be 32 bytes")
    if not 0 <= content["createdAt"] <= LATEST_TIMESTAMP:
        raise Invalid("createdAt is outside 1970 ... 9999")
    kind, body = content["kind"], content["body"]
    if kind == "profile":
        check_text(body["name"], "name", NAME_BYTES, multiline=False)
    elif kind == "post":
        check_text(body["caption"], "caption", CAPTION_BYTES, multiline=True)
        if len(body["sha256"]) != 32:
            raise Invalid("photo sha256 must be 32 bytes")
        if not 1 <= body["bytes"] <= PHOTO_BYTES:
            raise Invalid("photo size out of range")
        if body["mediaType"] not in MEDIA_CODES:
            raise Invalid("unknown media type")
        if not (1 <= body["width"] <= PHOTO_DIMENSION and 1 <= body["height"] <= PHOTO_DIMENSION):
            raise Invalid("photo dimensions out of range")
        lat, lon = body["latitudeE7"], body["longitudeE7"]
        if (lat is None) != (lon is None):
            raise Invalid("latitude and longitude come together")
        if lat is not None and not (abs(lat) <= LATITUDE_E7 and abs(lon) <= LONGITUDE_E7):
            raise Invalid("location is not on Earth")
    elif kind in ("comment", "edit"):
        if len(body["post"]) != 32:
            raise Invalid("post id must be 32 bytes")
        if kind == "comment":
            check_text(body["text"], "text", COMMENT_BYTES, multiline=True)
        else:
            check_text(body["caption"], "caption", CAPTION_BYTES, multiline=True)
    elif kind == "delete":
        targets = body["targets"]
        if not targets:
            raise Invalid("a delete needs at least one target")
        if len(targets) > DELETE_TARGETS:
            raise Invalid("too many delete targets")
        if any(len(t) != 32 for t in targets):
            raise Invalid("targets must be 32 bytes")
        if any(not a < b for a, b in zip(targets, targets[1:])):
            raise Invalid("delete targets must be strictly ascending")
    else:
        raise Invalid(f"unknown kind {kind!r}")


def encode_fields(content: dict) -> list[tuple[str, bytes]]:
    """The signed part of a record as labelled fields, in order. Validates first."""
    validate(content)
    fields: list[tuple[str, bytes]] = [
        ("magic", MAGIC),
        ("version", bytes([VERSION])),
        ("kind", bytes([KIND_CODES[content["kind"]]])),
        ("author", content["author"]),
        ("sequence", struct.pack(">Q", content["sequence"])),
    ]
    if content["previous"] is not None:
        fields.append(("previous", content["previous"]))
    fields.append(("createdAt", struct.pack(">q", content["createdAt"])))
    body = content["body"]
    kind = content["kind"]

    def string(field: str, text: str, prefix: str) -> None:
        data = text.encode("utf-8")
        fields.append((f"{field} length", struct.pack(prefix, len(data))))
        fields.append((field, data))

    if kind == "profile":
        string("name", body["name"], ">B")
    elif kind == "post":
        string("caption", body["caption"], ">H")
        fields.append(("photo sha256", body["sha256"]))
        fields.append(("photo bytes", struct.pack(">Q", body["bytes"])))
        fields.append(("media type", bytes([MEDIA_CODES[body["mediaType"]]])))
        fields.append(("width", struct.pack(">I", body["width"])))
        fields.append(("height", struct.pack(">I", body["height"])))
        if body["latitudeE7"] is None:
            fields.append(("location flag", b"\x00"))
        else:
            fields.append(("location flag", b"\x01"))
            fields.append(("latitudeE7", struct.pack(">i", body["latitudeE7"])))
            fields.append(("longitudeE7", struct.pack(">i", body["longitudeE7"])))
    elif kind == "comment":
        fields.append(("post", body["post"]))
        string("text", body["text"], ">H")
    elif kind == "edit":
        fields.append(("post", body["post"]))
        string("caption", body["caption"], ">H")
    elif kind == "delete":
        fields.append(("target count", struct.pack(">H", len(body["targets"]))))
        for index, target in enumerate(body["targets"]):
            fields.append((f"target {index}", target))
    return fields


def encode(content: dict) -> bytes:
    """The canonical signed bytes of the content."""
    return b"".join(data for _, data in encode_fields(content))


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.offset = 0

    @property
    def remaining(self) -> int:
        return len(self.data) - self.offset

    def take(self, count: int, field: str) -> bytes:
        if count > self.remaining:
            raise Invalid(f"truncated at {field}")
        out = self.data[self.offset : self.offset + count]
        self.offset += count
        return out

    def uint(self, size: int, field: str) -> int:
        return int.from_bytes(self.take(size, field), "big", signed=False)

    def sint(self, size: int, field: str) -> int:
        return int.from_bytes(self.take(size, field), "big", signed=True)

    def text(self, length_size: int, field: str, limit: int) -> str:
        length = self.uint(length_size, field)
        if length > limit:
            raise Invalid(f"{field} is {length} bytes; the limit is {limit}")
        try:
            return self.take(length, field).decode("utf-8", errors="strict")
        except UnicodeDecodeError:
            raise Invalid(f"{field} is not valid UTF-8") from None


def decode(record: bytes) -> tuple[dict, int]:
    """Parses and validates a whole record (signature included). Returns the content and the signed length.
    The signature is not verified here."""
    if len(record) > RECORD_BYTES:
        raise Invalid("record too long")
    r = Reader(record)
    if r.take(4, "magic") != MAGIC:
        raise Invalid("not a continuum record")
    version = r.uint(1, "version")
    if version != VERSION:
        raise Invalid(f"unknown version {version}")
    kind_code = r.uint(1, "kind")
    if kind_code not in KIND_NAMES:
        raise Invalid(f"unknown kind {kind_code}")
    kind = KIND_NAMES[kind_code]
    author = r.take(32, "author")
    sequence = r.uint(8, "sequence")
    if not 1 <= sequence <= MAX_SEQUENCE:
        raise Invalid(f"sequence {sequence} must be 1 ... {MAX_SEQUENCE}")
    previous = r.take(32, "previous") if sequence > 1 else None
    created_at = r.sint(8, "createdAt")
    body: dict
    if kind == "profile":
        body = {"name": r.text(1, "name", NAME_BYTES)}
    elif kind == "post":
        caption = r.text(2, "caption", CAPTION_BYTES)
        sha = r.take(32, "photo sha256")
        size = r.uint(8, "photo bytes")
        media = r.uint(1, "media type")
        if media not in MEDIA_TYPES:
            raise Invalid(f"unknown media type code {media}")
        width = r.uint(4, "width")
        height = r.uint(4, "height")
        flag = r.uint(1, "location flag")
        if flag == 0:
            lat = lon = None
        elif flag == 1:
            lat = r.sint(4, "latitudeE7")
            lon = r.sint(4, "longitudeE7")
        else:
            raise Invalid(f"location flag is {flag}")
        body = {"caption": caption, "sha256": sha, "bytes": size, "mediaType": MEDIA_TYPES[media],
                "width": width, "height": height, "latitudeE7": lat, "longitudeE7": lon}
    elif kind == "comment":
        post = r.take(32, "post")
        body = {"post": post, "text": r.text(2, "text", COMMENT_BYTES)}
    elif kind == "edit":
        post = r.take(32, "post")
        body = {"post": post, "caption": r.text(2, "caption", CAPTION_BYTES)}
    else:
        count = r.uint(2, "target count")
        if count > DELETE_TARGETS:
            raise Invalid("too many delete targets")
        body = {"targets": [r.take(32, "target") for _ in range(count)]}
    signed_length = r.offset
    if r.remaining != SIGNATURE_BYTES:
        raise Invalid("truncated at signature" if r.remaining < SIGNATURE_BYTES else "trailing bytes")
    content = {"author": author, "sequence": sequence, "previous": previous, "createdAt": created_at,
               "kind": kind, "body": body}
    validate(content)
    return content, signed_length


def public_key(seed: bytes) -> bytes:
    return Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def sign(seed: bytes, content: dict) -> bytes:
    """The whole record: signed bytes, then the Ed25519 signature over exactly those bytes."""
    assert content["author"] == public_key(seed), "a node signs only its own records"
    signed = encode(content)
    return signed + Ed25519PrivateKey.from_private_bytes(seed).sign(signed)


def verify(record: bytes) -> dict:
    """Decodes and verifies a record; returns its content or raises Invalid."""
    content, signed_length = decode(record)
    try:
        Ed25519PublicKey.from_public_bytes(content["author"]).verify(record[signed_length:], record[:signed_length])
    except (InvalidSignature, ValueError):
        raise Invalid("bad signature") from None
    return content


def record_id(record: bytes) -> bytes:
    return hashlib.sha256(record).digest()


# ---------------------------------------------------------------------------------------------------------------
# The vectors
# ---------------------------------------------------------------------------------------------------------------

SEED_A = bytes(range(32))
SEED_B = bytes(range(32, 64))
# The stand-in photo bytes whose SHA-256 the posts carry.
PHOTO_SOURCES = {hashlib.sha256(name).digest(): name.decode() for name in (b"photo-1", b"photo-2")}


def build() -> list[dict]:
    """The six golden vectors, each with its seed, content, record bytes and id."""
    a, b = public_key(SEED_A), public_key(SEED_B)
    out: list[dict] = []

    def add(name: str, seed: bytes, sequence: int, previous: bytes | None, created_at: int, kind: str,
            body: dict) -> bytes:
        content = {"author": public_key(seed), "sequence": sequence, "previous": previous,
                   "createdAt": created_at, "kind": kind, "body": body}
        record = sign(seed, content)
        out.append({"name": name, "seed": seed, "content": content, "record": record,
                    "signedLength": len(record) - SIGNATURE_BYTES, "id": record_id(record)})
        return record_id(record)

    v1 = add("A1 profile", SEED_A, 1, None, 1_700_000_000_000, "profile", {"name": "Alice"})
    v2 = add("A2 post with location", SEED_A, 2, v1, 1_700_000_001_000, "post", {
        "caption": "Waterfall at dusk \u2014 Caf\u00e9", "sha256": hashlib.sha256(b"photo-1").digest(),
        "bytes": 66373, "mediaType": "image/jpeg", "width": 1024, "height": 768,
        "latitudeE7": 488566000, "longitudeE7": 23522000})
    v3 = add("A3 post without location", SEED_A, 3, v2, 1_700_000_002_000, "post", {
        "caption": "Lake", "sha256": hashlib.sha256(b"photo-2").digest(), "bytes": 1000,
        "mediaType": "image/png", "width": 800, "height": 600, "latitudeE7": None, "longitudeE7": None})
    add("B1 comment", SEED_B, 1, None, 1_700_000_003_000, "comment",
        {"post": v2, "text": "Lovely!\nWhere is this?"})
    v5 = add("A4 edit", SEED_A, 4, v3, 1_700_000_004_000, "edit", {"post": v2, "caption": "Waterfall at dawn"})
    add("A5 delete", SEED_A, 5, v5, 1_700_000_005_000, "delete", {"targets": sorted([v3, v2])})
    assert out[0]["content"]["author"] == a and out[3]["content"]["author"] == b
    return out


def body_json(kind: str, body: dict) -> dict:
    if kind == "profile":
        return {"name": body["name"]}
    if kind == "post":
        return {"caption": body["caption"], "sha256": body["sha256"].hex(), "bytes": body["bytes"],
                "mediaType": body["mediaType"], "width": body["width"], "height": body["height"],
                "latitudeE7": body["latitudeE7"], "longitudeE7": body["longitudeE7"]}
    if kind in ("comment", "edit"):
        key = "text" if kind == "comment" else "caption"
        return {"post": body["post"].hex(), key: body[key]}
    return {"targets": [t.hex() for t in body["targets"]]}


def to_json(vectors: list[dict]) -> str:
    items = []
    for v in vectors:
        c, record = v["content"], v["record"]
        items.append({
            "name": v["name"],
            "seed": v["seed"].hex(),
            "author": c["author"].hex(),
            "sequence": c["sequence"],
            "previous": c["previous"].hex() if c["previous"] is not None else None,
            "createdAt": c["createdAt"],
            "kind": c["kind"],
            "body": body_json(c["kind"], c["body"]),
            "signed": record[: v["signedLength"]].hex(),
            "signature": record[v["signedLength"]:].hex(),
            "record": record.hex(),
            "id": v["id"].hex(),
        })
    return json.dumps({"vectors": items}, indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------------------------------
# The generated part of Docs/PROTOCOL.md
# ---------------------------------------------------------------------------------------------------------------

def wrap_hex(data: bytes, width: int = 32) -> str:
    return "\n".join(data[i : i + width].hex() for i in range(0, len(data), width)) or "(empty)"


def describe_inputs(v: dict, names: dict[bytes, str]) -> list[str]:
    c, body = v["content"], v["content"]["body"]
    seed_name = "A" if v["seed"] == SEED_A else "B"
    lines = [
        f"- identity {seed_name}, seed `{v['seed'].hex()}`",
        f"- author `{c['author'].hex()}`",
        f"- sequence {c['sequence']}, previous "
        + (f"`{c['previous'].hex()}` (id of {names[c['previous']]})" if c["previous"] else "absent"),
        f"- createdAt {c['createdAt']}",
        f"- kind {c['kind']} ({KIND_CODES[c['kind']]})",
    ]
    if c["kind"] == "profile":
        lines.append(f"- name {json.dumps(body['name'], ensure_ascii=False)}")
    elif c["kind"] == "post":
        lines.append(f"- caption {json.dumps(body['caption'], ensure_ascii=False)} "
                     f"({len(body['caption'].encode())} UTF-8 bytes, NFC)")
        lines.append(f"- photo sha256 `{body['sha256'].hex()}` "
                     f"(SHA-256 of the ASCII bytes `{PHOTO_SOURCES[body['sha256']]}`)")
        lines.append(f"- photo bytes {body['bytes']}, media type {body['mediaType']} "
                     f"({MEDIA_CODES[body['mediaType']]}), {body['width']}x{body['height']}")
        if body["latitudeE7"] is None:
            lines.append("- no location")
        else:
            lines.append(f"- latitudeE7 {body['latitudeE7']}, longitudeE7 {body['longitudeE7']}")
    elif c["kind"] == "comment":
        lines.append(f"- post `{body['post'].hex()}` (id of {names[body['post']]})")
        lines.append(f"- text {json.dumps(body['text'], ensure_ascii=False)}")
    elif c["kind"] == "edit":
        lines.append(f"- post `{body['post'].hex()}` (id of {names[body['post']]})")
        lines.append(f"- caption {json.dumps(body['caption'], ensure_ascii=False)}")
    else:
        for t in body["targets"]:
            lines.append(f"- target `{t.hex()}` (id of {names[t]})")
    return lines


def markdown(vectors: list[dict]) -> str:
    names = {v["id"]: f"vector {i + 1}" for i, v in enumerate(vectors)}
    out = [BEGIN_MARK, ""]
    for i, v in enumerate(vectors):
        record, n = v["record"], v["signedLength"]
        out.append(f"#### Vector {i + 1}: {v['name']}")
        out.append("")
        out.extend(describe_inputs(v, names))
        out.append("")
        out.append(f"Signed bytes ({n} bytes):")
        out.append("")
        out.append("```")
        out.append(wrap_hex(record[:n]))
        out.append("```")
        out.append("")
        out.append("Signature (64 bytes):")
        out.append("")
        out.append("```")
        out.append(wrap_hex(record[n:]))
        out.append("```")
        out.append("")
        out.append(f"Record id (SHA-256 of all {len(record)} record bytes): `{v['id'].hex()}`")
        out.append("")
        if i == 1:
            out.append("The signed bytes of vector 2, field by field:")
            out.append("")
            out.append("| Offset | Field | Bytes (hex) |")
            out.append("|---:|---|---|")
            offset = 0
            for label, data in encode_fields(v["content"]):
                shown = data.hex() if len(data) <= 12 else f"{data[:8].hex()}… ({len(data)} bytes)"
                out.append(f"| {offset} | {label} | `{shown}` |")
                offset += len(data)
            out.append(f"| {offset} | signature | 64 bytes |")
            out.append("")
    out.append(END_MARK)
    return "\n".join(out) + "\n"


def splice(document: str, section: str) -> str | None:
    """The document with its generated section replaced, or None if the markers are missing."""
    start, end = document.find(BEGIN_MARK), document.find(END_MARK)
    if start < 0 or end < start:
        return None
    end += len(END_MARK)
    if document[end : end + 1] == "\n":
        end += 1
    return document[:start] + section + document[end:]


# ---------------------------------------------------------------------------------------------------------------
# Self-checks
# ---------------------------------------------------------------------------------------------------------------

def check_roundtrip(vectors: list[dict], failures: list[str]) -> None:
    for i, v in enumerate(vectors, 1):
        record = v["record"]
        try:
            content = verify(record)
        except Invalid as error:
            failures.append(f"vector {i}: does not decode and verify: {error}")
            continue
        if content != v["content"]:
            failures.append(f"vector {i}: decodes to different content")
        if encode(content) != record[: v["signedLength"]]:
            failures.append(f"vector {i}: re-encoding the decoded content gives different bytes")
        if len(record) > RECORD_BYTES:
            failures.append(f"vector {i}: longer than the record limit")
    chain: dict[bytes, bytes] = {}
    for i, v in enumerate(vectors, 1):
        c = v["content"]
        if c["previous"] is not None and chain.get(c["author"]) != c["previous"]:
            failures.append(f"vector {i}: previous is not the id of the author's record before it")
        chain[c["author"]] = v["id"]


def check_bit_flips(vectors: list[dict], failures: list[str]) -> int:
    """Every single-bit flip of every record must fail decoding or verification. Returns the number tried."""
    tried = 0
    for i, v in enumerate(vectors, 1):
        record = bytearray(v["record"])
        for position in range(len(record) * 8):
            record[position // 8] ^= 1 << (position % 8)
            tried += 1
            try:
                verify(bytes(record))
                failures.append(f"vector {i}: flipping bit {position % 8} of byte {position // 8} still verifies")
            except Invalid:
                pass
            record[position // 8] ^= 1 << (position % 8)
    return tried


def invalid_cases(vectors: list[dict]) -> list[tuple[str, bytes]]:
    """Records the decoder must refuse (each re-signed, so that only the named defect is wrong)."""
    a = public_key(SEED_A)
    v1, v2, v6 = vectors[0], vectors[1], vectors[5]

    def signed_raw(signed: bytes) -> bytes:
        return signed + Ed25519PrivateKey.from_private_bytes(SEED_A).sign(signed)

    def head(kind: int, sequence: int = 1, previous: bytes = b"", created: int = 1_700_000_000_000) -> bytes:
        return MAGIC + bytes([VERSION, kind]) + a + struct.pack(">Q", sequence) + previous + struct.pack(">q", created)

    def profile(name: bytes, **kw) -> bytes:
        return signed_raw(head(1, **kw) + bytes([len(name)]) + name)

    def post(caption: bytes = b"x", size: int = 1, media: int = 1, width: int = 1, height: int = 1,
             location: bytes = b"\x00") -> bytes:
        return signed_raw(head(2) + struct.pack(">H", len(caption)) + caption + bytes(32) + struct.pack(">Q", size)
                          + bytes([media]) + struct.pack(">II", width, height) + location)

    def comment(text: bytes) -> bytes:
        return signed_raw(head(3) + bytes(32) + struct.pack(">H", len(text)) + text)

    def delete(targets: list[bytes], count: int | None = None) -> bytes:
        n = len(targets) if count is None else count
        return signed_raw(head(5) + struct.pack(">H", n) + b"".join(targets))

    t = [bytes([k]) * 32 for k in range(3)]
    rec1, n1 = v1["record"], v1["signedLength"]
    return [
        ("empty", b""),
        ("bad magic", b"CNTX" + rec1[4:]),
        ("version 2", signed_raw(rec1[:4] + b"\x02" + rec1[5:n1])),
        ("kind 0", signed_raw(rec1[:5] + b"\x00" + rec1[6:n1])),
        ("kind 6", signed_raw(rec1[:5] + b"\x06" + rec1[6:n1])),
        ("sequence 0", profile(b"Alice", sequence=0)),
        ("sequence 2 without previous", profile(b"Alice", sequence=2)),
        ("sequence 2^53", profile(b"Alice", sequence=MAX_SEQUENCE + 1, previous=bytes(32))),
        ("sequence 2^64 - 1", profile(b"Alice", sequence=0xFFFF_FFFF_FFFF_FFFF, previous=bytes(32))),
        ("createdAt -1", profile(b"Alice", created=-1)),
        ("createdAt after 9999", profile(b"Alice", created=LATEST_TIMESTAMP + 1)),
        ("empty name", profile(b"")),
        ("blank name", profile(" \u3000\t".encode())),
        ("name 65 bytes", profile(b"x" * 65)),
        ("newline in name", profile(b"Al\nice")),
        ("DEL in name", profile(b"Al\x7fice")),
        ("NUL in name", profile(b"Al\x00ice")),
        ("invalid UTF-8 in name", profile(b"Al\xffice")),
        ("overlong UTF-8 in name", profile(b"\xc0\xafx")),
        ("UTF-16 surrogate in name", profile(b"\xed\xa0\x80x")),
        ("carriage return in comment", comment(b"one\r\ntwo")),
        ("comment 4097 bytes", comment(b"x" * 4097)),
        ("caption 2049 bytes", post(caption=b"x" * 2049)),
        ("photo 0 bytes", post(size=0)),
        ("photo over 1 GiB", post(size=PHOTO_BYTES + 1)),
        ("media type 0", post(media=0)),
        ("media type 6", post(media=6)),
        ("width 0", post(width=0)),
        ("height over 2^24", post(height=PHOTO_DIMENSION + 1)),
        ("location flag 2", post(location=b"\x02" + struct.pack(">ii", 0, 0))),
        ("latitude 90.0000001", post(location=b"\x01" + struct.pack(">ii", LATITUDE_E7 + 1, 0))),
        ("longitude -180.0000001", post(location=b"\x01" + struct.pack(">ii", 0, -LONGITUDE_E7 - 1))),
        ("delete with no targets", delete([])),
        ("delete targets descending", delete([t[1], t[0]])),
        ("delete target repeated", delete([t[1], t[1]])),
        ("delete with 257 targets", delete([k.to_bytes(32, "big") for k in range(257)])),
        ("delete count larger than targets", delete([t[0]], count=2)),
        ("one trailing byte", v2["record"][: v2["signedLength"]] + b"\x00" + v2["record"][v2["signedLength"]:]),
        ("truncated signature", v6["record"][:-1]),
        ("over 16384 bytes", v1["record"] + bytes(RECORD_BYTES)),
    ]


def check_invalid(vectors: list[dict], failures: list[str]) -> int:
    cases = invalid_cases(vectors)
    for name, record in cases:
        try:
            verify(record)
            failures.append(f"invalid record accepted: {name}")
        except Invalid:
            pass
    # And a few edge values that must be accepted.
    a = public_key(SEED_A)
    for name, body in [
        ("name of 64 bytes", {"name": "é" * 32}),
        ("name with tab and C1 control", {"name": "a\tb\u0085"}),
    ]:
        content = {"author": a, "sequence": 1, "previous": None, "createdAt": LATEST_TIMESTAMP, "kind": "profile",
                   "body": body}
        try:
            if verify(sign(SEED_A, content)) != content:
                failures.append(f"valid record changed in a round trip: {name}")
        except Invalid as error:
            failures.append(f"valid record refused: {name}: {error}")
    content = {"author": a, "sequence": MAX_SEQUENCE, "previous": bytes(32), "createdAt": 0, "kind": "profile",
               "body": {"name": "Alice"}}
    try:
        if verify(sign(SEED_A, content)) != content:
            failures.append("valid record changed in a round trip: sequence 2^53 - 1")
    except Invalid as error:
        failures.append(f"valid record refused: sequence 2^53 - 1: {error}")
    return len(cases)


# ---------------------------------------------------------------------------------------------------------------

def main(argv: list[str]) -> int:
    args = set(argv[1:])
    if not args <= {"--write", "--markdown"}:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    vectors = build()
    generated = to_json(vectors)
    section = markdown(vectors)
    if "--markdown" in args:
        sys.stdout.write(section)
        return 0

    failures: list[str] = []
    check_roundtrip(vectors, failures)
    flips = check_bit_flips(vectors, failures)
    invalid = check_invalid(vectors, failures)

    if failures:
        for failure in failures:
            print(f"FAIL: {failure}", file=sys.stderr)
        print("not writing anything: the self-checks failed", file=sys.stderr)
        return 1

    document = PROTOCOL_PATH.read_text(encoding="utf-8") if PROTOCOL_PATH.exists() else None
    if "--write" in args:
        VECTORS_PATH.parent.mkdir(parents=True, exist_ok=True)
        VECTORS_PATH.write_text(generated, encoding="utf-8")
        print(f"wrote {VECTORS_PATH.relative_to(ROOT)}")
        if document is not None:
            updated = splice(document, section)
            if updated is None:
                print(f"FAIL: {PROTOCOL_PATH.relative_to(ROOT)} lacks the generated-section markers", file=sys.stderr)
                return 1
            if updated != document:
                PROTOCOL_PATH.write_text(updated, encoding="utf-8")
                print(f"updated the test vectors in {PROTOCOL_PATH.relative_to(ROOT)}")
    else:
        if not VECTORS_PATH.exists():
            failures.append(f"{VECTORS_PATH.relative_to(ROOT)} is missing; run with --write")
        elif VECTORS_PATH.read_text(encoding="utf-8") != generated:
            failures.append(f"{VECTORS_PATH.relative_to(ROOT)} differs from what this script generates")
        if document is not None and splice(document, section) != document:
            failures.append(f"the test vectors in {PROTOCOL_PATH.relative_to(ROOT)} are missing or stale")
        if failures:
            for failure in failures:
                print(f"FAIL: {failure}", file=sys.stderr)
            print("(python3 scripts/protocol_vectors.py --write regenerates both)", file=sys.stderr)
            return 1

    print(f"ok: {len(vectors)} vectors decode, re-encode and verify; {flips} single-bit flips all refused; "
          f"{invalid} invalid records refused")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

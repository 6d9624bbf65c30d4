#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets (Docs/FUZZING.md): valid frames and valid signed records.

The frames are encoded here, from Docs/PROTOCOL.md §7, not by the Swift code, so that the seeds do not depend on
the encoder under test; the records are the signed test vectors of Tests/ContinuumCoreTests/Resources/vectors.json
(scripts/protocol_vectors.py): records of format version 2, each whole and, when it has a content, as its header
alone (how an erased record travels), and the inert records of kind 13 of the same file (valid records that break a
rule of §2.9), named `inert-...`. The output is the same on every run. `scripts/fuzz.sh` checks that every seed
decodes without an error before it fuzzes.

Usage:
    python3 scripts/make-fuzz-corpus.py            rewrite Fuzz/corpus/frame, record, session and handshake
    python3 scripts/make-fuzz-corpus.py --check    exit 1 if the committed corpus differs from what this writes

Needs Python 3.9+ and nothing else.
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VECTORS_PATH = ROOT / "Tests" / "ContinuumCoreTests" / "Resources" / "vectors.json"
CORPUS = ROOT / "Fuzz" / "corpus"

# Message types (Docs/PROTOCOL.md §7.3).
HELLO, ERROR, MEMBERSHIP, JOINED = 0x01, 0x02, 0x03, 0x04
CLOCK, OFFER, RECORDS, ACK, REQUEST, DONE, CLOCK_SINCE, CLOCK_UNKNOWN = (
    0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
)
PHOTO_WANT, PHOTO_DATA, PHOTO_END, PHOTO_MISSING, THUMB_WANT, THUMB_DATA, THUMB_MISSING = (
    0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26,
)
PING, PONG, INTEREST, PUSH, HAVE, TREE = 0x30, 0x31, 0x40, 0x41, 0x42, 0x43


def u8(v: int) -> bytes:
    return struct.pack(">B", v)


def u16(v: int) -> bytes:
    return struct.pack(">H", v)


def u32(v: int) -> bytes:
    return struct.pack(">I", v)


def u64(v: int) -> bytes:
    return struct.pack(">Q", v)


def frame(kind: int, payload: bytes) -> bytes:
    """Length prefix (version, type and payload), version 1, type, payload (§7.1)."""
    return u32(len(payload) + 2) + u8(1) + u8(kind) + payload


def ident(byte: int) -> bytes:
    return bytes([byte]) * 32


def clock(entries: dict[bytes, int]) -> bytes:
    """Entry count, then author and sequence, authors in ascending byte order (§7.4.3)."""
    return u32(len(entries)) + b"".join(a + u64(s) for a, s in sorted(entries.items()))


def records(recs: list[bytes]) -> bytes:
    return u16(len(recs)) + b"".join(u32(len(r)) + r for r in recs)


def network(name: str) -> bytes:
    return hashlib.sha256(f"continuum-network-v1:{name}".encode()).digest()


def hello(version: int, net: bytes, node: bytes, plaintext: bool, port: int, name: str) -> bytes:
    text = name.encode()
    return frame(HELLO, u16(version) + net + node + u8(1 if plaintext else 0) + u16(port) + u8(len(text)) + text)


def frames(vectors: dict[str, bytes], headers: dict[str, bytes]) -> dict[str, bytes]:
    alice = bytes.fromhex("03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8")
    chunk = b"\xff\xd8\xff\xe0" + bytes(range(60))
    empty_clock_digest = hashlib.sha256(clock({})).digest()
    message = "this node is on network f83a6b087032; you are on 5d1ffbd0c0a8".encode()
    out = {
        "hello-default": hello(1, network("default"), alice, False, 7411, "Alice"),
        "hello-plaintext-named": hello(1, network("lab"), ident(0xFE), True, 0, "Bob — Café"),
        "hello-no-name": hello(2, ident(0xAA), ident(0xBB), False, 0, ""),
        "error": frame(ERROR, u16(4) + u16(len(message)) + message),
        "clock": frame(CLOCK, u32(3) + clock({ident(0x01): 5, ident(0x02): 1, ident(0xFF): (1 << 53) - 1})),
        "clock-since": frame(CLOCK_SINCE, u32(9) + empty_clock_digest + clock({ident(0x03): 4, alice: 1})),
        "clock-unknown": frame(CLOCK_UNKNOWN, u32(9)),
        "offer": frame(OFFER, u32(3) + u64(1234) + u64(5_678_901)),
        "records": frame(
            RECORDS,
            u8(0)
            + records([
                vectors["A1 profile"],
                vectors["A2 post with location and taken-at"],
                headers["A3 post without location or taken-at"],
            ]),
        ),
        "records-live": frame(RECORDS, u8(1) + records([vectors["B1 comment"]])),
        "push": frame(
            PUSH,
            records([
                vectors["A4 edit of the caption"],
                vectors["A5 edit of the photo and location"],
                headers["A6 edit removing the location"],
                vectors["A7 delete"],
            ]),
        ),
        "ack": frame(ACK, clock({ident(0x09): 42, alice: 6})),
        "ack-empty": frame(ACK, clock({})),
        "request": frame(REQUEST, u32(2) + ident(0x01) + u64(1) + u64(1) + alice + u64(2) + u64(6)),
        "done": frame(DONE, u32(0xFFFFFFFF)),
        "photo-want": frame(PHOTO_WANT, ident(0xAA) + u64(262_144)),
        "photo-data": frame(
            PHOTO_DATA, ident(0xAA) + u64(0) + u32(len(chunk)) + chunk
        ),
        "photo-end": frame(PHOTO_END, ident(0xAA) + u64(66_373)),
        "photo-missing": frame(PHOTO_MISSING, ident(0xAC)),
        "thumb-want": frame(THUMB_WANT, ident(0xAD)),
        "thumb-data": frame(THUMB_DATA, ident(0xAD) + u32(len(chunk)) + chunk),
        "thumb-missing": frame(THUMB_MISSING, ident(0xAF)),
        "ping": frame(PING, u64(0x0123456789ABCDEF)),
        "pong": frame(PONG, u64(0xFFFFFFFFFFFFFFFF)),
        "interest-replace": frame(INTEREST, u8(1) + u16(2) + ident(0x01) + u8(0) + ident(0x02) + u8(8)),
        "interest-change": frame(INTEREST, u8(0) + u16(2) + ident(0x03) + u8(0xFF) + ident(0x04) + u8(1)),
        # HAVE is laid out as REQUEST (§7.4.23); TREE is one byte, 0 prune, 1 graft (§7.4.24).
        "have": frame(HAVE, u32(2) + ident(0x01) + u64(1) + u64(3) + alice + u64(5) + u64(5)),
        "tree-prune": frame(TREE, u8(0)),
        "tree-graft": frame(TREE, u8(1)),
    }
    # A session's first frames in one stream, as a peer sends them.
    out["session"] = b"".join(
        out[name] for name in ["hello-default", "clock", "offer", "records", "done", "ack", "ping", "interest-replace"]
    )
    return out


def sessions(out: dict[str, bytes]) -> dict[str, bytes]:
    """Seeds of the session target: n control bytes (the executor's choices), then a peer's frames."""

    def seed(controls: bytes, names: list[str]) -> bytes:
        return u8(len(controls)) + controls + b"".join(out[name] for name in names)

    return {
        "round": seed(bytes([0, 1, 2, 3]), ["clock", "offer", "records", "done", "ack", "ping"]),
        "live-and-push": seed(bytes([1, 0, 5, 9]), ["records-live", "push", "ack-empty", "request", "done"]),
        "since-and-unknown": seed(bytes([0, 8, 16]), ["clock-since", "clock-unknown", "clock", "pong"]),
        "photos": seed(bytes([7, 3]), ["photo-want", "thumb-want", "photo-data", "photo-end", "thumb-data"]),
        "interest": seed(b"", ["interest-replace", "interest-change", "thumb-missing", "photo-missing", "error"]),
        # Tree push (§7.8.17): a live batch, a duplicate of it (a prune), the peer's prune, an announcement, a graft.
        "tree": seed(
            bytes([2, 4, 6, 9, 10, 12]),
            ["records-live", "records-live", "tree-prune", "have", "ping", "tree-graft", "have", "done"],
        ),
        "hello-after": seed(bytes([2]), ["ping", "hello-default"]),
    }


def membership(claims: list[tuple[bytes, bytes]], tags: list[bytes], join: bytes = b"\x00") -> bytes:
    """Claims (group, proof), network tags, then the join flag and its fields (§7.4.21)."""
    body = u8(len(claims)) + b"".join(g + u16(len(p)) + p for g, p in claims)
    return frame(MEMBERSHIP, body + u8(len(tags)) + b"".join(tags) + join)


def handshakes(out: dict[str, bytes], vectors: dict[str, bytes], headers: dict[str, bytes]) -> dict[str, bytes]:
    """Seeds of the handshake target: n control bytes (the engine's answers; the first also chooses whether this
    side joins: 0 no, 1 by invite, 2 by request, 3 by invite from another node), then a peer's frames."""
    proof = headers["A1 profile"]
    record = vectors["A1 profile"]
    parts = {
        "hello": out["hello-plaintext-named"],
        "membership": membership([], []),
        "membership-claims": membership([(ident(0x33), proof), (ident(0x34), b"")], [bytes(range(16))]),
        "membership-join": membership(
            [], [], u8(1) + bytes(range(8)) + ident(0x44) + ident(0x55) + bytes(range(64))
        ),
        "membership-request": membership([], [], u8(2) + ident(0x44) + bytes(range(64))),
        "joined": frame(JOINED, ident(0x33) + u16(len(record)) + record),
        "pending": frame(ERROR, u16(17) + u16(9) + b"waits for"),
        "error": out["error"],
        "ping": out["ping"],
    }

    def seed(controls: bytes, names: list[str]) -> bytes:
        return u8(len(controls)) + controls + b"".join(parts[name] for name in names)

    return {
        "opening": seed(bytes([0, 3, 0x20]), ["hello", "membership-claims", "ping"]),
        "stranger": seed(bytes([0, 3, 3, 0x90]), ["hello", "membership", "error"]),
        "invite-accepted": seed(bytes([0, 3, 3, 0x60]), ["hello", "membership-join", "ping"]),
        "join-by-invite": seed(bytes([1, 3, 3, 0x10, 3]), ["hello", "membership-claims", "joined", "ping"]),
        "join-by-request": seed(bytes([2, 3, 3, 0x10]), ["hello", "membership-request", "pending"]),
        "wrong-inviter": seed(bytes([3, 3]), ["hello", "membership"]),
        "wrong-first": seed(b"", ["ping", "hello"]),
        "error-first": seed(bytes([0]), ["error"]),
    }


def corpus() -> dict[str, bytes]:
    loaded = json.loads(VECTORS_PATH.read_text())
    items = loaded["vectors"]
    vectors = {v["name"]: bytes.fromhex(v["record"]) for v in items}
    headers = {v["name"]: bytes.fromhex(v["header"]) for v in items}
    out = frames(vectors, headers)
    files = {f"frame/{name}": data for name, data in out.items()}
    files.update({f"session/{name}": data for name, data in sessions(out).items()})
    files.update({f"handshake/{name}": data for name, data in handshakes(out, vectors, headers).items()})
    for name, data in vectors.items():
        stem = "record/" + name.lower().replace(" ", "-")
        files[stem] = data
        if headers[name] != data:  # a delete has no content: its header alone is the record whole
            files[stem + ".header-alone"] = headers[name]
    for item in loaded["inert"]:
        stem = "record/inert-" + item["name"].lower().replace(" ", "-").replace("(", "").replace(")", "")
        files[stem] = bytes.fromhex(item["record"])
        if item["header"] != item["record"]:
            files[stem + ".header-alone"] = bytes.fromhex(item["header"])
    return files


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"]):
        print(__doc__, file=sys.stderr)
        return 2
    files = corpus()
    too_big = [name for name, data in files.items() if len(data) > 4096]
    if too_big:
        print(f"seeds over 4 KiB: {too_big}", file=sys.stderr)
        return 1
    if argv == ["--check"]:
        present = {str(p.relative_to(CORPUS)): p.read_bytes() for p in CORPUS.glob("*/*") if p.is_file()}
        if present != files:
            differing = sorted(set(present) ^ set(files) | {n for n in files if present.get(n) != files[n]})
            print(f"Fuzz/corpus differs from what scripts/make-fuzz-corpus.py writes: {differing}", file=sys.stderr)
            return 1
        print(f"Fuzz/corpus: {len(files)} seeds, as generated")
        return 0
    for directory in ("frame", "record", "session", "handshake"):
        (CORPUS / directory).mkdir(parents=True, exist_ok=True)
        for stale in (CORPUS / directory).iterdir():
            if f"{directory}/{stale.name}" not in files:
                stale.unlink()
    for name, data in files.items():
        (CORPUS / name).write_bytes(data)
    print(f"wrote {len(files)} seeds to {CORPUS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Handshake and FOLLOWS frame vectors (Docs/PROTOCOL.md §7.4.21, §7.4.25, §7.8.3, §7.8.16, §7.8.19, §7.8.20),
computed by Python alone.

Independent of the Swift code: the frame layouts are written from §7.1, §7.4.21, §7.4.25, §7.8.19 and §7.8.20, the
proofs from §7.8.3, §7.8.16 and §7.4.21 (hashlib, hmac), the recovery key from §2.10 (HKDF-SHA256 of RFC 5869,
written here with hmac), and Ed25519 signatures by the pure-Python RFC 8032 code below (no third-party package). When
the `cryptography` package is importable, each signature and the HKDF output are also checked against it.

Ten frames:
  (a) membership-claim-and-network-tag  one claim (group G1 of §8, proof: vector 11's header) and one network tag,
                                        join flag 0
  (b) membership-join-by-invite         join flag 1, with the invite values of §7.8.16
  (c) membership-request-to-join        join flag 2, a request to join
  (d) membership-link                   join flag 3, a link into the receiver's account (§7.8.19)
  (e) membership-recovery               join flag 4, a recovery with the recovery code e0e1…ef of §2.10 (§7.8.20)
  (f) linking                           LINKING (05): the account records of §8 vectors 20 and 21
  (g) recovery                          RECOVERY (08), laid out as LINKING, with the same two records
  (h) follows-one-entry                 FOLLOWS (88): one entry, the example frame of §7.4.25 byte for byte
  (i) follows-three-entries             FOLLOWS (88): three entries, changed-at 1, 1700000000000 and 2^53 - 1
  (j) follows-empty                     FOLLOWS (88): no entry, the count alone

Usage:
    python3 membership_vectors.py              check the self-checks, print a summary
    python3 membership_vectors.py --write DIR  also write DIR/vectors.json and DIR/membership-vectors.md
"""

from __future__ import annotations

import hashlib
import hmac
import json
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORD_VECTORS = ROOT / "Tests" / "ContinuumCoreTests" / "Resources" / "vectors.json"

# ---------------------------------------------------------------------------------------------------------------
# Ed25519, RFC 8032 §5.1 (pure Python, after the RFC's §6 reference code)
# ---------------------------------------------------------------------------------------------------------------

P = 2**255 - 19
L = 2**252 + 27742317777372353535851937790883648493
D = -121665 * pow(121666, P - 2, P) % P
SQRT_M1 = pow(2, (P - 1) // 4, P)


def _add(p1, p2):
    x1, y1, z1, t1 = p1
    x2, y2, z2, t2 = p2
    a = (y1 - x1) * (y2 - x2) % P
    b = (y1 + x1) * (y2 + x2) % P
    c = t1 * 2 * D * t2 % P
    d = z1 * 2 * z2 % P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % P, g * h % P, f * g % P, e * h % P)


def _mul(s, p):
    q = (0, 1, 1, 0)
    while s > 0:
        if s & 1:
            q = _add(q, p)
        p = _add(p, p)
        s >>= 1
    return q


def _equal(p1, p2):
    x1, y1, z1, _ = p1
    x2, y2, z2, _ = p2
    return (x1 * z2 - x2 * z1) % P == 0 and (y1 * z2 - y2 * z1) % P == 0


def _recover_x(y, sign):
    if y >= P:
        return None
    x2 = (y * y - 1) * pow(D * y * y + 1, P - 2, P)
    if x2 == 0:
        return None if sign else 0
    x = pow(x2, (P + 3) // 8, P)
    if (x * x - x2) % P != 0:
        x = x * SQRT_M1 % P
    if (x * x - x2) % P != 0:
        return None
    if (x & 1) != sign:
        x = P - x
    return x


GY = 4 * pow(5, P - 2, P) % P
GX = _recover_x(GY, 0)
G = (GX, GY, 1, GX * GY % P)


def _compress(p):
    x, y, z, _ = p
    zi = pow(z, P - 2, P)
    x, y = x * zi % P, y * zi % P
    return int.to_bytes(y | ((x & 1) << 255), 32, "little")


def _decompress(s):
    if len(s) != 32:
        return None
    y = int.from_bytes(s, "little")
    sign = y >> 255
    y &= (1 << 255) - 1
    x = _recover_x(y, sign)
    return None if x is None else (x, y, 1, x * y % P)


def _sha512_int(data: bytes) -> int:
    return int.from_bytes(hashlib.sha512(data).digest(), "little")


def _expand(seed: bytes):
    h = hashlib.sha512(seed).digest()
    a = int.from_bytes(h[:32], "little")
    a &= (1 << 254) - 8
    a |= 1 << 254
    return a, h[32:]


def public_key(seed: bytes) -> bytes:
    a, _ = _expand(seed)
    return _compress(_mul(a, G))


def sign(seed: bytes, message: bytes) -> bytes:
    a, prefix = _expand(seed)
    A = _compress(_mul(a, G))
    r = _sha512_int(prefix + message) % L
    R = _compress(_mul(r, G))
    h = _sha512_int(R + A + message) % L
    s = (r + h * a) % L
    return R + int.to_bytes(s, 32, "little")


def verify(public: bytes, message: bytes, signature: bytes) -> bool:
    A = _decompress(public)
    if A is None or len(signature) != 64:
        return False
    R = _decompress(signature[:32])
    s = int.from_bytes(signature[32:], "little")
    if R is None or s >= L:
        return False
    h = _sha512_int(signature[:32] + public + message) % L
    return _equal(_mul(s, G), _add(R, _mul(h, A)))


# ---------------------------------------------------------------------------------------------------------------
# The proofs of §7.8.3 and §7.8.16
# ---------------------------------------------------------------------------------------------------------------

def network_id(name: str) -> bytes:
    """§7.2, §9.3: SHA-256(`continuum-network-v1:` ‖ UTF-8(name))."""
    return hashlib.sha256(b"continuum-network-v1:" + name.encode("utf-8")).digest()


def network_tag(network: bytes, sender_nonce: bytes, receiver_nonce: bytes, sender: bytes, receiver: bytes) -> bytes:
    """§7.8.3: the first 16 bytes of HMAC-SHA256(network id, `continuum-network-v2` ‖ sender nonce ‖ receiver nonce ‖
    sender node ‖ receiver node)."""
    message = b"continuum-network-v2" + sender_nonce + receiver_nonce + sender + receiver
    return hmac.new(network, message, hashlib.sha256).digest()[:16]


def invite_id(secret: bytes) -> bytes:
    """§7.8.16: the first 8 bytes of SHA-256(`continuum-invite-id-v2` ‖ secret)."""
    return hashlib.sha256(b"continuum-invite-id-v2" + secret).digest()[:8]


def join_mac(secret: bytes, inviter_nonce: bytes, joiner_nonce: bytes, inviter: bytes, joiner: bytes,
             log: bytes) -> bytes:
    """§7.8.3: HMAC-SHA256(secret, `continuum-join-v2` ‖ inviter nonce ‖ joiner nonce ‖ inviter ‖ joiner ‖ log)."""
    message = b"continuum-join-v2" + inviter_nonce + joiner_nonce + inviter + joiner + log
    return hmac.new(secret, message, hashlib.sha256).digest()


def join_log_message(inviter_nonce: bytes, joiner_nonce: bytes, joiner: bytes) -> bytes:
    """§7.8.3: what the new log key signs, `continuum-join-log-v2` ‖ inviter nonce ‖ joiner nonce ‖ joiner node id (for a
    request, the receiver's nonce in the inviter's place and the asker's nonce and node id in the joiner's). No length
    prefixes, no separators: 21 + 32 + 32 + 32 = 117 bytes."""
    return b"continuum-join-log-v2" + inviter_nonce + joiner_nonce + joiner


def link_mac(secret: bytes, receiver_nonce: bytes, sender_nonce: bytes, receiver: bytes, sender: bytes) -> bytes:
    """§7.4.21, join flag 3: HMAC-SHA256 under the link code's secret of `continuum-link-v3` ‖ receiver's nonce ‖
    sender's nonce ‖ receiver's node ‖ sender's node."""
    message = b"continuum-link-v3" + receiver_nonce + sender_nonce + receiver + sender
    return hmac.new(secret, message, hashlib.sha256).digest()


def recover_message(receiver_nonce: bytes, sender_nonce: bytes, receiver: bytes, sender: bytes) -> bytes:
    """§7.4.21, join flag 4: what the recovery key signs, `continuum-recover-v3` ‖ receiver's nonce ‖ sender's nonce ‖
    receiver's node ‖ sender's node. No length prefixes, no separators: 20 + 4 × 32 = 148 bytes."""
    return b"continuum-recover-v3" + receiver_nonce + sender_nonce + receiver + sender


def hkdf_sha256(ikm: bytes, salt: bytes, info: bytes, length: int) -> bytes:
    """RFC 5869 HKDF with SHA-256: extract (an absent salt is HashLen zero bytes, §2.2), then expand (§2.3)."""
    prk = hmac.new(salt or bytes(32), ikm, hashlib.sha256).digest()
    okm, block, counter = b"", b"", 1
    while len(okm) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        okm += block
        counter += 1
    return okm[:length]


def recovery_seed(code: bytes) -> bytes:
    """§2.10, the recovery code: the Ed25519 seed is HKDF-SHA256 of the 16 bytes, no salt, info
    `continuum recovery key v3`, 32 bytes."""
    assert len(code) == 16
    return hkdf_sha256(code, b"", b"continuum recovery key v3", 32)


# ---------------------------------------------------------------------------------------------------------------
# MEMBERSHIP (§7.4.21), LINKING and RECOVERY (§7.8.19, §7.8.20) in a frame (§7.1)
# ---------------------------------------------------------------------------------------------------------------

MEMBERSHIP = 0x03
LINKING = 0x05
RECOVERY = 0x08
FOLLOWS = 0x88
TYPE_NAMES = {MEMBERSHIP: "MEMBERSHIP", LINKING: "LINKING", RECOVERY: "RECOVERY", FOLLOWS: "FOLLOWS"}
MAX_FOLLOW_ENTRIES = 1000           # §7.4.25 and §7.6: a FOLLOWS holds 0 … 1000 entries
MAX_CHANGED_AT = 2**53 - 1          # §7.4.25: changed-at is 0 … 2^53 − 1
FOLLOW_ENTRY_BYTES = 32 + 1 + 8     # §7.4.25: post, state, changed-at


def membership_fields(claims, tags, join=None, request=None, link=None, recovery=None) -> list[tuple[str, bytes, str]]:
    """The payload as (field, bytes, meaning) rows, in order."""
    assert len(claims) <= 32 and len(tags) <= 8 and len([x for x in (join, request, link, recovery) if x]) <= 1
    rows = [("claim count", bytes([len(claims)]), f"{len(claims)} claim{'s' if len(claims) != 1 else ''}")]
    for i, (group, proof, group_note, proof_note) in enumerate(claims):
        assert len(group) == 32 and len(proof) <= 1024
        rows.append((f"claim {i}: group", group, group_note))
        rows.append((f"claim {i}: proof length", struct.pack(">H", len(proof)), f"{len(proof)} bytes"))
        rows.append((f"claim {i}: proof", proof, proof_note))
    rows.append(("network tag count", bytes([len(tags)]), f"{len(tags)} tag{'s' if len(tags) != 1 else ''}"))
    for i, (tag, note) in enumerate(tags):
        assert len(tag) == 16
        rows.append((f"network tag {i}", tag, note))
    if join:
        rows.append(("join flag", b"\x01", "1: a join by invite"))
        rows.append(("invite", join["invite"], "the invite id"))
        rows.append(("log", join["log"], join["logNote"]))
        rows.append(("mac", join["mac"], "HMAC-SHA256 under the invite's secret"))
        rows.append(("signature", join["signature"], "the log key's Ed25519 signature of the join-log message"))
    elif request:
        rows.append(("join flag", b"\x02", "2: a request to join"))
        rows.append(("log", request["log"], request["logNote"]))
        rows.append(("signature", request["signature"], "the log key's Ed25519 signature of the join-log message"))
    elif link:
        rows.append(("join flag", b"\x03", "3: a link into the receiver's account"))
        rows.append(("ticket", link["ticket"], "the link code's id"))
        rows.append(("mac", link["mac"], "HMAC-SHA256 under the link code's secret"))
    elif recovery:
        rows.append(("join flag", b"\x04", "4: a recovery of an account the receiver holds"))
        rows.append(("recovery key", recovery["key"], recovery["keyNote"]))
        rows.append(("signature", recovery["signature"], "the recovery key's Ed25519 signature of the recover message"))
    else:
        rows.append(("join flag", b"\x00", "0: no join; the payload ends here"))
    return rows


def frame(kind: int, payload: bytes) -> bytes:
    return struct.pack(">IBB", len(payload) + 2, 1, kind) + payload


def decode_membership(data: bytes) -> dict:
    """An independent reader of a whole MEMBERSHIP frame, checking every rule of §7.1 and §7.4.21."""
    length, version, kind = struct.unpack(">IBB", data[:6])
    assert length == len(data) - 4 and 2 <= length <= 4194304 and version == 1 and kind == MEMBERSHIP
    p, o = data[6:], 0

    def take(n):
        nonlocal o
        assert o + n <= len(p), "truncated"
        out = p[o:o + n]
        o += n
        return out

    out = {"claims": [], "networkTags": [], "join": None, "request": None, "link": None, "recovery": None}
    count = take(1)[0]
    assert count <= 32
    for _ in range(count):
        group = take(32)
        n = struct.unpack(">H", take(2))[0]
        assert n <= 1024
        out["claims"].append({"group": group.hex(), "proof": take(n).hex()})
    tags = take(1)[0]
    assert tags <= 8
    out["networkTags"] = [take(16).hex() for _ in range(tags)]
    flag = take(1)[0]
    if flag == 1:
        out["join"] = {"invite": take(8).hex(), "log": take(32).hex(), "mac": take(32).hex(),
                       "signature": take(64).hex()}
    elif flag == 2:
        out["request"] = {"log": take(32).hex(), "signature": take(64).hex()}
    elif flag == 3:
        out["link"] = {"ticket": take(8).hex(), "mac": take(32).hex()}
    elif flag == 4:
        out["recovery"] = {"recoveryKey": take(32).hex(), "signature": take(64).hex()}
    else:
        assert flag == 0, f"join flag {flag}"
    assert o == len(p), "trailing bytes"
    return out


def records_fields(records) -> list[tuple[str, bytes, str]]:
    """A LINKING or RECOVERY payload (§7.8.19 step 2; RECOVERY is laid out as LINKING, §7.8.20 step 3) as rows:
    `u8` count, 1 … 64, then per record `u16` length and the record whole, at most 16384 bytes."""
    assert 1 <= len(records) <= 64
    rows = [("record count", bytes([len(records)]), f"{len(records)} record{'s' if len(records) != 1 else ''}")]
    for i, (record, note) in enumerate(records):
        assert len(record) <= 16384
        rows.append((f"record {i}: length", struct.pack(">H", len(record)), f"{len(record)} bytes"))
        rows.append((f"record {i}", record, note))
    return rows


def decode_records(data: bytes, kind: int) -> list[str]:
    """An independent reader of a whole LINKING or RECOVERY frame, checking §7.1 and the layout of §7.8.19 step 2."""
    length, version, got = struct.unpack(">IBB", data[:6])
    assert length == len(data) - 4 and 2 <= length <= 4194304 and version == 1 and got == kind
    p = data[6:]
    assert len(p) >= 1, "truncated"
    count, o, out = p[0], 1, []
    assert 1 <= count <= 64, f"{count} records"
    for _ in range(count):
        assert o + 2 <= len(p), "truncated"
        n = struct.unpack(">H", p[o:o + 2])[0]
        o += 2
        assert n <= 16384 and o + n <= len(p), f"record length {n}"
        out.append(p[o:o + n].hex())
        o += n
    assert o == len(p), "trailing bytes"
    return out


# ---------------------------------------------------------------------------------------------------------------
# FOLLOWS (§7.4.25) in a frame (§7.1)
# ---------------------------------------------------------------------------------------------------------------

def follows_fields(entries) -> list[tuple[str, bytes, str]]:
    """A FOLLOWS payload (§7.4.25) as rows: `u16` count, 0 … 1000, then per entry `bytes[32]` post, `u8` state (1:
    followed, 0: not followed) and `u64` changed-at (milliseconds since 1970, 0 … 2^53 − 1). `entries` holds
    (post, followed, changed-at, note) tuples, sent in the order given."""
    assert len(entries) <= MAX_FOLLOW_ENTRIES
    rows = [("count", struct.pack(">H", len(entries)), f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}")]
    for i, (post, followed, changed_at, note) in enumerate(entries):
        assert len(post) == 32 and 0 <= changed_at <= MAX_CHANGED_AT
        rows.append((f"entry {i}: post", post, note))
        state = "1: followed" if followed else "0: not followed"
        rows.append((f"entry {i}: state", bytes([1 if followed else 0]), state))
        rows.append((f"entry {i}: changed-at", struct.pack(">Q", changed_at), f"{changed_at} ms since 1970"))
    return rows


def decode_follows(data: bytes) -> list[dict]:
    """An independent reader of a whole FOLLOWS frame, checking §7.1 and every rule of §7.4.25's table. Each refusal
    is an AssertionError whose message names the rule, so that the self-checks can tell why a frame was refused."""
    assert len(data) >= 6, "truncated"
    length, version, kind = struct.unpack(">IBB", data[:6])
    assert length == len(data) - 4 and 2 <= length <= 4194304 and version == 1 and kind == FOLLOWS, "frame header"
    p = data[6:]
    assert len(p) >= 2, "truncated"
    count = struct.unpack(">H", p[:2])[0]
    assert count <= MAX_FOLLOW_ENTRIES, f"count {count}"
    # §7.6: a count is checked against the bytes left in the frame before the loop over it.
    assert len(p) - 2 >= count * FOLLOW_ENTRY_BYTES, "truncated"
    out, o = [], 2
    for _ in range(count):
        post, state = p[o:o + 32], p[o + 32]
        changed_at = struct.unpack(">Q", p[o + 33:o + 41])[0]
        assert state in (0, 1), f"state {state}"
        assert changed_at <= MAX_CHANGED_AT, f"changed-at {changed_at}"
        out.append({"post": post.hex(), "followed": state == 1, "changedAt": changed_at})
        o += FOLLOW_ENTRY_BYTES
    assert o == len(p), "trailing bytes"
    return out


# ---------------------------------------------------------------------------------------------------------------
# The inputs
# ---------------------------------------------------------------------------------------------------------------

SEED_A = bytes(range(32))           # identity A of §8: node 03a107bf…
SEED_B = bytes(range(32, 64))       # identity B of §8: node 29acbae1…
SEED_F = bytes(range(64, 96))       # log key F of §8: founds group G1 (vector 9), its id
SEED_M = bytes(range(96, 128))      # log key M of §8: node B's log in G1 (vector 11)
SEED_J = bytes(range(192, 224))     # log key J (new here): the joiner's new log key in (b)
SEED_K = bytes(range(224, 256))     # log key K (new here): the asker's new log key in (c)
NONCE_0 = bytes(range(32))          # 000102…1f: the inviter's (receiver's) nonce, as in §7.8.16
NONCE_1 = bytes(range(32, 64))      # 202122…3f: the joiner's (sender's) nonce, as in §7.8.16
SECRET = bytes.fromhex("00112233445566778899")
INVITER = bytes.fromhex("03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8")  # §7.8.16 (= node A)
JOINER = bytes.fromhex("fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025")   # §7.8.16
LINK_SECRET = bytes(range(0xA0, 0xAA))              # a0a1…a9: the link code's 10-byte secret in (d)
RECOVERY_CODE = bytes(range(0xE0, 0xF0))            # e0e1…ef: the recovery code of §2.10's vector, in (e)
RECOVERY_KEY = bytes.fromhex("de38b8f020ffbd82ec7f4afa39cd697b94029aa2d3093cf164349c651454bc09")  # §2.10's vector


def record_vector(name_prefix: str) -> dict:
    vectors = json.loads(RECORD_VECTORS.read_text())["vectors"]
    return next(v for v in vectors if v["name"].startswith(name_prefix))


def build() -> list[dict]:
    node_a, node_b = public_key(SEED_A), public_key(SEED_B)
    group_g1 = public_key(SEED_F)
    lab = network_id("lab")
    out = []

    # (a) Node B (nonce 202122…3f) to node A (nonce 000102…1f): it claims group G1, founded from node A (vector 9),
    # with the header of vector 11 (F adds node B with log M) as proof, and proves the network `lab` by its tag.
    g3 = record_vector("G3 member add")
    proof = bytes.fromhex(g3["header"])
    assert len(proof) == 291 and g3["author"] == group_g1.hex() and g3["body"]["node"] == node_b.hex()
    assert verify(group_g1, proof[:-64], proof[-64:]), "vector 11's signature"
    tag = network_tag(lab, NONCE_1, NONCE_0, node_b, node_a)
    rows = membership_fields(
        [(group_g1, proof, "group G1 (§8 vector 9): the public key of log key F",
          "vector 11 (G3 member add) as its header alone: F adds node B with log M")],
        [(tag, "network `lab`, sender B (nonce 202122…3f), receiver A (nonce 000102…1f)")])
    out.append({
        "name": "membership-claim-and-network-tag",
        "title": "(a) One claim and one network tag, join flag 0",
        "note": ("Node B (nonce `202122…3f`) to node A (nonce `000102…1f`). B claims group G1, which node A founded (§8 "
                 "vector 9), with the header alone of its own membership record: vector 11, in which the founder F adds "
                 "node B with log M (a member record has no content, so its header alone is the whole record, 291 "
                 "bytes). A receiver holding vectors 9 and 11 (and not vector 13, which removes M) finds that the proof "
                 "holds (§7.8.3 step 5). B also proves the network `lab`: its tag is the first 16 bytes of "
                 "HMAC-SHA256(key = the network id, `continuum-network-v2` ‖ B's nonce ‖ A's nonce ‖ B ‖ A)."),
        "rows": rows,
        "inputs": {
            "sender": node_b.hex(), "senderNonce": NONCE_1.hex(),
            "receiver": node_a.hex(), "receiverNonce": NONCE_0.hex(),
            "claimGroup": group_g1.hex(), "claimProof": proof.hex(),
            "claimProofIs": "the header (whole record) of §8 vector 11, G3 member add, id " + g3["id"],
            "network": "lab", "networkID": lab.hex(), "networkTag": tag.hex(),
        },
    })

    # (b) The joiner of §7.8.16 (node fc51cd8e…, nonce 202122…3f) joins by the invite of §7.8.16 at the inviter
    # (node 03a107bf…, nonce 000102…1f), with the new log key J (the log key abab…ab of §7.8.16 has no seed, so it
    # cannot sign; its mac is checked in the self-checks instead).
    log_j = public_key(SEED_J)
    message = join_log_message(NONCE_0, NONCE_1, JOINER)
    signature = sign(SEED_J, message)
    mac = join_mac(SECRET, NONCE_0, NONCE_1, INVITER, JOINER, log_j)
    join = {"invite": invite_id(SECRET), "log": log_j, "logNote": "log key J (seed c0c1c2…df), the joiner's new log key",
            "mac": mac, "signature": signature}
    out.append({
        "name": "membership-join-by-invite",
        "title": "(b) A join by invite, join flag 1",
        "note": ("The invite of §7.8.16: secret `00112233445566778899`, inviter node `03a107bf…` (node A) with nonce "
                 "`000102…1f`, joiner node `fc51cd8e…` with nonce `202122…3f`. The log key is J, not the `abab…ab` of "
                 "§7.8.16: a join carries the log key's signature, and `abab…ab` has no seed to sign with. So the mac "
                 "differs from §7.8.16's (the generator checks that one too: with log `abab…ab` it gives `61fa5684…`). "
                 "invite = the first 8 bytes of SHA-256(`continuum-invite-id-v2` ‖ secret); mac = HMAC-SHA256(key = "
                 "secret, `continuum-join-v2` ‖ inviter nonce ‖ joiner nonce ‖ inviter ‖ joiner ‖ log); signature = "
                 "J's Ed25519 signature of the 117 bytes `continuum-join-log-v2` ‖ inviter nonce ‖ joiner nonce ‖ "
                 "joiner node id (§7.8.3; `MembershipProofs.joinLogMessage` builds the same bytes). The joiner is in "
                 "no group, so it claims nothing and sends no tag."),
        "rows": membership_fields([], [], join=join),
        "inputs": {
            "secret": SECRET.hex(), "inviter": INVITER.hex(), "inviterNonce": NONCE_0.hex(),
            "joiner": JOINER.hex(), "joinerNonce": NONCE_1.hex(),
            "logSeed": SEED_J.hex(), "log": log_j.hex(),
            "inviteID": join["invite"].hex(), "mac": mac.hex(),
            "joinLogMessage": message.hex(), "signature": signature.hex(),
        },
    })

    # (c) The same node (fc51cd8e…, nonce 202122…3f) asks node A (nonce 000102…1f) to let it in, with the new log key
    # K: the receiver's nonce in the inviter's place, the asker's nonce and node id in the joiner's.
    log_k = public_key(SEED_K)
    message = join_log_message(NONCE_0, NONCE_1, JOINER)
    signature = sign(SEED_K, message)
    request = {"log": log_k, "logNote": "log key K (seed e0e1e2…ff), the asker's new log key", "signature": signature}
    out.append({
        "name": "membership-request-to-join",
        "title": "(c) A request to join, join flag 2",
        "note": ("Node `fc51cd8e…` (nonce `202122…3f`) asks node A (nonce `000102…1f`) to let it in, with the new log "
                 "key K. The signed message is the join's with the receiver in the inviter's place (§7.4.21, §7.8.3): "
                 "`continuum-join-log-v2` ‖ the receiver's nonce ‖ the asker's nonce ‖ the asker's node id. With these "
                 "nonces and node it is byte for byte the message of (b); only the key that signs differs. A request "
                 "names no group and carries no mac."),
        "rows": membership_fields([], [], request=request),
        "inputs": {
            "asker": JOINER.hex(), "askerNonce": NONCE_1.hex(),
            "receiver": INVITER.hex(), "receiverNonce": NONCE_0.hex(),
            "logSeed": SEED_K.hex(), "log": log_k.hex(),
            "joinLogMessage": message.hex(), "signature": signature.hex(),
        },
    })

    out += build_account_frames()
    out += build_follows_frames()
    for v in out:
        v.setdefault("type", MEMBERSHIP)
        payload = b"".join(data for _, data, _ in v["rows"])
        v["frame"] = frame(v["type"], payload)
        if v["type"] == MEMBERSHIP:
            v["membership"] = decode_membership(v["frame"])
        elif v["type"] == FOLLOWS:
            v["follows"] = decode_follows(v["frame"])
        else:
            v["records"] = decode_records(v["frame"], v["type"])
    return out


def follows_inputs(entries) -> dict:
    """A FOLLOWS vector's inputs, one key per field, as `vectors.json` and the Markdown show them."""
    inputs = {"count": len(entries)}
    for i, (post, followed, changed_at, _) in enumerate(entries):
        inputs[f"post{i}"] = post.hex()
        inputs[f"followed{i}"] = followed
        inputs[f"changedAt{i}"] = changed_at
    return inputs


def build_follows_frames() -> list[dict]:
    """The FOLLOWS frames of §7.4.25: (h) to (j)."""
    one = [(b"\x5c" * 32, True, 1700000000000, "post `5c5c…5c`")]
    three = [(b"\x01" * 32, True, 1, "post `0101…01`"),
             (b"\x02" * 32, False, 1700000000000, "post `0202…02`"),
             (b"\x03" * 32, True, MAX_CHANGED_AT, "post `0303…03`")]
    return [
        {
            "name": "follows-one-entry",
            "type": FOLLOWS,
            "title": "(h) FOLLOWS with one entry: §7.4.25's example",
            "note": ("FOLLOWS (`88`, §7.4.25): `u16` count, then per entry the post (`bytes[32]`), the state (`u8`, "
                     "1: followed, 0: not followed) and changed-at (`u64`, milliseconds since 1970, 0 … 2^53 − 1). "
                     "One entry: post `5c5c…5c` followed, changed at 1700000000000 (`0000018bcfe56800`). The frame "
                     "is the example of §7.4.25 byte for byte (the generator checks it)."),
            "rows": follows_fields(one),
            "inputs": follows_inputs(one),
        },
        {
            "name": "follows-three-entries",
            "type": FOLLOWS,
            "title": "(i) FOLLOWS with three entries",
            "note": ("Posts `0101…01` followed at 1, `0202…02` not followed at 1700000000000, `0303…03` followed at "
                     "2^53 − 1 = 9007199254740991 (`001fffffffffffff`, the largest changed-at). The entries are in "
                     "this order, the oldest change first: §7.4.25 puts no order on the entries (a sender following "
                     "§7.8.21 puts the latest change first, so it would send them the other way round)."),
            "rows": follows_fields(three),
            "inputs": follows_inputs(three),
        },
        {
            "name": "follows-empty",
            "type": FOLLOWS,
            "title": "(j) FOLLOWS with no entry",
            "note": "A count of 0 (§7.4.25 allows 0 … 1000) and nothing after it: the payload is the two bytes `0000`.",
            "rows": follows_fields([]),
            "inputs": follows_inputs([]),
        },
    ]


def build_account_frames() -> list[dict]:
    """The frames of a link (§7.8.19) and a recovery (§7.8.20): (d) to (g)."""
    out = []

    # (d) The new device D (node fc51cd8e…, nonce 202122…3f) links into the account of L (node 03a107bf…, nonce
    # 000102…1f) with a link code whose secret is a0a1…a9. The receiver's values come first in the mac's message.
    ticket = invite_id(LINK_SECRET)
    mac = link_mac(LINK_SECRET, NONCE_0, NONCE_1, INVITER, JOINER)
    out.append({
        "name": "membership-link",
        "title": "(d) A link into the receiver's account, join flag 3",
        "note": ("The new device D (node `fc51cd8e…`, nonce `202122…3f`) dials the device L that made the link code "
                 "(node `03a107bf…`, node A, nonce `000102…1f`); the code's secret is `a0a1…a9` (10 bytes). ticket = "
                 "the first 8 bytes of SHA-256(`continuum-invite-id-v2` ‖ secret), as an invite's id; mac = "
                 "HMAC-SHA256(key = secret, `continuum-link-v3` ‖ the receiver's nonce ‖ the sender's nonce ‖ the "
                 "receiver's node ‖ the sender's node), that is L's values first, as the inviter's in a join. D has "
                 "signed nothing yet: it claims nothing and sends no tag."),
        "rows": membership_fields([], [], link={"ticket": ticket, "mac": mac}),
        "inputs": {
            "secret": LINK_SECRET.hex(), "receiver": INVITER.hex(), "receiverNonce": NONCE_0.hex(),
            "sender": JOINER.hex(), "senderNonce": NONCE_1.hex(),
            "ticket": ticket.hex(),
            "linkMessage": (b"continuum-link-v3" + NONCE_0 + NONCE_1 + INVITER + JOINER).hex(),
            "mac": mac.hex(),
        },
    })

    # (e) The new device D (same node and nonce) recovers, at node N (node 03a107bf…, nonce 000102…1f), the account
    # whose recovery code is e0e1…ef (§2.10's vector).
    seed = recovery_seed(RECOVERY_CODE)
    key = public_key(seed)
    message = recover_message(NONCE_0, NONCE_1, INVITER, JOINER)
    signature = sign(seed, message)
    recovery = {"key": key, "keyNote": "the recovery key of the code e0e1…ef (§2.10)", "signature": signature}
    out.append({
        "name": "membership-recovery",
        "title": "(e) A recovery, join flag 4",
        "note": ("The new device D (node `fc51cd8e…`, nonce `202122…3f`) dials a node N holding the account (node "
                 "`03a107bf…`, nonce `000102…1f`) with the recovery code of §2.10's vector, the 16 bytes `e0e1…ef` "
                 "(`thought audit rib six fury initial photo diary typical guess knife test`). The recovery key's seed "
                 "is HKDF-SHA256 (RFC 5869) of the 16 bytes, no salt, info `continuum recovery key v3`, 32 bytes; "
                 "its public key is §2.10's `de38b8f0…`. signature = that key's Ed25519 signature of the 148 bytes "
                 "`continuum-recover-v3` ‖ the receiver's nonce ‖ the sender's nonce ‖ the receiver's node ‖ the "
                 "sender's node. D claims nothing and sends no tag."),
        "rows": membership_fields([], [], recovery=recovery),
        "inputs": {
            "recoveryCode": RECOVERY_CODE.hex(), "recoverySeed": seed.hex(), "recoveryKey": key.hex(),
            "receiver": INVITER.hex(), "receiverNonce": NONCE_0.hex(),
            "sender": JOINER.hex(), "senderNonce": NONCE_1.hex(),
            "recoverMessage": message.hex(), "signature": signature.hex(),
        },
    })

    # (f) and (g): LINKING and RECOVERY with the same two account records, §8 vectors 20 (AC1, L founds the account
    # with recovery key K) and 21 (AC2, D joins it). Account records have no content: the header is the record whole.
    ac1, ac2 = record_vector("AC1 "), record_vector("AC2 ")
    records = [(bytes.fromhex(ac1["record"]), "§8 vector 20 (AC1): L founds the account, recovery key K"),
               (bytes.fromhex(ac2["record"]), "§8 vector 21 (AC2): D's joining record")]
    inputs = {"record0": ac1["record"], "record0Is": "§8 vector 20, AC1, id " + ac1["id"],
              "record1": ac2["record"], "record1Is": "§8 vector 21, AC2, id " + ac2["id"]}
    out.append({
        "name": "linking",
        "type": LINKING,
        "title": "(f) LINKING with two account records",
        "note": ("LINKING (`05`, §7.8.19 step 2): `u8` count, 1 … 64, then per record a `u16` length and the record "
                 "whole (at most 16384 bytes). The records are §8 vectors 20 (AC1: L founds the account, 253 bytes) "
                 "and 21 (AC2: D's joining record, 221 bytes), in that order."),
        "rows": records_fields(records),
        "inputs": dict(inputs),
    })
    out.append({
        "name": "recovery",
        "type": RECOVERY,
        "title": "(g) RECOVERY with the same two records",
        "note": ("RECOVERY (`08`, §7.8.20 step 3) is laid out as LINKING: with the same records, its frame is (f)'s "
                 "with the type byte `08` in place of `05`. (The records are (f)'s for the comparison, not what a "
                 "recovering device sends: that is its records in the recovery key's log, then its own account log.)"),
        "rows": records_fields(records),
        "inputs": dict(inputs),
    })
    return out


# ---------------------------------------------------------------------------------------------------------------
# Self-checks
# ---------------------------------------------------------------------------------------------------------------

def self_checks(vectors: list[dict]) -> list[str]:
    failures = []

    def expect(what, got, want):
        if got != want:
            failures.append(f"{what}: {got} != {want}")

    # RFC 8032 §7.1, TEST 1 (empty message) and TEST 2 (one byte).
    s1 = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
    expect("RFC 8032 test 1 key", public_key(s1).hex(),
           "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
    expect("RFC 8032 test 1 signature", sign(s1, b"").hex(),
           "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
           "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b")
    s2 = bytes.fromhex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")
    expect("RFC 8032 test 2 signature", sign(s2, b"\x72").hex(),
           "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
           "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00")
    # The identities and record signatures of §8.
    records = json.loads(RECORD_VECTORS.read_text())["vectors"]
    for v in records:
        seed = bytes.fromhex(v["seed"])
        expect(f"§8 {v['name']} author", public_key(seed).hex(), v["author"])
        expect(f"§8 {v['name']} signature", sign(seed, bytes.fromhex(v["signed"])).hex(), v["signature"])
    # The vectors of §7.8.16 and §7.2.
    expect("invite id", invite_id(SECRET).hex(), "e2520247f46874a3")
    expect("§7.8.16 mac (log abab…ab)",
           join_mac(SECRET, NONCE_0, NONCE_1, INVITER, JOINER, b"\xab" * 32).hex(),
           "61fa5684bb02bac85f794b6e6b5f81d3ad23da33c03c9db753a76465f315bd22")
    expect("network id of lab", network_id("lab").hex(),
           "29921cf93384b2b494c18ad8cb4a8fc781e6767ededa4ffe8afc1ed31e054977")
    expect("network id of default", network_id("default").hex(),
           "f83a6b087032c223211534c5bde190784da595cd1d51cc1c0e664d4eecd77ebd")
    expect("§7.8.16 network tag", network_tag(network_id("lab"), NONCE_1, NONCE_0, JOINER, INVITER).hex(),
           "501e395ed9e042c982ede3eef82576ce")
    # RFC 5869 A.1 and A.3 (A.3: no salt, no info, as §2.10's "no salt"), then §2.10's recovery code vector.
    ikm = b"\x0b" * 22
    expect("RFC 5869 A.1", hkdf_sha256(ikm, bytes(range(13)), bytes(range(0xF0, 0xFA)), 42).hex(),
           "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
    expect("RFC 5869 A.3", hkdf_sha256(ikm, b"", b"", 42).hex(),
           "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
    expect("§2.10 recovery key of e0e1…ef", public_key(recovery_seed(RECOVERY_CODE)).hex(), RECOVERY_KEY.hex())
    # Each frame: it decodes to its inputs, the signatures verify, and a wrong binding does not.
    failures.extend(check_follows_refusals())
    for v in vectors:
        if v["type"] == FOLLOWS:
            failures.extend(check_follows_frame(v))
            continue
        if v["type"] != MEMBERSHIP:
            failures.extend(check_records_frame(v, vectors))
            continue
        m, i = v["membership"], v["inputs"]
        data = v["frame"]
        if m["join"]:
            j = m["join"]
            msg = bytes.fromhex(i["joinLogMessage"])
            expect("join message length", len(msg), 117)
            if not verify(bytes.fromhex(j["log"]), msg, bytes.fromhex(j["signature"])):
                failures.append("join signature does not verify")
            swapped = join_log_message(NONCE_1, NONCE_0, JOINER)
            if verify(bytes.fromhex(j["log"]), swapped, bytes.fromhex(j["signature"])):
                failures.append("join signature verifies with the nonces swapped")
            expect("join mac", j["mac"], i["mac"])
            expect("frame length (b)", len(data), 4 + 2 + 1 + 1 + 1 + 8 + 32 + 32 + 64)
        if m["request"]:
            r = m["request"]
            msg = bytes.fromhex(i["joinLogMessage"])
            if not verify(bytes.fromhex(r["log"]), msg, bytes.fromhex(r["signature"])):
                failures.append("request signature does not verify")
            expect("frame length (c)", len(data), 4 + 2 + 1 + 1 + 1 + 32 + 64)
        if m["claims"]:
            expect("frame length (a)", len(data), 4 + 2 + 1 + 32 + 2 + 291 + 1 + 16 + 1)
        if m["link"]:
            k = m["link"]
            expect("link ticket", k["ticket"], invite_id(LINK_SECRET).hex())
            expect("link mac", k["mac"], link_mac(LINK_SECRET, NONCE_0, NONCE_1, INVITER, JOINER).hex())
            expect("link message length", len(bytes.fromhex(i["linkMessage"])), 17 + 4 * 32)
            expect("link mac of its message", k["mac"],
                   hmac.new(LINK_SECRET, bytes.fromhex(i["linkMessage"]), hashlib.sha256).hexdigest())
            if k["mac"] == link_mac(LINK_SECRET, NONCE_1, NONCE_0, JOINER, INVITER).hex():
                failures.append("link mac is the same with receiver and sender swapped")
            expect("frame length (d)", len(data), 4 + 2 + 1 + 1 + 1 + 8 + 32)
        if m["recovery"]:
            r = m["recovery"]
            key, sig = bytes.fromhex(r["recoveryKey"]), bytes.fromhex(r["signature"])
            expect("recovery key", r["recoveryKey"], RECOVERY_KEY.hex())
            msg = bytes.fromhex(i["recoverMessage"])
            # Spelled out here rather than by recover_message, so that a wrong order there is caught: the receiver
            # (node A, nonce 000102…1f) comes first, then the sender (fc51cd8e…, nonce 202122…3f).
            expect("recover message", msg.hex(), (b"continuum-recover-v3" + bytes(range(32)) + bytes(range(32, 64))
                                                  + INVITER + JOINER).hex())
            expect("recover message length", len(msg), 148)
            if not verify(key, msg, sig):
                failures.append("recovery signature does not verify")
            if verify(key, recover_message(NONCE_1, NONCE_0, JOINER, INVITER), sig):
                failures.append("recovery signature verifies with receiver and sender swapped")
            expect("frame length (e)", len(data), 4 + 2 + 1 + 1 + 1 + 32 + 64)
    # Cross-check the signatures with the `cryptography` package, when it is there.
    try:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    except ImportError:
        pass
    else:
        for seed in (SEED_J, SEED_K):
            msg = join_log_message(NONCE_0, NONCE_1, JOINER)
            expect("cryptography's signature", Ed25519PrivateKey.from_private_bytes(seed).sign(msg), sign(seed, msg))
        seed, msg = recovery_seed(RECOVERY_CODE), recover_message(NONCE_0, NONCE_1, INVITER, JOINER)
        expect("cryptography's recovery signature", Ed25519PrivateKey.from_private_bytes(seed).sign(msg),
               sign(seed, msg))
    try:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF
    except ImportError:
        pass
    else:
        theirs = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"continuum recovery key v3")
        expect("cryptography's HKDF", theirs.derive(RECOVERY_CODE), recovery_seed(RECOVERY_CODE))
    return failures


def check_records_frame(v: dict, vectors: list[dict]) -> list[str]:
    """LINKING and RECOVERY: the records decode back in order, the frame's length is the sum of its parts, and
    RECOVERY differs from LINKING in its type byte alone."""
    failures = []
    records = [bytes.fromhex(v["inputs"]["record0"]), bytes.fromhex(v["inputs"]["record1"])]
    if v["records"] != [r.hex() for r in records]:
        failures.append(f"{v['name']}: the records do not decode back")
    if len(v["frame"]) != 4 + 2 + 1 + sum(2 + len(r) for r in records):
        failures.append(f"{v['name']}: frame length {len(v['frame'])}")
    if v["type"] == RECOVERY:
        linking = next(x for x in vectors if x["type"] == LINKING)["frame"]
        if v["frame"][:5] + v["frame"][6:] != linking[:5] + linking[6:] or v["frame"][5] != RECOVERY:
            failures.append("RECOVERY is not LINKING with another type byte")
    for bad in (b"\x00", b"\x41"):
        try:
            decode_records(frame(v["type"], bad + v["frame"][7:]), v["type"])
        except AssertionError:
            pass
        else:
            failures.append(f"{v['name']}: a count of {bad[0]} decodes")
    return failures


# The example frame of §7.4.25 (Docs/PROTOCOL.md, the table after the FOLLOWS fields), copied by hand with its
# `5c5c…5c` (32 bytes) written out: `0000002d` `01` `88` · `0001` · 32 × `5c` · `01` · `0000018bcfe56800`.
DOC_FOLLOWS_EXAMPLE = bytes.fromhex("0000002d" "01" "88" "0001" + "5c" * 32 + "01" "0000018bcfe56800")

# What each FOLLOWS vector must decode to, written by hand (not by follows_fields).
FOLLOWS_EXPECTED = {
    "follows-one-entry": [{"post": "5c" * 32, "followed": True, "changedAt": 1700000000000}],
    "follows-three-entries": [{"post": "01" * 32, "followed": True, "changedAt": 1},
                              {"post": "02" * 32, "followed": False, "changedAt": 1700000000000},
                              {"post": "03" * 32, "followed": True, "changedAt": 9007199254740991}],
    "follows-empty": [],
}


def check_follows_frame(v: dict) -> list[str]:
    """FOLLOWS: the entries decode back to what was written by hand, the frame's length is 4 + 2 + 2 + 41 per entry,
    and the one-entry frame is §7.4.25's example byte for byte."""
    failures = []
    want = FOLLOWS_EXPECTED.get(v["name"])
    if v["follows"] != want:
        failures.append(f"{v['name']}: decodes to {v['follows']}, not {want}")
    if want is not None and len(v["frame"]) != 4 + 2 + 2 + 41 * len(want):
        failures.append(f"{v['name']}: frame length {len(v['frame'])}")
    if v["name"] == "follows-one-entry" and v["frame"] != DOC_FOLLOWS_EXAMPLE:
        failures.append(f"follows-one-entry is not §7.4.25's example: {v['frame'].hex()} != "
                        f"{DOC_FOLLOWS_EXAMPLE.hex()}")
    return failures


def check_follows_refusals() -> list[str]:
    """FOLLOWS frames that break §7.4.25 are refused, each for its own reason: a state of 2, a changed-at of 2^53, a
    count of 1001 (with 1001 well-formed entries, so that only the count is wrong), an entry cut short (at its last
    byte, and inside its post), and a byte after the last entry. The frames are written out here, not by
    follows_fields, which refuses to build them."""
    def entry(post: int, state: int, changed_at: int) -> bytes:
        return bytes([post]) * 32 + bytes([state]) + struct.pack(">Q", changed_at)

    good = entry(1, 1, 1) + entry(2, 0, 1700000000000) + entry(3, 1, MAX_CHANGED_AT)
    cases = [
        ("a state of 2", struct.pack(">H", 1) + entry(0x5C, 2, 1700000000000), "state 2"),
        ("a changed-at of 2^53", struct.pack(">H", 1) + entry(0x5C, 1, 2**53), "changed-at 9007199254740992"),
        ("a count of 1001", struct.pack(">H", 1001) + entry(0x5C, 1, 1) * 1001, "count 1001"),
        ("a last entry missing its last byte", struct.pack(">H", 3) + good[:-1], "truncated"),
        ("an entry cut inside its post", struct.pack(">H", 1) + entry(0x5C, 1, 1)[:20], "truncated"),
        ("three entries counted as four", struct.pack(">H", 4) + good, "truncated"),
        ("a byte after the last entry", struct.pack(">H", 3) + good + b"\x00", "trailing bytes"),
    ]
    failures = []
    for what, payload, reason in cases:
        try:
            decode_follows(frame(FOLLOWS, payload))
        except Exception as refused:  # noqa: BLE001 - an IndexError or struct.error is a refusal for the wrong reason
            if not isinstance(refused, AssertionError) or str(refused) != reason:
                failures.append(f"FOLLOWS with {what}: refused for `{refused}`, not `{reason}`")
        else:
            failures.append(f"FOLLOWS with {what}: decodes")
    # The bounds themselves are taken: 1000 entries, state 0, changed-at 0 and 2^53 − 1.
    try:
        bounds = entry(0x5C, 0, 0) * 999 + entry(0x5D, 1, MAX_CHANGED_AT)
        decode_follows(frame(FOLLOWS, struct.pack(">H", 1000) + bounds))
    except AssertionError as refused:
        failures.append(f"FOLLOWS with 1000 entries at the bounds: refused for `{refused}`")
    return failures


# ---------------------------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------------------------

def wrap(data: bytes, width: int = 32) -> str:
    h = data.hex()
    return "\n".join(h[i:i + 2 * width] for i in range(0, len(h), 2 * width))


def short(data: bytes) -> str:
    return f"`{data.hex()}`" if len(data) <= 8 else f"`{data[:8].hex()}…` ({len(data)} bytes)"


def to_json(vectors: list[dict]) -> str:
    items = []
    for v in vectors:
        item = {"name": v["name"], "type": TYPE_NAMES[v["type"]], "frameHex": v["frame"].hex(), "inputs": v["inputs"]}
        if v["type"] == MEMBERSHIP:
            item["membership"] = v["membership"]
        elif v["type"] == FOLLOWS:
            item["follows"] = v["follows"]
        else:
            item["records"] = v["records"]
        items.append(item)
    return json.dumps({"vectors": items}, indent=2) + "\n"


def markdown(vectors: list[dict]) -> str:
    out = ["# MEMBERSHIP, LINKING, RECOVERY and FOLLOWS frame vectors", "",
           "Five MEMBERSHIP frames (§7.4.21, join flags 0 to 4), a LINKING (§7.8.19), a RECOVERY (§7.8.20) and three",
           "FOLLOWS (§7.4.25: one, three and no entries) computed by `membership_vectors.py` with Python alone: the",
           "frame layouts from §7.1, §7.4.21, §7.4.25, §7.8.19 and §7.8.20, the proofs from §7.8.3, §7.8.16 and",
           "§7.4.21 with `hashlib` and `hmac`, the recovery key from §2.10 with an HKDF-SHA256 of its own (checked",
           "against RFC 5869's test cases A.1 and A.3 and §2.10's vector), and the Ed25519 signatures with a",
           "pure-Python RFC 8032 signer (checked against RFC 8032's test vectors, the record signatures of §8 and,",
           "when it is installed, the `cryptography` package). `vectors.json` holds `{\"vectors\": [{name, type,",
           "frameHex, inputs, membership | records | follows}]}`: `type` is `MEMBERSHIP`, `LINKING`, `RECOVERY` or",
           "`FOLLOWS`; `frameHex` is the whole frame (length, version, type, payload); `membership` is what a decoder",
           "must find in a MEMBERSHIP (`claims` [{group, proof}], `networkTags`, `join` {invite, log, mac,",
           "signature}, `request` {log, signature}, `link` {ticket, mac} and `recovery` {recoveryKey, signature},",
           "each null when absent), `records` what it must find in a LINKING or RECOVERY (the records whole, in",
           "order), `follows` what it must find in a FOLLOWS ([{post, followed, changedAt}], in order); byte strings",
           "in lowercase hex. The generator also checks the values of §7.8.16 (invite id, mac, network tag) and that",
           "each signature verifies, and fails under the wrong nonce order; that the one-entry FOLLOWS is §7.4.25's",
           "example byte for byte; and that its FOLLOWS reader refuses a state of 2, a changed-at of 2^53, a count of",
           "1001, an entry cut short and a trailing byte.", "",
           "Keys and nonces: identities A (`000102…1f`) and B (`202122…3f`) and log keys F and M are those of §8;",
           "J (seed `c0c1c2…df`, the bytes 192 to 223) and K (seed `e0e1e2…ff`, 224 to 255) are new log keys. The",
           "nonces are those of §7.8.16: `000102…1f` for the receiver (the inviter), `202122…3f` for the sender.",
           "The link code's secret is `a0a1…a9`; the recovery code is §2.10's `e0e1…ef` (16 bytes).", ""]
    for v in vectors:
        out += [f"## {v['title']}", "", v["note"], ""]
        for key, value in v["inputs"].items():
            if key.endswith("Is"):
                out.append(f"  ({value})")
            elif len(str(value)) < 300:
                out.append(f"- {key}: `{value}`")
            else:
                out.append(f"- {key}: `{str(value)[:32]}…` ({len(str(value)) // 2} bytes)")
        out += ["", f"Frame ({len(v['frame'])} bytes):", "", "```", wrap(v["frame"]), "```", "",
                "| Frame offset | Field | Bytes (hex) | Value |", "|---:|---|---|---|"]
        data = v["frame"]
        header = [("length", data[:4], f"{len(data) - 4}"), ("version", data[4:5], "frame version 1"),
                  ("type", data[5:6], TYPE_NAMES[v["type"]])]
        offset = 0
        for field, chunk, meaning in header + v["rows"]:
            out.append(f"| {offset} | {field} | {short(chunk)} | {meaning} |")
            offset += len(chunk)
        assert offset == len(data)
        out.append("")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    vectors = build()
    failures = self_checks(vectors)
    if failures:
        for f in failures:
            print("FAIL:", f, file=sys.stderr)
        return 1
    for v in vectors:
        print(f"{v['name']}: {len(v['frame'])} bytes {v['frame'].hex()[:48]}…")
    if len(argv) > 2 and argv[1] == "--write":
        directory = Path(argv[2])
        (directory / "vectors.json").write_text(to_json(vectors))
        (directory / "membership-vectors.md").write_text(markdown(vectors))
        print(f"wrote {directory / 'vectors.json'} and {directory / 'membership-vectors.md'}")
    print("ok: RFC 8032, RFC 5869 and §8 signatures reproduced; §7.8.16 invite id, mac and tag and §2.10's recovery "
          "key reproduced; §7.4.25's FOLLOWS example reproduced; frames decode; bad FOLLOWS frames refused")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

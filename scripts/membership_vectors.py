#!/usr/bin/env python3
"""MEMBERSHIP frame vectors (Docs/PROTOCOL.md §7.4.21, §7.8.3, §7.8.16), computed by Python alone.

Independent of the Swift code: the frame layout is written from §7.1 and §7.4.21, the proofs from §7.8.3 and
§7.8.16 (hashlib, hmac), and Ed25519 signatures by the pure-Python RFC 8032 code below (no third-party package).
When the `cryptography` package is importable, each signature is also checked against it.

Three frames:
  (a) membership-claim-and-network-tag  one claim (group G1 of §8, proof: vector 11's header) and one network tag,
                                        join flag 0
  (b) membership-join-by-invite         join flag 1, with the invite values of §7.8.16
  (c) membership-request-to-join        join flag 2, a request to join

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


# ---------------------------------------------------------------------------------------------------------------
# MEMBERSHIP (§7.4.21) in a frame (§7.1)
# ---------------------------------------------------------------------------------------------------------------

MEMBERSHIP = 0x03


def membership_fields(claims, tags, join=None, request=None) -> list[tuple[str, bytes, str]]:
    """The payload as (field, bytes, meaning) rows, in order."""
    assert len(claims) <= 32 and len(tags) <= 8 and not (join and request)
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

    out = {"claims": [], "networkTags": [], "join": None, "request": None}
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
    else:
        assert flag == 0, f"join flag {flag}"
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

    for v in out:
        payload = b"".join(data for _, data, _ in v["rows"])
        v["frame"] = frame(MEMBERSHIP, payload)
        v["membership"] = decode_membership(v["frame"])
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
    # Each frame: it decodes to its inputs, the signatures verify, and a wrong binding does not.
    for v in vectors:
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
    # Cross-check the signatures with the `cryptography` package, when it is there.
    try:
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    except ImportError:
        pass
    else:
        for seed in (SEED_J, SEED_K):
            msg = join_log_message(NONCE_0, NONCE_1, JOINER)
            expect("cryptography's signature", Ed25519PrivateKey.from_private_bytes(seed).sign(msg), sign(seed, msg))
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
    items = [{"name": v["name"], "frameHex": v["frame"].hex(), "inputs": v["inputs"], "membership": v["membership"]}
             for v in vectors]
    return json.dumps({"vectors": items}, indent=2) + "\n"


def markdown(vectors: list[dict]) -> str:
    out = ["# MEMBERSHIP frame vectors", "",
           "Three MEMBERSHIP frames (§7.4.21) computed by `membership_vectors.py` with Python alone: the frame layout",
           "from §7.1 and §7.4.21, the proofs from §7.8.3 and §7.8.16 with `hashlib` and `hmac`, and the Ed25519",
           "signatures with a pure-Python RFC 8032 signer (checked against RFC 8032's test vectors, the fourteen record",
           "signatures of §8 and, when it is installed, the `cryptography` package). `vectors.json` holds",
           "`{\"vectors\": [{name, frameHex, inputs, membership}]}`: `frameHex` is the whole frame (length, version,",
           "type, payload); `membership` is what a decoder must find in it (`claims` [{group, proof}], `networkTags`,",
           "`join` {invite, log, mac, signature} or null, `request` {log, signature} or null), byte strings in",
           "lowercase hex. The generator also checks the values of §7.8.16 (invite id, mac, network tag) and that each",
           "signature verifies, and fails under the wrong nonce order.", "",
           "Keys and nonces: identities A (`000102…1f`) and B (`202122…3f`) and log keys F and M are those of §8;",
           "J (seed `c0c1c2…df`, the bytes 192 to 223) and K (seed `e0e1e2…ff`, 224 to 255) are new log keys. The",
           "nonces are those of §7.8.16: `000102…1f` for the receiver (the inviter), `202122…3f` for the sender.", ""]
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
                  ("type", data[5:6], "MEMBERSHIP")]
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
    print("ok: RFC 8032 and §8 signatures reproduced; §7.8.16 invite id, mac and tag reproduced; frames decode")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

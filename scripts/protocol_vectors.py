#!/usr/bin/env python3
"""Golden test vectors for the continuum record format v2 (Docs/PROTOCOL.md §2 - §4.1), from an independent
implementation.

This is a second implementation of the record encoding, written from the protocol text and not by calling or
reading the Swift code, so that the Swift tests can check their bytes against it. A record is a signed header
that commits to its content by length and SHA-256, then the content (a 16-byte salt and the fields of its kind),
which can be erased: the record then travels as its header alone, with the same id (SHA-256 of the header).

It builds twenty-six records from fixed inputs (fixed seeds and fixed salts), each whole and as its header alone:
eight of kinds 1 ... 5, then six of the group kinds (§2.7): two group records and four
member records, then two of kinds to come (§2.8): one with a context, data and a payload, one with none of them,
then three reactions (§2.9, kind 13, written from that section alone): to a post, to a comment, and one taken back;
then five account records (§2.10, kinds 8 ... 11, written from that section alone): device L founds an account with
recovery key K, device D joins it, L adds D with D's consent, D removes L with a frontier, D declares its log key N in
the group G1 for the account; then two more of A's log whose photos commit to their author's thumbnail (§2.5, photo
flags bit 1): a post whose photo has a takenAt and a thumbnail, and an edit of it whose new photo has a thumbnail and
no takenAt;
decodes them back with its own decoder, verifies their Ed25519 signatures and re-encodes them. It also writes eight
inert records of kind 13: valid records (§2.8's common layout holds) that break a rule of §2.9 and so count as no
reaction, since a kind's own rules never make a record invalid; and twenty-seven inert records of kinds 8 ... 11,
valid records that break §2.10's table (a consent that does not verify, an add of its own author, a frontier out of
order, a log declaration whose signature is not the log key's over its message, ...). It checks that every
single-bit flip of every record, whole or header alone, is refused (by the decoder, the content-hash check or the
signature); checks a list of invalid records that must be refused and a few edge cases that must be accepted; and
checks that the largest record of each kind has the size the table of §2.5 gives.

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
VERSION = 2
SIGNATURE_BYTES = 64
SALT_BYTES = 16
EMPTY_HASH = hashlib.sha256(b"").digest()  # the content hash of a delete or a member, which have no content

KIND_CODES = {"profile": 1, "post": 2, "comment": 3, "edit": 4, "delete": 5, "group": 6, "member": 7,
              "reaction": 13}
KIND_NAMES = {code: name for name, code in KIND_CODES.items()}
# The kinds without content (§2.5): content length 0, content hash that of no bytes, no salt; always whole.
NO_CONTENT = ("delete", "member")

# Kinds to come (§2.8): the codes 8 ... 255 but 13, which this version does not define, all laid out alike. This
# script models such a record as the kind "future", its code in its body. The references (§2.1): `context`, 32 bytes
# (a post id, or 32 zero bytes for none), then `length`, u16, 0 ... 4096, then `data`. The content: nothing (length
# 0, the hash of no bytes: then, like a delete, the record is always whole), or the salt then at least one byte.
FUTURE = "future"
# Reactions (§2.9): kind 13, the one code of 8 ... 255 this version defines, laid out as the others (§2.8). This
# script knows it, and the kinds to come are the other codes. A record of kind 13 is valid when §2.8's common layout
# holds; §2.9's rules never make it invalid (§2.9: "a kind's own rules never make a record invalid"). They say
# whether it is a reaction: its `context` is the post reacted to (not 32 zero bytes), its `data` is empty (a
# reaction to the post) or the 32-byte id of the comment reacted to (not equal to `context`), and its content is
# exactly 17 bytes: the salt, then `emoji`, u8, 0 (taken back) ... 6. A record of kind 13 that keeps them is modelled
# as the kind "reaction", with its own body; one that breaks them is *inert* (it counts as no reaction), modelled
# as the kind "inert" with the body of a kind to come. A node does not sign an inert one (§2.9); this script signs
# some as test vectors.
REACTION = "reaction"
INERT = "inert"
REACTION_CODE = 13
REACTION_EMOJI = {0: "none (taken back)", 1: "\u2764\ufe0f red heart", 2: "\U0001f44d thumbs up",
                  3: "\U0001f602 face with tears of joy", 4: "\U0001f62e face with open mouth",
                  5: "\U0001f622 crying face", 6: "\U0001f64f folded hands"}
REACTION_CONTENT_BYTES = SALT_BYTES + 1
FUTURE_CODES = tuple(code for code in range(8, 256) if code != REACTION_CODE)
FUTURE_DATA_BYTES = 4096
FUTURE_CONTENT_BYTES = 8192

# Account records (§2.10): kinds 8 `account`, 9 `device-add`, 10 `device-remove` and 11 `log`, laid out as every kind
# from 8 on (§2.8), with `context` 32 zero bytes, their fields in `data`, and no content. Written from §2.10 alone. As
# for kind 13, their own rules never make a record invalid: a record of these codes that keeps §2.8's layout is valid,
# and it is an account record when it keeps §2.10's table, else *inert*. This script models a valid account record as
# the kind of its name, with its own body, and an inert one as a kind to come ("future") of its code: to a node of
# this version they are kinds to come (§2.8), and the vector U2 (kind 8, no data) is such an inert one.
#   account        {account, recovery}         account: None (32 zero bytes: founds an account) or the account the
#                                              log joins; recovery: None or the recovery public key (flags bit 0,
#                                              founding only)
#   device-add     {account, device, consent}  consent: the device's signature over CONSENT_PREFIX, account, device
#   device-remove  {account, device, frontier} frontier: [{log, through, head}], logs strictly ascending, head None
#                                              (32 zero bytes) exactly when through is 0
#   log            {account, group, log,       a log declaration: `log`, one of the author's group logs (not the
#                   signature}                 author), is its device's log in `group` for `account`; signature: the
#                                              log key's over DECLARATION_PREFIX, account, group, the author
ACCOUNT_CODES = {"account": 8, "device-add": 9, "device-remove": 10, "log": 11}
ACCOUNT_KINDS = {code: name for name, code in ACCOUNT_CODES.items()}
ACCOUNT_RECOVERY = 0x01  # the flag of an `account` record: a recovery key follows (founding only)
CONSENT_PREFIX = b"continuum-device-consent-v3"
DECLARATION_PREFIX = b"continuum-log-declaration-v3"
DECLARATION_BYTES = 32 + 32 + 32 + 64  # account, group, log, signature: 160 bytes of data
FRONTIER_ENTRIES = 55  # §2.10: count 0 ... 55 (65 + 72 × 55 = 4025 bytes of data, the most §2.1 allows)
FRONTIER_ENTRY_BYTES = 32 + 8 + 32  # log, through, head

# A group record's flags (§2.1): bit 0 makes the group open; the other bits MUST be 0.
GROUP_OPEN = 0x01
# A member record's actions (§2.1).
MEMBER_ACTIONS = {"add": 1, "remove": 2, "admin": 3}
MEMBER_ACTION_NAMES = {code: name for name, code in MEMBER_ACTIONS.items()}

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

# The flags of an edit's content (§2.5).
EDIT_CAPTION, EDIT_PHOTO, EDIT_LOCATION_SET, EDIT_LOCATION_REMOVED = 0x01, 0x02, 0x04, 0x08
EDIT_KNOWN = 0x0F

# A photo (§2.5): sha256, bytes, media type, width, height, photo flags (50); then the takenAt (8) when flags bit 0
# is set, then the author's thumbnail, its sha256 and its size (32 + 4), when bit 1 is set. Bits 2 ... 7 MUST be 0.
# The byte of the photo flags was the taken-at flag (0 or 1) before bit 1 was added: 00 and 01 mean what they meant.
PHOTO_LENGTH = 32 + 8 + 1 + 4 + 4 + 1
PHOTO_TAKEN_AT, PHOTO_THUMBNAIL = 0x01, 0x02
PHOTO_KNOWN = PHOTO_TAKEN_AT | PHOTO_THUMBNAIL
TAKEN_AT_LENGTH = 8
THUMBNAIL_LENGTH = 32 + 4
THUMBNAIL_BYTES = 65_536  # a thumbnail's size, 1 ... 65536 (§2.5; the limit of THUMB_DATA, §7.4.19)
PHOTO_MAX = PHOTO_LENGTH + TAKEN_AT_LENGTH + THUMBNAIL_LENGTH  # 94
# The largest content of each kind, salt included, from the fields of §2.5.
CONTENT_MAX = {
    "profile": SALT_BYTES + 1 + NAME_BYTES,
    "post": SALT_BYTES + 2 + CAPTION_BYTES + PHOTO_MAX + 1 + 8,
    "comment": SALT_BYTES + 2 + COMMENT_BYTES,
    "edit": SALT_BYTES + 1 + 2 + CAPTION_BYTES + PHOTO_MAX + 8,
    "group": SALT_BYTES + 1 + NAME_BYTES,
    FUTURE: FUTURE_CONTENT_BYTES,
    REACTION: REACTION_CONTENT_BYTES,  # a reaction as it is signed; the decoder reads kind 13 as a kind to come
}
# The smallest content length a header may give. §2.1 says "18 … the kind's limit" for every kind but delete, but
# §2.5 lets an edit do nothing but remove the location (flags 08, no field): its content is the salt and the flags,
# 17 bytes. This follows §2.5 for an edit; the vector "A6 edit removing location" is such a record.
# A kind to come has, when its content length is not 0, the salt and at least one byte (§2.1, §2.8).
CONTENT_MIN = {"profile": SALT_BYTES + 2, "post": SALT_BYTES + 2, "comment": SALT_BYTES + 2, "edit": SALT_BYTES + 1,
               "group": SALT_BYTES + 2, FUTURE: SALT_BYTES + 1}
# The table of §2.5: (largest content, largest record) by kind. Checked against records built here. A group record
# is always sequence 1 (no previous), so its largest is 32 bytes shorter than it would be further on in a log.
# §2.5's table has no row for a reaction: its largest, to a comment further on in a log, is 86 + 32 (context) + 2 +
# 32 (data) + 100 = 252 bytes of header and 17 of content, worked out by hand from §2.1 and §2.9.
SIZE_TABLE = {"profile": (81, 267), "post": (2169, 2355), "comment": (4114, 4332), "edit": (2169, 2387),
              "delete": (0, 8380), "group": (81, 268), "member": (0, 291), FUTURE: (8192, 12508),
              REACTION: (17, 269)}

# The Unicode White_Space property (PropList.txt), spelled out so that this does not depend on str.isspace().
WHITE_SPACE = frozenset(
    [0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F,
     0x205F, 0x3000]
)

# A record, as this script models it, is a dict:
#   author, sequence, previous (bytes or None), createdAt, kind, salt (16 bytes; None for a delete or member, and
#   for a kind to come with an empty payload), body
# and the body by kind:
#   profile  {name}
#   post     {caption, photo, location}           location: None or {latitudeE7, longitudeE7}
#   comment  {post, text}
#   edit     {post, caption, photo, location}     caption, photo: None when unchanged;
#                                                 location: "unchanged", "removed" or {latitudeE7, longitudeE7}
#   delete   {targets}
#   group    {node, open, name}                   node: the founder's node id; open: bool
#   member   {group, action, node, log, through}  action: "add", "remove" or "admin"
#   future   {code, context, data, payload}       a kind to come (§2.8): code 8 ... 255 but 13; context: a post id,
#                                                 or None (32 zero bytes on the wire); data: the references' own
#                                                 bytes; payload: the content after the salt, b"" for no content
#   reaction {post, comment, emoji}               kind 13 (§2.9): post: the context; comment: None (data empty) or
#                                                 the 32-byte id of the comment reacted to (the data); emoji: 0 ... 6
#   inert    {code, context, data, payload}       kind 13 breaking §2.9's rules (code 13), as a kind to come
# A photo is {sha256, bytes, mediaType (the MIME type), width, height, takenAt (None when not known), thumbnail}, and
# its thumbnail None (photo flags bit 1 clear) or the author's thumbnail {sha256 (32 bytes), bytes (its size)}.


class Invalid(Exception):
    """A record that the protocol refuses."""


class Refused(Exception):
    """A record that would be valid but that a node does not sign: a reaction breaking §2.9's rules, which would be
    inert. The model writes such a record as the kind "inert"."""


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


def check_timestamp(value: int, field: str) -> None:
    if not 0 <= value <= LATEST_TIMESTAMP:
        raise Invalid(f"{field} {value} is outside 1970 ... 9999")


def check_photo(photo: dict) -> None:
    if len(photo["sha256"]) != 32:
        raise Invalid("photo sha256 must be 32 bytes")
    if not 1 <= photo["bytes"] <= PHOTO_BYTES:
        raise Invalid("photo size out of range")
    if photo["mediaType"] not in MEDIA_CODES:
        raise Invalid("unknown media type")
    if not (1 <= photo["width"] <= PHOTO_DIMENSION and 1 <= photo["height"] <= PHOTO_DIMENSION):
        raise Invalid("photo dimensions out of range")
    if photo["takenAt"] is not None:
        check_timestamp(photo["takenAt"], "takenAt")
    thumbnail = photo["thumbnail"]
    if thumbnail is not None:
        if len(thumbnail["sha256"]) != 32:
            raise Invalid("thumbnail sha256 must be 32 bytes")
        if not 1 <= thumbnail["bytes"] <= THUMBNAIL_BYTES:
            raise Invalid(f"thumbnail size {thumbnail['bytes']} must be 1 ... {THUMBNAIL_BYTES} bytes")


def photo_flags(photo: dict) -> int:
    """The photo flags byte (§2.5): bit 0 when a takenAt follows, bit 1 when the author's thumbnail follows."""
    return (PHOTO_TAKEN_AT if photo["takenAt"] is not None else 0) | (
        PHOTO_THUMBNAIL if photo["thumbnail"] is not None else 0)


def check_location(location: dict) -> None:
    if not (abs(location["latitudeE7"]) <= LATITUDE_E7 and abs(location["longitudeE7"]) <= LONGITUDE_E7):
        raise Invalid("location is not on Earth")


def check_targets(targets: list[bytes]) -> None:
    if not targets:
        raise Invalid("a delete needs at least one target")
    if len(targets) > DELETE_TARGETS:
        raise Invalid("too many delete targets")
    if any(len(t) != 32 for t in targets):
        raise Invalid("targets must be 32 bytes")
    if any(not a < b for a, b in zip(targets, targets[1:])):
        raise Invalid("delete targets must be strictly ascending")


def validate(record: dict) -> None:
    """The checks that need no other record (§3, §4.1), signature aside."""
    if len(record["author"]) != 32:
        raise Invalid("author must be 32 bytes")
    sequence = record["sequence"]
    if not 1 <= sequence <= MAX_SEQUENCE:
        raise Invalid(f"sequence {sequence} must be 1 ... {MAX_SEQUENCE}")
    previous = record["previous"]
    if (sequence == 1) != (previous is None):
        raise Invalid("previous must be present exactly when sequence > 1")
    if previous is not None and len(previous) != 32:
        raise Invalid("previous must be 32 bytes")
    check_timestamp(record["createdAt"], "createdAt")
    kind, body = record["kind"], record["body"]
    if kind not in KIND_CODES and kind not in ACCOUNT_CODES and kind not in (FUTURE, INERT):
        raise Invalid(f"unknown kind {kind!r}")
    if (record["salt"] is None) == has_content(record) or (
            record["salt"] is not None and len(record["salt"]) != SALT_BYTES):
        raise Invalid("every content starts with a 16-byte salt; a delete, a member and a kind to come with no "
                      "payload have no content")
    if kind == "profile":
        check_text(body["name"], "name", NAME_BYTES, multiline=False)
    elif kind == "post":
        check_text(body["caption"], "caption", CAPTION_BYTES, multiline=True)
        check_photo(body["photo"])
        if body["location"] is not None:
            check_location(body["location"])
    elif kind == "comment":
        if len(body["post"]) != 32:
            raise Invalid("post id must be 32 bytes")
        check_text(body["text"], "text", COMMENT_BYTES, multiline=True)
    elif kind == "edit":
        if len(body["post"]) != 32:
            raise Invalid("post id must be 32 bytes")
        if body["caption"] is None and body["photo"] is None and body["location"] == "unchanged":
            raise Invalid("an edit must change the caption, the photo or the location")
        if body["caption"] is not None:
            check_text(body["caption"], "caption", CAPTION_BYTES, multiline=True)
        if body["photo"] is not None:
            check_photo(body["photo"])
        if body["location"] not in ("unchanged", "removed"):
            check_location(body["location"])
    elif kind == "delete":
        check_targets(body["targets"])
    elif kind == "group":
        check_group_header(sequence)
        if len(body["node"]) != 32 or not isinstance(body["open"], bool):
            raise Invalid("a group record names a 32-byte node and is open or not")
        check_text(body["name"], "group name", NAME_BYTES, multiline=False)
    elif kind == FUTURE:
        check_future(body, record["author"])
    elif kind == INERT:
        check_inert(body)
    elif kind == REACTION:
        check_reaction(body)
    elif kind in ACCOUNT_CODES:
        check_account(kind, body, record["author"])
    else:
        check_member(body, record["author"], sequence)


def has_content(record: dict) -> bool:
    """Whether the record has a content (§2.5, §2.8): every kind but a delete and a member, and a kind to come only
    when it has a payload."""
    if record["kind"] in (FUTURE, INERT):
        return len(record["body"]["payload"]) > 0
    return record["kind"] not in NO_CONTENT and record["kind"] not in ACCOUNT_CODES


def check_future(body: dict, author: bytes) -> None:
    """A record of a kind to come (§2.1, §2.8): its code, its context, its data and its payload. A record of kind 8,
    9, 10 or 11 is modelled so only when it is inert (§2.10); one that reads as an account record is modelled as
    one."""
    if body["code"] not in FUTURE_CODES:
        raise Invalid(f"kind {body['code']} is not a kind to come (8 ... 255 but 13, a reaction)")
    check_layout(body)
    if body["code"] in ACCOUNT_KINDS:
        content_length = SALT_BYTES + len(body["payload"]) if body["payload"] else 0
        reading = read_account(body["code"], body["context"] or bytes(32), body["data"], content_length, author)
        if reading[2] is None:
            raise ValueError(f"this record of kind {body['code']} is an account record: model it as one")


def check_layout(body: dict) -> None:
    """The common layout of kinds 8 ... 255 (§2.1, §2.8): a context, at most 4096 bytes of data, and a payload that
    fits in a content of at most 8192 bytes."""
    context = body["context"]
    if context is not None and (len(context) != 32 or context == bytes(32)):
        raise Invalid("a context is a 32-byte post id; 32 zero bytes is how no context is written (None)")
    if len(body["data"]) > FUTURE_DATA_BYTES:
        raise Invalid(f"data is {len(body['data'])} bytes; the limit is {FUTURE_DATA_BYTES}")
    if len(body["payload"]) > FUTURE_CONTENT_BYTES - SALT_BYTES:
        raise Invalid(f"payload is {len(body['payload'])} bytes; the limit is {FUTURE_CONTENT_BYTES - SALT_BYTES}")


def inert_reason(context: bytes, data: bytes, content_length: int, emoji: int | None) -> str | None:
    """Why a valid record of kind 13 is inert (§2.9), or None when it keeps §2.9's rules as far as they can be
    told: `emoji` is None when the content is not there (a header alone). `context` is the 32 bytes on the wire."""
    if context == bytes(32):
        return "its context is 32 zero bytes: a reaction names the post it goes with"
    if len(data) not in (0, 32):
        return f"its data is {len(data)} bytes: empty (for its post) or a comment's id (32 bytes)"
    if data == context:
        return "its data is its context: a reaction to the post itself has no data"
    if content_length != REACTION_CONTENT_BYTES:
        return f"its content length is {content_length}, not {REACTION_CONTENT_BYTES}"
    if emoji is not None and emoji not in REACTION_EMOJI:
        return f"its code {emoji} is above 6"
    return None


def inert_reason_of(body: dict) -> str | None:
    """Why a record of kind 13 in the layout of §2.8 (an "inert" body) is inert, or None when it is a reaction."""
    payload = body["payload"]
    context = bytes(32) if body["context"] is None else body["context"]
    content_length = SALT_BYTES + len(payload) if payload else 0
    return inert_reason(context, body["data"], content_length, payload[0] if len(payload) == 1 else None)


def check_reaction(body: dict) -> None:
    """A reaction as a node signs it (§2.9). Breaking its rules makes a valid, inert record, which a node does not
    sign: that is Refused, not Invalid."""
    comment = body["comment"]
    if len(body["post"]) != 32 or (comment is not None and len(comment) != 32) or not 0 <= body["emoji"] <= 255:
        raise ValueError("a reaction's post is 32 bytes, its comment None or 32 bytes, its emoji one byte")
    reason = inert_reason(body["post"], b"" if comment is None else comment, REACTION_CONTENT_BYTES, body["emoji"])
    if reason is not None:
        raise Refused(f"a node does not sign this reaction: {reason} (§2.9)")


def check_inert(body: dict) -> None:
    """An inert record of kind 13 (§2.9): the common layout of §2.8, and a rule of §2.9 broken. One that breaks none
    is modelled as a reaction, so that each record has one model."""
    if body["code"] != REACTION_CODE:
        raise ValueError(f"an inert record is of kind {REACTION_CODE}, not {body['code']}")
    check_layout(body)
    if inert_reason_of(body) is None:
        raise ValueError("this record of kind 13 is a reaction: model it as one")


def consent_message(account: bytes, device: bytes) -> bytes:
    """What a device signs to consent to being added to an account (§2.10): the ASCII bytes
    `continuum-device-consent-v3`, then the account, then the device, with nothing between them."""
    return CONSENT_PREFIX + account + device


def consent_verifies(account: bytes, device: bytes, consent: bytes) -> bool:
    """Whether `consent` is the device's Ed25519 signature over consent_message (§2.10, §2.2's rules)."""
    try:
        Ed25519PublicKey.from_public_bytes(device).verify(consent, consent_message(account, device))
        return True
    except (InvalidSignature, ValueError):
        return False


def declaration_message(account: bytes, group: bytes, device: bytes) -> bytes:
    """What a log key signs to declare itself its device's log in a group for an account (§2.10, kind 11): the ASCII
    bytes `continuum-log-declaration-v3`, then the account, then the group, then the device (the record's author),
    with nothing between them."""
    return DECLARATION_PREFIX + account + group + device


def declaration_verifies(account: bytes, group: bytes, log: bytes, device: bytes, signature: bytes) -> bool:
    """Whether `signature` is the log key's Ed25519 signature over declaration_message (§2.10, §2.2's rules)."""
    try:
        Ed25519PublicKey.from_public_bytes(log).verify(signature, declaration_message(account, group, device))
        return True
    except (InvalidSignature, ValueError):
        return False


def account_data(kind: str, body: dict) -> list[tuple[str, bytes]]:
    """The `data` of an account record (§2.10) as labelled fields, in order."""
    account = bytes(32) if body["account"] is None else body["account"]
    if kind == "account":
        recovery = body["recovery"]
        fields = [("account", account), ("flags", bytes([0 if recovery is None else ACCOUNT_RECOVERY]))]
        return fields + ([] if recovery is None else [("recovery", recovery)])
    if kind == "device-add":
        return [("account", account), ("device", body["device"]), ("consent", body["consent"])]
    if kind == "log":
        return [("account", account), ("group", body["group"]), ("log", body["log"]), ("signature", body["signature"])]
    fields = [("account", account), ("device", body["device"]), ("count", bytes([len(body["frontier"])]))]
    for index, entry in enumerate(body["frontier"]):
        fields.append((f"log {index}", entry["log"]))
        fields.append((f"through {index}", struct.pack(">Q", entry["through"])))
        fields.append((f"head {index}", bytes(32) if entry["head"] is None else entry["head"]))
    return fields


def read_account(code: int, context: bytes, data: bytes, content_length: int,
                 author: bytes | None) -> tuple[str | None, dict | None, str | None]:
    """Reads a valid record of kind 8, 9, 10 or 11 (§2.8's layout holds) by §2.10's table: (its kind, its body, None)
    when it is an account record, or (None, None, why it is inert). `context` is the 32 bytes on the wire. `author`
    None skips the checks that need it (a device-add of its own author; a log declaration naming its author, and its
    signature, which covers the author), for a body without its record."""
    if context != bytes(32):
        return None, None, "its context is not 32 zero bytes: an account record goes with no post"
    if content_length != 0:
        return None, None, f"its content length is {content_length}: an account record has no content"
    size = len(data)
    if code == ACCOUNT_CODES["account"]:
        if size not in (33, 65):
            return None, None, f"its data is {size} bytes: an account record's is 33 or 65"
        account, flags = data[:32], data[32]
        if flags & ~ACCOUNT_RECOVERY:
            return None, None, f"its flags {flags:02x} set a bit other than bit 0"
        if (size == 65) != bool(flags & ACCOUNT_RECOVERY):
            return None, None, (f"its flags {flags:02x} and its {size} bytes of data disagree: a recovery key "
                                "follows exactly when bit 0 is set")
        if flags & ACCOUNT_RECOVERY and account != bytes(32):
            return None, None, "it joins an account and names a recovery key: a recovery key is for founding only"
        return "account", {"account": None if account == bytes(32) else account,
                           "recovery": data[33:] if size == 65 else None}, None
    if code == ACCOUNT_CODES["device-add"]:
        if size != 128:
            return None, None, f"its data is {size} bytes: a device-add's is 128"
        account, device, consent = data[:32], data[32:64], data[64:]
        if account == bytes(32):
            return None, None, "it names no account (32 zero bytes)"
        if author is not None and device == author:
            return None, None, "it adds its own author"
        if not consent_verifies(account, device, consent):
            return None, None, ("its consent does not verify: it is not the device's signature over "
                                "continuum-device-consent-v3, the account and the device")
        return "device-add", {"account": account, "device": device, "consent": consent}, None
    if code == ACCOUNT_CODES["log"]:
        return read_declaration(data, author)
    if size < 65:
        return None, None, f"its data is {size} bytes: a device-remove's is 65 + 72 × count"
    account, device, count = data[:32], data[32:64], data[64]
    if account == bytes(32):
        return None, None, "it names no account (32 zero bytes)"
    if count > FRONTIER_ENTRIES:
        return None, None, f"its frontier count {count} is above {FRONTIER_ENTRIES}"
    if size != 65 + FRONTIER_ENTRY_BYTES * count:
        return None, None, f"its data is {size} bytes: with a count of {count}, 65 + 72 × {count}"
    frontier = []
    for index in range(count):
        entry = data[65 + FRONTIER_ENTRY_BYTES * index : 65 + FRONTIER_ENTRY_BYTES * (index + 1)]
        log, through, head = entry[:32], int.from_bytes(entry[32:40], "big"), entry[40:]
        if through > MAX_SEQUENCE:
            return None, None, f"its frontier entry {index} has through {through}, above 2^53 − 1"
        if (through == 0) != (head == bytes(32)):
            return None, None, (f"its frontier entry {index} has through {through} and a "
                                f"{'zero' if head == bytes(32) else 'non-zero'} head: the head is 32 zero bytes "
                                "exactly when through is 0")
        frontier.append({"log": log, "through": through, "head": None if head == bytes(32) else head})
    if any(not a["log"] < b["log"] for a, b in zip(frontier, frontier[1:])):
        return None, None, "its frontier's logs are not strictly ascending"
    return "device-remove", {"account": account, "device": device, "frontier": frontier}, None


def read_declaration(data: bytes, author: bytes | None) -> tuple[str | None, dict | None, str | None]:
    """Reads the data of a valid record of kind 11, a log declaration (§2.10), as read_account does: its account,
    group, log and the log key's signature, 160 bytes; neither the account nor the group 32 zero bytes; the log not
    the author; the signature the log key's over `continuum-log-declaration-v3`, the account, the group, the author."""
    if len(data) != DECLARATION_BYTES:
        return None, None, f"its data is {len(data)} bytes: a log declaration's is {DECLARATION_BYTES}"
    account, group, log, signature = data[:32], data[32:64], data[64:96], data[96:]
    if account == bytes(32):
        return None, None, "it names no account (32 zero bytes)"
    if group == bytes(32):
        return None, None, "it names no group (32 zero bytes)"
    if author is not None and log == author:
        return None, None, "its log is its own author: a log declaration names one of the author's group logs"
    if author is not None and not declaration_verifies(account, group, log, author, signature):
        return None, None, ("its signature does not verify: it is not the log key's signature over "
                            "continuum-log-declaration-v3, the account, the group and the author")
    return "log", {"account": account, "group": group, "log": log, "signature": signature}, None


def check_account(kind: str, body: dict, author: bytes) -> None:
    """An account record as a node signs it (§2.10). Breaking §2.10's table makes a valid, inert record, which a node
    does not sign: that is Refused, not Invalid."""
    if kind == "account":
        sizes_ok = body["account"] is None or len(body["account"]) == 32
        sizes_ok = sizes_ok and (body["recovery"] is None or len(body["recovery"]) == 32)
    elif kind == "log":
        sizes_ok = all(len(body[key]) == 32 for key in ("account", "group", "log"))
        sizes_ok = sizes_ok and len(body["signature"]) == SIGNATURE_BYTES
    else:
        sizes_ok = len(body["account"]) == 32 and len(body["device"]) == 32
        if kind == "device-add":
            sizes_ok = sizes_ok and len(body["consent"]) == SIGNATURE_BYTES
        else:
            sizes_ok = sizes_ok and all(len(e["log"]) == 32 and (e["head"] is None or len(e["head"]) == 32)
                                        and 0 <= e["through"] < 1 << 64 for e in body["frontier"])
            sizes_ok = sizes_ok and len(body["frontier"]) <= 255
    if not sizes_ok:
        raise ValueError(f"the fields of this {kind} record do not fit §2.10's table")
    data = b"".join(value for _, value in account_data(kind, body))
    if len(data) > FUTURE_DATA_BYTES:
        raise Invalid(f"data is {len(data)} bytes; the limit is {FUTURE_DATA_BYTES}")
    read_kind, read_body, reason = read_account(ACCOUNT_CODES[kind], bytes(32), data, 0, author)
    if reason is not None:
        raise Refused(f"a node does not sign this {kind} record: {reason} (§2.10)")
    if (read_kind, read_body) != (kind, body):
        raise ValueError(f"this {kind} record does not read back as itself")


def check_group_header(sequence: int) -> None:
    """A group record founds its author's log (§2.1): it is the log's first record. The header says so."""
    if sequence != 1:
        raise Invalid(f"a group record must be sequence 1, not {sequence}")


def check_member(body: dict, author: bytes, sequence: int) -> None:
    """A member record's rules on the record alone (§2.1); who may sign it is a matter of the group (§2.7)."""
    if any(len(body[key]) != 32 for key in ("group", "node", "log")):
        raise Invalid("a member record's group, node and log are 32 bytes")
    if body["action"] not in MEMBER_ACTIONS:
        raise Invalid(f"unknown member action {body['action']!r}")
    if body["log"] == body["group"]:
        raise Invalid("a member record cannot name the group's founder")
    if body["log"] == author and (body["action"] != "add" or sequence != 1):
        raise Invalid("a member record about its own author must add it, as the first record of its log")
    through = body["through"]
    if body["action"] == "remove":
        if not 0 <= through <= MAX_SEQUENCE:
            raise Invalid(f"through {through} must be 0 ... {MAX_SEQUENCE}")
    elif through != 0:
        raise Invalid("through is for a removal; an add or admin has 0")


def edit_flags(body: dict) -> int:
    flags = 0
    if body["caption"] is not None:
        flags |= EDIT_CAPTION
    if body["photo"] is not None:
        flags |= EDIT_PHOTO
    if body["location"] == "removed":
        flags |= EDIT_LOCATION_REMOVED
    elif body["location"] != "unchanged":
        flags |= EDIT_LOCATION_SET
    return flags


def content_fields(record: dict) -> list[tuple[str, bytes]]:
    """The content as labelled fields, in order (§2.5, §2.8); none for a delete, a member or a kind to come with no
    payload. Validates first."""
    validate(record)
    kind, body = record["kind"], record["body"]
    if not has_content(record):
        return []
    fields: list[tuple[str, bytes]] = [("salt", record["salt"])]
    if kind in (FUTURE, INERT):
        fields.append(("payload", body["payload"]))
        return fields
    if kind == REACTION:
        fields.append(("emoji", bytes([body["emoji"]])))
        return fields

    def string(field: str, text: str, prefix: str) -> None:
        data = text.encode("utf-8")
        fields.append((f"{field} length", struct.pack(prefix, len(data))))
        fields.append((field, data))

    def photo(p: dict) -> None:
        fields.append(("photo sha256", p["sha256"]))
        fields.append(("photo bytes", struct.pack(">Q", p["bytes"])))
        fields.append(("media type", bytes([MEDIA_CODES[p["mediaType"]]])))
        fields.append(("width", struct.pack(">I", p["width"])))
        fields.append(("height", struct.pack(">I", p["height"])))
        flags = photo_flags(p)
        fields.append(("photo flags", bytes([flags])))
        if flags & PHOTO_TAKEN_AT:
            fields.append(("takenAt", struct.pack(">q", p["takenAt"])))
        if flags & PHOTO_THUMBNAIL:
            fields.append(("thumbnail sha256", p["thumbnail"]["sha256"]))
            fields.append(("thumbnail bytes", struct.pack(">I", p["thumbnail"]["bytes"])))

    def coordinates(location: dict) -> None:
        fields.append(("latitudeE7", struct.pack(">i", location["latitudeE7"])))
        fields.append(("longitudeE7", struct.pack(">i", location["longitudeE7"])))

    if kind == "profile":
        string("name", body["name"], ">B")
    elif kind == "post":
        string("caption", body["caption"], ">H")
        photo(body["photo"])
        if body["location"] is None:
            fields.append(("location flag", b"\x00"))
        else:
            fields.append(("location flag", b"\x01"))
            coordinates(body["location"])
    elif kind == "comment":
        string("text", body["text"], ">H")
    elif kind == "group":
        string("name", body["name"], ">B")
    else:  # edit
        fields.append(("edit flags", bytes([edit_flags(body)])))
        if body["caption"] is not None:
            string("caption", body["caption"], ">H")
        if body["photo"] is not None:
            photo(body["photo"])
        if body["location"] not in ("unchanged", "removed"):
            coordinates(body["location"])
    return fields


def encode_content(record: dict) -> bytes:
    return b"".join(data for _, data in content_fields(record))


def header_fields(record: dict, content: bytes) -> list[tuple[str, bytes]]:
    """The header's signed bytes as labelled fields, in order (§2.1), for a record and its content."""
    validate(record)
    kind, body = record["kind"], record["body"]
    fields: list[tuple[str, bytes]] = [
        ("magic", MAGIC),
        ("version", bytes([VERSION])),
        ("kind", bytes([body["code"] if kind in (FUTURE, INERT) else {**KIND_CODES, **ACCOUNT_CODES}[kind]])),
        ("author", record["author"]),
        ("sequence", struct.pack(">Q", record["sequence"])),
    ]
    if record["previous"] is not None:
        fields.append(("previous", record["previous"]))
    fields.append(("createdAt", struct.pack(">q", record["createdAt"])))
    if kind in ("comment", "edit"):
        fields.append(("post", body["post"]))
    elif kind == "delete":
        fields.append(("target count", struct.pack(">H", len(body["targets"]))))
        for index, target in enumerate(body["targets"]):
            fields.append((f"target {index}", target))
    elif kind == "group":
        fields.append(("node", body["node"]))
        fields.append(("group flags", bytes([GROUP_OPEN if body["open"] else 0])))
    elif kind == "member":
        fields.append(("group", body["group"]))
        fields.append(("action", bytes([MEMBER_ACTIONS[body["action"]]])))
        fields.append(("node", body["node"]))
        fields.append(("log", body["log"]))
        fields.append(("through", struct.pack(">Q", body["through"])))
    elif kind in (FUTURE, INERT):
        fields.append(("context", bytes(32) if body["context"] is None else body["context"]))
        fields.append(("data length", struct.pack(">H", len(body["data"]))))
        if body["data"]:
            fields.append(("data", body["data"]))
    elif kind == REACTION:
        fields.append(("context (post)", body["post"]))
        fields.append(("data length", struct.pack(">H", 0 if body["comment"] is None else 32)))
        if body["comment"] is not None:
            fields.append(("data (comment)", body["comment"]))
    elif kind in ACCOUNT_CODES:
        fields.append(("context (none)", bytes(32)))
        data = account_data(kind, body)
        fields.append(("data length", struct.pack(">H", sum(len(value) for _, value in data))))
        fields.extend((f"data: {label}", value) for label, value in data)
    fields.append(("content length", struct.pack(">I", len(content))))
    fields.append(("content hash", hashlib.sha256(content).digest()))
    return fields


def encode_signed(record: dict, content: bytes) -> bytes:
    """The header's signed bytes: what the author signs."""
    return b"".join(data for _, data in header_fields(record, content))


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


def read_photo(r: Reader) -> dict:
    sha = r.take(32, "photo sha256")
    size = r.uint(8, "photo bytes")
    media = r.uint(1, "media type")
    if media not in MEDIA_TYPES:
        raise Invalid(f"unknown media type code {media}")
    width = r.uint(4, "width")
    height = r.uint(4, "height")
    flags = r.uint(1, "photo flags")
    if flags & ~PHOTO_KNOWN:
        raise Invalid(f"photo flags {flags:02x} set bits 2 ... 7")
    taken_at = r.sint(8, "takenAt") if flags & PHOTO_TAKEN_AT else None
    thumbnail = None
    if flags & PHOTO_THUMBNAIL:
        thumbnail = {"sha256": r.take(32, "thumbnail sha256"), "bytes": r.uint(4, "thumbnail bytes")}
    # The ranges (the sizes, the dimensions, the takenAt, the thumbnail's size) are checked by validate().
    return {"sha256": sha, "bytes": size, "mediaType": MEDIA_TYPES[media], "width": width, "height": height,
            "takenAt": taken_at, "thumbnail": thumbnail}


def read_coordinates(r: Reader) -> dict:
    return {"latitudeE7": r.sint(4, "latitudeE7"), "longitudeE7": r.sint(4, "longitudeE7")}


def decode_content(kind: str, refs: dict, content: bytes) -> tuple[bytes, dict]:
    """The salt and the body of a content (not a delete's or a member's), which must be used up exactly. `refs` are
    the header's references: a comment's or an edit's post, a group record's node and flag, a kind to come's code,
    context and data."""
    post = refs.get("post")
    r = Reader(content)
    salt = r.take(SALT_BYTES, "salt")
    body: dict
    if kind == FUTURE:
        # Only a node that knows the kind reads what follows the salt (§2.8); the header's length keeps it >= 1 byte.
        body = {**refs, "payload": r.take(r.remaining, "payload")}
    elif kind == "profile":
        body = {"name": r.text(1, "name", NAME_BYTES)}
    elif kind == "post":
        caption = r.text(2, "caption", CAPTION_BYTES)
        photo = read_photo(r)
        flag = r.uint(1, "location flag")
        if flag == 0:
            location = None
        elif flag == 1:
            location = read_coordinates(r)
        else:
            raise Invalid(f"location flag is {flag}")
        body = {"caption": caption, "photo": photo, "location": location}
    elif kind == "comment":
        body = {"post": post, "text": r.text(2, "text", COMMENT_BYTES)}
    elif kind == "group":
        body = {"node": refs["node"], "open": refs["open"], "name": r.text(1, "group name", NAME_BYTES)}
    else:  # edit
        flags = r.uint(1, "edit flags")
        if flags & ~EDIT_KNOWN:
            raise Invalid(f"edit flags {flags:02x} set bits 4 ... 7")
        if flags & EDIT_LOCATION_SET and flags & EDIT_LOCATION_REMOVED:
            raise Invalid("an edit cannot both set and remove the location")
        if flags == 0:
            raise Invalid("an edit must change the caption, the photo or the location")
        caption = r.text(2, "caption", CAPTION_BYTES) if flags & EDIT_CAPTION else None
        photo = read_photo(r) if flags & EDIT_PHOTO else None
        location: str | dict = "unchanged"
        if flags & EDIT_LOCATION_SET:
            location = read_coordinates(r)
        elif flags & EDIT_LOCATION_REMOVED:
            location = "removed"
        body = {"post": post, "caption": caption, "photo": photo, "location": location}
    if r.remaining:
        raise Invalid(f"{r.remaining} bytes left over after the content's fields")
    return salt, body


def decode(data: bytes) -> dict:
    """Parses and checks a record, whole or header alone (§4.1, all but the signature). Returns a dict with the
    header's fields, `record` (the record as this script models it, or None for a header alone), `signedLength`
    and `headerLength`. The header of a record of kind 13 is read as a kind to come's (its `kind` is "future", its
    references' code 13), with `inert`: why the record is inert (§2.9), or None; its record is a "reaction" or an
    "inert" one. A record of kind 8, 9, 10 or 11 likewise has `inert` (§2.10): None when it is an account record,
    whose record is then modelled as its kind ("account", "device-add", "device-remove", "log"); else the reason, and
    its record stays a kind to come."""
    if len(data) > RECORD_BYTES:
        raise Invalid("record too long")
    r = Reader(data)
    if r.take(4, "magic") != MAGIC:
        raise Invalid("not a continuum record")
    version = r.uint(1, "version")
    if version != VERSION:
        raise Invalid(f"record format version {version} is not read (this reads version {VERSION})")
    kind_code = r.uint(1, "kind")
    # A record of kind 13 is read in the layout of every kind from 8 on (§2.8); §2.9 then says whether it is a
    # reaction or inert (below), never whether it is valid.
    if kind_code in KIND_NAMES and kind_code != REACTION_CODE:
        kind = KIND_NAMES[kind_code]
    elif kind_code in FUTURE_CODES or kind_code == REACTION_CODE:
        kind = FUTURE
    else:
        raise Invalid(f"kind {kind_code} is invalid (kinds are 1 ... 255)")
    author = r.take(32, "author")
    sequence = r.uint(8, "sequence")
    if not 1 <= sequence <= MAX_SEQUENCE:
        raise Invalid(f"sequence {sequence} must be 1 ... {MAX_SEQUENCE}")
    previous = r.take(32, "previous") if sequence > 1 else None
    created_at = r.sint(8, "createdAt")
    check_timestamp(created_at, "createdAt")
    # The references (§2.1), by kind: a comment's or edit's post, a delete's targets, a group record's node and
    # flag, a member record's change, a kind to come's context and data (its code kept beside them).
    refs: dict = {}
    if kind in ("comment", "edit"):
        refs["post"] = r.take(32, "post")
    elif kind == "delete":
        count = r.uint(2, "target count")
        if not 1 <= count <= DELETE_TARGETS:
            raise Invalid(f"a delete has 1 ... {DELETE_TARGETS} targets, not {count}")
        refs["targets"] = [r.take(32, "target") for _ in range(count)]
        check_targets(refs["targets"])
    elif kind == "group":
        check_group_header(sequence)
        refs["node"] = r.take(32, "node")
        flags = r.uint(1, "group flags")
        if flags & ~GROUP_OPEN:
            raise Invalid(f"group flags {flags:02x} set bits 1 ... 7")
        refs["open"] = bool(flags & GROUP_OPEN)
    elif kind == "member":
        refs["group"] = r.take(32, "group")
        action = r.uint(1, "action")
        if action not in MEMBER_ACTION_NAMES:
            raise Invalid(f"unknown member action {action}")
        refs["action"] = MEMBER_ACTION_NAMES[action]
        refs["node"] = r.take(32, "node")
        refs["log"] = r.take(32, "log")
        refs["through"] = r.uint(8, "through")
    elif kind == FUTURE:
        refs["code"] = kind_code
        context = r.take(32, "context")
        refs["context"] = None if context == bytes(32) else context
        length = r.uint(2, "data length")
        if length > FUTURE_DATA_BYTES:
            raise Invalid(f"data length {length} of kind {kind_code}; the limit is {FUTURE_DATA_BYTES}")
        refs["data"] = r.take(length, "data")
    content_length = r.uint(4, "content length")
    content_hash = r.take(32, "content hash")
    # A kind to come whose content length is 0 has no content, as a delete has none (§2.8).
    no_content = kind in NO_CONTENT or (kind == FUTURE and content_length == 0)
    what = f"record of kind {kind_code}" if kind == FUTURE else kind
    if no_content:
        if content_length != 0 or content_hash != EMPTY_HASH:
            raise Invalid(f"a {what} has no content: length 0, and the hash of no bytes")
    elif not CONTENT_MIN[kind] <= content_length <= CONTENT_MAX[kind]:
        raise Invalid(f"content length {content_length} of a {what} is out of range")
    signed_length = r.offset
    r.take(SIGNATURE_BYTES, "signature")
    header_length = r.offset
    content = data[header_length:]
    header = {"kind": kind, "author": author, "sequence": sequence, "previous": previous, "createdAt": created_at,
              "references": refs, "contentLength": content_length, "contentHash": content_hash,
              "signedLength": signed_length, "headerLength": header_length, "record": None}
    if kind_code == REACTION_CODE:
        # Why the record is inert (§2.9), as far as its header tells; its content's code is checked below.
        context = bytes(32) if refs["context"] is None else refs["context"]
        header["inert"] = inert_reason(context, refs["data"], content_length, None)
    elif kind_code in ACCOUNT_KINDS:
        # Whether it is an account record or inert (§2.10): its header tells, since it has no content if it is one.
        context = bytes(32) if refs["context"] is None else refs["context"]
        account_kind, account_body, header["inert"] = read_account(kind_code, context, refs["data"], content_length,
                                                                   author)
    if no_content:
        if content:
            raise Invalid(f"a {what} has no content, but bytes follow its signature")
        salt, body = None, ({**refs, "payload": b""} if kind == FUTURE else dict(refs))
    elif not content:
        return header  # the header alone
    elif len(content) != content_length:
        raise Invalid(f"the content is {len(content)} bytes; the header says {content_length}")
    elif hashlib.sha256(content).digest() != content_hash:
        raise Invalid("the content does not match its header's hash")
    else:
        salt, body = decode_content(kind, refs, content)
    if kind_code == REACTION_CODE:
        header["inert"] = inert_reason_of(body)
        if header["inert"] is None:
            kind = REACTION
            body = {"post": body["context"], "comment": body["data"] or None, "emoji": body["payload"][0]}
        else:
            kind = INERT
    elif kind_code in ACCOUNT_KINDS and header["inert"] is None:
        kind, body = account_kind, account_body
    record = {"author": author, "sequence": sequence, "previous": previous, "createdAt": created_at, "kind": kind,
              "salt": salt, "body": body}
    validate(record)
    header["record"] = record
    return header


def public_key(seed: bytes) -> bytes:
    return Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def sign(seed: bytes, record: dict) -> tuple[bytes, bytes]:
    """The header (signed bytes and Ed25519 signature) and the content of a record."""
    assert record["author"] == public_key(seed), "a node signs only its own records"
    content = encode_content(record)
    signed = encode_signed(record, content)
    return signed + Ed25519PrivateKey.from_private_bytes(seed).sign(signed), content


def verify(data: bytes) -> dict:
    """Decodes and verifies a record, whole or header alone; returns what decode returns, or raises Invalid."""
    decoded = decode(data)
    signed, header = data[: decoded["signedLength"]], data[: decoded["headerLength"]]
    try:
        Ed25519PublicKey.from_public_bytes(decoded["author"]).verify(header[len(signed):], signed)
    except (InvalidSignature, ValueError):
        raise Invalid("bad signature") from None
    return decoded


def record_id(header: bytes) -> bytes:
    """SHA-256 of the header, signature included (§2.3): the same for the record whole and its header alone."""
    return hashlib.sha256(header).digest()


# ---------------------------------------------------------------------------------------------------------------
# The vectors
# ---------------------------------------------------------------------------------------------------------------

SEED_A = bytes(range(32))
SEED_B = bytes(range(32, 64))
# Log keys of groups (§2.7). F founds the closed group "G1" (its public key is the group's id) from node A; M is
# node B's log in that group. O founds the open group "G2" from node B; S is node A's log in it, which added itself.
SEED_F = bytes(range(64, 96))
SEED_M = bytes(range(96, 128))
SEED_O = bytes(range(128, 160))
SEED_S = bytes(range(160, 192))
# Accounts (§2.10): L (a laptop) and D (a desktop) are devices, each with its own identity key and account log; K is
# the recovery key of the account L founds. K signs nothing here. Their seeds count down, so that they are none of the
# seeds above nor those of scripts/membership_vectors.py (J and K there: the bytes 192 ... 223 and 224 ... 255).
SEED_L = bytes(range(255, 223, -1))
SEED_D = bytes(range(223, 191, -1))
SEED_K = bytes(range(191, 159, -1))
# N is device D's log key in the group G1 (founded by F), which D declares its log there for the account (vector 24,
# kind 11). N signs the declaration and no record here. Its seed counts down too: the bytes 159 down to 128.
SEED_LOG_D = bytes(range(159, 127, -1))
SEED_NAMES = {SEED_A: "identity A", SEED_B: "identity B", SEED_F: "log key F", SEED_M: "log key M",
              SEED_O: "log key O", SEED_S: "log key S", SEED_L: "device L",
              SEED_D: "device D", SEED_K: "recovery key K", SEED_LOG_D: "log key N"}
# A log of L's named in D's removal of L (vector 23) besides L's account log, with nothing of it kept (through 0):
# a stand-in key, of no seed; no record of it is given.
OTHER_LOG = bytes([0xEE]) * 32
# The stand-in photo bytes whose SHA-256 the posts and edits carry, and those of the thumbnails (§2.5, photo flags
# bit 1) that vectors 25 and 26 commit to.
PHOTO_SOURCES = {hashlib.sha256(name).digest(): name.decode()
                 for name in (b"photo-1", b"photo-2", b"photo-3", b"photo-4", b"photo-5")}
THUMBNAIL_SOURCES = {hashlib.sha256(name).digest(): name.decode() for name in (b"thumbnail-4", b"thumbnail-5")}


def salt_of(number: int) -> bytes:
    """The fixed salt of vector `number` (1-based): the 16 bytes 16n ... 16n + 15, each modulo 256 (from vector 16 on,
    the sequence starts again at 00: vector 17's salt is 101112...1f, as vector 1's)."""
    return bytes(value % 256 for value in range(16 * number, 16 * number + 16))


def photo(source: bytes, size: int, mime: str, width: int, height: int, taken_at: int | None,
          thumbnail: tuple[bytes, int] | None = None) -> dict:
    """A photo (§2.5); `thumbnail`, when given, is the stand-in bytes whose SHA-256 the thumbnail has, and its size."""
    return {"sha256": hashlib.sha256(source).digest(), "bytes": size, "mediaType": mime, "width": width,
            "height": height, "takenAt": taken_at,
            "thumbnail": None if thumbnail is None else {"sha256": hashlib.sha256(thumbnail[0]).digest(),
                                                         "bytes": thumbnail[1]}}


def build() -> list[dict]:
    """The twenty-six golden vectors, each with its seed, record, header, content and id."""
    out: list[dict] = []

    def add(name: str, seed: bytes, sequence: int, previous: bytes | None, kind: str, body: dict) -> bytes:
        number = len(out) + 1
        record = {"author": public_key(seed), "sequence": sequence, "previous": previous,
                  "createdAt": 1_700_000_000_000 + 1000 * (number - 1), "kind": kind,
                  "salt": None, "body": body}
        if has_content(record):
            record["salt"] = salt_of(number)
        header, content = sign(seed, record)
        out.append({"name": name, "seed": seed, "record": record, "header": header, "content": content,
                    "signedLength": len(header) - SIGNATURE_BYTES, "id": record_id(header)})
        return record_id(header)

    a1 = add("A1 profile", SEED_A, 1, None, "profile", {"name": "Alice"})
    a2 = add("A2 post with location and taken-at", SEED_A, 2, a1, "post", {
        "caption": "Waterfall at dusk \u2014 Caf\u00e9",
        "photo": photo(b"photo-1", 66373, "image/jpeg", 1024, 768, 1_699_990_000_000),
        "location": {"latitudeE7": 488566000, "longitudeE7": 23522000}})
    a3 = add("A3 post without location or taken-at", SEED_A, 3, a2, "post", {
        "caption": "Lake", "photo": photo(b"photo-2", 1000, "image/png", 800, 600, None), "location": None})
    b1 = add("B1 comment", SEED_B, 1, None, "comment", {"post": a2, "text": "Lovely!\nWhere is this?"})
    a4 = add("A4 edit of the caption", SEED_A, 4, a3, "edit", {
        "post": a2, "caption": "Waterfall at dawn", "photo": None, "location": "unchanged"})
    a5 = add("A5 edit of the photo and location", SEED_A, 5, a4, "edit", {
        "post": a3, "caption": None, "photo": photo(b"photo-3", 2_500_000, "image/webp", 4032, 3024, 1_600_000_000_000),
        "location": {"latitudeE7": 599139000, "longitudeE7": 107522000}})
    a6 = add("A6 edit removing the location", SEED_A, 6, a5, "edit", {
        "post": a2, "caption": None, "photo": None, "location": "removed"})
    a7 = add("A7 delete", SEED_A, 7, a6, "delete", {"targets": sorted([a3, a2])})

    # Groups (§2.7): the group id is the founder's log key; nodes are identities A and B.
    node_a, node_b = public_key(SEED_A), public_key(SEED_B)
    g1, g2 = public_key(SEED_F), public_key(SEED_O)
    m, s = public_key(SEED_M), public_key(SEED_S)
    f1 = add("G1 group record (closed)", SEED_F, 1, None, "group", {"node": node_a, "open": False, "name": "Family"})
    add("G2 open group record", SEED_O, 1, None, "group",
        {"node": node_b, "open": True, "name": "Randonn\u00e9es du dimanche"})
    f2 = add("G3 member add", SEED_F, 2, f1, "member",
             {"group": g1, "action": "add", "node": node_b, "log": m, "through": 0})
    f3 = add("G4 member admin", SEED_F, 3, f2, "member",
             {"group": g1, "action": "admin", "node": node_b, "log": m, "through": 0})
    add("G5 member remove with through", SEED_F, 4, f3, "member",
        {"group": g1, "action": "remove", "node": node_b, "log": m, "through": 258})
    add("G6 self-add", SEED_S, 1, None, "member",
        {"group": g2, "action": "add", "node": node_a, "log": s, "through": 0})

    # Kinds to come (§2.8): B's log goes on after its comment B1, with records a node reads without knowing the kind.
    u1 = add("U1 kind 200 going with a post", SEED_B, 2, b1, FUTURE,
             {"code": 200, "context": a2, "data": bytes([1, 2, 3]), "payload": "Seen at dawn \u2600".encode()})
    u2 = add("U2 kind 8 with nothing", SEED_B, 3, u1, FUTURE,
             {"code": 8, "context": None, "data": b"", "payload": b""})

    # Reactions (§2.9): B's log goes on after U2. B reacts to A's post A2, then to its own comment B1 on A2, then takes
    # back its reaction to A2.
    r1 = add("R1 reaction red heart to a post", SEED_B, 4, u2, REACTION, {"post": a2, "comment": None, "emoji": 1})
    r2 = add("R2 reaction tears of joy to a comment", SEED_B, 5, r1, REACTION, {"post": a2, "comment": b1, "emoji": 3})
    add("R3 reaction taken back", SEED_B, 6, r2, REACTION, {"post": a2, "comment": None, "emoji": 0})

    # Accounts (§2.10), each device in its own account log: L founds an account with recovery key K; D joins it; L
    # adds D, with D's consent; D removes L, keeping L's account log through L's add of D, and nothing of another log.
    laptop, desktop, recovery = public_key(SEED_L), public_key(SEED_D), public_key(SEED_K)
    account = add("AC1 account founded by L with recovery key K", SEED_L, 1, None, "account",
                  {"account": None, "recovery": recovery})
    d1 = add("AC2 D joins the account", SEED_D, 1, None, "account", {"account": account, "recovery": None})
    consent = Ed25519PrivateKey.from_private_bytes(SEED_D).sign(consent_message(account, desktop))
    l2 = add("AC3 L adds device D", SEED_L, 2, account, "device-add",
             {"account": account, "device": desktop, "consent": consent})
    frontier = sorted([{"log": laptop, "through": 2, "head": l2}, {"log": OTHER_LOG, "through": 0, "head": None}],
                      key=lambda entry: entry["log"])
    d2 = add("AC4 D removes L", SEED_D, 2, d1, "device-remove",
             {"account": account, "device": laptop, "frontier": frontier})
    # D declares, in its account log after AC4, its log N in the group G1 (founded by F, vector 9) for the account:
    # D signs the record, N the declaration.
    declaration = Ed25519PrivateKey.from_private_bytes(SEED_LOG_D).sign(declaration_message(account, g1, desktop))
    add("AC5 D declares its log N in group G1", SEED_D, 3, d2, "log",
        {"account": account, "group": g1, "log": public_key(SEED_LOG_D), "signature": declaration})

    # Photos that commit to their author's thumbnail (§2.5, photo flags bit 1), added after the vectors above so that
    # theirs stay as they were: A's log goes on after its delete A7 with a post whose photo has a takenAt and a
    # thumbnail (photo flags 03), then an edit of that post whose new photo has a thumbnail and no takenAt (flags 02).
    a8 = add("A8 post with taken-at and thumbnail", SEED_A, 8, a7, "post", {
        "caption": "Harbour at noon",
        "photo": photo(b"photo-4", 3_145_728, "image/jpeg", 4000, 3000, 1_699_999_000_000,
                       thumbnail=(b"thumbnail-4", 24_576)),
        "location": {"latitudeE7": 434_412_000, "longitudeE7": 51_298_000}})
    add("A9 edit of the photo with a thumbnail", SEED_A, 9, a8, "edit", {
        "post": a8, "caption": None,
        "photo": photo(b"photo-5", 1_843_200, "image/heic", 3024, 4032, None, thumbnail=(b"thumbnail-5", 18_000)),
        "location": "unchanged"})
    return out


def photo_json(p: dict | None) -> dict | None:
    if p is None:
        return None
    thumbnail = p["thumbnail"]
    return {"sha256": p["sha256"].hex(), "bytes": p["bytes"], "mediaType": p["mediaType"], "width": p["width"],
            "height": p["height"], "takenAt": p["takenAt"],
            "thumbnail": None if thumbnail is None else {"sha256": thumbnail["sha256"].hex(),
                                                         "bytes": thumbnail["bytes"]}}


def body_json(kind: str, body: dict) -> dict:
    if kind == "profile":
        return {"name": body["name"]}
    if kind == "post":
        location = body["location"] or {"latitudeE7": None, "longitudeE7": None}
        return {"caption": body["caption"], "photo": photo_json(body["photo"]), **location}
    if kind == "comment":
        return {"post": body["post"].hex(), "text": body["text"]}
    if kind == "edit":
        location = body["location"]
        coordinates = location if isinstance(location, dict) else {"latitudeE7": None, "longitudeE7": None}
        return {"post": body["post"].hex(), "flags": edit_flags(body), "caption": body["caption"],
                "photo": photo_json(body["photo"]), "location": location if isinstance(location, str) else "set",
                **coordinates}
    if kind == "group":
        return {"node": body["node"].hex(), "open": body["open"], "name": body["name"]}
    if kind == "member":
        return {"group": body["group"].hex(), "action": body["action"], "node": body["node"].hex(),
                "log": body["log"].hex(), "through": body["through"]}
    if kind == FUTURE:
        return {"code": body["code"], "context": None if body["context"] is None else body["context"].hex(),
                "data": body["data"].hex(), "payload": body["payload"].hex()}
    if kind == REACTION:
        return {"post": body["post"].hex(), "comment": None if body["comment"] is None else body["comment"].hex(),
                "emoji": body["emoji"]}
    if kind == "account":
        return {key: None if body[key] is None else body[key].hex() for key in ("account", "recovery")}
    if kind == "device-add":
        return {key: body[key].hex() for key in ("account", "device", "consent")}
    if kind == "log":
        return {key: body[key].hex() for key in ("account", "group", "log", "signature")}
    if kind == "device-remove":
        return {"account": body["account"].hex(), "device": body["device"].hex(),
                "frontier": [{"log": e["log"].hex(), "through": e["through"],
                              "head": None if e["head"] is None else e["head"].hex()} for e in body["frontier"]]}
    return {"targets": [t.hex() for t in body["targets"]]}


def to_json(vectors: list[dict], invalid: list[tuple[str, bytes]], inert: list[dict]) -> str:
    items = []
    for v in vectors:
        r, header, content = v["record"], v["header"], v["content"]
        items.append({
            "name": v["name"],
            "seed": v["seed"].hex(),
            "author": r["author"].hex(),
            "sequence": r["sequence"],
            "previous": r["previous"].hex() if r["previous"] is not None else None,
            "createdAt": r["createdAt"],
            "kind": r["kind"],
            "salt": r["salt"].hex() if r["salt"] is not None else None,
            "body": body_json(r["kind"], r["body"]),
            "signed": header[: v["signedLength"]].hex(),
            "signature": header[v["signedLength"]:].hex(),
            "header": header.hex(),
            "content": content.hex(),
            "contentHash": hashlib.sha256(content).hexdigest(),
            "record": (header + content).hex(),
            "id": v["id"].hex(),
        })
    refused = [{"name": name, "record": data.hex()} for name, data in invalid]
    inert_items = [{"name": v["name"], "code": v["code"], "reason": v["reason"], "record": v["record"].hex(),
                    "header": v["header"].hex(), "id": v["id"].hex()} for v in inert]
    return json.dumps({"vectors": items, "invalid": refused, "inert": inert_items}, indent=2,
                      ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------------------------------
# The generated part of Docs/PROTOCOL.md
# ---------------------------------------------------------------------------------------------------------------

def wrap_hex(data: bytes, width: int = 32) -> str:
    return "\n".join(data[i : i + width].hex() for i in range(0, len(data), width)) or "(empty)"


def describe_photo(p: dict, lines: list[str], what: str = "photo") -> None:
    lines.append(f"- {what} sha256 `{p['sha256'].hex()}` (SHA-256 of the ASCII bytes `{PHOTO_SOURCES[p['sha256']]}`)")
    thumbnail = p["thumbnail"]
    lines.append(f"- {what} bytes {p['bytes']}, media type {p['mediaType']} ({MEDIA_CODES[p['mediaType']]}), "
                 f"{p['width']}x{p['height']}, "
                 + ("taken-at not known" if p["takenAt"] is None else f"takenAt {p['takenAt']}")
                 + (", no thumbnail" if thumbnail is None else ""))
    if thumbnail is not None:
        lines.append(f"- {what}'s thumbnail sha256 `{thumbnail['sha256'].hex()}` (SHA-256 of the ASCII bytes "
                     f"`{THUMBNAIL_SOURCES[thumbnail['sha256']]}`), thumbnail bytes {thumbnail['bytes']}; photo flags "
                     f"`{photo_flags(p):02x}`")


def describe_inputs(v: dict, names: dict[bytes, str]) -> list[str]:
    r, body = v["record"], v["record"]["body"]
    keys = {public_key(seed): name for seed, name in SEED_NAMES.items()}
    lines = [
        f"- {SEED_NAMES[v['seed']]}, seed `{v['seed'].hex()}`",
        f"- author `{r['author'].hex()}`",
        f"- sequence {r['sequence']}, previous "
        + (f"`{r['previous'].hex()}` (id of {names[r['previous']]})" if r["previous"] else "absent"),
        f"- createdAt {r['createdAt']}",
        (f"- kind {body['code']}, a kind to come (§2.8)" if r["kind"] == FUTURE
         else f"- kind {r['kind']} ({ {**KIND_CODES, **ACCOUNT_CODES}[r['kind']]})"),
    ]
    if r["kind"] in ("comment", "edit"):
        lines.append(f"- post `{body['post'].hex()}` (id of {names[body['post']]})")
    elif r["kind"] == "delete":
        for t in body["targets"]:
            lines.append(f"- target `{t.hex()}` (id of {names[t]})")
    elif r["kind"] == "group":
        lines.append(f"- node `{body['node'].hex()}` (the founder's node: {keys[body['node']]})")
        lines.append(f"- flags `{GROUP_OPEN if body['open'] else 0:02x}` ({'open' if body['open'] else 'closed'})")
        lines.append(f"- the group's id is the author (the group founded by {SEED_NAMES[v['seed']]})")
    elif r["kind"] == "member":
        lines.append(f"- group `{body['group'].hex()}` (the group founded by {keys[body['group']]})")
        lines.append(f"- action {body['action']} ({MEMBER_ACTIONS[body['action']]})")
        lines.append(f"- node `{body['node'].hex()}` ({keys[body['node']]})")
        lines.append(f"- log `{body['log'].hex()}` ({keys[body['log']]}"
                     + (", the author itself: a self-add)" if body["log"] == r["author"] else ")"))
        lines.append(f"- through {body['through']}")
    elif r["kind"] == REACTION:
        lines.append(f"- context: the post `{body['post'].hex()}` (id of {names[body['post']]})")
        lines.append("- data: none (data length 0): a reaction to the post itself" if body["comment"] is None
                     else f"- data: the comment `{body['comment'].hex()}` (id of {names[body['comment']]})")
    elif r["kind"] in ACCOUNT_CODES:
        lines.extend(describe_account(r["kind"], body, r["author"], names, keys))
    elif r["kind"] == FUTURE:
        lines.append("- context: none (32 zero bytes)" if body["context"] is None
                     else f"- context `{body['context'].hex()}` (id of {names[body['context']]})")
        lines.append(f"- data ({len(body['data'])} bytes) `{body['data'].hex()}`" if body["data"]
                     else "- data: none (data length 0)")
    if r["salt"] is not None:
        lines.append(f"- salt `{r['salt'].hex()}`")
    if r["kind"] == "profile":
        lines.append(f"- name {json.dumps(body['name'], ensure_ascii=False)}")
    elif r["kind"] == "group":
        lines.append(f"- name {json.dumps(body['name'], ensure_ascii=False)} "
                     f"({len(body['name'].encode())} UTF-8 bytes, NFC)")
    elif r["kind"] == "post":
        lines.append(f"- caption {json.dumps(body['caption'], ensure_ascii=False)} "
                     f"({len(body['caption'].encode())} UTF-8 bytes, NFC)")
        describe_photo(body["photo"], lines)
        location = body["location"]
        lines.append("- no location" if location is None
                     else f"- latitudeE7 {location['latitudeE7']}, longitudeE7 {location['longitudeE7']}")
    elif r["kind"] == "comment":
        lines.append(f"- text {json.dumps(body['text'], ensure_ascii=False)}")
    elif r["kind"] == REACTION:
        lines.append(f"- emoji {body['emoji']}: {REACTION_EMOJI[body['emoji']]}")
    elif r["kind"] == FUTURE:
        payload = body["payload"]
        lines.append("- no payload: no content (no salt, content length 0)" if not payload
                     else f"- payload ({len(payload)} bytes) `{payload.hex()}` (the UTF-8 of "
                          f"{json.dumps(payload.decode('utf-8'), ensure_ascii=False)})")
    elif r["kind"] == "edit":
        lines.append(f"- flags `{edit_flags(body):02x}`")
        if body["caption"] is not None:
            lines.append(f"- new caption {json.dumps(body['caption'], ensure_ascii=False)}")
        if body["photo"] is not None:
            describe_photo(body["photo"], lines, "new photo")
        location = body["location"]
        if location == "removed":
            lines.append("- the location is removed")
        elif location != "unchanged":
            lines.append(f"- new location: latitudeE7 {location['latitudeE7']}, longitudeE7 {location['longitudeE7']}")
    return lines


def describe_account(kind: str, body: dict, author: bytes, names: dict[bytes, str],
                     keys: dict[bytes, str]) -> list[str]:
    """The inputs of an account record (§2.10): its context is none, its fields are in its data."""
    lines = ["- context: none (32 zero bytes); no content (no salt, content length 0)"]
    data = account_data(kind, body)
    lines.append(f"- data ({sum(len(value) for _, value in data)} bytes):")
    account = body["account"]
    if kind == "account" and account is None:
        lines.append("  - account: 32 zero bytes (this record founds an account; the account's id is this record's id)")
    else:
        lines.append(f"  - account `{account.hex()}` (the id of {names[account]}, which founded it)")
    if kind == "account":
        recovery = body["recovery"]
        lines.append(f"  - flags `{0 if recovery is None else ACCOUNT_RECOVERY:02x}`"
                     + (": no recovery key" if recovery is None else ": a recovery key follows"))
        if recovery is not None:
            lines.append(f"  - recovery `{recovery.hex()}` ({keys[recovery]}, seed `{SEED_K.hex()}`)")
        return lines
    if kind == "log":
        group, log = body["group"], body["log"]
        message = declaration_message(account, group, author)
        lines.append(f"  - group `{group.hex()}` (the group G1 of vector 9: its id is its founder, {keys[group]}, "
                     "§2.7)")
        lines.append(f"  - log `{log.hex()}` ({keys[log]}, seed `{SEED_LOG_D.hex()}`: {keys[author]}'s log key in the "
                     "group)")
        lines.append(f"  - signature `{body['signature'].hex()}`: {keys[log]}'s Ed25519 signature over the "
                     f"{len(message)} bytes `{message.hex()}` (the ASCII `continuum-log-declaration-v3`, the account, "
                     f"the group, the author: {keys[author]})")
        return lines
    lines.append(f"  - device `{body['device'].hex()}` ({keys[body['device']]})")
    if kind == "device-add":
        lines.append(f"  - consent `{body['consent'].hex()}`: {keys[body['device']]}'s Ed25519 signature over the 91 "
                     f"bytes `{consent_message(account, body['device']).hex()}` (the ASCII "
                     "`continuum-device-consent-v3`, the account, the device)")
        return lines
    lines.append(f"  - count {len(body['frontier'])}, the frontier:")
    for entry in body["frontier"]:
        log, head = entry["log"], entry["head"]
        whose = f"{keys[log]}'s account log" if log in keys else "another log of L's: a stand-in key"
        lines.append(f"    - log `{log.hex()}` ({whose}), through {entry['through']}, head "
                     + ("32 zero bytes" if head is None else f"`{head.hex()}` (id of {names[head]})"))
    return lines


def field_table(fields: list[tuple[str, bytes]], start: int = 0) -> list[str]:
    out = ["| Offset | Field | Bytes (hex) |", "|---:|---|---|"]
    offset = start
    for label, data in fields:
        shown = data.hex() if len(data) <= 12 else f"{data[:8].hex()}… ({len(data)} bytes)"
        out.append(f"| {offset} | {label} | `{shown}` |")
        offset += len(data)
    return out


def markdown(vectors: list[dict], inert: list[dict]) -> str:
    names = {v["id"]: f"vector {i + 1}" for i, v in enumerate(vectors)}
    out = [BEGIN_MARK, ""]
    for i, v in enumerate(vectors):
        header, content, n = v["header"], v["content"], v["signedLength"]
        out.append(f"#### Vector {i + 1}: {v['name']}")
        out.append("")
        out.extend(describe_inputs(v, names))
        out.append("")
        if content:
            out.append(f"Content ({len(content)} bytes, SHA-256 `{hashlib.sha256(content).hexdigest()}`):")
            out.append("")
            out.append("```")
            out.append(wrap_hex(content))
            out.append("```")
        else:
            out.append("Content: none (content length 0, content hash the SHA-256 of no bytes).")
        out.append("")
        out.append(f"Header, signed bytes ({n} bytes):")
        out.append("")
        out.append("```")
        out.append(wrap_hex(header[:n]))
        out.append("```")
        out.append("")
        out.append("Signature (64 bytes):")
        out.append("")
        out.append("```")
        out.append(wrap_hex(header[n:]))
        out.append("```")
        out.append("")
        out.append(f"Record id (SHA-256 of the {len(header)} header bytes): `{v['id'].hex()}`")
        out.append("")
        if content:
            out.append(f"Whole, the record is these {len(header)} header bytes then the {len(content)} content bytes "
                       f"({len(header) + len(content)} bytes); its header alone is the {len(header)} header bytes.")
        else:
            article = {"member": "A member record", "delete": "A delete", **dict.fromkeys(
                ACCOUNT_CODES, "An account record")}.get(
                v["record"]["kind"], "A record of a kind to come with a content length of 0")
            out.append(f"{article} has no content: the record is its {len(header)} header bytes, whole or alone.")
        out.append("")
        if i == 1:
            out.append("The header of vector 2, field by field:")
            out.append("")
            out.extend(field_table(header_fields(v["record"], content)))
            out.append(f"| {n} | signature | 64 bytes |")
            out.append("")
            out.append(f"Its content, field by field (offsets from the start of the content, which starts at byte "
                       f"{len(header)} of the whole record):")
            out.append("")
            out.extend(field_table(content_fields(v["record"])))
            out.append("")
        if i == 5:
            out.append("The content of vector 6, field by field:")
            out.append("")
            out.extend(field_table(content_fields(v["record"])))
            out.append("")
        if v["name"].startswith("U2 "):
            out.append("Kind 8 is an `account` record (§2.10), and this one's data is empty, not 33 or 65 bytes: it is "
                       "a valid record and an inert account record, a kind to come to a node of this version (§2.8).")
            out.append("")
        if v["name"].startswith(("G1 ", "G5 ", "U1 ", "R2 ", "AC1 ", "AC4 ", "AC5 ")):
            out.append(f"The header of vector {i + 1}, field by field:")
            out.append("")
            out.extend(field_table(header_fields(v["record"], content)))
            out.append(f"| {n} | signature | 64 bytes |")
            out.append("")
        if v["name"].startswith(("U1 ", "R2 ", "A8 ", "A9 ")):
            out.append(f"The content of vector {i + 1}, field by field:")
            out.append("")
            out.extend(field_table(content_fields(v["record"])))
            out.append("")
    out.extend(markdown_inert(inert))
    out.append(END_MARK)
    return "\n".join(out) + "\n"


def markdown_inert(inert: list[dict]) -> list[str]:
    """The inert records of kind 13, then those of kinds 8 ... 11, briefly: their bytes are in vectors.json."""
    reactions = [v for v in inert if v["code"] == REACTION_CODE]
    accounts = [v for v in inert if v["code"] != REACTION_CODE]
    out = [
        "#### Inert records of kind 13",
        "",
        f"Valid records of kind 13 that break a rule of §2.9, and so count as no reaction. Each is by identity A "
        f"(seed `{SEED_A.hex()}`), sequence 1, createdAt {HAND_CREATED}; the post is `{HAND_POST.hex()}` and the "
        f"comment `{HAND_COMMENT.hex()}` where they are named, and the salt `{HAND_SALT.hex()}`. Their bytes, whole "
        "and as the header alone, are the `inert` list of `vectors.json`.",
        "",
        "| Name | Why it is inert | Whole (header alone) | Record id |",
        "|---|---|---:|---|",
    ]
    for v in reactions:
        out.append(f"| {v['name']} | {v['reason']} | {len(v['record'])} ({len(v['header'])}) | `{v['id'].hex()}` |")
    out.extend([
        "",
        "#### Inert account records (kinds 8 … 11)",
        "",
        f"Valid records of kinds 8 … 11 that break §2.10's table, and so count for nothing in an account. Each is by "
        f"identity A, sequence 1, createdAt {HAND_CREATED}, about the account `{HAND_ACCOUNT.hex()}`, with no context "
        f"and no content unless its name says otherwise (then the post `{HAND_POST.hex()}`, or a content of the salt "
        f"`{HAND_SALT.hex()}` and one zero byte); a device-add names device D (seed `{SEED_D.hex()}`), a removal "
        f"removes device L (seed `{SEED_L.hex()}`) and its frontier names the logs `1111…11` and `2222…22` with the "
        f"head `3333…33`, a recovery key is K's, and a log declaration declares log key N (seed `{SEED_LOG_D.hex()}`) "
        f"in the group `{HAND_GROUP.hex()}` with N's signature over `continuum-log-declaration-v3`, the account, the "
        "group and A, unless its name says otherwise. Their bytes are in the `inert` list of `vectors.json`; the "
        "header alone tells why each is inert.",
        "",
        "| Kind | Name | Why it is inert | Whole (header alone) | Record id |",
        "|---:|---|---|---:|---|",
    ])
    for v in accounts:
        out.append(f"| {v['code']} | {v['name']} | {v['reason']} | {len(v['record'])} ({len(v['header'])}) | "
                   f"`{v['id'].hex()}` |")
    out.append("")
    return out


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
        header, content, record = v["header"], v["content"], v["record"]
        whole = header + content
        try:
            decoded = verify(whole)
        except Invalid as error:
            failures.append(f"vector {i}: the whole record does not decode and verify: {error}")
            continue
        if decoded["record"] != record:
            failures.append(f"vector {i}: the whole record decodes to something else")
        if record_id(whole[: decoded["headerLength"]]) != v["id"] or decoded["headerLength"] != len(header):
            failures.append(f"vector {i}: the whole record has another header or id")
        if encode_content(decoded["record"]) != content:
            failures.append(f"vector {i}: re-encoding the decoded content gives different bytes")
        if encode_signed(decoded["record"], content) != header[: v["signedLength"]]:
            failures.append(f"vector {i}: re-encoding the decoded header gives different bytes")
        if len(whole) > RECORD_BYTES:
            failures.append(f"vector {i}: longer than the record limit")
        try:
            alone = verify(header)
        except Invalid as error:
            failures.append(f"vector {i}: the header alone does not decode and verify: {error}")
            continue
        if record_id(header[: alone["headerLength"]]) != v["id"]:
            failures.append(f"vector {i}: the header alone has another id")
        if alone["record"] != (None if has_content(record) else record):
            failures.append(f"vector {i}: the header alone decodes to a content")
        same = ("kind", "author", "sequence", "previous", "createdAt", "references", "contentLength", "contentHash")
        if any(alone[key] != decoded[key] for key in same):
            failures.append(f"vector {i}: the header alone decodes to another header")
    chain: dict[bytes, bytes] = {}
    for i, v in enumerate(vectors, 1):
        r = v["record"]
        if r["previous"] is not None and chain.get(r["author"]) != r["previous"]:
            failures.append(f"vector {i}: previous is not the id of the author's record before it")
        chain[r["author"]] = v["id"]


def check_bit_flips(vectors: list[dict], failures: list[str]) -> int:
    """Every single-bit flip of every record, whole and header alone, must be refused by the decoder, the content
    hash or the signature. Returns the number tried."""
    tried = 0
    for i, v in enumerate(vectors, 1):
        forms = [("whole", v["header"] + v["content"])]
        if v["content"]:
            forms.append(("header alone", v["header"]))
        for form, data in forms:
            record = bytearray(data)
            for position in range(len(record) * 8):
                record[position // 8] ^= 1 << (position % 8)
                tried += 1
                try:
                    verify(bytes(record))
                    failures.append(f"{v['name']} {form}: flipping bit {position % 8} of byte {position // 8} "
                                    "still verifies")
                except Invalid:
                    pass
                record[position // 8] ^= 1 << (position % 8)
    return tried


# The records written by hand below (invalid and inert ones) are signed by A at sequence 1 (unless told), created at
# HAND_CREATED, with the salt HAND_SALT; a reaction's post is HAND_POST, its comment HAND_COMMENT.
HAND_CREATED = 1_700_000_000_000
HAND_SALT = bytes(range(0xF0, 0x100))
HAND_POST, HAND_COMMENT = bytes([1]) * 32, bytes([2]) * 32


def raw(kind: int, refs: bytes = b"", content: bytes = b"", *, sequence: int = 1, previous: bytes = b"",
        at: int = HAND_CREATED, length: int | None = None, digest: bytes | None = None, version: int = VERSION,
        after: bytes | None = None) -> bytes:
    """A header by A for `content` (or the given length and hash), signed, then `after` (default: the content),
    written byte by byte from §2.1 without the encoder above."""
    signed = (MAGIC + bytes([version, kind]) + public_key(SEED_A) + struct.pack(">Q", sequence) + previous
              + struct.pack(">q", at) + refs + struct.pack(">I", len(content) if length is None else length)
              + (hashlib.sha256(content).digest() if digest is None else digest))
    return signed + Ed25519PrivateKey.from_private_bytes(SEED_A).sign(signed) + (content if after is None else after)


def reaction_bytes(emoji: bytes = b"\x01", data: bytes = b"", *, context: bytes = HAND_POST, **kw) -> bytes:
    """A record of kind 13 (§2.9) with `context`, `data`, and a content of the salt then `emoji` (one byte unless
    told), written by hand: a reaction to HAND_POST unless told otherwise."""
    return raw(REACTION_CODE, context + struct.pack(">H", len(data)) + data, HAND_SALT + emoji, **kw)


def inert_cases() -> list[tuple[str, bytes, str]]:
    """Records of kind 13 that keep §2.8's common layout but break a rule of §2.9: valid, and inert (§2.9). Each
    with the reason the decoder must give, written out here."""
    return [
        ("reaction code 7", reaction_bytes(b"\x07"), "its code 7 is above 6"),
        ("reaction code 255 to a comment", reaction_bytes(b"\xff", HAND_COMMENT), "its code 255 is above 6"),
        ("reaction with 3 bytes of data", reaction_bytes(data=b"\x01\x02\x03"),
         "its data is 3 bytes: empty (for its post) or a comment's id (32 bytes)"),
        ("reaction with 33 bytes of data", reaction_bytes(data=bytes([2]) * 33),
         "its data is 33 bytes: empty (for its post) or a comment's id (32 bytes)"),
        ("reaction whose context is 32 zero bytes", reaction_bytes(context=bytes(32)),
         "its context is 32 zero bytes: a reaction names the post it goes with"),
        ("reaction whose data is its context", reaction_bytes(data=HAND_POST),
         "its data is its context: a reaction to the post itself has no data"),
        ("reaction content of 18 bytes (code and one more byte)", reaction_bytes(b"\x01\x00"),
         "its content length is 18, not 17"),
        ("reaction with no content (content length 0)", raw(REACTION_CODE, HAND_POST + b"\x00\x00"),
         "its content length is 0, not 17"),
    ]


# The account records written by hand (§2.10) are about the account HAND_ACCOUNT, by A at sequence 1 (unless told); a
# log declaration (kind 11) declares the log key N (SEED_LOG_D) in the group HAND_GROUP.
HAND_ACCOUNT = bytes([3]) * 32
HAND_GROUP = bytes([5]) * 32


def declaration_data(*, account: bytes = HAND_ACCOUNT, group: bytes = HAND_GROUP, log: bytes | None = None,
                     signer: bytes = SEED_LOG_D, signed: bytes | None = None) -> bytes:
    """The data of a log declaration by A (§2.10, kind 11), written by hand: `account`, `group`, `log` (N's key unless
    told), then the signature by `signer` over `signed` (unless told, the message of the account, the group and A).
    With nothing told, a declaration that keeps §2.10's table."""
    log = public_key(SEED_LOG_D) if log is None else log
    if signed is None:
        signed = b"continuum-log-declaration-v3" + account + group + public_key(SEED_A)
    return account + group + log + Ed25519PrivateKey.from_private_bytes(signer).sign(signed)


def account_bytes(code: int, data: bytes, *, context: bytes = bytes(32), content: bytes = b"", **kw) -> bytes:
    """A record of kind 8, 9, 10 or 11 with `context` (none unless told), `data` and `content` (none unless told),
    written by hand from §2.1 and §2.10."""
    return raw(code, context + struct.pack(">H", len(data)) + data, content, **kw)


def consent_by(seed: bytes, account: bytes, device: bytes) -> bytes:
    """The signature by `seed` over the consent message of `account` and `device` (§2.10), written out here."""
    return Ed25519PrivateKey.from_private_bytes(seed).sign(b"continuum-device-consent-v3" + account + device)


def declaration_by(seed: bytes, account: bytes, group: bytes, device: bytes) -> bytes:
    """The signature by `seed` over a log declaration's message (§2.10, kind 11) of `account`, `group` and `device`,
    written out here."""
    return Ed25519PrivateKey.from_private_bytes(seed).sign(b"continuum-log-declaration-v3" + account + group + device)


def frontier_bytes(entries: list[tuple[bytes, int, bytes]]) -> bytes:
    """A frontier as it is written (§2.10): the count, then each log, through and head, in the order given."""
    return bytes([len(entries)]) + b"".join(log + struct.pack(">Q", through) + head for log, through, head in entries)


def account_inert_cases() -> list[tuple[str, bytes, str]]:
    """Records of kinds 8 ... 11 that keep §2.8's common layout but break §2.10's table: valid, and inert (§2.10).
    Each with the reason the decoder must give, written out here."""
    a, d = public_key(SEED_A), public_key(SEED_D)
    x, y, h = bytes([0x11]) * 32, bytes([0x22]) * 32, bytes([0x33]) * 32
    remove = HAND_ACCOUNT + public_key(SEED_L)  # A's removal of L from the account, then the frontier
    consent = "its consent does not verify: it is not the device's signature over continuum-device-consent-v3, " \
              "the account and the device"
    return [
        ("device-add whose consent is by another key",
         account_bytes(9, HAND_ACCOUNT + d + consent_by(SEED_L, HAND_ACCOUNT, d)), consent),
        ("device-add whose consent is for another account",
         account_bytes(9, HAND_ACCOUNT + d + consent_by(SEED_D, bytes([4]) * 32, d)), consent),
        ("device-add of its own author",
         account_bytes(9, HAND_ACCOUNT + a + consent_by(SEED_A, HAND_ACCOUNT, a)), "it adds its own author"),
        ("device-add with 127 bytes of data",
         account_bytes(9, (HAND_ACCOUNT + d + consent_by(SEED_D, HAND_ACCOUNT, d))[:127]),
         "its data is 127 bytes: a device-add's is 128"),
        ("founding account record with flags 01 but no recovery key (33 bytes)", account_bytes(8, bytes(32) + b"\x01"),
         "its flags 01 and its 33 bytes of data disagree: a recovery key follows exactly when bit 0 is set"),
        ("founding account record with flags 00 and a recovery key (65 bytes)",
         account_bytes(8, bytes(32) + b"\x00" + public_key(SEED_K)),
         "its flags 00 and its 65 bytes of data disagree: a recovery key follows exactly when bit 0 is set"),
        ("account record with flags 02", account_bytes(8, bytes(32) + b"\x02"),
         "its flags 02 set a bit other than bit 0"),
        ("joining account record with a recovery key", account_bytes(8, HAND_ACCOUNT + b"\x01" + public_key(SEED_K)),
         "it joins an account and names a recovery key: a recovery key is for founding only"),
        ("account record with 32 bytes of data", account_bytes(8, bytes(32)),
         "its data is 32 bytes: an account record's is 33 or 65"),
        ("account record with a context", account_bytes(8, bytes(32) + b"\x00", context=HAND_POST),
         "its context is not 32 zero bytes: an account record goes with no post"),
        ("account record with a content", account_bytes(8, bytes(32) + b"\x00", content=HAND_SALT + b"\x00"),
         "its content length is 17: an account record has no content"),
        ("device-remove whose frontier is not ascending", account_bytes(10, remove + frontier_bytes([(y, 1, h),
                                                                                                     (x, 1, h)])),
         "its frontier's logs are not strictly ascending"),
        ("device-remove naming a log twice", account_bytes(10, remove + frontier_bytes([(x, 1, h), (x, 2, h)])),
         "its frontier's logs are not strictly ascending"),
        ("device-remove with through 0 and a non-zero head", account_bytes(10, remove + frontier_bytes([(x, 0, h)])),
         "its frontier entry 0 has through 0 and a non-zero head: the head is 32 zero bytes exactly when through "
         "is 0"),
        ("device-remove with through 1 and a zero head",
         account_bytes(10, remove + frontier_bytes([(x, 1, h), (y, 1, bytes(32))])),
         "its frontier entry 1 has through 1 and a zero head: the head is 32 zero bytes exactly when through is 0"),
        ("device-remove with through 2^53", account_bytes(10, remove + frontier_bytes([(x, MAX_SEQUENCE + 1, h)])),
         "its frontier entry 0 has through 9007199254740992, above 2^53 − 1"),
        ("device-remove whose count is 65 with no entries", account_bytes(10, remove + b"\x41"),
         "its frontier count 65 is above 55"),
        ("device-remove one byte short of its count", account_bytes(10, (remove + frontier_bytes([(x, 1, h)]))[:-1]),
         "its data is 136 bytes: with a count of 1, 65 + 72 × 1"),
        ("device-remove with no count", account_bytes(10, remove), "its data is 64 bytes: a device-remove's is 65 + "
                                                                   "72 × count"),
    ] + declaration_inert_cases()


def declaration_inert_cases() -> list[tuple[str, bytes, str]]:
    """Log declarations (kind 11) by A that keep §2.8's layout but break §2.10's table, each in the one way its name
    says (declaration_data with nothing told keeps it): valid, and inert."""
    a, d = public_key(SEED_A), public_key(SEED_D)
    signature = "its signature does not verify: it is not the log key's signature over " \
                "continuum-log-declaration-v3, the account, the group and the author"
    tag = b"continuum-log-declaration-v3"
    return [
        ("log declaration with 159 bytes of data", account_bytes(11, declaration_data()[:159]),
         "its data is 159 bytes: a log declaration's is 160"),
        ("log declaration with 161 bytes of data", account_bytes(11, declaration_data() + b"\x00"),
         "its data is 161 bytes: a log declaration's is 160"),
        ("log declaration naming no account", account_bytes(11, declaration_data(account=bytes(32))),
         "it names no account (32 zero bytes)"),
        ("log declaration naming no group", account_bytes(11, declaration_data(group=bytes(32))),
         "it names no group (32 zero bytes)"),
        ("log declaration of its own author", account_bytes(11, declaration_data(log=a, signer=SEED_A)),
         "its log is its own author: a log declaration names one of the author's group logs"),
        ("log declaration signed by the device instead of the log key",
         account_bytes(11, declaration_data(signer=SEED_A)), signature),
        ("log declaration signed with group and account swapped",
         account_bytes(11, declaration_data(signed=tag + HAND_GROUP + HAND_ACCOUNT + a)), signature),
        ("log declaration signed for another device",
         account_bytes(11, declaration_data(signed=tag + HAND_ACCOUNT + HAND_GROUP + d)), signature),
    ]


def build_inert() -> list[dict]:
    """The inert vectors: each record whole and as its header alone, its id, and why it is inert (kind 13's, then the
    account records')."""
    out = []
    for name, data, reason in inert_cases() + account_inert_cases():
        try:
            decoded = verify(data)
        except Invalid:
            decoded = {"headerLength": len(data), "record": None}  # check_inert_vectors reports it
        header = data[: decoded["headerLength"]]
        out.append({"name": name, "code": data[5], "reason": reason, "record": data, "header": header,
                    "content": data[len(header):],
                    "id": record_id(header), "model": decoded["record"]})
    return out


def invalid_cases(vectors: list[dict]) -> list[tuple[str, bytes]]:
    """Records that must be refused. Each is signed by A (unless its defect is the signature), so that only the
    named defect is wrong."""
    a = public_key(SEED_A)
    key = Ed25519PrivateKey.from_private_bytes(SEED_A)
    created = HAND_CREATED
    salt = HAND_SALT

    def profile(name: bytes, extra: bytes = b"") -> bytes:
        return salt + bytes([len(name)]) + name + extra

    def photo_bytes(size: int = 1, media: int = 1, width: int = 1, height: int = 1, taken: bytes = b"\x00") -> bytes:
        return bytes(32) + struct.pack(">QBII", size, media, width, height) + taken

    def post(caption: bytes = b"x", photo: bytes | None = None, location: bytes = b"\x00") -> bytes:
        return raw(2, content=salt + struct.pack(">H", len(caption)) + caption
                   + (photo_bytes() if photo is None else photo) + location)

    def comment(text: bytes) -> bytes:
        return raw(3, bytes(32), salt + struct.pack(">H", len(text)) + text)

    def edit(flags: int, fields: bytes = b"") -> bytes:
        return raw(4, bytes(32), salt + bytes([flags]) + fields)

    def delete(targets: list[bytes], count: int | None = None, **kw) -> bytes:
        n = len(targets) if count is None else count
        return raw(5, struct.pack(">H", n) + b"".join(targets), **kw)

    def group(flags: int = 0, name: bytes = b"Family", **kw) -> bytes:
        """A group record founded from node t[2] (sequence 1 unless told)."""
        return raw(6, t[2] + bytes([flags]), salt + bytes([len(name)]) + name, **kw)

    def member(action: int, through: int = 0, *, group_id: bytes | None = None, log: bytes | None = None,
               content: bytes = b"", **kw) -> bytes:
        """A member record of group g about log m (unless told), node t[2]: header alone, as it always travels."""
        refs = ((g if group_id is None else group_id) + bytes([action]) + t[2] + (m if log is None else log)
                + struct.pack(">Q", through))
        return raw(7, refs, content, **kw)

    def v1_profile(name: bytes) -> bytes:
        """A version 1 record (§2: header and body signed together, no content hash), as version 1 wrote it."""
        signed = MAGIC + bytes([1, 1]) + a + struct.pack(">Qq", 1, created) + bytes([len(name)]) + name
        return signed + key.sign(signed)

    def coordinates(lat: int, lon: int) -> bytes:
        return struct.pack(">ii", lat, lon)

    def future(code: int = 200, data: bytes = b"", content: bytes = b"", *, data_length: int | None = None,
               **kw) -> bytes:
        """A record of a kind to come (§2.8) going with post t[1]: header, then the content (default: none)."""
        refs = t[1] + struct.pack(">H", len(data) if data_length is None else data_length) + data
        return raw(code, refs, content, **kw)

    reaction = reaction_bytes
    t = [bytes([k]) * 32 for k in range(3)]  # t[1] is HAND_POST, t[2] HAND_COMMENT
    g, m = bytes([0x11]) * 32, bytes([0x22]) * 32  # a group id and a log key, neither of them A's
    # The builders of group and member records, with nothing changed, make valid records: each invalid case below is
    # wrong only in what its name says.
    for control in (group(), group(GROUP_OPEN), member(1), member(3), member(2, MAX_SEQUENCE),
                    member(1, log=a), member(2, group_id=a, sequence=2, previous=bytes(32)),
                    future(), future(8, bytes(FUTURE_DATA_BYTES)), future(255, b"\x01", salt + b"x"),
                    future(content=salt + b"x", after=b""), reaction(), reaction(b"\x00"), reaction(b"\x06", t[2]),
                    reaction(after=b""), reaction(b"\x06", t[2], after=b""), post(),
                    post(photo=photo_bytes(taken=b"\x03" + struct.pack(">q", 0) + bytes([0x7B]) * 32
                                           + struct.pack(">I", THUMBNAIL_BYTES))),
                    post(photo=photo_bytes(taken=b"\x02" + bytes([0x7B]) * 32 + struct.pack(">I", 1)))):
        verify(control)
    good = raw(1, content=profile(b"Alice"))
    good_header = good[: -len(profile(b"Alice"))]
    p1 = vectors[1]
    return [
        ("empty", b""),
        ("bad magic", b"CNTX" + good[4:]),
        ("a version 1 record", v1_profile(b"Alice")),
        ("version 0", raw(1, content=profile(b"Alice"), version=0)),
        ("version 3", raw(1, content=profile(b"Alice"), version=3)),
        ("kind 0", raw(0, content=profile(b"Alice"))),
        ("kind 8 laid out as a profile (no context, no data length)", raw(8, content=profile(b"Alice"))),
        ("sequence 0", raw(1, content=profile(b"Alice"), sequence=0)),
        ("sequence 2 without previous", raw(1, content=profile(b"Alice"), sequence=2)),
        ("sequence 2^53", raw(1, content=profile(b"Alice"), sequence=MAX_SEQUENCE + 1, previous=bytes(32))),
        ("sequence 2^64 - 1", raw(1, content=profile(b"Alice"), sequence=(1 << 64) - 1, previous=bytes(32))),
        ("createdAt -1", raw(1, content=profile(b"Alice"), at=-1)),
        ("createdAt after 9999", raw(1, content=profile(b"Alice"), at=LATEST_TIMESTAMP + 1)),
        ("header cut in the content hash", good_header[:100]),
        ("header alone, signature cut short", good_header[:-1]),
        ("bad signature, header alone", good_header[:-1] + bytes([good_header[-1] ^ 0x80])),
        ("bad signature, whole", good_header[:-64] + bytes(64) + profile(b"Alice")),
        # The content against its header.
        ("content that does not match its header's hash",
         raw(1, content=profile(b"Alice"), digest=hashlib.sha256(profile(b"Alicf")).digest())),
        ("content of another record, same length", good_header + profile(b"Alicf")),
        ("content one byte short", good[:-1]),
        ("content one byte long", good + b"\x00"),
        ("half the content", good_header + profile(b"Alice")[:11]),
        ("content of a vector, the header of another", vectors[0]["header"] + vectors[2]["content"]),
        ("a post's content after the header of a profile", good_header + p1["content"]),
        ("a delete with content after its header", delete([t[0]], after=b"\x00")),
        ("a delete whose header gives a content length", delete([t[0]], content=salt + b"\x01x")),
        ("a delete whose content hash is not that of no bytes", delete([t[0]], digest=bytes(32))),
        ("profile content length 0, header alone", raw(1, content=b"", after=b"")),
        ("profile content length 17 (salt and an empty name)", raw(1, content=profile(b""))),
        ("profile content of the salt alone", raw(1, content=salt)),
        ("post content length 17, header alone", raw(2, length=17, digest=bytes(32), after=b"")),
        ("edit content length 16, header alone", raw(4, bytes(32), length=16, digest=bytes(32), after=b"")),
        ("profile content length 82, header alone", raw(1, length=82, digest=bytes(32), after=b"")),
        (f"post content length {CONTENT_MAX['post'] + 1}, header alone",
         raw(2, length=CONTENT_MAX["post"] + 1, digest=bytes(32), after=b"")),
        ("comment content length 4115, header alone", raw(3, bytes(32), length=4115, digest=bytes(32), after=b"")),
        (f"edit content length {CONTENT_MAX['edit'] + 1}, header alone",
         raw(4, bytes(32), length=CONTENT_MAX["edit"] + 1, digest=bytes(32), after=b"")),
        ("content length 2^32 - 1, header alone", raw(3, bytes(32), length=(1 << 32) - 1, digest=bytes(32), after=b"")),
        # Fields of a content.
        ("name length past the content's end", raw(1, content=salt + b"\x0aAlice")),
        ("trailing byte after a name", raw(1, content=profile(b"Alice", b"\x00"))),
        ("trailing bytes after a post's location", post(location=b"\x00" + bytes(8))),
        ("trailing byte after an edit's caption", edit(EDIT_CAPTION, struct.pack(">H", 1) + b"x\x00")),
        ("coordinates after an edit's location removal", edit(EDIT_LOCATION_REMOVED, coordinates(0, 0))),
        ("blank name", raw(1, content=profile(" \u3000\t".encode()))),
        ("name 65 bytes", raw(1, content=profile(b"x" * 65))),
        ("newline in name", raw(1, content=profile(b"Al\nice"))),
        ("DEL in name", raw(1, content=profile(b"Al\x7fice"))),
        ("NUL in name", raw(1, content=profile(b"Al\x00ice"))),
        ("invalid UTF-8 in name", raw(1, content=profile(b"Al\xffice"))),
        ("overlong UTF-8 in name", raw(1, content=profile(b"\xc0\xafx"))),
        ("UTF-16 surrogate in name", raw(1, content=profile(b"\xed\xa0\x80x"))),
        ("carriage return in comment", comment(b"one\r\ntwo")),
        ("blank comment", comment(b"\t \n")),
        ("comment 4097 bytes", comment(b"x" * 4097)),
        ("caption 2049 bytes", post(caption=b"x" * 2049)),
        ("photo 0 bytes", post(photo=photo_bytes(size=0))),
        ("photo over 1 GiB", post(photo=photo_bytes(size=PHOTO_BYTES + 1))),
        ("media type 0", post(photo=photo_bytes(media=0))),
        ("media type 6", post(photo=photo_bytes(media=6))),
        ("width 0", post(photo=photo_bytes(width=0))),
        ("height over 2^24", post(photo=photo_bytes(height=PHOTO_DIMENSION + 1))),
        # The byte after the height was the taken-at flag; it is now the photo flags (§2.5), whose bit 1 announces a
        # thumbnail (36 bytes): "taken-at flag 2" (02, then 8 bytes and the location flag) is now a thumbnail cut
        # short, and "taken-at flag 255" sets bits 2 ... 7. Their names and bytes are kept as they were.
        ("taken-at flag 2", post(photo=photo_bytes(taken=b"\x02" + struct.pack(">q", 0)))),
        ("taken-at flag 255", post(photo=photo_bytes(taken=b"\xff"))),
        ("taken-at flag 1 without the time", post(photo=photo_bytes(taken=b"\x01"), location=b"")),
        ("takenAt -1", post(photo=photo_bytes(taken=b"\x01" + struct.pack(">q", -1)))),
        ("takenAt after 9999", post(photo=photo_bytes(taken=b"\x01" + struct.pack(">q", LATEST_TIMESTAMP + 1)))),
        ("photo flags 04", post(photo=photo_bytes(taken=b"\x04"))),
        ("thumbnail bytes 0", post(photo=photo_bytes(taken=b"\x02" + bytes([0x7B]) * 32 + struct.pack(">I", 0)))),
        ("thumbnail bytes 65537",
         post(photo=photo_bytes(taken=b"\x02" + bytes([0x7B]) * 32 + struct.pack(">I", THUMBNAIL_BYTES + 1)))),
        ("location flag 2", post(location=b"\x02" + coordinates(0, 0))),
        ("location flag missing", post(location=b"")),
        ("latitude 90.0000001", post(location=b"\x01" + coordinates(LATITUDE_E7 + 1, 0))),
        ("longitude -180.0000001", post(location=b"\x01" + coordinates(0, -LONGITUDE_E7 - 1))),
        # The flags of an edit.
        ("edit flags with no bit", edit(0x00)),
        ("edit flags with both location bits", edit(EDIT_LOCATION_SET | EDIT_LOCATION_REMOVED, coordinates(0, 0))),
        ("edit flags with bit 4", edit(0x10 | EDIT_LOCATION_REMOVED)),
        ("edit flags with bit 7", edit(0x80 | EDIT_LOCATION_REMOVED)),
        ("edit flags with only unknown bits", edit(0xF0)),
        ("edit caption flag without a caption", edit(EDIT_CAPTION)),
        ("edit photo flag without a photo", edit(EDIT_PHOTO, struct.pack(">H", 1) + b"x")),
        ("edit with a blank caption", edit(EDIT_CAPTION, struct.pack(">H", 1) + b" ")),
        ("edit with a photo of media type 0", edit(EDIT_PHOTO, photo_bytes(media=0))),
        ("edit with a bad taken-at flag", edit(EDIT_PHOTO, photo_bytes(taken=b"\x02"))),
        ("edit setting the location off Earth", edit(EDIT_LOCATION_SET, coordinates(-LATITUDE_E7 - 1, 0))),
        ("edit location set without coordinates", edit(EDIT_LOCATION_SET)),
        # The references of a delete.
        ("delete with no targets", delete([])),
        ("delete targets descending", delete([t[1], t[0]])),
        ("delete target repeated", delete([t[1], t[1]])),
        ("delete with 257 targets", delete([k.to_bytes(32, "big") for k in range(257)])),
        ("delete count larger than targets", delete([t[0]], count=2)),
        # Group records (§2.1, §2.5).
        ("group at sequence 2", group(sequence=2, previous=bytes(32))),
        ("group at sequence 2, header alone", group(sequence=2, previous=bytes(32), after=b"")),
        ("group flags 02", group(0x02)),
        ("group flags 03", group(GROUP_OPEN | 0x02)),
        ("group flags 80", group(0x80)),
        ("group references without the flags", raw(6, t[2], salt + b"\x06Family")),
        ("blank group name", group(name=" \u3000".encode())),
        ("empty group name (content length 17)", group(name=b"")),
        ("group name 65 bytes", group(name=b"x" * 65)),
        ("newline in a group name", group(name=b"Fam\nily")),
        ("invalid UTF-8 in a group name", group(name=b"Fam\xffily")),
        ("trailing byte after a group name", raw(6, t[2] + b"\x00", salt + b"\x06Family\x00")),
        ("group content length 82, header alone", raw(6, t[2] + b"\x00", length=82, digest=bytes(32), after=b"")),
        ("group with no content (length 0), header alone", raw(6, t[2] + b"\x00")),
        # Member records (§2.1): no content, and the rules on the record alone.
        ("member action 0", member(0)),
        ("member action 4", member(4)),
        ("member action 255", member(255)),
        ("member with content", member(1, content=salt + b"\x01x")),
        ("member with content length 0 and bytes after its header", member(1, after=b"\x00")),
        ("member whose content hash is not that of no bytes", member(1, digest=bytes(32))),
        ("member references without through", raw(7, g + b"\x01" + t[2] + m)),
        ("member add with through 1", member(1, 1)),
        ("member admin with through 1", member(3, 1)),
        ("member remove with through 2^53", member(2, MAX_SEQUENCE + 1)),
        ("member remove with through 2^64 - 1", member(2, (1 << 64) - 1)),
        ("self-add at sequence 2", member(1, log=a, sequence=2, previous=bytes(32))),
        ("self-remove", member(2, log=a, sequence=2, previous=bytes(32))),
        ("self-remove at sequence 1", member(2, log=a)),
        ("self-admin at sequence 1", member(3, log=a)),
        ("member naming the group's founder (log == group)", member(1, log=g)),
        ("founder adding itself (log == group == author)", member(1, group_id=a, log=a)),
        # Kinds to come (§2.1, §2.8): laid out alike, whatever the code.
        ("kind 200, data length 4097", future(data=bytes(4097))),
        ("kind 200, data length past the header's end", future(data=b"\x01\x02", data_length=3)),
        ("kind 200 references without the context", raw(200, b"\x00\x00")),
        ("kind 200, content length 16, header alone", future(length=16, digest=hashlib.sha256(salt).digest(),
                                                             after=b"")),
        ("kind 200, content length 16 (the salt alone)", future(content=salt)),
        ("kind 200, content length 8193, header alone", future(length=FUTURE_CONTENT_BYTES + 1, digest=bytes(32),
                                                               after=b"")),
        ("kind 200, content length 0 and a hash not that of no bytes", future(digest=bytes(32))),
        ("kind 200, content length 0 and bytes after its header", future(after=b"\x00")),
        ("kind 200, content that does not match its header's hash",
         future(content=salt + b"x", digest=hashlib.sha256(salt + b"y").digest())),
        # Kind 13 (§2.9): laid out as a kind to come. Breaking §2.9's rules makes a record inert, not invalid
        # (inert_cases); what follows breaks §2.8's common layout, or §2.4.
        ("reaction content of the salt alone (16 bytes)", reaction(b"")),
        ("reaction content length 16, header alone", reaction(b"", after=b"")),
        ("reaction content length 8193, header alone",
         reaction(length=FUTURE_CONTENT_BYTES + 1, digest=bytes(32), after=b"")),
        ("reaction references without the data length", raw(REACTION_CODE, t[1], salt + b"\x01")),
        ("reaction, data length 4096 running past the record's end",
         raw(REACTION_CODE, t[1] + struct.pack(">H", FUTURE_DATA_BYTES) + t[2], salt + b"\x01")),
        ("reaction, data length 4097", reaction(data=bytes(4097))),
        ("reaction content that does not match its header's hash",
         reaction(digest=hashlib.sha256(salt + b"\x02").digest())),
        ("reaction content one byte short", reaction(after=salt)),
        ("reaction content one byte too long", reaction(after=salt + b"\x01\x00")),
        ("reaction content length 0 and a hash not that of no bytes",
         raw(REACTION_CODE, t[1] + b"\x00\x00", digest=hashlib.sha256(salt + b"\x01").digest())),
        ("reaction content length 0 and bytes after its header",
         raw(REACTION_CODE, t[1] + b"\x00\x00", after=salt + b"\x01")),
        # Account records (§2.10): their table never makes a record invalid, but §2.8's layout does. A frontier of 56
        # entries needs 65 + 72 × 56 = 4097 bytes of data, one more than §2.1 allows: §2.10's count 0 ... 64 can
        # only reach 55.
        ("device-remove with 56 frontier entries (4097 bytes of data)",
         account_bytes(10, HAND_ACCOUNT + a
                       + frontier_bytes([(k.to_bytes(32, "big"), 1, t[1]) for k in range(1, 57)]))),
        ("account record references without the data length", raw(8, bytes(32))),
        ("account record, data length past the header's end", raw(8, bytes(32) + b"\x00\x21" + bytes(32))),
        ("over 16384 bytes", good + bytes(RECORD_BYTES)),
    ]


def check_inert_vectors(inert: list[dict], failures: list[str]) -> None:
    """Each inert record (§2.9, §2.10) is valid whole and as its header alone, reads as inert with the reason written
    out in inert_cases or account_inert_cases, and re-encodes, through the model, to the bytes written by hand."""
    if len({v["name"] for v in inert}) != len(inert):
        failures.append("two inert vectors have the same name")
    for v in inert:
        name, record = v["name"], v["model"]
        try:
            whole, alone = verify(v["record"]), verify(v["header"])
        except Invalid as error:
            failures.append(f"inert record refused: {name}: {error}")
            continue
        # An inert record of kind 13 is modelled as the kind "inert"; one of kinds 8 ... 11 as a kind to come.
        model = INERT if v["code"] == REACTION_CODE else FUTURE
        if v["code"] not in (REACTION_CODE, *ACCOUNT_KINDS) or v["record"][5] != v["code"]:
            failures.append(f"inert record {name}: its code is {v['code']}")
        if whole["inert"] != v["reason"] or record["kind"] != model or record["body"]["code"] != v["code"]:
            failures.append(f"inert record {name} reads as {record['kind']}, inert because {whole['inert']}")
        if alone["record"] != (None if has_content(record) else record) or alone["references"] != whole["references"]:
            failures.append(f"inert record {name}: its header alone decodes to something else")
        # A header alone tells all of §2.10's rules, and all of §2.9's but the code after the salt.
        if alone["inert"] != (None if v["reason"].startswith("its code") else v["reason"]):
            failures.append(f"inert record {name}: its header alone is inert because {alone['inert']}")
        header, content = sign(SEED_A, record)
        if header + content != v["record"] or header != v["header"]:
            failures.append(f"inert record {name}: the model signs other bytes than those written by hand")
    # A node does not sign a reaction that breaks §2.9 (the model refuses it), though it would be valid.
    reaction = {"author": public_key(SEED_A), "sequence": 1, "previous": None, "createdAt": HAND_CREATED,
                "kind": REACTION, "salt": HAND_SALT, "body": {"post": HAND_POST, "comment": None, "emoji": 7}}
    try:
        sign(SEED_A, reaction)
        failures.append("the model signs a reaction of code 7")
    except Refused:
        pass
    # Nor an account record that breaks §2.10: a device-add whose consent is by another key, or of its own author.
    a, d = public_key(SEED_A), public_key(SEED_D)
    for device, consent in ((d, consent_by(SEED_A, HAND_ACCOUNT, d)), (a, consent_by(SEED_A, HAND_ACCOUNT, a))):
        add = {"author": a, "sequence": 1, "previous": None, "createdAt": HAND_CREATED, "kind": "device-add",
               "salt": None, "body": {"account": HAND_ACCOUNT, "device": device, "consent": consent}}
        try:
            sign(SEED_A, add)
            failures.append("the model signs a device-add that breaks §2.10")
        except Refused:
            pass
    # The log declaration the inert ones of kind 11 start from keeps §2.10's table: each breaks it in one way only.
    control = verify(account_bytes(11, declaration_data()))
    n = public_key(SEED_LOG_D)
    if control["inert"] is not None or control["record"]["kind"] != "log" or control["record"]["body"] != {
            "account": HAND_ACCOUNT, "group": HAND_GROUP, "log": n,
            "signature": declaration_by(SEED_LOG_D, HAND_ACCOUNT, HAND_GROUP, a)}:
        failures.append(f"the unbroken log declaration by A does not read as one: {control['inert']}")
    # A node does not sign a log declaration that breaks §2.10 either: of its own author, or signed by another key.
    for log, signer in ((a, SEED_A), (n, SEED_A)):
        declaration = {"author": a, "sequence": 1, "previous": None, "createdAt": HAND_CREATED, "kind": "log",
                       "salt": None, "body": {"account": HAND_ACCOUNT, "group": HAND_GROUP, "log": log,
                                              "signature": declaration_by(signer, HAND_ACCOUNT, HAND_GROUP, a)}}
        try:
            sign(SEED_A, declaration)
            failures.append("the model signs a log declaration that breaks §2.10")
        except Refused:
            pass


def check_account_vectors(vectors: list[dict], failures: list[str]) -> None:
    """The account vectors (§2.10): their data written out here byte by byte, without the model's encoder; each reads
    as an account record (not inert), has no context and no content, the consent of AC3 is D's, and the declaration
    of AC5 is N's. D's account log is AC2, AC4, AC5 in a chain (check_roundtrip checks `previous`)."""
    by_name = {v["name"].split()[0]: v for v in vectors if v["name"].startswith("AC")}
    laptop, desktop, recovery = public_key(SEED_L), public_key(SEED_D), public_key(SEED_K)
    account, added = by_name["AC1"]["id"], by_name["AC3"]["id"]
    group, log = public_key(SEED_F), public_key(SEED_LOG_D)  # the group G1 (its id, §2.7) and D's log key N in it
    expected = {
        "AC1": (SEED_L, 8, bytes(32) + b"\x01" + recovery),
        "AC2": (SEED_D, 8, account + b"\x00"),
        "AC3": (SEED_L, 9, account + desktop + consent_by(SEED_D, account, desktop)),
        "AC4": (SEED_D, 10, account + laptop + frontier_bytes(sorted([(laptop, 2, added), (OTHER_LOG, 0, bytes(32))]))),
        "AC5": (SEED_D, 11, account + group + log + declaration_by(SEED_LOG_D, account, group, desktop)),
    }
    if set(by_name) != set(expected):
        failures.append(f"the account vectors are {sorted(by_name)}")
        return
    for key, (seed, code, data) in expected.items():
        v = by_name[key]
        decoded = verify(v["header"])
        refs = decoded["references"]
        if v["header"][5] != code or refs["data"] != data or refs["context"] is not None or v["content"]:
            failures.append(f"{v['name']}: its references or content are not as written out by hand")
        if decoded["inert"] is not None or decoded["record"]["kind"] != ACCOUNT_KINDS[code]:
            failures.append(f"{v['name']}: reads as inert: {decoded['inert']}")
        if decoded["author"] != public_key(seed):
            failures.append(f"{v['name']}: signed by another key")
    if (by_name["AC5"]["record"]["sequence"], by_name["AC5"]["record"]["previous"]) != (3, by_name["AC4"]["id"]):
        failures.append("AC5 is not the record of D's account log after AC4")


def check_invalid(vectors: list[dict], failures: list[str]) -> int:
    cases = invalid_cases(vectors)
    for name, data in cases:
        try:
            verify(data)
            failures.append(f"invalid record accepted: {name}")
        except Invalid:
            pass
    if len({name for name, _ in cases}) != len(cases):
        failures.append("two invalid cases have the same name")
    return len(cases)


def check_valid_edges(failures: list[str]) -> int:
    """Edge values that must be accepted, whole and header alone, and come back the same."""
    a = public_key(SEED_A)
    salt = bytes(16)
    base = {"author": a, "sequence": 1, "previous": None, "createdAt": LATEST_TIMESTAMP, "salt": salt}
    p = photo(b"photo-1", 1, "image/gif", 1, PHOTO_DIMENSION, 0)
    member = {"group": bytes([0x11]) * 32, "action": "add", "node": bytes([0x33]) * 32, "log": bytes([0x22]) * 32,
              "through": 0}
    cases = [
        ("name of 64 bytes", {"kind": "profile", "body": {"name": "é" * 32}}),
        ("name with tab and C1 control", {"kind": "profile", "body": {"name": "a\tb\u0085"}}),
        ("sequence 2^53 - 1, createdAt 0",
         {"kind": "profile", "body": {"name": "Alice"}, "sequence": MAX_SEQUENCE, "previous": bytes(32),
          "createdAt": 0}),
        ("post at the edges: takenAt 0, one-byte caption, photo of 1 byte, the South Pole",
         {"kind": "post", "body": {"caption": "x", "photo": p,
                                   "location": {"latitudeE7": -LATITUDE_E7, "longitudeE7": LONGITUDE_E7}}}),
        ("post with takenAt 9999-12-31T23:59:59.999Z",
         {"kind": "post", "body": {"caption": "a\nb", "photo": {**p, "takenAt": LATEST_TIMESTAMP}, "location": None}}),
        ("edit of the caption and photo, removing the location",
         {"kind": "edit", "body": {"post": bytes(32), "caption": "c", "photo": p, "location": "removed"}}),
        ("post whose photo has a thumbnail of 65536 bytes and no taken-at (photo flags 02)",
         {"kind": "post", "body": {"caption": "x", "photo": {**p, "takenAt": None,
                                                             "thumbnail": {"sha256": bytes(32),
                                                                           "bytes": THUMBNAIL_BYTES}},
                                   "location": None}}),
        ("edit of the photo, with a takenAt and a thumbnail of 1 byte (photo flags 03), setting the location",
         {"kind": "edit", "body": {"post": bytes(32), "caption": None,
                                   "photo": {**p, "thumbnail": {"sha256": bytes([0xFF]) * 32, "bytes": 1}},
                                   "location": {"latitudeE7": LATITUDE_E7, "longitudeE7": -LONGITUDE_E7}}}),
        ("edit removing the location and nothing else (17 bytes of content)",
         {"kind": "edit", "body": {"post": bytes(32), "caption": None, "photo": None, "location": "removed"}}),
        ("delete of 256 targets",
         {"kind": "delete", "salt": None, "body": {"targets": [k.to_bytes(32, "big") for k in range(256)]}}),
        ("open group with a name of 64 bytes",
         {"kind": "group", "body": {"node": a, "open": True, "name": "é" * 32}}),
        ("closed group with a one-byte name",
         {"kind": "group", "body": {"node": bytes(32), "open": False, "name": "x"}}),
        ("self-add (sequence 1)",
         {"kind": "member", "salt": None, "body": {**member, "log": a}}),
        ("member remove with through 2^53 - 1 at sequence 2^53 - 1",
         {"kind": "member", "salt": None, "sequence": MAX_SEQUENCE, "previous": bytes(32),
          "body": {**member, "action": "remove", "through": MAX_SEQUENCE}}),
        ("member remove with through 0",
         {"kind": "member", "salt": None, "sequence": 2, "previous": bytes(32),
          "body": {**member, "action": "remove", "through": 0}}),
        ("member admin of another log, its node the author's key",
         {"kind": "member", "salt": None, "body": {**member, "action": "admin", "node": a}}),
        ("member remove by the group's founder (author == group)",
         {"kind": "member", "salt": None, "sequence": 2, "previous": bytes(32),
          "body": {**member, "group": a, "action": "remove", "through": 1}}),
        ("kind 255 with no context, 4096 bytes of data and no content",
         {"kind": FUTURE, "salt": None,
          "body": {"code": 255, "context": None, "data": bytes([0xFF]) * FUTURE_DATA_BYTES, "payload": b""}}),
        ("kind 8 with a one-byte payload (content length 17)",
         {"kind": FUTURE, "body": {"code": 8, "context": bytes([0xAB]) * 32, "data": b"", "payload": b"\x00"}}),
        ("reaction of code 6 to a comment, createdAt 9999",
         {"kind": REACTION, "body": {"post": bytes([0xAB]) * 32, "comment": bytes([0xCD]) * 32, "emoji": 6}}),
        ("reaction of code 0 (taken back) to a post whose id starts with a zero byte",
         {"kind": REACTION, "body": {"post": bytes(31) + b"\x01", "comment": None, "emoji": 0}}),
        ("kind 13 (inert) with no context, 4096 bytes of data and a content of 8192 bytes",
         {"kind": INERT, "body": {"code": REACTION_CODE, "context": None, "data": bytes([0xFF]) * FUTURE_DATA_BYTES,
                                  "payload": bytes(FUTURE_CONTENT_BYTES - SALT_BYTES)}}),
        ("account record founding an account without a recovery key",
         {"kind": "account", "salt": None, "body": {"account": None, "recovery": None}}),
        ("device-remove with an empty frontier (count 0)",
         {"kind": "device-remove", "salt": None,
          "body": {"account": HAND_ACCOUNT, "device": bytes([0x44]) * 32, "frontier": []}}),
        ("device-remove of its own author with 55 frontier entries (4025 bytes of data, the most that fit)",
         {"kind": "device-remove", "salt": None, "sequence": MAX_SEQUENCE, "previous": bytes(32),
          "body": {"account": HAND_ACCOUNT, "device": a,
                   "frontier": [{"log": k.to_bytes(32, "big"), "through": MAX_SEQUENCE if k % 2 else 0,
                                 "head": bytes([k]) * 32 if k % 2 else None} for k in range(1, 56)]}}),
        ("kind 9 whose payload is 8176 bytes (content length 8192)",
         {"kind": FUTURE, "body": {"code": 9, "context": None, "data": b"\x01",
                                   "payload": bytes(FUTURE_CONTENT_BYTES - SALT_BYTES)}}),
    ]
    for name, fields in cases:
        record = {**base, **fields}
        try:
            header, content = sign(SEED_A, record)
            if verify(header + content)["record"] != record:
                failures.append(f"valid record changed in a round trip: {name}")
            if verify(header)["record"] != (None if has_content(record) else record):
                failures.append(f"valid record's header alone decodes to a content: {name}")
        except Invalid as error:
            failures.append(f"valid record refused: {name}: {error}")
    return len(cases)


def check_sizes(failures: list[str]) -> None:
    """The largest record of each kind (sequence > 1, every optional field, every text at its limit) is as long as
    the table of §2.5 says."""
    p = photo(b"photo-1", PHOTO_BYTES, "image/jpeg", PHOTO_DIMENSION, PHOTO_DIMENSION, LATEST_TIMESTAMP,
              thumbnail=(b"thumbnail-4", THUMBNAIL_BYTES))
    location = {"latitudeE7": LATITUDE_E7, "longitudeE7": -LONGITUDE_E7}
    bodies = {
        "profile": {"name": "x" * NAME_BYTES},
        "post": {"caption": "x" * CAPTION_BYTES, "photo": p, "location": location},
        "comment": {"post": bytes(32), "text": "x" * COMMENT_BYTES},
        "edit": {"post": bytes(32), "caption": "x" * CAPTION_BYTES, "photo": p, "location": location},
        "delete": {"targets": [k.to_bytes(32, "big") for k in range(DELETE_TARGETS)]},
        "group": {"node": bytes(32), "open": True, "name": "x" * NAME_BYTES},
        "member": {"group": bytes(32), "action": "remove", "node": bytes(32), "log": bytes([1]) * 32,
                   "through": MAX_SEQUENCE},
        FUTURE: {"code": 255, "context": bytes([1]) * 32, "data": bytes(FUTURE_DATA_BYTES),
                 "payload": bytes(FUTURE_CONTENT_BYTES - SALT_BYTES)},
        REACTION: {"post": bytes([1]) * 32, "comment": bytes([2]) * 32, "emoji": 6},
    }
    kinds = set(KIND_CODES) | {FUTURE}
    if set(bodies) != kinds or set(SIZE_TABLE) != kinds:
        failures.append("the size check does not cover every kind")
    for kind, body in bodies.items():
        # A group record is always the first of its log: sequence 1, no previous. Any other kind is largest later.
        sequence, previous = (1, None) if kind == "group" else (2, bytes(32))
        record = {"author": public_key(SEED_A), "sequence": sequence, "previous": previous, "createdAt": 0,
                  "kind": kind, "salt": None, "body": body}
        if has_content(record):
            record["salt"] = bytes(16)
        header, content = sign(SEED_A, record)
        largest_content, largest_record = SIZE_TABLE[kind]
        if len(content) != largest_content or len(header) + len(content) != largest_record:
            failures.append(f"the largest {kind} is {len(content)} bytes of content and {len(header) + len(content)} "
                            f"in all; §2.5 says {largest_content} and {largest_record}")
        if kind not in NO_CONTENT and len(content) != CONTENT_MAX[kind]:
            failures.append(f"the largest {kind}'s content is not the limit of CONTENT_MAX")
        try:
            verify(header + content)
        except Invalid as error:
            failures.append(f"the largest {kind} is refused: {error}")
    if max(largest for _, largest in SIZE_TABLE.values()) > RECORD_BYTES:
        failures.append("a valid record can be longer than the record limit")


# ---------------------------------------------------------------------------------------------------------------

def main(argv: list[str]) -> int:
    args = set(argv[1:])
    if not args <= {"--write", "--markdown"}:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    vectors = build()
    inert = build_inert()
    section = markdown(vectors, inert)
    if "--markdown" in args:
        sys.stdout.write(section)
        return 0
    invalid = invalid_cases(vectors)
    generated = to_json(vectors, invalid, inert)

    failures: list[str] = []
    check_roundtrip(vectors, failures)
    check_inert_vectors(inert, failures)
    check_account_vectors(vectors, failures)
    flips = check_bit_flips(vectors + inert, failures)
    refused = check_invalid(vectors, failures)
    edges = check_valid_edges(failures)
    check_sizes(failures)

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

    print(f"ok: {len(vectors)} vectors decode, re-encode and verify, whole and header alone; {len(inert)} inert "
          f"records of kinds 13 and 8 ... 11 verify and read as inert; {flips} single-bit flips all refused; "
          f"{refused} invalid "
          f"records refused; {edges} edge cases accepted; the largest record of each kind is as §2.5 says")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

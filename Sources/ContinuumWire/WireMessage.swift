import ContinuumCore

/// 32 random bytes that each side sends in its HELLO, new for every connection: what proofs of membership and of an
/// invite are bound to, so that one seen on one connection is worth nothing on another (PROTOCOL.md §7.8.3).
public struct SessionNonce: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// 32 bytes, or nil.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    init(checked bytes: [UInt8]) { self.bytes = bytes }

    /// 32 bytes from the system's random number generator.
    public static func random() -> SessionNonce {
        var generator = SystemRandomNumberGenerator()
        return SessionNonce(checked: (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    public var description: String { bytes.prefix(6).map { String(format: "%02x", $0) }.joined() }
}

/// The first message each side sends: who it is, which protocol version it speaks, where it listens.
public struct Hello: Hashable, Sendable {
    /// The sync protocol version the sender speaks (``WireLimits/protocolVersion``). The codec accepts any value;
    /// the session refuses one it does not speak.
    public var protocolVersion: UInt16
    /// Random bytes new for this connection (``SessionNonce``).
    public var nonce: SessionNonce
    /// The sender's identity: the Ed25519 public key that its TLS certificate also carries.
    public var node: AuthorID
    /// The sender's display name, if it has one.
    ///
    /// On the wire a name follows the rules of a Profile name (Docs/PROTOCOL.md §3.1): 1 to 64 bytes of UTF-8
    /// (``Limits/nameBytes``), not blank, no control characters but tab. When encoding, control characters are
    /// replaced by U+FFFD and a longer name is cut to 64 bytes at a character boundary; an empty or blank name is
    /// sent as no name.
    public var name: String?
    /// The TCP port the sender accepts connections on; 0 when it does not listen.
    public var listenPort: UInt16
    /// True when the sender runs with `--insecure-plaintext` (no TLS).
    public var plaintext: Bool

    /// A HELLO; by default for this protocol version, with no name, not listening, over TLS.
    public init(
        protocolVersion: UInt16 = WireLimits.protocolVersion,
        nonce: SessionNonce,
        node: AuthorID,
        name: String? = nil,
        listenPort: UInt16 = 0,
        plaintext: Bool = false
    ) {
        self.protocolVersion = protocolVersion
        self.nonce = nonce
        self.node = node
        self.name = name
        self.listenPort = listenPort
        self.plaintext = plaintext
    }
}

/// The SHA-256 of a vector clock's encoding (``WireCodec/clockDigest(_:)``): names a clock both sides hold.
public struct ClockDigest: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// 32 bytes, or nil.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    init(checked bytes: [UInt8]) { self.bytes = bytes }

    public var description: String { bytes.prefix(6).map { String(format: "%02x", $0) }.joined() }
}

/// One entry of INTEREST: a post, and the distance in hops from the sender to a node that follows it.
public struct PostInterest: Hashable, Sendable, CustomStringConvertible {
    /// The post whose comments, edits and deletions are wanted.
    public var post: PostID
    /// 0 when the sender follows the post itself, n when a follower is n sessions beyond it
    /// (at most ``WireLimits/maxInterestHops``); nil withdraws the sender's interest (0xFF on the wire).
    public var hops: UInt8?

    public init(post: PostID, hops: UInt8?) {
        self.post = post
        self.hops = hops
    }

    public var description: String { "\(post.short):\(hops.map(String.init) ?? "withdrawn")" }
}

/// Some consecutive records of one author's log, by sequence number: what a REQUEST asks for.
public struct LogRange: Hashable, Sendable, CustomStringConvertible {
    /// Whose log.
    public var author: AuthorID
    /// The sequence numbers, both ends included; on the wire `1 <= lowerBound <= upperBound <= Limits.maxSequence`.
    public var range: ClosedRange<UInt64>

    /// The records `range` of the author's log.
    public init(author: AuthorID, range: ClosedRange<UInt64>) {
        self.author = author
        self.range = range
    }

    public var description: String { "\(author.short):\(range.lowerBound)...\(range.upperBound)" }

    /// Positions in logs (author, sequence) as ranges, in the order given: a position that follows the last range's
    /// (the same author, the next sequence) extends it; any other starts a range. Sorted positions make the fewest.
    public static func coalescing<Positions: Sequence<(author: AuthorID, sequence: UInt64)>>(
        _ positions: Positions
    ) -> [LogRange] {
        var ranges: [LogRange] = []
        for (author, sequence) in positions {
            if let last = ranges.last, last.author == author, last.range.upperBound + 1 == sequence {
                ranges[ranges.count - 1].range = last.range.lowerBound...sequence
            } else {
                ranges.append(LogRange(author: author, range: sequence...sequence))
            }
        }
        return ranges
    }
}

/// One message of sync protocol v1 (Docs/PROTOCOL.md §7.4). ``WireCodec`` encodes and decodes them.
public enum WireMessage: Hashable, Sendable {
    /// The handshake: type 0x01.
    case hello(Hello)
    /// The sender refuses something and is about to close the connection: type 0x02.
    case error(WireError)
    /// The sender's vector clock at the start of an anti-entropy round: type 0x10.
    case clock(round: UInt32, VectorClock)
    /// The sender's vector clock at the start of a round, as a change to a clock it sent this receiver before:
    /// `base` is ``WireCodec/clockDigest(_:)`` of that clock, and the entries listed replace its entries (the
    /// others are unchanged): type 0x16.
    case clockSince(round: UInt32, base: ClockDigest, VectorClock)
    /// The receiver of a CLOCK_SINCE does not hold its base: send the round's whole clock in a CLOCK: type 0x17.
    case clockUnknown(round: UInt32)
    /// How much the sender is about to send in this round: type 0x11.
    case offer(round: UInt32, records: UInt64, bytes: UInt64)
    /// A batch of whole records, as signed; `live` when forwarded as they are made rather than by a round: 0x12.
    case records(live: Bool, [[UInt8]])
    /// The receiver's clock after storing what it got: type 0x13.
    case ack(VectorClock)
    /// Asks for these records, to fill gaps: type 0x14.
    case request([LogRange])
    /// The sender has sent everything of this round: type 0x15.
    case done(round: UInt32)
    /// Asks for a photo's bytes from an offset: type 0x20.
    case photoWant(AssetHash, offset: UInt64)
    /// A chunk of a photo, at an offset: type 0x21.
    case photoData(AssetHash, offset: UInt64, chunk: [UInt8])
    /// The sender has sent every byte of the photo from the offset that was asked for: type 0x22.
    case photoEnd(AssetHash, totalBytes: UInt64)
    /// The sender does not hold the photo: type 0x23.
    case photoMissing(AssetHash)
    /// Asks for the thumbnail of a photo (a JPEG of at most 400 px a side): type 0x24.
    case thumbWant(AssetHash)
    /// The thumbnail of a photo, whole (1 to ``WireLimits/maxThumbnailBytes`` bytes): type 0x25. Not covered by
    /// any signature: the receiver checks that it is a small JPEG before keeping it (Docs/PROTOCOL.md §7.4).
    case thumbData(AssetHash, [UInt8])
    /// The sender has no thumbnail of the photo (nor the photo): type 0x26.
    case thumbMissing(AssetHash)
    /// Asks for a PONG with the same nonce: type 0x30.
    case ping(UInt64)
    /// Answers a PING: type 0x31.
    case pong(UInt64)
    /// The posts whose comments, edits and deletions the sender wants pushed to it, and how many hops away the
    /// follower is; `replace` when the list is the sender's whole set, replacing what it said before: type 0x40.
    case interest(replace: Bool, [PostInterest])
    /// Records concerning a post the receiver announced interest in, sent ahead of everything else: type 0x41.
    case push([[UInt8]])
    /// The sender holds the records in these ranges and did not send them to the receiver (lazy push, §7.8.17): the
    /// receiver asks for any it still lacks after a short wait: type 0x42.
    case have([LogRange])
    /// How the receiver is to send new records to the sender from now on: `eager`, as RECORDS and PUSH (graft);
    /// or not, as HAVE only (prune): type 0x43.
    case tree(eager: Bool)
    /// The sender's follows (PROTOCOL.md §7.8.21), to another device of its account: type 0x88, in the optional
    /// range (a node that does not know it ignores it).
    case follows([FollowEntry])
    /// Small photos wanted whole, many at once (PROTOCOL.md §7.4.26): type 0x89, in the optional range. A peer that
    /// does not know it ignores it; the asker takes silence as no, and asks with PHOTO_WANT.
    case photosWant([AssetHash])
    /// Small photos, whole, in answer to PHOTOS_WANT (PROTOCOL.md §7.4.27): type 0x8a, in the optional range.
    case photos([SmallPhoto])
    /// The groups the sender claims to share with the receiver, with proofs, and a join by invite: type 0x03, right
    /// after HELLO.
    case membership(Membership)
    /// An invite was accepted: the group joined and the record that adds the joiner: type 0x04.
    case joined(group: GroupID, record: [UInt8])
    /// A link (join flag 3) was accepted: the records of the account the new device is to join, its founding record
    /// among them: type 0x05.
    case linking([[UInt8]])
    /// The new device's consent to the account of the LINKING (its signature for the `device-add`): type 0x06.
    case consent([UInt8])
    /// The device was added: the `device-add` record, and the account's groups it now shares: type 0x07.
    case linked(record: [UInt8], groups: [GroupID])
    /// A new device recovering an account (join flag 4): the records it and the recovery key signed, which add it to
    /// the account (and remove the devices it removes), and its declared logs: type 0x08.
    case recovery([[UInt8]])
    /// A message of an optional type (0x80 … 0xFF, PROTOCOL.md §7.3) that this node does not know: read whole,
    /// charged to the sender's budget, and ignored. Nothing this node sends is one; tests send them.
    case optional(type: UInt8, payload: [UInt8])

    /// The type byte of the message's frame.
    public var typeCode: UInt8 {
        if case .optional(let type, _) = self { return type }
        return kind.rawValue
    }

    /// The message type's name, as in Docs/PROTOCOL.md: `HELLO`, `RECORDS`, `PHOTO_DATA`, …; `optional 0x85` for
    /// an optional type this node does not know.
    public var typeName: String {
        if case .optional(let type, _) = self { return "optional 0x\(String(type, radix: 16))" }
        return kind.name
    }

    /// The first type of the range kept for optional messages: a receiver ignores one it does not know (§7.3).
    public static let firstOptionalType: UInt8 = 0x80

    /// The name of a type byte, such as `PING` for 0x30; nil for a type that does not exist.
    public static func typeName(of typeCode: UInt8) -> String? { MessageKind(rawValue: typeCode)?.name }

    var kind: MessageKind {
        switch self {
        case .hello: .hello
        case .error: .error
        case .clock: .clock
        case .offer: .offer
        case .clockSince: .clockSince
        case .clockUnknown: .clockUnknown
        case .records: .records
        case .ack: .ack
        case .request: .request
        case .done: .done
        case .photoWant: .photoWant
        case .photoData: .photoData
        case .photoEnd: .photoEnd
        case .photoMissing: .photoMissing
        case .thumbWant: .thumbWant
        case .thumbData: .thumbData
        case .thumbMissing: .thumbMissing
        case .ping: .ping
        case .pong: .pong
        case .interest: .interest
        case .push: .push
        case .have: .have
        case .tree: .tree
        case .follows: .follows
        case .photosWant: .photosWant
        case .photos: .photos
        case .membership: .membership
        case .joined: .joined
        case .linking: .linking
        case .consent: .consent
        case .linked: .linked
        case .recovery: .recovery
        case .optional: .optional
        }
    }
}

/// What MEMBERSHIP carries (PROTOCOL.md §7.4.21).
public struct Membership: Hashable, Sendable {
    /// A group the sender says it shares with the receiver, and the header of the sender's own membership record in
    /// it: its group record, or the record that added it (signed by an admin, or by itself in an open group).
    public struct Claim: Hashable, Sendable {
        public var group: GroupID
        public var proof: [UInt8]

        public init(group: GroupID, proof: [UInt8]) {
            self.group = group
            self.proof = proof
        }
    }

    /// A join by invite: the invite's id, the joiner's new log key, and the proof that it holds the invite's secret,
    /// bound to this connection.
    public struct Join: Hashable, Sendable {
        public var invite: [UInt8]
        public var log: AuthorID
        public var mac: [UInt8]
        /// The log key's Ed25519 signature of ``MembershipProofs/joinLogMessage(inviterNonce:joinerNonce:joiner:)``:
        /// the joiner holds the key it asks to have added.
        public var signature: [UInt8]

        public init(invite: [UInt8], log: AuthorID, mac: [UInt8], signature: [UInt8]) {
            self.invite = invite
            self.log = log
            self.mac = mac
            self.signature = signature
        }
    }

    /// A request to join, for an admin to approve: the asker's new log key, and its signature of
    /// ``MembershipProofs/joinLogMessage(inviterNonce:joinerNonce:joiner:)`` (the receiver's nonce in the inviter's
    /// place), which binds the key to this connection.
    public struct Request: Hashable, Sendable {
        public var log: AuthorID
        public var signature: [UInt8]

        public init(log: AuthorID, signature: [UInt8]) {
            self.log = log
            self.signature = signature
        }
    }

    public var claims: [Claim]
    /// Proofs of network groups: one 16-byte tag per network the sender is in.
    public var networkTags: [[UInt8]]
    /// A new device's link into the account of the receiver's device (PROTOCOL.md §7.8.19): the link code's id and
    /// the proof that the sender holds its secret, bound to this connection.
    public struct Link: Hashable, Sendable {
        public var ticket: [UInt8]
        public var mac: [UInt8]

        public init(ticket: [UInt8], mac: [UInt8]) {
            self.ticket = ticket
            self.mac = mac
        }
    }

    /// A new device's recovery of an account (PROTOCOL.md §7.8.20): the recovery key, and its signature of
    /// ``MembershipProofs/recoveryMessage(receiverNonce:deviceNonce:receiver:device:)``, bound to this connection.
    public struct Recovery: Hashable, Sendable {
        public var key: AuthorID
        public var signature: [UInt8]

        public init(key: AuthorID, signature: [UInt8]) {
            self.key = key
            self.signature = signature
        }
    }

    /// A join by invite, a request to join, a link or a recovery (never two).
    public var join: Join?
    public var request: Request?
    public var link: Link?
    public var recovery: Recovery?

    public init(
        claims: [Claim] = [],
        networkTags: [[UInt8]] = [],
        join: Join? = nil,
        request: Request? = nil,
        link: Link? = nil,
        recovery: Recovery? = nil
    ) {
        self.claims = claims
        self.networkTags = networkTags
        self.join = join
        self.request = request
        self.link = link
        self.recovery = recovery
    }
}

/// The type byte of each message.
enum MessageKind: UInt8, CaseIterable {
    /// The types of the optional range that this version defines (every other there is read and ignored).
    static let knownOptional: Set<UInt8> = [0x88, 0x89, 0x8a]

    case hello = 0x01
    case error = 0x02
    case membership = 0x03
    case joined = 0x04
    case linking = 0x05
    case consent = 0x06
    case linked = 0x07
    case recovery = 0x08
    case clock = 0x10
    case offer = 0x11
    case records = 0x12
    case ack = 0x13
    case request = 0x14
    case done = 0x15
    case clockSince = 0x16
    case clockUnknown = 0x17
    case photoWant = 0x20
    case photoData = 0x21
    case photoEnd = 0x22
    case photoMissing = 0x23
    case thumbWant = 0x24
    case thumbData = 0x25
    case thumbMissing = 0x26
    case ping = 0x30
    case pong = 0x31
    case interest = 0x40
    case push = 0x41
    case have = 0x42
    case tree = 0x43
    case follows = 0x88
    case photosWant = 0x89
    case photos = 0x8a
    /// Any type of the optional range, 0x80 … 0xFF, that this node does not know (``WireMessage/optional(type:payload:)``).
    case optional = 0x80

    var name: String {
        switch self {
        case .hello: "HELLO"
        case .error: "ERROR"
        case .membership: "MEMBERSHIP"
        case .joined: "JOINED"
        case .linking: "LINKING"
        case .consent: "CONSENT"
        case .linked: "LINKED"
        case .recovery: "RECOVERY"
        case .clock: "CLOCK"
        case .offer: "OFFER"
        case .records: "RECORDS"
        case .ack: "ACK"
        case .request: "REQUEST"
        case .done: "DONE"
        case .clockSince: "CLOCK_SINCE"
        case .clockUnknown: "CLOCK_UNKNOWN"
        case .photoWant: "PHOTO_WANT"
        case .photoData: "PHOTO_DATA"
        case .photoEnd: "PHOTO_END"
        case .photoMissing: "PHOTO_MISSING"
        case .thumbWant: "THUMB_WANT"
        case .thumbData: "THUMB_DATA"
        case .thumbMissing: "THUMB_MISSING"
        case .ping: "PING"
        case .pong: "PONG"
        case .interest: "INTEREST"
        case .push: "PUSH"
        case .have: "HAVE"
        case .tree: "TREE"
        case .follows: "FOLLOWS"
        case .photosWant: "PHOTOS_WANT"
        case .photos: "PHOTOS"
        case .optional: "optional"
        }
    }
}

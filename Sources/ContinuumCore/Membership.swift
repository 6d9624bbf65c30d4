import Crypto
import Foundation

/// Who belongs to which group, read at once: what a session checks a peer against (PROTOCOL.md §7.8.3).
public struct MembershipView: Sendable {
    public struct Group: Sendable, Hashable {
        public let id: GroupID
        public let name: String?
        public let open: Bool
        public let network: Bool
        /// This node's log in it.
        public let log: AuthorID

        public init(id: GroupID, name: String?, open: Bool, network: Bool, log: AuthorID) {
            self.id = id
            self.name = name
            self.open = open
            self.network = network
            self.log = log
        }
    }

    public struct Log: Sendable, Hashable {
        public let group: GroupID
        public let node: NodeID
        /// An admin now.
        public let admin: Bool
        /// An admin now, or one the founder removed: its member records up to `removedThrough` stand (§5.1).
        public let wasAdmin: Bool
        public let removedThrough: UInt64?

        public init(group: GroupID, node: NodeID, admin: Bool, wasAdmin: Bool? = nil, removedThrough: UInt64?) {
            self.group = group
            self.node = node
            self.admin = admin
            self.wasAdmin = wasAdmin ?? admin
            self.removedThrough = removedThrough
        }

        /// Whether a record of this log at `sequence` is valid: always for a member, up to what its removal kept for
        /// a removed one.
        public func accepts(sequence: UInt64) -> Bool { removedThrough.map { sequence <= $0 } ?? true }
    }

    /// The groups this node is a member of.
    public let groups: [GroupID: Group]
    /// Every log of every group known here, members and removed ones.
    public let logs: [AuthorID: Log]

    /// The groups each node has a log of (a member's or a removed one's), and the groups of which an account of the
    /// node is a member account (PROTOCOL.md §5.1): where the account log of its key travels, and, for the second,
    /// which groups a device of a member account shares before it has a log there.
    public let nodeGroups: [NodeID: Set<GroupID>]
    /// The groups of which an account of each node is a member account (§5.1, members by account); for a recovery
    /// key, its account's (its account log travels there; whoever holds the key can add a device anyway).
    public let accountGroups: [NodeID: Set<GroupID>]
    /// The accounts of each device, its live devices only.
    public let devices: [NodeID: Set<AccountID>]
    /// The groups of which each account is a member account.
    public let memberAccounts: [AccountID: Set<GroupID>]

    /// A view of `groups` and `logs`; `devices` gives the accounts of each device (its live devices only), by which a
    /// device of a member account shares the account's groups; `recoveries` the account of each recovery key, whose
    /// account log travels with the account's (§2.10).
    public init(
        groups: [GroupID: Group],
        logs: [AuthorID: Log],
        devices: [NodeID: Set<AccountID>] = [:],
        recoveries: [NodeID: AccountID] = [:]
    ) {
        self.groups = groups
        self.logs = logs
        var nodeGroups: [NodeID: Set<GroupID>] = [:]
        var memberAccounts: [AccountID: Set<GroupID>] = [:]
        for log in logs.values {
            nodeGroups[log.node, default: []].insert(log.group)
            guard log.removedThrough == nil else { continue }
            for account in devices[log.node] ?? [] { memberAccounts[account, default: []].insert(log.group) }
        }
        var accountGroups: [NodeID: Set<GroupID>] = [:]
        for (device, accounts) in devices {
            let shared = accounts.reduce(into: Set<GroupID>()) { $0.formUnion(memberAccounts[$1] ?? []) }
            if !shared.isEmpty { accountGroups[device] = shared }
        }
        for (key, account) in recoveries {
            if let shared = memberAccounts[account] { accountGroups[key, default: []].formUnion(shared) }
        }
        self.nodeGroups = nodeGroups
        self.accountGroups = accountGroups
        self.devices = devices
        self.memberAccounts = memberAccounts
    }

    /// Whether `author` is the key of an account log (PROTOCOL.md §2.10) that a session sharing `groups` carries:
    /// the log of a node key (no group log has that key) of a node with a log in one of them, or a device of a
    /// member account of one of them (§7.8.6).
    public func carriesAccountLog(_ author: AuthorID, in groups: Set<GroupID>) -> Bool {
        guard logs[author] == nil else { return false }
        let node = NodeID(unchecked: author.bytes)
        return !(nodeGroups[node] ?? []).isDisjoint(with: groups)
            || !(accountGroups[node] ?? []).isDisjoint(with: groups)
    }

    /// The group of a log, if known.
    public func group(of author: AuthorID) -> GroupID? { logs[author]?.group }

    /// Whether `node` has a log that is a member of `group` now.
    public func isMember(_ node: NodeID, of group: GroupID) -> Bool {
        logs.values.contains { $0.group == group && $0.node == node && $0.removedThrough == nil }
    }

    /// The groups this node shares with `node`, as this node's records say: those where it has a member log, and
    /// those of which an account it is a device of is a member account.
    public func groupsShared(with node: NodeID) -> Set<GroupID> {
        var shared = (accountGroups[node] ?? []).filter { groups[$0] != nil }
        for log in logs.values where log.node == node && log.removedThrough == nil && groups[log.group] != nil {
            shared.insert(log.group)
        }
        return shared
    }

    /// Whether a log may write in `group` at `sequence`: a member's, or a removed one's up to what was kept.
    public func accepts(_ author: AuthorID, sequence: UInt64, in groups: Set<GroupID>) -> Bool? {
        guard let log = logs[author] else { return carriesAccountLog(author, in: groups) ? true : nil }
        guard groups.contains(log.group) else { return false }
        return log.removedThrough.map { sequence <= $0 } ?? true
    }
}

/// The answer to a request to join (PROTOCOL.md §7.8.3).
public enum JoinRequestAnswer: Sendable, Hashable {
    /// An admin approved it: the group, and the record that adds the asker's log (sent in JOINED).
    case approved(group: GroupID, record: [UInt8])
    /// Recorded; it waits for an admin here. `first` when the node was not waiting before (its first request, or
    /// the first since it was approved).
    case pending(first: Bool)
    /// An admin here denied it.
    case denied
    /// This node cannot approve anybody: it is an admin of no group that takes requests.
    case noAdmin
}

/// The proofs two nodes exchange in MEMBERSHIP (PROTOCOL.md §7.8.3), computed and checked without I/O.
public enum MembershipProofs {
    /// The tag that proves knowledge of a network group's id on one connection: the first 16 bytes of
    /// HMAC-SHA256(key: network id, `continuum-network-v2` ‖ sender nonce ‖ receiver nonce ‖ sender ‖ receiver).
    public static func networkTag(
        _ network: GroupID,
        senderNonce: [UInt8],
        receiverNonce: [UInt8],
        sender: NodeID,
        receiver: NodeID
    ) -> [UInt8] {
        var message = Array("continuum-network-v2".utf8)
        message += senderNonce
        message += receiverNonce
        message += sender.bytes
        message += receiver.bytes
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: network.bytes))
        return Array(Array(mac).prefix(16))
    }

    /// The proof that a joiner holds an invite's secret, bound to one connection: HMAC-SHA256(key: secret,
    /// `continuum-join-v2` ‖ inviter nonce ‖ joiner nonce ‖ inviter ‖ joiner ‖ joiner's new log key).
    public static func joinMAC(
        secret: some DataProtocol,
        inviterNonce: [UInt8],
        joinerNonce: [UInt8],
        inviter: NodeID,
        joiner: NodeID,
        log: AuthorID
    ) -> [UInt8] {
        var message = Array("continuum-join-v2".utf8)
        message += inviterNonce
        message += joinerNonce
        message += inviter.bytes
        message += joiner.bytes
        message += log.bytes
        return Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: Data(secret))))
    }

    /// What a joiner signs with its new log key, to show that it holds it: `continuum-join-log-v2` ‖ inviter nonce ‖
    /// joiner nonce ‖ joiner node id.
    public static func joinLogMessage(inviterNonce: [UInt8], joinerNonce: [UInt8], joiner: NodeID) -> [UInt8] {
        Array("continuum-join-log-v2".utf8) + inviterNonce + joinerNonce + Array(joiner.bytes)
    }

    /// The proof that a new device holds a link code's secret, on one connection (PROTOCOL.md §7.8.19):
    /// HMAC-SHA256(key: secret, `continuum-link-v3` ‖ linker nonce ‖ device nonce ‖ linker ‖ device).
    public static func linkMAC(
        secret: some DataProtocol,
        linkerNonce: [UInt8],
        deviceNonce: [UInt8],
        linker: NodeID,
        device: NodeID
    ) -> [UInt8] {
        var message = Array("continuum-link-v3".utf8)
        message += linkerNonce
        message += deviceNonce
        message += linker.bytes
        message += device.bytes
        return Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: Array(secret))))
    }

    /// What a new device recovering an account signs with the recovery key, on one connection (PROTOCOL.md
    /// §7.8.20): `continuum-recover-v3` ‖ receiver nonce ‖ device nonce ‖ receiver ‖ device.
    public static func recoveryMessage(
        receiverNonce: [UInt8],
        deviceNonce: [UInt8],
        receiver: NodeID,
        device: NodeID
    ) -> [UInt8] {
        Array("continuum-recover-v3".utf8) + receiverNonce + deviceNonce + Array(receiver.bytes) + Array(device.bytes)
    }

    /// Whether `signature` is `log`'s signature of the join message.
    public static func isLogSignature(
        _ signature: [UInt8],
        log: AuthorID,
        inviterNonce: [UInt8],
        joinerNonce: [UInt8],
        joiner: NodeID
    ) -> Bool {
        // A log key that is no Ed25519 key verifies nothing: its error is the answer false.
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: log.bytes) else { return false }
        let message = joinLogMessage(inviterNonce: inviterNonce, joinerNonce: joinerNonce, joiner: joiner)
        return key.isValidSignature(signature, for: message)
    }

    /// Whether `signature` is the recovery key `key`'s signature of ``recoveryMessage(receiverNonce:deviceNonce:receiver:device:)``.
    public static func isRecoverySignature(
        _ signature: [UInt8],
        key: AuthorID,
        receiverNonce: [UInt8],
        deviceNonce: [UInt8],
        receiver: NodeID,
        device: NodeID
    ) -> Bool {
        // A key that is no Ed25519 key verifies nothing: its error is the answer false.
        guard let publicKey = try? Curve25519.Signing.PublicKey(rawRepresentation: key.bytes) else { return false }
        let message = recoveryMessage(
            receiverNonce: receiverNonce,
            deviceNonce: deviceNonce,
            receiver: receiver,
            device: device
        )
        return publicKey.isValidSignature(signature, for: message)
    }

    /// Why a claim that `peer` is a member of `group` does not hold, in this node's view; nil when it holds.
    ///
    /// The proof is the header of the peer's own membership record: the group record (the peer founded the group),
    /// or an `add` or `admin` record naming the peer's node, signed by an admin in this node's view, or by the log
    /// itself in an open group (where any signer will do: anyone may join). The log it names must not be removed.
    public static func problem(
        withClaim proof: [UInt8],
        group: GroupID,
        peer: NodeID,
        view: MembershipView
    ) -> String? {
        guard let info = view.groups[group] else { return "this node is not in group \(group.short)" }
        let record: VerifiedRecord
        do {
            record = try SignedRecord(bytes: proof).verify()
        } catch {
            return "the proof is not a valid record: \(error)"
        }
        let header = record.header
        switch header.references {
        case .group(let node, _):
            guard GroupID(founder: header.author) == group, node == peer else {
                return "the group record names another group or node"
            }
            return nil
        case .member(let change):
            guard change.group == group, change.node == peer, change.action != .remove else {
                return "the member record does not add this node to the group"
            }
            if view.logs[change.log]?.removedThrough != nil {
                return "you were removed from group \(info.name ?? group.short)"
            }
            if change.log == header.author {
                return info.open || info.network ? nil : "the group is not open: a member cannot add itself"
            }
            // In an open group anyone may add itself, so an add signed by a key this node does not know as an admin
            // yet (a joiner holds none of the group's records) proves no less than a self-add.
            if info.open { return nil }
            // Signed by an admin, or by one the founder removed since, within what the removal kept: the record stands
            // (§5.1), on every node alike.
            guard let signer = view.logs[header.author], signer.group == group, signer.wasAdmin,
                signer.accepts(sequence: header.sequence)
            else { return "the member record is not signed by an admin of the group" }
            return nil
        default:
            return "the proof is a \(header.kind.name) record, not a membership record"
        }
    }
}

/// An invite code as a person types it: Crockford base32 of the inviter's node prefix, the secret and the inviter's
/// address, in groups of five (PROTOCOL.md §7.8.16).
public struct InviteCode: Sendable, Hashable {
    /// Whether `text` is shaped like an invite code (letters and digits in groups joined by dashes, 20 characters or
    /// more) rather than a group's name: a mistyped code is reported as such, not looked up as a name.
    public static func looksLikeCode(_ text: String) -> Bool {
        text.count >= 20 && text.contains("-")
            && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
    }

    public static let nodePrefixBytes = 8
    public static let secretBytes = 10

    /// The first 8 bytes of the inviter's node id: the TLS certificate it presents must match.
    public let nodePrefix: Data
    public let secret: Data
    /// An IPv4 address and port where the inviter listens, if it gave one.
    public let host: String?
    public let port: Int?
    /// A link code (`device link`, version 2: a new device joins the maker's account) rather than an invite to a
    /// group (version 1). Both have the same layout.
    public let isLink: Bool

    public init(nodePrefix: Data, secret: Data, host: String?, port: Int?, isLink: Bool = false) {
        self.nodePrefix = nodePrefix
        self.secret = secret
        self.host = host
        self.port = port
        self.isLink = isLink
    }

    /// The id under which an invite's secret is looked up: the first 8 bytes of
    /// SHA-256(`continuum-invite-id-v2` ‖ secret).
    public static func id(of secret: some DataProtocol) -> [UInt8] {
        Array(SHA256.hash(data: Array("continuum-invite-id-v2".utf8) + Array(secret)).prefix(8))
    }

    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// The code: version (1 an invite, 2 a link), node prefix, secret, and (when known) 4 address bytes and 2 port
    /// bytes.
    public var text: String {
        var bytes: [UInt8] = [isLink ? 2 : 1]
        bytes += nodePrefix
        bytes += secret
        if let host, let port, let address = Self.ipv4(host) {
            bytes += address
            bytes += [UInt8(port >> 8), UInt8(port & 0xFF)]
        }
        var bits = 0
        var value = 0
        var out: [UInt8] = []
        for byte in bytes {
            value = (value << 8) | Int(byte)
            bits += 8
            while bits >= 5 {
                out.append(Self.alphabet[(value >> (bits - 5)) & 31])
                bits -= 5
            }
        }
        if bits > 0 { out.append(Self.alphabet[(value << (5 - bits)) & 31]) }
        var grouped = ""
        for (index, char) in out.enumerated() {
            if index > 0 && index % 5 == 0 { grouped += "-" }
            grouped.append(Character(UnicodeScalar(char)))
        }
        return grouped
    }

    /// Parses a code as typed: case, dashes and spaces do not matter; O reads as 0, I and L as 1.
    public init(parsing text: String) throws(InviteCodeError) {
        var value = 0
        var bits = 0
        var bytes: [UInt8] = []
        for char in text.uppercased().utf8 where char != UInt8(ascii: "-") && char != UInt8(ascii: " ") {
            var c = char
            if c == UInt8(ascii: "O") { c = UInt8(ascii: "0") }
            if c == UInt8(ascii: "I") || c == UInt8(ascii: "L") { c = UInt8(ascii: "1") }
            guard let digit = Self.alphabet.firstIndex(of: c) else {
                throw InviteCodeError("an invite code has only letters and digits; '\(text)' is not one")
            }
            value = ((value << 5) | digit) & 0xFFFF
            bits += 5
            if bits >= 8 {
                bytes.append(UInt8((value >> (bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        let short = 1 + Self.nodePrefixBytes + Self.secretBytes
        guard bytes.first == 1 || bytes.first == 2, bytes.count == short || bytes.count == short + 6 else {
            throw InviteCodeError(
                "'\(text)' is not an invite code (it may be mistyped: a code is 31 or 40 characters, from "
                    + "'continuum-node invite')"
            )
        }
        isLink = bytes.first == 2
        nodePrefix = Data(bytes[1..<(1 + Self.nodePrefixBytes)])
        secret = Data(bytes[(1 + Self.nodePrefixBytes)..<short])
        if bytes.count == short + 6 {
            host = bytes[short..<(short + 4)].map(String.init).joined(separator: ".")
            port = Int(bytes[short + 4]) << 8 | Int(bytes[short + 5])
        } else {
            host = nil
            port = nil
        }
    }

    private static func ipv4(_ host: String) -> [UInt8]? {
        let parts = host.split(separator: ".")
        guard parts.count == 4 else { return nil }
        let bytes = parts.compactMap { UInt8($0) }
        return bytes.count == 4 ? bytes : nil
    }
}

/// A text that is not an invite code, and why.
public struct InviteCodeError: Error, Sendable, Hashable, CustomStringConvertible {
    public let description: String

    init(_ description: String) { self.description = description }
}

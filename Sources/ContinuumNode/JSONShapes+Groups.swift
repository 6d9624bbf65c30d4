import ContinuumCore
import ContinuumStore
import Foundation

// The JSON of groups, members, invites, requests to join (and their approval or denial), removals and blocked
// authors: the CLI's `--json` (Docs/CLI.md) and the HTTP API (Docs/API.md) print the same shapes.

/// A group (`group list --json`, `GET /api/groups`).
public struct GroupJSON: Encodable, Sendable {
    public let id: GroupID
    @Nullable public var name: String?
    public let open: Bool
    public let network: Bool
    public let members: Int
    public let admin: Bool
    /// This node's log key in the group: the author of its records there.
    public let log: AuthorID

    public init(_ group: GroupSummary) {
        id = group.id
        name = group.name
        open = group.open
        network = group.network
        members = group.members
        admin = group.admin
        log = group.log
    }
}

/// A member of a group, or one removed from it (`group members --json`, `GET /api/groups/{id}/members`).
public struct MemberJSON: Encodable, Sendable {
    public let log: AuthorID
    public let node: NodeID
    @Nullable public var name: String?
    public let admin: Bool
    public let removed: Bool
    /// For a removed member: the last record of its log that is kept.
    @Nullable public var keptThrough: UInt64?
    public let me: Bool

    public init(_ member: MemberSummary) {
        log = member.log
        node = member.node
        name = member.name
        admin = member.admin
        removed = member.removedThrough != nil
        keptThrough = member.removedThrough
        me = member.isMe
    }
}

/// An invite (`invite --json`, `POST /api/groups/{id}/invites`).
public struct InviteJSON: Encodable, Sendable {
    public let code: String
    public let group: GroupID
    @Nullable public var groupName: String?
    public let expiresAt: String
    public let host: String
    public let port: Int
    /// The API only: the inviting node's web page with `#invite=CODE`, which a phone's camera opens (it says what
    /// the code is for) and `join` takes as the code.
    public var url: String?
    /// The API only: `url` as a QR code in SVG.
    public var qrSvg: String?

    public init(code: InviteCode, group: GroupID, groupName: String?, expiresAt: Timestamp, url: String? = nil) {
        self.code = code.text
        self.group = group
        self.groupName = groupName
        self.expiresAt = expiresAt.rfc3339
        host = code.host ?? ""
        port = code.port ?? 0
        self.url = url
        qrSvg = url.flatMap { try? QRCode(encoding: $0) }?.svg()
    }
}

/// A node that asked to join (`requests --json`, `GET /api/requests`).
public struct JoinRequestJSON: Encodable, Sendable {
    public let node: NodeID
    @Nullable public var name: String?
    public let host: String
    public let port: Int
    public let firstAskedAt: String
    public let askedAt: String
    @Nullable public var deniedAt: String?

    public init(_ request: JoinRequest) {
        node = request.node
        name = request.name
        host = request.host
        port = request.port
        firstAskedAt = request.firstAskedAt.rfc3339
        askedAt = request.askedAt.rfc3339
        deniedAt = request.deniedAt?.rfc3339
    }
}

/// An author this node blocked (`blocked --json`, `GET /api/blocked`).
public struct BlockedJSON: Encodable, Sendable {
    public let author: AuthorID
    @Nullable public var node: NodeID?
    @Nullable public var name: String?
    public let blockedAt: String

    public init(_ blocked: BlockedAuthor) {
        author = blocked.author
        node = blocked.node
        name = blocked.name
        blockedAt = blocked.blockedAt.rfc3339
    }
}

/// What blocking or unblocking did (`block --json`, `PUT`/`DELETE /api/authors/{id}/block`).
public struct BlockJSON: Encodable, Sendable {
    public let author: AuthorID
    public let blocked: Bool
    public let erasedPosts: Int
    public let erasedComments: Int

    public init(author: AuthorID, blocked: Bool, erasedPosts: Int = 0, erasedComments: Int = 0) {
        self.author = author
        self.blocked = blocked
        self.erasedPosts = erasedPosts
        self.erasedComments = erasedComments
    }
}

/// A request to join let in (`approve --json`, `POST /api/requests/{node}/approve`): the group, the node, and the
/// Membership record that admits it.
public struct ApprovedJSON: Encodable, Sendable {
    public let group: GroupID
    public let node: NodeID
    public let record: RecordID

    public init(group: GroupID, node: NodeID, record: RecordID) {
        self.group = group
        self.node = node
        self.record = record
    }
}

/// A request to join refused (`deny --json`, `POST /api/requests/{node}/deny`); `denied` is always true.
public struct DeniedJSON: Encodable, Sendable {
    public let node: NodeID
    public let denied: Bool

    public init(node: NodeID) {
        self.node = node
        denied = true
    }
}

/// A member removed from a group (`revoke --json`, `DELETE /api/groups/{group}/members/{member}`): its log key,
/// node and name, and the record that removes it.
public struct RevokedJSON: Encodable, Sendable {
    public let group: GroupID
    public let log: AuthorID
    public let node: NodeID
    @Nullable public var name: String?
    public let record: RecordID

    public init(group: GroupID, member: MemberSummary, record: RecordID) {
        self.group = group
        log = member.log
        node = member.node
        name = member.name
        self.record = record
    }
}

/// A link code (`device link --json`, `POST /api/devices/link`).
public struct DeviceLinkJSON: Encodable, Sendable {
    public let code: String
    public let account: AccountID
    public let expiresAt: String
    public let host: String
    public let port: Int
    /// The code as a QR code in SVG (the API only): its text is the code.
    public var qrSvg: String?

    public init(code: InviteCode, account: AccountID, expiresAt: Timestamp, qr: Bool = false) {
        self.code = code.text
        self.account = account
        self.expiresAt = expiresAt.rfc3339
        host = code.host ?? ""
        port = code.port ?? 0
        qrSvg = qr ? (try? QRCode(encoding: code.text))?.svg() : nil
    }
}

extension LinkTicket {
    /// The code a new device types or scans: this node's id prefix, the secret, and where the new device dials.
    public func code(of identity: NodeIdentity, host: String, port: Int) -> InviteCode {
        InviteCode(
            nodePrefix: Data(identity.node.bytes.prefix(InviteCode.nodePrefixBytes)),
            secret: secret,
            host: host,
            port: port,
            isLink: true
        )
    }
}

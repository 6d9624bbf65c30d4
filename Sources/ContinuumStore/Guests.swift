import ContinuumCore
import Foundation
import GRDB

/// A guest link this node made: the secret goes into the link's address; the id names it.
public struct GuestLinkTicket: Sendable, Hashable {
    public let id: Data
    public let secret: Data
    public let group: GroupID
    public let expiresAt: Timestamp
}

/// A guest link as the owner lists it.
public struct GuestLinkSummary: Sendable, Hashable {
    public let id: Data
    public let group: GroupID
    public let groupName: String?
    public let createdAt: Timestamp
    public let expiresAt: Timestamp
    /// Closed by the owner (it then admits nobody); an expired link is not closed, only past its time.
    public let closed: Bool
    public let guests: Int
}

/// A guest this node let in.
public struct GuestSummary: Sendable, Hashable {
    public enum State: Int, Sendable, Hashable {
        case active = 0
        case removed = 1
        case blocked = 2

        /// `active`, `removed` or `blocked`, as the API and the CLI say it.
        public var name: String {
            switch self {
            case .active: "active"
            case .removed: "removed"
            case .blocked: "blocked"
            }
        }
    }

    /// The guest's browser: its device key, which founded its account.
    public let device: AuthorID
    /// The account the browser founded; nil until its founding record is held (never, for a guest let in here).
    public let account: AccountID?
    public let group: GroupID
    public let groupName: String?
    /// Its log in the group: the author of what it writes there.
    public let log: AuthorID
    /// The name it chose (its profile's, once it signed one).
    public let name: String
    public let joinedAt: Timestamp
    public let state: State
    public let posts: Int
}

/// Guests (Docs/API.md, "Guests"): an admin opens a group to guests with a link; a guest's browser makes its own
/// device key, founds its own account with it and a log key for the group, and this node's log in the group signs
/// the member record that adds that log, naming the browser's key as its node (PROTOCOL.md §5.1). The guest then
/// signs its records itself, as a linked phone does; its session is scoped to that group.
extension ContinuumStore {
    /// The most guests one link admits.
    public static let guestsPerLink = 500

    /// A new guest link to `group`, valid for `lifetime`; this node must be an admin there (a network group has none).
    public func newGuestLink(
        to group: GroupID,
        lifetime: Duration,
        by identity: NodeIdentity
    ) async throws
        -> GuestLinkTicket
    {
        let now = Timestamp.now()
        let expires = Timestamp(milliseconds: now.milliseconds + lifetime.components.seconds * 1000)
        let secret = Self.newSecret()
        let ticket = GuestLinkTicket(
            id: Data(InviteCode.id(of: secret)),
            secret: secret,
            group: group,
            expiresAt: expires
        )
        try await write { db in
            guard try Self.isAdmin(of: group, db) else {
                throw StoreError(.notOwner, "only an admin of the group can open it to guests; this node is not one")
            }
            try db.execute(
                sql: "INSERT INTO guest_link (id, secret, group_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
                arguments: [ticket.id, secret, group.bytes, now.milliseconds, expires.milliseconds]
            )
        }
        return ticket
    }

    /// The group a guest link opens, and its name; throws `.notMember` with the reason when the link is unknown,
    /// closed, expired or full, or `proves` does not match its secret.
    public func guestLinkGroup(
        id: Data,
        proves: @escaping @Sendable (Data) -> Bool
    ) async throws
        -> (group: GroupID, name: String?)
    {
        let now = Timestamp.now().milliseconds
        return try await read { db in
            let group = try Self.usableGuestLink(id, proves: proves, now: now, db)
            let name = try String.fetchOne(db, sql: "SELECT name FROM grp WHERE id = ?", arguments: [group.bytes])
            return (group, name)
        }
    }

    /// Lets a guest in with the link `id`: stores its founding record (kind 8, sequence 1, signed by `founding`'s
    /// author, its browser's device key) and signs, with this node's log in the group, the add of `log` with the
    /// device as its node. All or nothing. Returns the group and the add.
    public func admitGuest(
        link id: Data,
        proves: @escaping @Sendable (Data) -> Bool,
        founding: VerifiedRecord,
        log: AuthorID,
        name: String,
        by identity: NodeIdentity
    ) async throws -> (group: GroupID, add: VerifiedRecord) {
        let now = Timestamp.now().milliseconds
        let device = founding.header.author
        return try await write { db in
            let group = try Self.usableGuestLink(id, proves: proves, now: now, db)
            guard try Self.isAdmin(of: group, db) else {
                throw StoreError(.notMember, "this node is no longer an admin of the link's group")
            }
            let known = try Bool.fetchOne(
                db,
                sql:
                    "SELECT 1 FROM guest WHERE device = ?1 OR log = ?2 UNION ALL SELECT 1 FROM log_head WHERE author = ?1",
                arguments: [device.bytes, log.bytes]
            )
            guard known != true else {
                throw StoreError(.notMember, "this browser's keys are already known here; it needs new ones to join")
            }
            var ingest = Ingest(db: db, now: now)
            if case .rejected(let error) = try ingest.one(founding, local: true) {
                throw StoreError(.invalidRecord, error.message)
            }
            try ingest.finish()
            try db.execute(
                sql: "INSERT INTO guest (device, group_id, log, link, name, joined_at) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [device.bytes, group.bytes, log.bytes, id, name, now]
            )
            let add = try Self.signAdd(
                node: NodeID(unchecked: device.bytes),
                log: log,
                to: group,
                now: now,
                by: identity,
                db
            )
            return (group, add)
        }
    }

    /// Throws `.notMember` unless the guest link exists, is open, has not expired, has room, and `proves` its
    /// secret. Returns its group.
    private static func usableGuestLink(
        _ id: Data,
        proves: @Sendable (Data) -> Bool,
        now: Int64,
        _ db: Database
    )
        throws -> GroupID
    {
        guard
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT secret, group_id, expires_at, closed_at,
                        (SELECT count(*) FROM guest WHERE guest.link = guest_link.id) AS guests
                    FROM guest_link WHERE id = ?
                    """,
                arguments: [id]
            ), proves(row["secret"])
        else { throw StoreError(.notMember, "this guest link is not known to this node") }
        guard (row["closed_at"] as Int64?) == nil else {
            throw StoreError(.notMember, "this guest link was closed by the node's owner")
        }
        guard (row["expires_at"] as Int64) > now else {
            throw StoreError(.notMember, "this guest link has expired; ask the node's owner for a new one")
        }
        guard (row["guests"] as Int) < guestsPerLink else {
            throw StoreError(.notMember, "this guest link has let in \(guestsPerLink) guests, its most")
        }
        return GroupID(unchecked: row["group_id"])
    }

    /// The guest whose browser holds `device`, with its state; nil when it is none.
    public func guest(_ device: AuthorID) async throws -> GuestSummary? {
        try await guests(device: device).first
    }

    /// The guests this node let in, newest first (`device`: that one alone).
    public func guests(device: AuthorID? = nil) async throws -> [GuestSummary] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT g.device, g.group_id,
                        -- Removed here, or out of the group by any member record, or blocked by any route: not active.
                        CASE WHEN g.removed != 0 THEN g.removed
                            WHEN EXISTS (SELECT 1 FROM blocked b WHERE b.author = g.log OR b.node = g.device) THEN 2
                            WHEN NOT EXISTS (SELECT 1 FROM member m WHERE m.log = g.log AND m.removed_through IS NULL)
                                THEN 1
                            ELSE 0 END AS state,
                        (SELECT account FROM account_device d WHERE d.device = g.device) AS account, grp.name AS group_name, g.log, g.joined_at,
                        coalesce((SELECT p.name FROM profile p WHERE p.author = g.log), g.name) AS name,
                        (SELECT count(*) FROM post WHERE post.author = g.log AND post.deleted = 0) AS posts
                    FROM guest g LEFT JOIN grp ON grp.id = g.group_id
                    WHERE ?1 IS NULL OR g.device = ?1
                    ORDER BY g.joined_at DESC, g.device
                    """,
                arguments: [device?.bytes]
            ).map { row in
                GuestSummary(
                    device: AuthorID(unchecked: row["device"]),
                    account: (row["account"] as Data?).map { AccountID(unchecked: $0) },
                    group: GroupID(unchecked: row["group_id"]),
                    groupName: row["group_name"],
                    log: AuthorID(unchecked: row["log"]),
                    name: row["name"],
                    joinedAt: Timestamp(milliseconds: row["joined_at"]),
                    state: GuestSummary.State(rawValue: row["state"]) ?? .removed,
                    posts: row["posts"]
                )
            }
        }
    }

    /// The guest links this node made, newest first.
    public func guestLinks() async throws -> [GuestLinkSummary] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT l.id, l.group_id, grp.name AS group_name, l.created_at, l.expires_at, l.closed_at,
                        (SELECT count(*) FROM guest WHERE guest.link = l.id) AS guests
                    FROM guest_link l LEFT JOIN grp ON grp.id = l.group_id
                    ORDER BY l.created_at DESC, l.id
                    """
            ).map { row in
                GuestLinkSummary(
                    id: row["id"],
                    group: GroupID(unchecked: row["group_id"]),
                    groupName: row["group_name"],
                    createdAt: Timestamp(milliseconds: row["created_at"]),
                    expiresAt: Timestamp(milliseconds: row["expires_at"]),
                    closed: (row["closed_at"] as Int64?) != nil,
                    guests: row["guests"]
                )
            }
        }
    }

    /// Closes the open guest links of `group` (every group's when nil): they admit nobody from now on; the guests
    /// already in stay. Returns how many were closed.
    public func closeGuestLinks(of group: GroupID?) async throws -> Int {
        let now = Timestamp.now().milliseconds
        return try await write { db in
            try db.execute(
                sql: "UPDATE guest_link SET closed_at = ?1 WHERE closed_at IS NULL AND (?2 IS NULL OR group_id = ?2)",
                arguments: [now, group?.bytes]
            )
            return db.changesCount
        }
    }

    /// Removes a guest: this node serves it no more from now on, whatever follows; this node's admin log signs its
    /// removal from the group (keeping what it wrote so far) when it still can; with `block`, it is blocked on this
    /// node too (what it wrote is erased here). Its browser's session ends at its next request.
    public func removeGuest(_ device: AuthorID, block: Bool, by identity: NodeIdentity) async throws -> GuestSummary {
        guard let guest = try await guest(device) else {
            throw StoreError(.notFound, "no guest has device key \(device.short)")
        }
        let state: GuestSummary.State = block ? .blocked : .removed
        let live = try await write { db in
            try db.execute(
                sql: "UPDATE guest SET removed = max(removed, ?) WHERE device = ?",
                arguments: [state.rawValue, device.bytes]
            )
            return try Bool.fetchOne(
                db,
                sql: "SELECT 1 FROM member WHERE log = ? AND removed_through IS NULL",
                arguments: [guest.log.bytes]
            ) == true
        }
        if live { _ = try await removeMember(guest.log, by: identity) }
        if block, guest.state != .blocked { _ = try await self.block(guest.log, by: identity) }
        return try await self.guest(device) ?? guest
    }
}

import ContinuumCore
import Crypto
import Foundation
import GRDB

/// A group this node knows, as `groups` lists it.
public struct GroupSummary: Sendable, Hashable {
    public let id: GroupID
    /// Nil until its group record arrives (a node that joined by invite), or when it was erased.
    public let name: String?
    public let open: Bool
    /// A network group (`--network`): no founder, no admin.
    public let network: Bool
    /// Members now (removed logs not counted).
    public let members: Int
    /// This node's log key in the group.
    public let log: AuthorID
    /// Whether this node is an admin of it.
    public let admin: Bool
}

/// One log of a group, as `members` lists it.
public struct MemberSummary: Sendable, Hashable {
    public let log: AuthorID
    public let node: NodeID
    public let name: String?
    public let admin: Bool
    /// Nil for a member; the last sequence kept of a removed one.
    public let removedThrough: UInt64?
    public let isMe: Bool
}

/// An open group as discovery announces it: its id and name (the name until its group record arrives).
public struct AnnouncedGroupRef: Sendable, Hashable {
    public let id: GroupID
    public let name: String

    public init(id: GroupID, name: String) {
        self.id = id
        self.name = name
    }
}

extension ContinuumStore {
    // MARK: Reading

    /// Who belongs to which group.
    ///
    /// This node's own logs are in it from the moment it joins (`node` is this node's id): before the record that
    /// adds it arrives, a joiner still offers its own log (its name) to the group.
    public func membershipView(node: NodeID? = nil) async throws -> MembershipView {
        try await read { db in
            var groups: [GroupID: MembershipView.Group] = [:]
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT grp.id, grp.name, grp.open, grp.network, log_key.public AS log FROM grp
                    JOIN log_key ON log_key.group_id = grp.id
                    LEFT JOIN member ON member.log = log_key.public
                    WHERE member.removed_through IS NULL
                    """
            ) {
                let id = GroupID(unchecked: row["id"])
                groups[id] = MembershipView.Group(
                    id: id,
                    name: row["name"],
                    open: (row["open"] as Int64) != 0,
                    network: (row["network"] as Int64) != 0,
                    log: AuthorID(unchecked: row["log"])
                )
            }
            var logs: [AuthorID: MembershipView.Log] = [:]
            for row in try Row.fetchAll(
                db,
                sql: "SELECT log, group_id, node, admin, was_admin, removed_through FROM member"
            ) {
                logs[AuthorID(unchecked: row["log"])] = MembershipView.Log(
                    group: GroupID(unchecked: row["group_id"]),
                    node: NodeID(unchecked: row["node"]),
                    admin: (row["admin"] as Int64) != 0,
                    wasAdmin: (row["was_admin"] as Int64) != 0,
                    removedThrough: (row["removed_through"] as Int64?).map { UInt64($0) }
                )
            }
            if let node {
                for group in groups.values where logs[group.log] == nil {
                    logs[group.log] = MembershipView.Log(group: group.id, node: node, admin: false, removedThrough: nil)
                }
            }
            var devices: [NodeID: Set<AccountID>] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT device, account FROM account_device WHERE removed = 0") {
                devices[NodeID(unchecked: row["device"]), default: []].insert(AccountID(unchecked: row["account"]))
            }
            var recoveries: [NodeID: AccountID] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT recovery, id FROM account WHERE recovery IS NOT NULL") {
                recoveries[NodeID(unchecked: row["recovery"])] = AccountID(unchecked: row["id"])
            }
            return MembershipView(groups: groups, logs: logs, devices: devices, recoveries: recoveries)
        }
    }

    /// The groups this node belongs to, by name.
    public func groups() async throws -> [GroupSummary] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT grp.id, grp.name, grp.open, grp.network, log_key.public AS log,
                        coalesce(me.admin, 0) AS admin,
                        (SELECT count(*) FROM member m WHERE m.group_id = grp.id AND m.removed_through IS NULL)
                            AS members
                    FROM grp JOIN log_key ON log_key.group_id = grp.id
                    LEFT JOIN member me ON me.log = log_key.public
                    WHERE me.removed_through IS NULL
                    ORDER BY grp.name, grp.id
                    """
            ).map { row in
                GroupSummary(
                    id: GroupID(unchecked: row["id"]),
                    name: row["name"],
                    open: (row["open"] as Int64) != 0,
                    network: (row["network"] as Int64) != 0,
                    members: row["members"],
                    log: AuthorID(unchecked: row["log"]),
                    admin: (row["admin"] as Int64) != 0
                )
            }
        }
    }

    /// The logs of a group, members first, with their names.
    public func members(of group: GroupID) async throws -> [MemberSummary] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT member.log, member.node, member.admin, member.removed_through, profile.name,
                        EXISTS (SELECT 1 FROM log_key WHERE log_key.public = member.log) AS me
                    FROM member LEFT JOIN profile ON profile.author = member.log
                    WHERE member.group_id = ?
                    ORDER BY member.removed_through IS NOT NULL, member.admin DESC, profile.name, member.log
                    """,
                arguments: [group.bytes]
            ).map { row in
                MemberSummary(
                    log: AuthorID(unchecked: row["log"]),
                    node: NodeID(unchecked: row["node"]),
                    name: row["name"],
                    admin: (row["admin"] as Int64) != 0,
                    removedThrough: (row["removed_through"] as Int64?).map { UInt64($0) },
                    isMe: (row["me"] as Int64) != 0
                )
            }
        }
    }

    /// The group a post belongs to (its author's), if the post and its author's membership are held.
    public func group(ofPost post: PostID) async throws -> GroupID? {
        try await read { db in
            try Data.fetchOne(
                db,
                sql: "SELECT member.group_id FROM post JOIN member ON member.log = post.author WHERE post.id = ?",
                arguments: [post.bytes]
            ).map { GroupID(unchecked: $0) }
        }
    }

    /// The group of a log, if known here.
    public func group(ofLog log: AuthorID) async throws -> GroupID? {
        try await read { db in
            if let id = try Data.fetchOne(db, sql: "SELECT group_id FROM member WHERE log = ?", arguments: [log.bytes])
            {
                return GroupID(unchecked: id)
            }
            return try Data.fetchOne(db, sql: "SELECT group_id FROM log_key WHERE public = ?", arguments: [log.bytes])
                .map { GroupID(unchecked: $0) }
        }
    }

    /// This node's signing identity in `group`: its log key there. Throws `.notMember` when it has none.
    public func logIdentity(in group: GroupID, of identity: NodeIdentity) async throws -> NodeIdentity {
        let salt = try await read { db in
            try Data.fetchOne(
                db,
                sql: """
                    SELECT log_key.salt FROM log_key LEFT JOIN member ON member.log = log_key.public
                    WHERE log_key.group_id = ? AND member.removed_through IS NULL
                    """,
                arguments: [group.bytes]
            )
        }
        guard let salt else {
            throw StoreError(.notMember, "this node is not a member of group \(group.short)")
        }
        return identity.logKey(salt: salt)
    }

    // MARK: Writing

    /// Founds a group: a new log key, whose first record is the group record (then the node's name, if it has one).
    public func createGroup(name: String, open: Bool, by identity: NodeIdentity) async throws -> GroupID {
        let founding = GroupFounding(node: identity.node, name: name, open: open)
        try Self.check(.group(founding))
        let displayName = try await displayName(of: identity.author)
        let now = Timestamp.now().milliseconds
        return try await write { db in
            let (salt, log) = Self.newLogKey(identity)
            let group = GroupID(founder: log.author)
            try db.execute(
                sql: "INSERT INTO log_key (public, salt, group_id, created_at) VALUES (?, ?, ?, ?)",
                arguments: [log.author.bytes, salt, group.bytes, now]
            )
            var ingest = Ingest(db: db, now: now)
            _ = try ingest.signAndStore(.group(founding), by: log)
            if let displayName { _ = try ingest.signAndStore(.profile(name: displayName), by: log) }
            try Self.declareOwnLogs(by: identity, &ingest)
            try ingest.finish()
            return group
        }
    }

    /// Joins a network group (`--network NAME`, `--network-key FILE`): records it, and, the first time, adds a new log
    /// key of this node's to it (a self-add) and writes the node's name there. Returns whether it was new.
    @discardableResult
    public func joinNetwork(_ group: GroupID, name: String, by identity: NodeIdentity) async throws -> Bool {
        try await selfAdd(to: group, name: name, network: true, by: identity)
    }

    /// Joins an open group announced on the LAN (`join NAME`, `run --join-open`): a new log key adds itself, which
    /// the group's rules allow in an open group. Its group record and history come by sync. Returns whether it was
    /// new.
    public func joinOpen(_ group: AnnouncedGroupRef, by identity: NodeIdentity) async throws -> Bool {
        try await selfAdd(to: group.id, name: group.name, network: false, by: identity)
    }

    private func selfAdd(
        to group: GroupID,
        name: String,
        network: Bool,
        by identity: NodeIdentity
    ) async throws
        -> Bool
    {
        let displayName = try await displayName(of: identity.author)
        let now = Timestamp.now().milliseconds
        return try await write { db in
            try db.execute(
                sql: "INSERT OR IGNORE INTO grp (id, name, open, network) VALUES (?, ?, 1, ?)",
                arguments: [group.bytes, name, network ? 1 : 0]
            )
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM log_key WHERE group_id = ?", arguments: [group.bytes])
                == true
            {
                return false
            }
            let (salt, log) = Self.newLogKey(identity)
            try db.execute(
                sql: "INSERT INTO log_key (public, salt, group_id, created_at) VALUES (?, ?, ?, ?)",
                arguments: [log.author.bytes, salt, group.bytes, now]
            )
            var ingest = Ingest(db: db, now: now)
            _ = try ingest.signAndStore(
                .member(MemberChange(group: group, action: .add, node: identity.node, log: log.author)),
                by: log
            )
            if let displayName { _ = try ingest.signAndStore(.profile(name: displayName), by: log) }
            try Self.declareOwnLogs(by: identity, &ingest)
            try ingest.finish()
            return true
        }
    }

    /// The log key for a join under way (its group is not known yet) made for `target` (an invite's id, or the
    /// address asked to let this node in): the one made for it before, if that join never completed, so that a
    /// join tried again after its answer was lost proves the same key; else a new one.
    public func beginJoin(by identity: NodeIdentity, for target: Data) async throws -> AuthorID {
        let now = Timestamp.now().milliseconds
        return try await write { db in
            if let waiting = try Data.fetchOne(
                db,
                sql: """
                    SELECT public FROM log_key WHERE group_id IS NULL AND pending_for = ?
                    ORDER BY created_at DESC LIMIT 1
                    """,
                arguments: [target]
            ) {
                return AuthorID(unchecked: waiting)
            }
            let (salt, log) = Self.newLogKey(identity)
            try db.execute(
                sql: "INSERT INTO log_key (public, salt, group_id, created_at, pending_for) VALUES (?, ?, NULL, ?, ?)",
                arguments: [log.author.bytes, salt, now, target]
            )
            return log.author
        }
    }

    /// A join was accepted: the log key belongs to `group`, which this node now knows (its group record and members
    /// come by sync). Writes the node's name in the new log.
    public func completeJoin(log: AuthorID, group: GroupID, by identity: NodeIdentity) async throws {
        let displayName = try await displayName(of: identity.author)
        let now = Timestamp.now().milliseconds
        try await write { db in
            guard
                let salt = try Data.fetchOne(
                    db,
                    sql: "SELECT salt FROM log_key WHERE public = ?",
                    arguments: [log.bytes]
                )
            else { throw StoreError(.notFound, "no join is under way with log key \(log.short)") }
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM log_key WHERE group_id = ?", arguments: [group.bytes]) == true
            {
                throw StoreError(.invalidInput, "this node is already in group \(group.short)")
            }
            try db.execute(sql: "INSERT OR IGNORE INTO grp (id) VALUES (?)", arguments: [group.bytes])
            try db.execute(
                sql: "UPDATE log_key SET group_id = ? WHERE public = ?",
                arguments: [group.bytes, log.bytes]
            )
            var ingest = Ingest(db: db, now: now)
            if let displayName {
                _ = try ingest.signAndStore(.profile(name: displayName), by: identity.logKey(salt: salt))
            }
            try Self.declareOwnLogs(by: identity, &ingest)
            try ingest.finish()
        }
    }

    /// Removes a member's log from its group: this node's admin log signs the removal, keeping what it holds of the
    /// removed log. Throws `.notOwner` when this node is not an admin there.
    public func removeMember(_ log: AuthorID, by identity: NodeIdentity) async throws -> VerifiedRecord {
        let now = Timestamp.now().milliseconds
        return try await write { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: "SELECT group_id, node, admin, removed_through FROM member WHERE log = ?",
                    arguments: [log.bytes]
                )
            else { throw StoreError(.notFound, "no member has log key \(log.short)") }
            let group = GroupID(unchecked: row["group_id"])
            guard (row["removed_through"] as Int64?) == nil else {
                throw StoreError(.invalidInput, "\(log.short) was already removed from the group")
            }
            guard log.bytes != group.bytes else {
                throw StoreError(.invalidInput, "the founder of a group cannot be removed")
            }
            guard try Self.isAdmin(of: group, db), let mine = try Self.liveLog(in: group, db) else {
                throw StoreError(.notOwner, "only an admin of the group can remove a member")
            }
            let salt = mine.salt
            if (row["admin"] as Int64) != 0, mine.log != group.bytes {
                throw StoreError(.notOwner, "only the founder of the group can remove an admin")
            }
            let held =
                try Int64.fetchOne(
                    db,
                    sql: "SELECT contiguous FROM log_head WHERE author = ?",
                    arguments: [log.bytes]
                ) ?? 0
            var ingest = Ingest(db: db, now: now)
            let record = try ingest.signAndStore(
                .member(
                    MemberChange(
                        group: group,
                        action: .remove,
                        node: NodeID(unchecked: row["node"]),
                        log: log,
                        through: UInt64(held)
                    )
                ),
                by: identity.logKey(salt: salt)
            )
            try ingest.finish()
            return record
        }
    }

    /// This node's log in `group` that is not removed: its key and salt.
    static func liveLog(in group: GroupID, _ db: Database) throws -> (log: Data, salt: Data)? {
        try Row.fetchOne(
            db,
            sql: """
                SELECT log_key.public, log_key.salt FROM log_key LEFT JOIN member ON member.log = log_key.public
                WHERE log_key.group_id = ? AND member.removed_through IS NULL
                ORDER BY log_key.created_at DESC LIMIT 1
                """,
            arguments: [group.bytes]
        ).map { ($0["public"], $0["salt"]) }
    }

    /// This node's signing identity for a log of its own (any group's, removed or not), or nil when `author` is not
    /// one of its log keys.
    public func ownLogIdentity(_ author: AuthorID, of identity: NodeIdentity) async throws -> NodeIdentity? {
        let salt = try await read { db in
            try Data.fetchOne(db, sql: "SELECT salt FROM log_key WHERE public = ?", arguments: [author.bytes])
        }
        return salt.map { identity.logKey(salt: $0) }
    }

    /// Whether this node has a log in `group` that is an admin and not removed.
    static func isAdmin(of group: GroupID, _ db: Database) throws -> Bool {
        try Bool.fetchOne(
            db,
            sql: """
                SELECT 1 FROM log_key JOIN member ON member.log = log_key.public
                WHERE log_key.group_id = ? AND member.admin = 1 AND member.removed_through IS NULL
                """,
            arguments: [group.bytes]
        ) == true
    }

    static func newLogKey(_ identity: NodeIdentity) -> (salt: Data, log: NodeIdentity) {
        var generator = SystemRandomNumberGenerator()
        let salt = Data((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        return (salt, identity.logKey(salt: salt))
    }
}

extension ContinuumStore {
    /// The header of this node's own membership record in `group`, which proves to a peer that it is a member: its
    /// group record (as the founder), else the record that added its log (an admin's before its own self-add).
    public func membershipProof(in group: GroupID) async throws -> [UInt8]? {
        try await read { db in
            guard let log = try Self.liveLog(in: group, db)?.log else { return nil }
            if log == group.bytes {
                return try Data.fetchOne(
                    db,
                    sql: "SELECT bytes FROM record WHERE author = ? AND seq = 1",
                    arguments: [log]
                ).map { Array($0) }
            }
            return try Data.fetchOne(
                db,
                sql: """
                    SELECT record.bytes FROM membership JOIN record ON record.id = membership.record_id
                    WHERE membership.group_id = ? AND membership.log = ? AND membership.action IN (1, 3)
                    ORDER BY membership.author = membership.log, membership.action
                    LIMIT 1
                    """,
                arguments: [group.bytes, log]
            ).map { Array($0) }
        }
    }

    /// Whether a live post by a log of one of `groups` shows the photo: what a peer that shares those groups may
    /// fetch.
    public func isPhotoShown(_ hash: AssetHash, inGroups groups: Set<GroupID>) async throws -> Bool {
        guard !groups.isEmpty else { return false }
        return try await read { db in try Self.isShown(hash, inGroups: groups, db) }
    }

    static func isShown(_ hash: AssetHash, inGroups groups: Set<GroupID>, _ db: Database) throws -> Bool {
        guard !groups.isEmpty else { return false }
        let marks = Array(repeating: "?", count: groups.count).joined(separator: ",")
        // Cached by its text: one statement for each number of groups, reused across a PHOTOS_WANT's photos.
        let statement = try db.cachedStatement(
            sql: """
                SELECT 1 FROM member WHERE member.group_id IN (\(marks)) AND member.log IN (
                    SELECT post.author FROM post WHERE post.photo_sha256 = ? AND post.deleted = 0
                    UNION SELECT post.author FROM edit JOIN post ON post.id = edit.post
                    WHERE edit.photo_sha256 = ? AND post.deleted = 0
                ) LIMIT 1
                """
        )
        return try Bool.fetchOne(
            statement,
            arguments: StatementArguments(groups.map(\.bytes) + [hash.bytes, hash.bytes])
        ) == true
    }
}

extension ContinuumStore {
    /// The groups of these posts, for those whose post and author's membership are held.
    public func groups(ofPosts posts: [PostID]) async throws -> [PostID: GroupID] {
        guard !posts.isEmpty else { return [:] }
        return try await read { db in
            var groups: [PostID: GroupID] = [:]
            // A few statements for a whole INTEREST (up to 4,096 posts), not one per post.
            for start in stride(from: 0, to: posts.count, by: 500) {
                let chunk = posts[start..<min(start + 500, posts.count)]
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                for row in try Row.fetchAll(
                    db,
                    sql: """
                        SELECT post.id, member.group_id FROM post JOIN member ON member.log = post.author
                        WHERE post.id IN (\(marks))
                        """,
                    arguments: StatementArguments(chunk.map(\.bytes))
                ) {
                    groups[PostID(unchecked: row["id"])] = GroupID(unchecked: row["group_id"])
                }
            }
            return groups
        }
    }
}

extension ContinuumStore {
    /// Whether `author` is this node: its node key, or one of its log keys.
    public func isOwn(_ author: AuthorID, node: NodeID) async throws -> Bool {
        if author.bytes == node.bytes { return true }
        return try await read { db in try Self.isOwn(author, db) }
    }

    /// Whether `author` is a log of this node's, or of its account (another device's: PROTOCOL.md §4.4).
    static func isOwn(_ author: AuthorID, _ db: Database) throws -> Bool {
        try Bool.fetchOne(
            db,
            sql: """
                SELECT 1 FROM log_key WHERE public = ?1
                    OR \(ownerSQL("log_key.public")) = (SELECT owner FROM log_owner WHERE log = ?1)
                LIMIT 1
                """,
            arguments: [author.bytes]
        ) == true
    }
}

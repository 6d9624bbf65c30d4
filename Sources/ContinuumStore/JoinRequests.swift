import ContinuumCore
import Foundation
import GRDB

/// A node that asked to join, as `requests` lists it.
public struct JoinRequest: Sendable, Hashable {
    public let node: NodeID
    /// The log key it asked to have added (its newest request's).
    public let log: AuthorID
    /// The name its HELLO gave, unchecked: a stranger chooses it.
    public let name: String?
    public let host: String
    public let port: Int
    public let firstAskedAt: Timestamp
    public let askedAt: Timestamp
    /// When an admin of this node denied it; nil while it waits.
    public let deniedAt: Timestamp?
}

extension ContinuumStore {
    /// At most this many requests are kept; a new one beyond it drops the one asked longest ago (a flood of strangers
    /// costs a table of bounded size, not the node).
    public static let maxJoinRequests = 100

    /// A node asks to join with a new log key: approved when a member record already adds that log (an admin
    /// approved it since), denied when an admin denied it, else recorded (or its time and log updated) to wait.
    public func askToJoin(
        node: NodeID,
        log: AuthorID,
        name: String?,
        host: String,
        port: Int
    ) async throws
        -> JoinRequestAnswer
    {
        let now = Timestamp.now().milliseconds
        return try await write { db in
            if let approved = try Self.approvedAdd(of: log, node: node, db) {
                try db.execute(sql: "DELETE FROM join_request WHERE node = ?", arguments: [node.bytes])
                return approved
            }
            if try Self.isDenied(node, db) {
                // Its newest key, so that an admin who approves it after all signs the key it asks with now.
                try db.execute(
                    sql: "UPDATE join_request SET asked_at = ?, host = ?, port = ?, log = ?, name = ? WHERE node = ?",
                    arguments: [now, host, port, log.bytes, name, node.bytes]
                )
                return .denied
            }
            guard try Self.adminGroups(db).isEmpty == false else { return .noAdmin }
            // Told once per node that waits (not again when it asks with a new key).
            let waiting = try Bool.fetchOne(
                db,
                sql: "SELECT 1 FROM join_request WHERE node = ?",
                arguments: [node.bytes]
            )
            try db.execute(
                sql: """
                    INSERT INTO join_request (node, log, name, host, port, first_asked_at, asked_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (node) DO UPDATE SET log = excluded.log, name = excluded.name, host = excluded.host,
                        port = excluded.port, asked_at = excluded.asked_at
                    """,
                arguments: [node.bytes, log.bytes, name, host, port, now, now]
            )
            try Self.dropJoinRequestsOverLimit(db)
            return .pending(first: waiting != true)
        }
    }

    /// The answer for a node whose log key a member record already adds (an admin approved it since it asked): the
    /// group and that record, preferring an admin's record to the log's own self-add. Nil when there is none, or the
    /// log was removed since.
    private static func approvedAdd(of log: AuthorID, node: NodeID, _ db: Database) throws -> JoinRequestAnswer? {
        try Row.fetchOne(
            db,
            sql: """
                SELECT membership.group_id, record.bytes FROM membership
                JOIN record ON record.id = membership.record_id
                JOIN member ON member.log = membership.log AND member.removed_through IS NULL
                WHERE membership.log = ? AND membership.node = ? AND membership.action = 1
                ORDER BY membership.author = membership.log
                LIMIT 1
                """,
            arguments: [log.bytes, node.bytes]
        ).map { .approved(group: GroupID(unchecked: $0["group_id"]), record: Array($0["bytes"] as Data)) }
    }

    /// Whether an admin of this node denied `node`'s request.
    private static func isDenied(_ node: NodeID, _ db: Database) throws -> Bool {
        try Bool.fetchOne(
            db,
            sql: "SELECT 1 FROM join_request WHERE node = ? AND denied_at IS NOT NULL",
            arguments: [node.bytes]
        ) == true
    }

    /// Keeps at most ``maxJoinRequests``: over the limit, the waiting requests asked least recently go first, denied
    /// ones only after them (a denied node must not clear its denial by flooding).
    private static func dropJoinRequestsOverLimit(_ db: Database) throws {
        try db.execute(
            sql: """
                DELETE FROM join_request WHERE node IN (
                    SELECT node FROM join_request ORDER BY denied_at IS NULL, asked_at DESC
                    LIMIT -1 OFFSET ?)
                """,
            arguments: [maxJoinRequests]
        )
    }

    /// The requests waiting for an admin (and, with `denied`, those denied too), the newest first.
    public func joinRequests(includingDenied denied: Bool = false) async throws -> [JoinRequest] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM join_request \(denied ? "" : "WHERE denied_at IS NULL")
                    ORDER BY asked_at DESC
                    """
            ).map { row in
                JoinRequest(
                    node: NodeID(unchecked: row["node"]),
                    log: AuthorID(unchecked: row["log"]),
                    name: row["name"],
                    host: row["host"],
                    port: row["port"],
                    firstAskedAt: Timestamp(milliseconds: row["first_asked_at"]),
                    askedAt: Timestamp(milliseconds: row["asked_at"]),
                    deniedAt: (row["denied_at"] as Int64?).map { Timestamp(milliseconds: $0) }
                )
            }
        }
    }

    /// Approves `node`'s request into `group` (this node must be its admin): signs the record that adds the log key
    /// it asked with. The asker learns it the next time it asks (it asks every few seconds while it waits).
    public func approveJoinRequest(
        _ node: NodeID,
        into group: GroupID,
        by identity: NodeIdentity
    ) async throws
        -> VerifiedRecord
    {
        let now = Timestamp.now().milliseconds
        return try await write { db in
            guard
                let log = try Data.fetchOne(
                    db,
                    sql: "SELECT log FROM join_request WHERE node = ?",
                    arguments: [node.bytes]
                )
            else { throw StoreError(.notFound, "no request to join from node \(node.short)") }
            guard try Self.adminGroups(db).contains(group), let mine = try Self.liveLog(in: group, db) else {
                throw StoreError(.notOwner, "only an admin of the group can approve a request into it")
            }
            let already = try Bool.fetchOne(
                db,
                sql: "SELECT 1 FROM member WHERE group_id = ? AND node = ? AND removed_through IS NULL",
                arguments: [group.bytes, node.bytes]
            )
            guard already != true else {
                throw StoreError(.invalidInput, "node \(node.short) is already a member of the group")
            }
            let known = try Bool.fetchOne(
                db,
                sql: "SELECT 1 FROM member WHERE log = ? UNION ALL SELECT 1 FROM log_head WHERE author = ? LIMIT 1",
                arguments: [log, log]
            )
            guard known != true else {
                throw StoreError(
                    .invalidInput,
                    "the log key node \(node.short) asked with is already in use; it must ask again"
                )
            }
            var ingest = Ingest(db: db, now: now)
            let record = try ingest.signAndStore(
                .member(MemberChange(group: group, action: .add, node: node, log: AuthorID(unchecked: log))),
                by: identity.logKey(salt: mine.salt)
            )
            try ingest.finish()
            // The asker finds the record by its log key the next time it asks (``askToJoin``).
            try db.execute(sql: "DELETE FROM join_request WHERE node = ?", arguments: [node.bytes])
            return record
        }
    }

    /// Denies `node`'s request: it is told so the next time it asks, and it stays denied (listed with
    /// `requests --all`) until an admin approves it after all.
    public func denyJoinRequest(_ node: NodeID) async throws {
        let now = Timestamp.now().milliseconds
        try await write { db in
            try db.execute(
                sql: "UPDATE join_request SET denied_at = ? WHERE node = ?",
                arguments: [now, node.bytes]
            )
            guard db.changesCount > 0 else { throw StoreError(.notFound, "no request to join from node \(node.short)") }
        }
    }

    /// The groups this node is an admin of and that take requests (not network groups, which have no admin).
    static func adminGroups(_ db: Database) throws -> Set<GroupID> {
        Set(
            try Data.fetchAll(
                db,
                sql: """
                    SELECT DISTINCT log_key.group_id FROM log_key
                    JOIN member ON member.log = log_key.public
                    JOIN grp ON grp.id = log_key.group_id
                    WHERE member.admin = 1 AND member.removed_through IS NULL AND grp.network = 0
                    """
            ).map { GroupID(unchecked: $0) }
        )
    }
}

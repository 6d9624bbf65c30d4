import ContinuumCore
import Foundation
import GRDB

// Ownership by account (PROTOCOL.md §4.4): the owner of a post or comment is its log's account when this node knows
// it (a log declared for an account, or the log of a device of one), else the log itself. Edits, deletes and hides
// count when their signer's owner is the target's (or, for a hide, the post's), so that any device of an account
// changes what another device of it posted.

/// The SQL of the owner of the log `log` (an SQL expression): its account in `log_owner`, else the log itself.
func ownerSQL(_ log: String) -> String {
    "coalesce((SELECT owner FROM log_owner WHERE log_owner.log = \(log)), \(log))"
}

extension Ingest {
    /// The owner of a log: its account, when this node knows one, else the log itself.
    static func owner(of log: Data, _ db: Database) throws -> Data {
        try Data.fetchOne(db.cachedStatement(sql: "SELECT owner FROM log_owner WHERE log = ?"), arguments: [log])
            ?? log
    }

    /// Whether two logs have one owner: the same log, or two logs of one account.
    static func sameOwner(_ one: Data, _ other: Data, _ db: Database) throws -> Bool {
        try one == other || owner(of: one, db) == owner(of: other, db)
    }

    /// When a record this node signs says it was made: `now`, except for an edit, which is dated after every edit of
    /// its post by the post's owner held here, so that it wins over them on every node (the newest edit wins,
    /// §4.4), even signed by a device whose clock is behind another's.
    static func signingTime(
        of body: RecordBody,
        at now: Timestamp,
        by author: AuthorID,
        _ db: Database
    ) throws
        -> Timestamp
    {
        guard case .edit(let post, _) = body,
            let newest = try Int64.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT max(record.created_at) FROM edit
                        JOIN record ON record.author = edit.author AND record.seq = edit.seq
                        WHERE edit.post = ?1 AND \(ownerSQL("edit.author")) = \(ownerSQL("?2"))
                        """
                ),
                arguments: [post.bytes, author.bytes]
            ),
            newest >= now.milliseconds
        else { return now }
        return Timestamp(milliseconds: min(newest + 1, Limits.latestTimestamp))
    }

    /// Derives the owners of a group's member logs again (after its members were): the account a declaration of the
    /// log by its node names (kind 11, signed by the node's key and the log's), when the node is or was a device of
    /// that account (what a removed device signed within its frontier stays its account's). Never the account of a
    /// node that a member record names alone: anyone can name any node in a self-add (Appendix A 26), but only the
    /// node can declare. Returns the logs whose owner changed.
    static func refreshOwners(of group: GroupID, _ db: Database) throws -> Set<Data> {
        let rows = try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT m.log,
                        (SELECT ld.account FROM log_declaration ld
                            JOIN account_device d ON d.device = ld.device AND d.account = ld.account
                            WHERE ld.log = m.log AND ld.device = m.node) AS owner,
                        (SELECT owner FROM log_owner o WHERE o.log = m.log) AS before
                    FROM member m WHERE m.group_id = ?
                    """
            ),
            arguments: [group.bytes]
        )
        var changed: Set<Data> = []
        for row in rows {
            let log: Data = row["log"]
            let owner: Data? = row["owner"]
            guard owner != row["before"] as Data? else { continue }
            changed.insert(log)
            if let owner {
                try db.cachedStatement(
                    sql:
                        "INSERT INTO log_owner (log, owner) VALUES (?, ?) ON CONFLICT (log) DO UPDATE SET owner = excluded.owner"
                ).execute(arguments: [log, owner])
            } else {
                try db.cachedStatement(sql: "DELETE FROM log_owner WHERE log = ?").execute(arguments: [log])
            }
        }
        return changed
    }

    /// Applies again what depends on the owners of `logs`, which just changed: the posts edited across logs (the
    /// edits that count may differ now), and the deletes by those logs or of their records, and the hides of comments
    /// on their posts (one may now erase its target).
    mutating func reapplyOwnership(of logs: Set<Data>) throws {
        guard !logs.isEmpty else { return }
        let marks = Array(repeating: "?", count: logs.count).joined(separator: ",")
        let list = Array(logs)
        let posts = try Data.fetchAll(
            db,
            sql: """
                SELECT DISTINCT e.post FROM edit e JOIN post p ON p.id = e.post
                WHERE e.author != p.author AND (e.author IN (\(marks)) OR p.author IN (\(marks)))
                """,
            arguments: StatementArguments(list + list)
        )
        for post in posts { try refreshPost(post) }
        let deletes = try Row.fetchAll(
            db,
            sql: """
                SELECT t.target, t.author FROM tombstone t
                WHERE t.author IN (\(marks))
                    OR EXISTS (SELECT 1 FROM post p WHERE p.id = t.target AND p.author IN (\(marks)))
                    OR EXISTS (SELECT 1 FROM comment c WHERE c.id = t.target AND c.author IN (\(marks)))
                    OR EXISTS (SELECT 1 FROM comment c JOIN post p ON p.id = c.post
                               WHERE c.id = t.target AND p.author IN (\(marks)))
                    OR EXISTS (SELECT 1 FROM opaque_record o WHERE o.id = t.target AND o.author IN (\(marks)))
                """,
            arguments: StatementArguments(list + list + list + list + list)
        )
        for delete in deletes {
            let target: Data = delete["target"]
            let author: Data = delete["author"]
            try erasePost(target, author: author)
            try eraseWhatGoesWith(post: target, deletedBy: author)
            try eraseComment(target, author: author)
            try eraseOpaque(target, author: author)
        }
    }
}

extension ContinuumStore {
    /// Whether two logs have one owner: the same log, or logs of one account (PROTOCOL.md §4.4).
    public func sameOwner(_ one: AuthorID, _ other: AuthorID) async throws -> Bool {
        try await read { db in try Ingest.sameOwner(one.bytes, other.bytes, db) }
    }
}

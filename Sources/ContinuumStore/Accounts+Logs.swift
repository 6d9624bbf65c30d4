import ContinuumCore
import Foundation
import GRDB

// Log declarations (PROTOCOL.md §2.10, kind 11) and the members they make (§5.1, members by account): a device of
// a member account writes in the account's groups with logs it declares, with no admin's record.

extension Ingest {
    /// A log declaration was stored: it is noted (of two for one log, the smaller record id counts, in any order),
    /// and the members of its group are derived again before the next record is judged.
    mutating func applyLogDeclaration(
        account: AccountID,
        group: GroupID,
        log: AuthorID,
        device: AuthorID,
        id: RecordID
    ) throws {
        if let earlier = try Data.fetchOne(
            db.cachedStatement(sql: "SELECT group_id FROM log_declaration WHERE log = ?"),
            arguments: [log.bytes]
        ) {
            touchedGroups.insert(GroupID(unchecked: earlier))
        }
        try db.cachedStatement(
            sql: """
                INSERT INTO log_declaration (log, record, group_id, account, device) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (log) DO UPDATE SET record = excluded.record, group_id = excluded.group_id,
                    account = excluded.account, device = excluded.device
                WHERE excluded.record < log_declaration.record
                """
        ).execute(arguments: [log.bytes, id.bytes, group.bytes, account.bytes, device.bytes])
        touchedGroups.insert(group)
    }

    /// The groups in which `account`'s devices declared logs, or have member logs: their members and owners follow
    /// the account's devices.
    static func groupsOfDevices(of account: AccountID, _ db: Database) throws -> [GroupID] {
        try Data.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT group_id FROM log_declaration WHERE account = ?1
                    UNION SELECT member.group_id FROM member JOIN account_device d ON d.device = member.node
                    WHERE d.account = ?1
                    """
            ),
            arguments: [account.bytes]
        ).map { GroupID(unchecked: $0) }
    }

    /// The declared logs of `group` that are members (§5.1, members by account): each declared by a device of its
    /// account (a removed one's too: its removal's frontier then bounds the log, ``applyCuts(in:_:)``), whose account
    /// has a device, removed or not, that is the node of a member log in `memberNodes` (the group's members by its
    /// member records). Logs those records place already are left out.
    static func declaredMembers(
        of group: GroupID,
        memberNodes: Set<NodeID>,
        placed: Set<AuthorID>,
        _ db: Database
    ) throws -> [(log: AuthorID, device: NodeID)] {
        let rows = try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT d.log, d.device, d.account FROM log_declaration d
                    JOIN account_device a ON a.device = d.device AND a.account = d.account
                    WHERE d.group_id = ?
                    """
            ),
            arguments: [group.bytes]
        )
        var memberAccounts: [Data: Bool] = [:]
        var members: [(log: AuthorID, device: NodeID)] = []
        for row in rows {
            let log = AuthorID(unchecked: row["log"])
            guard !placed.contains(log) else { continue }
            let account: Data = row["account"]
            if memberAccounts[account] == nil {
                let devices = try Data.fetchAll(
                    db.cachedStatement(sql: "SELECT device FROM account_device WHERE account = ?"),
                    arguments: [account]
                )
                memberAccounts[account] = devices.contains { memberNodes.contains(NodeID(unchecked: $0)) }
            }
            if memberAccounts[account] == true { members.append((log, NodeID(unchecked: row["device"]))) }
        }
        return members
    }

    /// Bounds the logs of removed devices in `group` (§2.10): a log whose node is a device removed from an account,
    /// and a device of none, keeps what every counting removal keeps (``writeCuts(of:_:_:)``), nothing when one does
    /// not list it; a removal by the group's rules (§5.1) that keeps less stands.
    static func applyCuts(in group: GroupID, _ db: Database) throws {
        guard try db.tableExists("device_cut") else { return }
        try db.cachedStatement(
            sql: """
                UPDATE member SET removed_through = min(coalesce(removed_through, 9007199254740991),
                    coalesce((SELECT min(c.through) FROM device_cut c WHERE c.device = member.node AND c.log = member.log), 0))
                WHERE group_id = ?1
                    AND EXISTS (SELECT 1 FROM account_device d WHERE d.device = member.node AND d.removed = 1)
                    AND NOT EXISTS (SELECT 1 FROM account_device d WHERE d.device = member.node AND d.removed = 0)
                """
        ).execute(arguments: [group.bytes])
    }

    /// Notes the log declarations held (migration v15: records of kind 11 stored before the store applied them).
    static func indexLogDeclarations(_ db: Database) throws {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT r.bytes, r.content FROM opaque_record o JOIN record r ON r.author = o.author AND r.seq = o.seq
                WHERE o.code = 11
                """
        )
        var ingest = Ingest(db: db, now: 0)
        for row in rows {
            // As in deriveAccount: a stored record that no longer decodes counts as not held.
            guard let record = row.storedRecord, let body = record.body,
                let parsed = AccountRecord(body, author: record.author)
            else { continue }
            try ingest.applyAccountRecord(parsed, id: record.id, author: record.author)
        }
        try ingest.settleMembers()
    }
}

extension ContinuumStore {
    /// Declares, for this node's account, each of its group logs that no declaration of its names yet (PROTOCOL.md
    /// §2.10, kind 11): what makes a log its account's on every node (an owner is never taken from a node a member
    /// record names alone, which anyone can name). Does nothing while the node has no account. Returns how many.
    @discardableResult
    public func declareOwnLogs(by identity: NodeIdentity) async throws -> Int {
        let now = Timestamp.now().milliseconds
        return try await write { db in
            var ingest = Ingest(db: db, now: now)
            let count = try Self.declareOwnLogs(by: identity, &ingest)
            try ingest.finish()
            return count
        }
    }

    /// ``declareOwnLogs(by:)`` inside a write transaction.
    @discardableResult
    static func declareOwnLogs(by identity: NodeIdentity, _ ingest: inout Ingest) throws -> Int {
        let db = ingest.db
        guard let account = try account(of: identity.author, db)?.account,
            try db.tableExists("log_declaration")
        else { return 0 }
        let logs = try Row.fetchAll(
            db,
            sql: """
                SELECT public, salt, group_id FROM log_key WHERE group_id IS NOT NULL
                    AND NOT EXISTS (SELECT 1 FROM log_declaration d WHERE d.log = log_key.public AND d.device = ?)
                ORDER BY created_at, public
                """,
            arguments: [identity.author.bytes]
        )
        for row in logs {
            let group = GroupID(unchecked: row["group_id"])
            let log = identity.logKey(salt: row["salt"] as Data)
            let signature = try log.declaration(account: account, group: group, device: identity.author)
            let declaration = AccountRecord.logDeclaration(
                account: account,
                group: group,
                log: log.author,
                signature: signature
            )
            _ = try ingest.signAndStore(declaration.body, by: identity)
        }
        return logs.count
    }
}

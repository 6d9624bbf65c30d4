import ContinuumCore
import Foundation
import GRDB

// Groups inside the ingest transaction: the member set derived from the group's records (PROTOCOL.md §5.1). Which
// records a peer may add is the sync layer's to decide (its sessions' scopes); the store keeps what it is given.

extension Ingest {
    /// A group or member record was stored: the group's tables, then its member set again.
    mutating func applyGroupRecord(_ header: RecordHeader, _ body: RecordBody?, id: RecordID) throws {
        switch header.references {
        case .group(let node, let open):
            var name: String?
            if case .group(let founding) = body { name = founding.name }
            try db.execute(
                sql: """
                    INSERT INTO grp (id, node, name, open) VALUES (?, ?, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET node = excluded.node, name = coalesce(excluded.name, grp.name),
                        open = excluded.open
                    """,
                arguments: [header.author.bytes, node.bytes, name, open ? 1 : 0]
            )
            touchedGroups.insert(GroupID(founder: header.author))
        case .member(let change):
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO membership (record_id, group_id, author, seq, action, node, log, through)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    id.bytes, change.group.bytes, header.author.bytes, Int64(header.sequence),
                    Int64(change.action.rawValue), change.node.bytes, change.log.bytes, Int64(change.through),
                ]
            )
            touchedGroups.insert(change.group)
        default:
            break
        }
    }

    /// Derives the members of the groups whose member records changed since, so that the next record is judged with
    /// them: which group its log is in, whether this node blocks it.
    mutating func settleMembers() throws {
        guard !touchedGroups.isEmpty else { return }
        var owners: Set<Data> = []
        for group in touchedGroups.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) }) {
            owners.formUnion(try Self.refreshMembers(of: group, db))
        }
        touchedGroups = []
        blockedLogs = nil
        // What depends on the owners that changed is applied again (in any order of arrival, the same outcome).
        try reapplyOwnership(of: owners)
    }

    /// Derives a group's logs from its records with ``GroupRules``, and writes them to `member`; then their owners.
    /// Returns the logs whose owner changed.
    @discardableResult
    static func refreshMembers(of group: GroupID, _ db: Database) throws -> Set<Data> {
        guard
            let row = try Row.fetchOne(
                db,
                sql: "SELECT node, open, network FROM grp WHERE id = ?",
                arguments: [group.bytes]
            )
        else { return [] }
        let origin: GroupRules.Origin
        if (row["network"] as Int64) != 0 {
            origin = .network
        } else if let node = row["node"] as Data? {
            origin = .founded(node: NodeID(unchecked: node), open: (row["open"] as Int64) != 0)
        } else {
            // Joined by invite, its group record not here yet: nobody's membership can be judged.
            return []
        }
        let records = try Row.fetchAll(
            db,
            sql: "SELECT author, seq, action, node, log, through FROM membership WHERE group_id = ?",
            arguments: [group.bytes]
        ).compactMap { row -> GroupRules.Record? in
            guard let action = MemberAction(rawValue: UInt8(row["action"] as Int64)) else { return nil }
            return GroupRules.Record(
                author: AuthorID(unchecked: row["author"]),
                sequence: UInt64(row["seq"] as Int64),
                change: MemberChange(
                    group: group,
                    action: action,
                    node: NodeID(unchecked: row["node"]),
                    log: AuthorID(unchecked: row["log"]),
                    through: UInt64(row["through"] as Int64)
                )
            )
        }
        let logs = GroupRules.members(of: group, origin: origin, records: records)
        try db.execute(sql: "DELETE FROM member WHERE group_id = ?", arguments: [group.bytes])
        let insert = try db.cachedStatement(
            // A log belongs to one group: an add of a log that another group holds changes nothing.
            sql: """
                INSERT OR IGNORE INTO member (log, group_id, node, admin, was_admin, removed_through)
                VALUES (?, ?, ?, ?, ?, ?)
                """
        )
        for (log, member) in logs {
            try insert.execute(arguments: [
                log.bytes, group.bytes, member.node.bytes, member.admin ? 1 : 0, member.wasAdmin ? 1 : 0,
                member.removedThrough.map { Int64($0) },
            ])
        }
        // Migrations before v15 (v16) derive members before log declarations (owners) have a table: none is held.
        guard try db.tableExists("log_declaration") else { return [] }
        let memberNodes = Set(logs.values.filter(\.isMember).map(\.node))
        for declared in try declaredMembers(of: group, memberNodes: memberNodes, placed: Set(logs.keys), db) {
            try insert.execute(arguments: [declared.log.bytes, group.bytes, declared.device.bytes, 0, 0, nil])
        }
        guard try db.tableExists("log_owner") else { return [] }
        try applyCuts(in: group, db)
        return try refreshOwners(of: group, db)
    }
}

extension Ingest {
    /// Signs a new record of `identity`'s at the head of its log and stores it, inside this transaction. Throws,
    /// storing nothing, if the record breaks a rule.
    mutating func signAndStore(
        _ body: RecordBody,
        by identity: NodeIdentity,
        createdAt: Timestamp = .now()
    ) throws -> VerifiedRecord {
        let head = try ContinuumStore.logHead(identity.author, db)
        let content = RecordContent(
            author: identity.author,
            sequence: head.sequence + 1,
            previous: head.head,
            createdAt: createdAt,
            body: body
        )
        let record: VerifiedRecord
        do {
            // This node never signs a record that breaks its kind's own rules (an inert one, PROTOCOL.md §2.9).
            try Reaction.checkKindRules(body)
            record = try identity.sign(content)
        } catch {
            throw StoreError.record(error)
        }
        switch try one(record, local: true) {
        case .stored: return record
        case .rejected(let error): throw error
        case .duplicate, .fork:
            throw StoreError(.database, "the local log changed underneath this write; try again")
        }
    }
}

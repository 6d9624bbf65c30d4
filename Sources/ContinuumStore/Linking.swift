import ContinuumCore
import Foundation
import GRDB

/// A link code this node made (`device link`): the secret goes into the code; the id names it in a link.
public struct LinkTicket: Sendable, Hashable {
    public let id: Data
    public let secret: Data
    public let expiresAt: Timestamp
}

/// Linking a device into an account (PROTOCOL.md §7.8.19): the device that made a link code signs the new device's
/// `device-add`; the new device joins the account, declares a log in each of its groups, and syncs their history.
extension ContinuumStore {
    /// A new link code's ticket, valid for `lifetime`; this node must have an account.
    public func newLinkTicket(lifetime: Duration, by identity: NodeIdentity) async throws -> LinkTicket {
        let now = Timestamp.now()
        let expires = Timestamp(milliseconds: now.milliseconds + lifetime.components.seconds * 1000)
        let secret = Self.newSecret()
        let ticket = LinkTicket(id: Data(InviteCode.id(of: secret)), secret: secret, expiresAt: expires)
        try await write { db in
            guard try Self.account(of: identity.author, db) != nil else {
                throw StoreError(.notMember, "this node has no account to link a device into")
            }
            try db.execute(
                sql: "INSERT INTO link_ticket (id, secret, created_at, expires_at) VALUES (?, ?, ?, ?)",
                arguments: [ticket.id, secret, now.milliseconds, expires.milliseconds]
            )
        }
        return ticket
    }

    /// Checks a link code's proof: the ticket exists, is unused and not expired, and `proves` its secret. Returns
    /// the records of this node's account, for LINKING (at most ``linkRecordLimit``, the founding record first).
    /// Throws `.notMember` with the reason a person reads.
    public func checkLink(
        ticket id: Data,
        proves: @escaping @Sendable (Data) -> Bool,
        by identity: NodeIdentity
    ) async throws
        -> [[UInt8]]
    {
        let now = Timestamp.now().milliseconds
        return try await read { db in
            try Self.usableTicket(id, proves: proves, now: now, db)
            guard let account = try Self.account(of: identity.author, db) else {
                throw StoreError(.notMember, "this node has no account to link a device into")
            }
            return try Self.accountRecords(account.account, db)
        }
    }

    /// The most account records a LINKING carries.
    public static let linkRecordLimit = 64

    /// Uses a link ticket once: checks it again, verifies `consent` as `device`'s, marks the ticket used, and signs
    /// the `device-add` in this node's account log. Returns the record and this node's groups.
    public func signDeviceAdd(
        ticket id: Data,
        device: AuthorID,
        consent: Data,
        proves: @escaping @Sendable (Data) -> Bool,
        by identity: NodeIdentity
    ) async throws -> (record: VerifiedRecord, groups: [GroupID]) {
        let now = Timestamp.now().milliseconds
        return try await write { db in
            try Self.usableTicket(id, proves: proves, now: now, db)
            guard let account = try Self.account(of: identity.author, db)?.account else {
                throw StoreError(.notMember, "this node has no account to link a device into")
            }
            let add = AccountRecord.deviceAdd(account: account, device: device, consent: consent)
            guard AccountRecord(add.body, author: identity.author) != nil else {
                throw StoreError(
                    .notMember,
                    "the consent is not the new device's signature for account \(account.short)"
                )
            }
            try db.execute(
                sql: "UPDATE link_ticket SET used_at = ?, used_by = ? WHERE id = ?",
                arguments: [now, device.bytes, id]
            )
            var ingest = Ingest(db: db, now: now)
            let record = try ingest.signAndStore(add.body, by: identity)
            try ingest.finish()
            let groups = try Data.fetchAll(
                db,
                sql: """
                    SELECT DISTINCT log_key.group_id FROM log_key JOIN member ON member.log = log_key.public
                    WHERE member.removed_through IS NULL ORDER BY log_key.group_id LIMIT 32
                    """
            )
            return (record, groups.map { GroupID(unchecked: $0) })
        }
    }

    /// Throws `.notMember` unless the ticket exists, is unused, has not expired and `proves` its secret.
    private static func usableTicket(_ id: Data, proves: @Sendable (Data) -> Bool, now: Int64, _ db: Database) throws {
        guard
            let row = try Row.fetchOne(
                db,
                sql: "SELECT secret, expires_at, used_at FROM link_ticket WHERE id = ?",
                arguments: [id]
            )
        else { throw StoreError(.notMember, "the link code is not known to this device") }
        guard proves(row["secret"]) else {
            throw StoreError(.notMember, "the link code's proof does not match this session")
        }
        guard (row["used_at"] as Int64?) == nil else {
            throw StoreError(.notMember, "this link code was already used; make a new one with 'device link'")
        }
        guard (row["expires_at"] as Int64) > now else {
            throw StoreError(.notMember, "this link code has expired; make a new one with 'device link'")
        }
    }
}

/// The new device's side of a link.
extension ContinuumStore {
    /// Whether this node can still be linked into an account: its key has signed nothing yet (a linked device's
    /// account log begins with its joining record, PROTOCOL.md §2.10).
    public func canBeLinked(_ identity: NodeIdentity) async throws -> Bool {
        try await read { db in
            try Bool.fetchOne(
                db,
                sql: "SELECT 1 FROM record WHERE author = ? LIMIT 1",
                arguments: [identity.author.bytes]
            )
                != true
        }
    }

    /// Records a link: stores the account's records and the `device-add` of this device, signs the joining record,
    /// takes `name` as this node's own if it has none, and declares a new log in each of `groups` (its first record
    /// is the name). Returns the groups.
    public func recordLink(
        records: [[UInt8]],
        add: [UInt8],
        groups: [GroupID],
        name: String?,
        by identity: NodeIdentity
    ) async throws -> Set<GroupID> {
        let linker: VerifiedRecord
        do {
            linker = try SignedRecord(bytes: add).verify()
        } catch {
            throw StoreError(.notMember, "the device-add is not a valid record: \(error)")
        }
        let account: AccountID
        do {
            account = try AccountLink.account(of: records + [add], linker: linker.header.author)
        } catch {
            throw StoreError(.notMember, error.description)
        }
        guard let body = linker.record.body,
            case .deviceAdd(account, identity.author, _) = AccountRecord(body, author: linker.header.author)
        else { throw StoreError(.notMember, "the LINKED record does not add this device to account \(account.short)") }
        let now = Timestamp.now().milliseconds
        let ownName = try await displayName(of: identity.author)
        try await write { db in
            guard
                try Bool.fetchOne(db, sql: "SELECT 1 FROM record WHERE author = ?", arguments: [identity.author.bytes])
                    != true
            else { throw StoreError(.invalidInput, "this device has an account already; it cannot be linked") }
            var ingest = Ingest(db: db, now: now)
            for bytes in records + [add] {
                if case .rejected(let error) = try ingest.one(try SignedRecord(bytes: bytes).verify()) { throw error }
            }
            try Self.joinAccount(account, groups: groups, ownName: ownName, name: name, by: identity, &ingest)
        }
        return Set(groups)
    }

    /// A new device's joining of `account` (a link or a recovery): its joining record, `name` as its own when it has
    /// none (`ownName`), a new log in each of `groups`, declared, whose first record is the name shown; then the
    /// transaction's end.
    static func joinAccount(
        _ account: AccountID,
        groups: some Sequence<GroupID>,
        ownName: String?,
        name: String?,
        by identity: NodeIdentity,
        _ ingest: inout Ingest
    ) throws {
        let db = ingest.db
        _ = try ingest.signAndStore(AccountRecord.joining(account).body, by: identity)
        let shown = ownName ?? name
        if ownName == nil, let name {
            try db.execute(
                sql: "INSERT INTO own_name (node, name) VALUES (?, ?)",
                arguments: [identity.author.bytes, name]
            )
        }
        let logs = try groups.compactMap { try Self.newLog(in: $0, by: identity, now: ingest.now, db) }
        try Self.declareOwnLogs(by: identity, &ingest)
        if let shown { for log in logs { _ = try ingest.signAndStore(.profile(name: shown), by: log) } }
        try ingest.finish()
    }

    /// Makes this device's log in `group` (nil when it has one there already); ``declareOwnLogs(by:_:)`` declares it.
    static func newLog(
        in group: GroupID,
        by identity: NodeIdentity,
        now: Int64,
        _ db: Database
    ) throws
        -> NodeIdentity?
    {
        if try Bool.fetchOne(db, sql: "SELECT 1 FROM log_key WHERE group_id = ?", arguments: [group.bytes]) == true {
            return nil
        }
        let (salt, log) = newLogKey(identity)
        try db.execute(sql: "INSERT OR IGNORE INTO grp (id) VALUES (?)", arguments: [group.bytes])
        try db.execute(
            sql: "INSERT INTO log_key (public, salt, group_id, created_at, pending_for) VALUES (?, ?, ?, ?, NULL)",
            arguments: [log.author.bytes, salt, group.bytes, now]
        )
        return log
    }
}

/// What ``ContinuumStore/removeDevice(_:by:)`` did.
public struct DeviceRemoval: Sendable, Hashable {
    /// The `device-remove` record signed.
    public let record: RecordID
    /// The logs of the removed device that the removal names, and how many of its records it keeps in all.
    public let logs: Int
    public let kept: UInt64
}

extension ContinuumStore {
    /// Removes `device` from this node's account (PROTOCOL.md §2.10): signs a `device-remove` whose frontier keeps,
    /// of each log of the device this node holds (its account log and its group logs), what this node holds of it
    /// without a gap. What the device signs beyond that, or signs again below it, counts nowhere. Throws
    /// `.notFound` for a key that is no device of the account, `.invalidInput` for this device itself.
    public func removeDevice(_ device: AuthorID, by identity: NodeIdentity) async throws -> DeviceRemoval {
        guard device != identity.author else {
            throw StoreError(.invalidInput, "this is this device: remove it from another device of your account")
        }
        let now = Timestamp.now().milliseconds
        return try await write { db in
            guard let account = try Self.account(of: identity.author, db) else {
                throw StoreError(.notMember, "this node has no account")
            }
            guard account.devices.contains(device) else {
                throw StoreError(.notFound, "\(device.short) is not a device of account \(account.account.short)")
            }
            let frontier = try Self.frontier(of: device, db)
            var ingest = Ingest(db: db, now: now)
            let body = AccountRecord.deviceRemove(account: account.account, device: device, frontier: frontier).body
            let record = try ingest.signAndStore(body, by: identity)
            try ingest.finish()
            return DeviceRemoval(record: record.id, logs: frontier.count, kept: frontier.reduce(0) { $0 + $1.through })
        }
    }

    /// A removal's frontier over the logs of `device` held here, in ascending order of log: each held without a gap
    /// up to `through`, the id there as `head`.
    static func frontier(of device: AuthorID, _ db: Database) throws -> [FrontierEntry] {
        let logs = try Data.fetchAll(
            db,
            sql: """
                SELECT ?1 UNION SELECT log FROM member WHERE node = ?1 UNION SELECT log FROM log_declaration WHERE device = ?1
                ORDER BY 1
                """,
            arguments: [device.bytes]
        )
        guard logs.count <= AccountRecord.frontierEntries else {
            throw StoreError(
                .invalidInput,
                "the device has \(logs.count) logs; a removal names at most \(AccountRecord.frontierEntries)"
            )
        }
        return try logs.map { log in
            let through =
                try Int64.fetchOne(db, sql: "SELECT contiguous FROM log_head WHERE author = ?", arguments: [log]) ?? 0
            let head = try Data.fetchOne(
                db,
                sql: "SELECT id FROM record WHERE author = ? AND seq = ?",
                arguments: [log, through]
            )
            return FrontierEntry(
                log: AuthorID(unchecked: log),
                through: head == nil ? 0 : UInt64(through),
                head: head.map { RecordID(unchecked: $0) }
            )
        }
    }
}

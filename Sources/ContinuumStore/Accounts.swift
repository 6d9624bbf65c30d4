import ContinuumCore
import Foundation
import GRDB

extension Ingest {
    /// An account record (PROTOCOL.md §2.10): noted under the account it names, and that account's founder, recovery
    /// key and devices derived again from every record of it held, inside this transaction, so that the next record
    /// of the batch is judged by them (never by what an earlier transaction derived).
    mutating func applyAccountRecord(_ parsed: AccountRecord, id: RecordID, author: AuthorID) throws {
        let account = parsed.account(foundedBy: id)
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO account_record (account, record) VALUES (?, ?)")
            .execute(arguments: [account.bytes, id.bytes])
        if case .logDeclaration(_, let group, let log, _) = parsed {
            try applyLogDeclaration(account: account, group: group, log: log, device: author, id: id)
        }
        // The account's devices may change: so may the members of the groups its devices declared logs in, and the
        // owners of its devices' logs (before and after, for a device that leaves it).
        touchedGroups.formUnion(try Self.groupsOfDevices(of: account, db))
        try Self.deriveAccount(account, db)
        touchedGroups.formUnion(try Self.groupsOfDevices(of: account, db))
    }

    /// Derives an account's rows from its records held: the account rule is a function of the set of records, so
    /// the rows are the same in every order of arrival and batching.
    static func deriveAccount(_ account: AccountID, _ db: Database) throws {
        let rows = try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT r.bytes, r.content FROM account_record a JOIN record r ON r.id = a.record
                    WHERE a.account = ?
                    """
            ),
            arguments: [account.bytes]
        )
        // A stored record that no longer decodes counts as not held.
        let records = rows.compactMap(\.storedRecord)
        try db.cachedStatement(sql: "DELETE FROM account WHERE id = ?").execute(arguments: [account.bytes])
        try db.cachedStatement(sql: "DELETE FROM account_device WHERE account = ?").execute(arguments: [account.bytes])
        guard let founding = records.first(where: { $0.id.bytes == account.bytes && $0.sequence == 1 }),
            let body = founding.body, case .founding(let recovery) = AccountRecord(body, author: founding.author),
            // Every record of `account_record` was read as an account record, its signatures checked, when stored.
            let state = AccountRules.state(of: account, from: records, verifying: false)
        else { return }
        try db.cachedStatement(sql: "INSERT INTO account (id, founder, recovery) VALUES (?, ?, ?)")
            .execute(arguments: [account.bytes, founding.author.bytes, recovery?.bytes])
        let insert = try db.cachedStatement(
            sql: "INSERT INTO account_device (device, account, removed) VALUES (?, ?, ?)"
        )
        for device in state.devices { try insert.execute(arguments: [device.bytes, account.bytes, false]) }
        for device in state.removed.subtracting(state.devices) {
            try insert.execute(arguments: [device.bytes, account.bytes, true])
        }
        try writeCuts(of: account, state, db)
    }

    /// Writes what the counting removals of each removed device keep of its logs (`device_cut`): a record counts
    /// only within every one of them (PROTOCOL.md §2.10), so each log keeps the smallest `through`, and 0 when a
    /// removal does not list it.
    static func writeCuts(of account: AccountID, _ state: AccountState<AuthorID, RecordID>, _ db: Database) throws {
        // Migrations before v16 derive accounts before the table exists: no device was removed then.
        guard try db.tableExists("device_cut") else { return }
        try db.cachedStatement(sql: "DELETE FROM device_cut WHERE account = ?").execute(arguments: [account.bytes])
        let insert = try db.cachedStatement(
            sql: "INSERT INTO device_cut (account, device, log, through) VALUES (?, ?, ?, ?)"
        )
        for (device, removals) in state.removals {
            let frontiers = removals.compactMap { event in
                if case .remove(_, let frontier) = event.change { frontier } else { nil }
            }
            for log in Set(frontiers.flatMap(\.keys)) {
                let through = frontiers.map { $0[log]?.through ?? 0 }.min() ?? 0
                try insert.execute(arguments: [account.bytes, device.bytes, log.bytes, Int64(through)])
            }
        }
    }

    /// Notes every account record held under its account and derives the accounts (migration v14: records of kinds 8
    /// to 10 were stored from version 3 on, before the store applied them).
    static func indexAccountRecords(_ db: Database) throws {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT r.bytes, r.content FROM opaque_record o JOIN record r ON r.author = o.author AND r.seq = o.seq
                WHERE o.code IN (8, 9, 10)
                """
        )
        var accounts: Set<AccountID> = []
        for row in rows {
            // As in deriveAccount: a stored record that no longer decodes counts as not held.
            guard let record = row.storedRecord, let body = record.body,
                let parsed = AccountRecord(body, author: record.author)
            else { continue }
            let account = parsed.account(foundedBy: record.id)
            try db.execute(
                sql: "INSERT OR IGNORE INTO account_record (account, record) VALUES (?, ?)",
                arguments: [account.bytes, record.id.bytes]
            )
            accounts.insert(account)
        }
        for account in accounts { try deriveAccount(account, db) }
    }
}

/// A device's place in an account, as this node derives it.
public struct AccountMembership: Sendable, Hashable {
    public let account: AccountID
    /// The account's founding device.
    public let founder: AuthorID
    /// Whether the account has a recovery key.
    public let hasRecovery: Bool
    /// The account's devices now (removed ones left out).
    public let devices: [AuthorID]
}

extension ContinuumStore {
    /// The account `device` is a device of, and its devices; nil when this node holds no account with it (its
    /// account records have not come, or it has none).
    public func account(of device: AuthorID) async throws -> AccountMembership? {
        try await read { db in try Self.account(of: device, db) }
    }

    static func account(of device: AuthorID, _ db: Database) throws -> AccountMembership? {
        // A key founds at most one account and can be added to others: the one it founded comes first.
        guard
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT a.id, a.founder, a.recovery IS NOT NULL AS recovery FROM account_device d
                    JOIN account a ON a.id = d.account
                    WHERE d.device = ?1 AND d.removed = 0
                    ORDER BY a.founder = ?1 DESC, a.id LIMIT 1
                    """,
                arguments: [device.bytes]
            )
        else { return nil }
        let id: Data = row["id"]
        let devices = try Data.fetchAll(
            db,
            sql: "SELECT device FROM account_device WHERE account = ? AND removed = 0 ORDER BY device",
            arguments: [id]
        )
        return AccountMembership(
            account: AccountID(unchecked: id),
            founder: AuthorID(unchecked: row["founder"]),
            hasRecovery: row["recovery"],
            devices: devices.map { AuthorID(unchecked: $0) }
        )
    }

    /// Founds this node's account if it has none: signs the founding `account` record (PROTOCOL.md §2.10) at the
    /// head of the log of its node key, with `recovery` as the account's recovery key. Returns the account, and
    /// whether it was founded now (a node whose key wrote an `account` record already keeps that one, and `recovery`
    /// is not used); nil when the node's key signed other records before accounts existed (its log cannot begin with
    /// an account now: PROTOCOL.md Appendix A 33).
    @discardableResult
    public func foundAccount(
        by identity: NodeIdentity,
        recovery: AuthorID?
    ) async throws -> (account: AccountID, founded: Bool)? {
        let now = Timestamp.now().milliseconds
        return try await write { db in
            if let first = try Row.fetchOne(
                db,
                sql: "SELECT bytes, content FROM record WHERE author = ? AND seq = 1",
                arguments: [identity.author.bytes]
            ) {
                // This node's own record, verified when it was signed: one that no longer decodes founds nothing.
                guard let record = first.storedRecord, let body = record.body,
                    let parsed = AccountRecord(body, author: record.author)
                else { return nil }
                return (parsed.account(foundedBy: record.id), false)
            }
            var ingest = Ingest(db: db, now: now)
            let record = try ingest.signAndStore(AccountRecord.founding(recovery: recovery).body, by: identity)
            try ingest.finish()
            return (AccountID(founding: record.id), true)
        }
    }
}

extension ContinuumStore {
    /// The salt of the log of a node in no group (see ``privateLog(of:)``).
    static let privateLogSalt = Data("continuum-private-log".utf8)

    /// The log in which this node writes while it is in no group: a log key of its own that no group places, so that
    /// what it signs stays on this node, shared with nobody. (Its identity key signs only its account log, §2.10.)
    /// Made on first use, named as the node is.
    public func privateLog(of identity: NodeIdentity) async throws -> NodeIdentity {
        let log = identity.logKey(salt: Self.privateLogSalt)
        let name = try await displayName(of: identity.author)
        let now = Timestamp.now().milliseconds
        try await write { db in
            guard
                try Bool.fetchOne(db, sql: "SELECT 1 FROM log_key WHERE public = ?", arguments: [log.author.bytes])
                    != true
            else { return }
            try db.execute(
                sql:
                    "INSERT INTO log_key (public, salt, group_id, created_at, pending_for) VALUES (?, ?, NULL, ?, NULL)",
                arguments: [log.author.bytes, Self.privateLogSalt, now]
            )
            guard let name else { return }
            var ingest = Ingest(db: db, now: now)
            _ = try ingest.signAndStore(.profile(name: name), by: log)
            try ingest.finish()
        }
        return log
    }

    /// Sets this node's name for itself, and in its private log if it has one (its groups' logs are the caller's).
    public func setOwnName(_ name: String, of identity: NodeIdentity) async throws {
        let log = identity.logKey(salt: Self.privateLogSalt)
        let now = Timestamp.now().milliseconds
        try await write { db in
            try db.execute(
                sql:
                    "INSERT INTO own_name (node, name) VALUES (?, ?) ON CONFLICT (node) DO UPDATE SET name = excluded.name",
                arguments: [identity.author.bytes, name]
            )
            guard
                try Bool.fetchOne(db, sql: "SELECT 1 FROM log_key WHERE public = ?", arguments: [log.author.bytes])
                    == true
            else { return }
            var ingest = Ingest(db: db, now: now)
            _ = try ingest.signAndStore(.profile(name: name), by: log)
            try ingest.finish()
        }
    }
}

extension ContinuumStore {
    /// Sets this node's display name: its own (``setOwnName(_:of:)``), and a Profile record in each of its groups'
    /// logs, which peers see.
    public func signName(_ name: String, by identity: NodeIdentity) async throws {
        try await setOwnName(name, of: identity)
        for group in try await groups() {
            _ = try await append(.profile(name: name), by: try await logIdentity(in: group.id, of: identity))
        }
    }
}

/// One device of an account, as `device list` shows it.
public struct DeviceSummary: Sendable, Hashable {
    public let id: AuthorID
    /// The device that founded the account.
    public let founder: Bool
    /// This node.
    public let thisDevice: Bool
    /// Its name: this node's own, or the name the device gave when it last connected here.
    public let name: String?
    /// When this node last had a session with it; nil for this node, and for a device never met.
    public let lastSeen: Timestamp?
}

/// The devices of this node's account.
public struct DeviceList: Sendable, Hashable {
    /// Nil while this node has no account.
    public let account: AccountID?
    public let hasRecovery: Bool
    /// This device first, then the others by id.
    public let devices: [DeviceSummary]

    /// The device `text` names by the start of its id (``IDLookup``: never by a name, which each device chooses),
    /// or why it names none or several, in the words `device remove`, `recover` and the API show.
    public func device(named text: String) throws(DeviceLookupError) -> DeviceSummary {
        do {
            return try IDLookup.resolve(text, among: devices.map { IDCandidate($0, ids: [$0.id]) })
        } catch .ambiguous(_, let matches) {
            throw DeviceLookupError(ambiguous: true, "'\(text)' names \(matches.count) devices; give more of the id")
        } catch {
            throw DeviceLookupError(ambiguous: false, "no device of this account has an id starting with '\(text)'")
        }
    }
}

/// Why a text names no device of the account, or several.
public struct DeviceLookupError: Error, Sendable, CustomStringConvertible {
    /// Several devices' ids start with the text.
    public let ambiguous: Bool
    public let description: String

    init(ambiguous: Bool, _ description: String) {
        self.ambiguous = ambiguous
        self.description = description
    }
}

extension ContinuumStore {
    /// The devices of the account of `identity`'s node, with what this node knows of each.
    public func devices(of identity: NodeIdentity) async throws -> DeviceList {
        let name = try await displayName(of: identity.author)
        return try await read { db in
            guard let held = try Self.account(of: identity.author, db) else {
                return DeviceList(account: nil, hasRecovery: false, devices: [])
            }
            let devices = try held.devices.map { device in
                let peer = try Row.fetchOne(
                    db,
                    sql: "SELECT name, last_seen FROM peer WHERE node = ?",
                    arguments: [device.bytes]
                )
                let mine = device == identity.author
                return DeviceSummary(
                    id: device,
                    founder: device == held.founder,
                    thisDevice: mine,
                    name: mine ? name : peer?["name"],
                    lastSeen: mine ? nil : (peer?["last_seen"] as Int64?).map(Timestamp.init(milliseconds:))
                )
            }
            return DeviceList(
                account: held.account,
                hasRecovery: held.hasRecovery,
                devices: devices.sorted { ($0.thisDevice ? 0 : 1, $0.id) < ($1.thisDevice ? 0 : 1, $1.id) }
            )
        }
    }
}

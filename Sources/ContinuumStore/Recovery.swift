import ContinuumCore
import Foundation
import GRDB

/// Recovering an account with its recovery code (PROTOCOL.md §7.8.20): a new device, holding the recovery key for the
/// length of `recover`, has the key add it to the account, syncs, then has the key remove the devices asked.
extension ContinuumStore {
    /// The records of the account whose recovery key is `key`, for LINKING (at most ``linkRecordLimit``, the
    /// founding record first). Throws `.notMember` when no account held here has that key.
    public func recoveryRecords(key: AuthorID) async throws -> [[UInt8]] {
        try await read { db in
            guard
                let account = try Data.fetchOne(
                    db,
                    sql: "SELECT id FROM account WHERE recovery = ? ORDER BY id LIMIT 1",
                    arguments: [key.bytes]
                )
            else { throw StoreError(.notMember, "this node holds no account with that recovery code") }
            return try Self.accountRecords(AccountID(unchecked: account), db)
        }
    }

    /// The records of `account`, the founding record first, at most ``linkRecordLimit``.
    static func accountRecords(_ account: AccountID, _ db: Database) throws -> [[UInt8]] {
        try Row.fetchAll(
            db,
            sql: """
                SELECT r.bytes, r.content FROM account_record a JOIN record r ON r.id = a.record
                WHERE a.account = ? ORDER BY r.id = a.account DESC, r.author, r.seq LIMIT ?
                """,
            arguments: [account.bytes, Self.linkRecordLimit]
        ).map(\.storedRecordBytes)
    }

    /// A new device's recovery: stores the account's `records` (they must found an account whose recovery key is
    /// `recovery`'s), has the recovery key sign this device's `device-add` (after its joining record, when its log
    /// is new), signs this device's joining record, and declares a new log in each group a device of the account
    /// declared one in (its first record `name`, when given). Returns the records to send (RECOVERY) and the groups.
    public func recordRecovery(
        records: [[UInt8]],
        recovery: NodeIdentity,
        name: String?,
        by identity: NodeIdentity
    ) async throws -> (records: [[UInt8]], groups: Set<GroupID>) {
        let (account, state): (AccountID, AccountState<AuthorID, RecordID>)
        do {
            (account, state) = try AccountRecovery.account(of: records, recovery: recovery.author)
        } catch {
            throw StoreError(.notMember, error.description)
        }
        let groups = Self.declaredGroups(in: records, devices: state.devices)
        // RECOVERY carries at most 64 records (PROTOCOL.md §7.6): the key's two, the joining record and a declaration
        // per group fit with 32 groups, the bound LINKED has too.
        guard groups.count <= 32 else {
            throw StoreError(.invalidInput, "the account is in \(groups.count) groups; a recovery carries at most 32")
        }
        let consent = try identity.consent(toJoin: account)
        let ownName = try await displayName(of: identity.author)
        let now = Timestamp.now().milliseconds
        return try await write { db in
            guard
                try Bool.fetchOne(db, sql: "SELECT 1 FROM record WHERE author = ?", arguments: [identity.author.bytes])
                    != true
            else { throw StoreError(.invalidInput, "this device has an account already; it cannot recover one") }
            var ingest = Ingest(db: db, now: now)
            for bytes in records {
                if case .rejected(let error) = try ingest.one(try SignedRecord(bytes: bytes).verify()) { throw error }
            }
            var signed: [[UInt8]] = []
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM record WHERE author = ?", arguments: [recovery.author.bytes])
                != true
            {
                signed.append(try ingest.signAndStore(AccountRecord.joining(account).body, by: recovery).bytes)
            }
            let add = AccountRecord.deviceAdd(account: account, device: identity.author, consent: consent)
            signed.append(try ingest.signAndStore(add.body, by: recovery).bytes)
            try Self.joinAccount(account, groups: groups, ownName: ownName, name: name, by: identity, &ingest)
            // This device's account log: its joining record and its declarations, all signed now.
            let own = try Row.fetchAll(
                db,
                sql: "SELECT bytes, content FROM record WHERE author = ? ORDER BY seq",
                arguments: [identity.author.bytes]
            ).map(\.storedRecordBytes)
            return (signed + own, groups)
        }
    }

    /// The groups that the live `devices` of an account declared logs in, by `records`.
    static func declaredGroups(in records: [[UInt8]], devices: Set<AuthorID>) -> Set<GroupID> {
        var groups: Set<GroupID> = []
        for bytes in records {
            // The records were verified by AccountRecovery just before; one that does not decode declares nothing.
            guard let record = try? SignedRecord(bytes: bytes), devices.contains(record.author),
                let body = record.body,
                case .logDeclaration(_, let group, _, _) = AccountRecord(body, author: record.author)
            else { continue }
            groups.insert(group)
        }
        return groups
    }
}

extension ContinuumStore {
    /// Takes a recovering device's RECOVERY: every record must be an account record of the account whose recovery
    /// key is `key`, signed by that key or by `device`; once stored they must make `device` a device of it. Throws
    /// `.notMember` with the reason, and then stores nothing.
    public func takeRecovery(_ records: [[UInt8]], key: AuthorID, device: AuthorID) async throws {
        let now = Timestamp.now().milliseconds
        try await write { db in
            guard
                let id = try Data.fetchOne(
                    db,
                    sql: "SELECT id FROM account WHERE recovery = ? ORDER BY id LIMIT 1",
                    arguments: [key.bytes]
                )
            else { throw StoreError(.notMember, "this node holds no account with that recovery key") }
            let account = AccountID(unchecked: id)
            var ingest = Ingest(db: db, now: now)
            for bytes in records {
                let record: VerifiedRecord
                do {
                    record = try SignedRecord(bytes: bytes).verify()
                } catch {
                    throw StoreError(.notMember, "a record of the RECOVERY is not valid: \(error)")
                }
                guard record.header.author == key || record.header.author == device, let body = record.record.body,
                    AccountRecord(body, author: record.header.author)?.account(foundedBy: record.id) == account
                else {
                    throw StoreError(
                        .notMember,
                        "a RECOVERY holds only account records of account \(account.short) by its recovery key or the device"
                    )
                }
                if case .rejected(let error) = try ingest.one(record) { throw error }
            }
            try ingest.finish()
            guard try Self.account(of: device, db)?.account == account else {
                throw StoreError(
                    .notMember,
                    "the RECOVERY does not make \(device.short) a device of account \(account.short)"
                )
            }
        }
    }

    /// Has the recovery key remove `devices` from this device's account (PROTOCOL.md §2.10): each removal's frontier
    /// keeps what this node holds of the device's group logs, and of its account log what comes before its first
    /// removal of another device, so that the removals it signed are undone. This device must be a device of the
    /// account whose recovery key `recovery` is.
    public func removeDevices(
        _ devices: [AuthorID],
        withRecovery recovery: NodeIdentity,
        by identity: NodeIdentity
    ) async throws -> [DeviceRemoval] {
        let now = Timestamp.now().milliseconds
        return try await write { db in
            guard let account = try Self.account(of: identity.author, db),
                try Data.fetchOne(
                    db,
                    sql: "SELECT recovery FROM account WHERE id = ?",
                    arguments: [account.account.bytes]
                )
                    == Data(recovery.author.bytes)
            else { throw StoreError(.notMember, "the recovery code is not this device's account's") }
            var ingest = Ingest(db: db, now: now)
            var removals: [DeviceRemoval] = []
            for device in devices {
                guard device != identity.author else {
                    throw StoreError(.invalidInput, "this is this device: it cannot remove itself while it recovers")
                }
                guard account.devices.contains(device) else {
                    throw StoreError(.notFound, "\(device.short) is not a device of account \(account.account.short)")
                }
                let frontier = try Self.frontier(of: device, db).map { entry in
                    entry.log == device ? try Self.beforeRemovals(entry, of: device, db) : entry
                }
                let body = AccountRecord.deviceRemove(account: account.account, device: device, frontier: frontier).body
                let record = try ingest.signAndStore(body, by: recovery)
                removals.append(
                    DeviceRemoval(record: record.id, logs: frontier.count, kept: frontier.reduce(0) { $0 + $1.through })
                )
            }
            try ingest.finish()
            return removals
        }
    }

    /// `entry`, a frontier over `device`'s account log, cut before the first removal of another device it holds.
    private static func beforeRemovals(
        _ entry: FrontierEntry,
        of device: AuthorID,
        _ db: Database
    ) throws
        -> FrontierEntry
    {
        let rows = try Row.fetchAll(
            db,
            sql: "SELECT seq, bytes, content FROM record WHERE author = ? AND seq <= ? ORDER BY seq",
            arguments: [device.bytes, Int64(entry.through)]
        )
        for row in rows {
            // A stored record that no longer decodes removes no one.
            guard let record = row.storedRecord, let body = record.body,
                case .deviceRemove(_, let removed, _) = AccountRecord(body, author: device), removed != device
            else { continue }
            let through = (row["seq"] as Int64) - 1
            let head = try Data.fetchOne(
                db,
                sql: "SELECT id FROM record WHERE author = ? AND seq = ?",
                arguments: [device.bytes, through]
            )
            return FrontierEntry(
                log: device,
                through: head == nil ? 0 : UInt64(through),
                head: head.map { RecordID(unchecked: $0) }
            )
        }
        return entry
    }
}

extension ContinuumStore {
    /// The name the logs of `identity`'s account show (their newest profile), leaving out removed devices' logs: the
    /// name a recovered device takes. Nil when none of them has one yet.
    public func accountName(of identity: NodeIdentity) async throws -> String? {
        try await read { db in
            guard let account = try Self.account(of: identity.author, db) else { return nil }
            return try String.fetchOne(
                db,
                sql: """
                    SELECT p.name FROM profile p JOIN log_owner o ON o.log = p.author
                    WHERE o.owner = ? AND p.author NOT IN (SELECT log FROM device_cut)
                    ORDER BY p.seq DESC LIMIT 1
                    """,
                arguments: [account.account.bytes]
            )
        }
    }
}

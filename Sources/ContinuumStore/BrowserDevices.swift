import ContinuumCore
import Foundation
import GRDB

/// Why a record that a linked browser signed was not stored. Nothing was stored.
public struct DeviceRecordRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: Sendable, Hashable {
        /// The record's author is neither the device nor a log the device declared.
        case notYours
        /// The author's log is at another place than the record says (its message names the sequence to sign next).
        case stale
        /// The record breaks a rule of the protocol, or one that needs another record.
        case invalid
    }

    public let reason: Reason
    public let message: String

    public var description: String { message }
}

/// Where a log stands: the sequence of its last record held here, and that record's id (nil for an empty log).
public struct LogHead: Sendable, Hashable {
    public let sequence: UInt64
    public let head: RecordID?
}

/// A browser linked as a device of this node's account (Docs/WEB.md, "A phone as a device"): the browser holds its
/// own keys and signs its records; the node checks, stores and relays them as any device's, and never holds the keys.
extension ContinuumStore {
    /// Whether `device` is a device of `account` now (added, not removed).
    public func isDevice(_ device: AuthorID, of account: AccountID) async throws -> Bool {
        try await read { db in
            try Bool.fetchOne(
                db,
                sql: "SELECT 1 FROM account_device WHERE account = ? AND device = ? AND removed = 0",
                arguments: [account.bytes, device.bytes]
            ) == true
        }
    }

    /// The last record held of `author`'s log.
    public func logHead(_ author: AuthorID) async throws -> LogHead {
        try await read { db in try Self.logHead(author, db) }
    }

    /// ``logHead(_:)`` inside a transaction.
    static func logHead(_ author: AuthorID, _ db: Database) throws -> LogHead {
        let row = try Row.fetchOne(
            db,
            sql: "SELECT seq, id FROM record WHERE author = ? ORDER BY seq DESC LIMIT 1",
            arguments: [author.bytes]
        )
        return LogHead(
            sequence: UInt64(row?["seq"] as Int64? ?? 0),
            head: (row?["id"] as Data?).map { RecordID(unchecked: $0) }
        )
    }

    /// The logs `device` declared, by group: the keys it signs with in each.
    public func declaredLogs(of device: AuthorID) async throws -> [GroupID: AuthorID] {
        try await read { db in
            var logs: [GroupID: AuthorID] = [:]
            for row in try Row.fetchAll(
                db,
                sql: "SELECT group_id, log FROM log_declaration WHERE device = ? ORDER BY record",
                arguments: [device.bytes]
            ) {
                let group = GroupID(unchecked: row["group_id"])
                if logs[group] == nil { logs[group] = AuthorID(unchecked: row["log"]) }
            }
            return logs
        }
    }

    /// Stores a record that the browser device `device` signed, as the node stores its own: all of it, or nothing.
    /// Its author must be the device (its account log) or a log the device declared that is a member of its group;
    /// it must extend its log by one; and it must break no rule, also one that needs another record (then nothing is
    /// stored, where a peer's such record would be kept unapplied). A post is followed with `autoFollow`.
    /// Sending the same record again stores nothing and succeeds.
    public func storeFromDevice(
        _ record: VerifiedRecord,
        device: AuthorID,
        autoFollow: Bool
    ) async throws -> VerifiedRecord {
        let now = Timestamp.now().milliseconds
        let (erasedPhotos, erasedText) = try await write { db in
            try Self.checkDeviceAuthor(record, device: device, db)
            var ingest = Ingest(db: db, now: now)
            switch try ingest.one(record, local: true) {
            case .stored:
                if autoFollow, case .post = record.body { try Self.followNew(PostID(record.id), now: now, db) }
            case .duplicate: break
            case .rejected(let error):
                // Another author's post, comment or reaction: the browser's to leave alone (403), not a bad record.
                throw DeviceRecordRefusal(
                    reason: error.code == .notOwner ? .notYours : .invalid,
                    message: error.message
                )
            case .fork:
                throw try Self.stale(record.header.author, db)
            }
            try ingest.finish()
            return (ingest.erasedPhotos.sorted(), ingest.erasedText)
        }
        try await finishErasure(photos: erasedPhotos, text: erasedText)
        return record
    }

    /// Throws unless `record` is `device`'s to send, at the next place of its log (or already held).
    private static func checkDeviceAuthor(_ record: VerifiedRecord, device: AuthorID, _ db: Database) throws {
        let author = record.header.author
        if author == device {
            try checkAccountLogRecord(record, device: device, db)
        } else {
            try checkGroupLogKind(record)
            // A log the device declared (a linked phone), or the log a guest link gave it (its member record
            // names the device as the log's node).
            let declared = try Row.fetchOne(
                db,
                sql: """
                    SELECT m.removed_through IS NULL
                        AND NOT EXISTS (SELECT 1 FROM guest WHERE guest.log = d.log AND guest.removed != 0) AS live
                    FROM log_declaration d
                    LEFT JOIN member m ON m.log = d.log
                    WHERE d.log = ?1 AND d.device = ?2
                    UNION ALL
                    SELECT m.removed_through IS NULL AND g.removed = 0 FROM guest g
                    LEFT JOIN member m ON m.log = g.log
                    WHERE g.log = ?1 AND g.device = ?2
                    """,
                arguments: [author.bytes, device.bytes]
            )
            guard let declared else {
                throw DeviceRecordRefusal(
                    reason: .notYours,
                    message: "log \(author.short) is not one this device declared: a device sends only what it signed"
                )
            }
            guard (declared["live"] as Bool?) == true else {
                throw DeviceRecordRefusal(
                    reason: .notYours,
                    message: "log \(author.short) is not a member of its group (the account left it, or was removed)"
                )
            }
        }
        let held = try Bool.fetchOne(db, sql: "SELECT 1 FROM record WHERE id = ?", arguments: [record.id.bytes])
        if held == true { return }
        let head = try logHead(author, db)
        guard record.header.sequence == head.sequence + 1, record.header.previous == head.head else {
            throw try stale(author, db)
        }
    }

    /// Throws unless `record`, signed by the device key itself, is one a browser signs in its account log: its
    /// joining or founding record, or a log declaration (a guest's: of the log its link gave it).
    private static func checkAccountLogRecord(_ record: VerifiedRecord, device: AuthorID, _ db: Database) throws {
        switch record.header.kindCode {
        case AccountRecord.accountCode: break
        case AccountRecord.logDeclarationCode:
            if let (log, group) = try guestLog(of: device, db) {
                guard let body = record.body,
                    case .logDeclaration(_, group, log, _) = AccountRecord(body, author: device)
                else {
                    throw DeviceRecordRefusal(
                        reason: .notYours,
                        message: "a guest writes with the log its guest link gave it, and declares no other"
                    )
                }
            }
        case AccountRecord.deviceAddCode, AccountRecord.deviceRemoveCode:
            throw DeviceRecordRefusal(
                reason: .notYours,
                message: "adding or removing a device is for the node's owner (Settings, or 'device' on the node)"
            )
        default:
            throw DeviceRecordRefusal(
                reason: .invalid,
                message: "a device key signs only its account log (its joining record and log declarations), not "
                    + "a record of kind \(record.header.kindCode): sign that with the device's log key in the group"
            )
        }
    }

    /// The log a guest link gave `device`, and its group; nil when it is no guest.
    private static func guestLog(of device: AuthorID, _ db: Database) throws -> (AuthorID, GroupID)? {
        try Row.fetchOne(db, sql: "SELECT log, group_id FROM guest WHERE device = ?", arguments: [device.bytes]).map {
            (AuthorID(unchecked: $0["log"]), GroupID(unchecked: $0["group_id"]))
        }
    }

    /// Throws unless a browser's group log may sign a record of this kind: not a group or member record (the owner's
    /// node signs those), nor an account record (the device key signs those).
    private static func checkGroupLogKind(_ record: VerifiedRecord) throws {
        guard record.header.kind != .group, record.header.kind != .member else {
            throw DeviceRecordRefusal(
                reason: .invalid,
                message: "a linked browser does not found groups or change their members; the node's owner does"
            )
        }
        guard !(AccountRecord.accountCode...AccountRecord.logDeclarationCode).contains(record.header.kindCode) else {
            throw DeviceRecordRefusal(
                reason: .invalid,
                message: "a group log does not sign account records (kinds 8 to 11): the browser's device key does"
            )
        }
    }

    private static func stale(_ author: AuthorID, _ db: Database) throws -> DeviceRecordRefusal {
        let next = try logHead(author, db).sequence + 1
        return DeviceRecordRefusal(
            reason: .stale,
            message: "log \(author.short) has moved on: the next record is sequence \(next), after the head the node "
                + "holds; read the head again and sign anew"
        )
    }
}

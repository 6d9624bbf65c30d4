import ContinuumCore
import Foundation
import GRDB

extension Ingest {
    /// The rule of PROTOCOL.md §2.10 that an account record breaks, if any: one a node MUST NOT sign. Such a record
    /// is kept inert, as the account rule says, and reported in ``StoreReport/ignored``: a session ends with
    /// *bad record* when its peer signed it (§7.8.6, rule 5), never when the peer only relays it.
    ///
    /// - an account record (kinds 8 … 11) that breaks its kind's layout, or an add without the added device's
    ///   consent, a log declaration without the log key's signature (the record is inert);
    /// - an `account` record that is not the first of its log (it founds or joins nothing);
    /// - an add, a removal or a log declaration of account A signed by a key whose account log, held from its
    ///   first record, founds or joins another account: a claim on someone else's account;
    /// - a log declaration of a log whose self-add (held) names another node than the declaring device.
    static func accountError(_ record: SignedRecord, _ db: Database) throws -> StoreError? {
        guard case .opaque(let references) = record.header.references,
            (AccountRecord.accountCode...AccountRecord.logDeclarationCode).contains(references.code)
        else { return nil }
        let author = record.header.author
        guard let body = record.body, let parsed = AccountRecord(body, author: author) else {
            return StoreError(.invalidRecord, Self.inertMessage(code: references.code))
        }
        let named: AccountID
        switch parsed {
        case .founding, .joining:
            guard record.header.sequence == 1 else {
                return StoreError(.invalidRecord, "an account record that is not the first record of its log")
            }
            return nil
        case .deviceAdd(let account, _, _), .deviceRemove(let account, _, _), .logDeclaration(let account, _, _, _):
            named = account
        }
        if case .logDeclaration(_, _, let log, _) = parsed, let node = try selfAddNode(of: log, db),
            node.bytes != author.bytes
        {
            return StoreError(
                .notOwner,
                "a log declaration of log \(log.short) by device \(author.short), whose self-add names node \(node.short)"
            )
        }
        guard record.header.sequence > 1, let own = try accountOfLog(author, db), own != named else { return nil }
        return StoreError(
            .notOwner,
            "\(Self.kindName(references.code)) of account \(named.short) signed by a device of account \(own.short)"
        )
    }

    /// The account that a key's account log founds or joins, from its first record; nil while that record is not
    /// held, or when it is no account record (a recovery key's log begins with an add).
    private static func accountOfLog(_ author: AuthorID, _ db: Database) throws -> AccountID? {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT bytes, content FROM record WHERE author = ? AND seq = 1"),
                arguments: [author.bytes]
            ),
            let first = row.storedRecord, let body = first.body,
            // Stored after this same check: its signatures are not checked again.
            let parsed = AccountRecord(body, author: author, verifying: false)
        else { return nil }
        switch parsed {
        case .founding, .joining: return parsed.account(foundedBy: first.id)
        case .deviceAdd, .deviceRemove, .logDeclaration: return nil
        }
    }

    /// The node that a log's self-add names, when its self-add is held: a log declared by another device than that
    /// node was made by one and claimed by the other (an honest node declares only the logs it made, §2.10).
    private static func selfAddNode(of log: AuthorID, _ db: Database) throws -> NodeID? {
        try Data.fetchOne(
            db.cachedStatement(
                sql: "SELECT node FROM membership WHERE author = ?1 AND log = ?1 AND action = ?2 LIMIT 1"
            ),
            arguments: [log.bytes, Int64(MemberAction.add.rawValue)]
        ).map { NodeID(unchecked: $0) }
    }

    private static func kindName(_ code: UInt8) -> String {
        switch code {
        case AccountRecord.deviceAddCode: "a device-add"
        case AccountRecord.deviceRemoveCode: "a device-remove"
        case AccountRecord.logDeclarationCode: "a log declaration"
        default: "an account record"
        }
    }

    private static func inertMessage(code: UInt8) -> String {
        switch code {
        case AccountRecord.deviceAddCode:
            "a device-add without the added device's consent, or whose layout breaks PROTOCOL.md §2.10"
        case AccountRecord.logDeclarationCode:
            "a log declaration without the log key's signature, or whose layout breaks PROTOCOL.md §2.10"
        default: "\(kindName(code)) whose layout breaks PROTOCOL.md §2.10"
        }
    }
}

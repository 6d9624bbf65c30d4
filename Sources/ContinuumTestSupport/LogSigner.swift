import ContinuumCore
import Foundation

/// Signs the next record of each key's log, chained to the one before, and keeps them in the order signed: for
/// tests that write account logs and group logs by hand.
public struct LogSigner: Sendable {
    /// Every record signed, in order.
    public private(set) var records: [VerifiedRecord] = []
    /// The `createdAt` of every record; nil: the time of signing.
    public let createdAt: Timestamp?

    /// `continuing`: records to sign after, as if signed here (a fork: a second record after the same one).
    public init(
        createdAt: Timestamp? = Timestamp(milliseconds: 1_700_000_000_000),
        continuing records: [VerifiedRecord] = []
    ) {
        self.createdAt = createdAt
        self.records = records
    }

    /// Signs `body` as the next record of `identity`'s log.
    public mutating func sign(_ body: RecordBody, by identity: NodeIdentity) throws -> VerifiedRecord {
        let last = records.last { $0.header.author == identity.author }
        let record = try identity.sign(
            RecordContent(
                author: identity.author,
                sequence: (last?.header.sequence ?? 0) + 1,
                previous: last?.id,
                createdAt: createdAt ?? .now(),
                body: body
            )
        )
        records.append(record)
        return record
    }
}

extension NodeIdentity {
    /// The body of a device-add of this key to `account`, with this key's consent: what a device that links it signs.
    public func added(to account: AccountID) throws -> RecordBody {
        AccountRecord.deviceAdd(account: account, device: author, consent: try consent(toJoin: account)).body
    }
}

extension NodeIdentity {
    /// The body of a log declaration (kind 11) of this log key as `device`'s log in `group` for `account`, with this
    /// key's signature: what `device` signs.
    public func declared(in group: GroupID, for account: AccountID, by device: NodeIdentity) throws -> RecordBody {
        let signature = try declaration(account: account, group: group, device: device.author)
        return AccountRecord.logDeclaration(account: account, group: group, log: author, signature: signature).body
    }
}

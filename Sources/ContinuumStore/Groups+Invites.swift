import ContinuumCore
import Foundation
import GRDB

/// An invite this node made: the secret goes into the code; the id names it in a join.
public struct InviteTicket: Sendable, Hashable {
    public let id: Data
    public let secret: Data
    public let group: GroupID
    public let expiresAt: Timestamp

    /// The id under which a secret is looked up (``InviteCode/id(of:)``).
    public static func id(of secret: some DataProtocol) -> Data { Data(InviteCode.id(of: secret)) }
}

/// Invites: an admin of a group makes one, and the first node that proves its secret is added to the group.
extension ContinuumStore {
    /// A new random secret of an invite, a link code or a guest link (``InviteCode/secretBytes``).
    static func newSecret() -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<InviteCode.secretBytes).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// A new invite to `group`, valid for `lifetime`; this node must be an admin of it.
    public func newInvite(
        to group: GroupID,
        lifetime: Duration,
        by identity: NodeIdentity
    ) async throws
        -> InviteTicket
    {
        let now = Timestamp.now()
        let expires = Timestamp(milliseconds: now.milliseconds + lifetime.components.seconds * 1000)
        let secret = Self.newSecret()
        let ticket = InviteTicket(id: InviteTicket.id(of: secret), secret: secret, group: group, expiresAt: expires)
        try await write { db in
            guard try Self.isAdmin(of: group, db) else {
                throw StoreError(.notOwner, "only an admin of the group can invite; this node is not one")
            }
            try db.execute(
                sql: "INSERT INTO invite (id, secret, group_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
                arguments: [ticket.id, secret, group.bytes, now.milliseconds, expires.milliseconds]
            )
        }
        return ticket
    }

    /// Uses an invite once: checks it (`proves` says whether the joiner's proof matches the secret), marks it used
    /// and signs the record that adds `node` with `log` to the group. Throws `.notMember` with the reason when the
    /// invite is unknown, used, expired or not proven.
    public func redeemInvite(
        id: Data,
        node: NodeID,
        log: AuthorID,
        proves: @escaping @Sendable (Data) -> Bool,
        by identity: NodeIdentity
    ) async throws -> (group: GroupID, record: VerifiedRecord) {
        let now = Timestamp.now().milliseconds
        return try await write { db in
            guard let invite = try StoredInvite.fetch(id: id, db) else {
                throw StoreError(.notMember, "the invite is not known to this node")
            }
            guard proves(invite.secret) else {
                throw StoreError(.notMember, "the invite's proof does not match this session")
            }
            guard invite.usedAt == nil else {
                // Used by this very node with this very key: its JOINED was lost. It gets the same record again.
                if let again = try invite.addRecord(node: node, log: log, now: now, db) {
                    return (invite.group, again)
                }
                throw StoreError(.notMember, "this invite was already used; ask for a new one")
            }
            guard invite.expiresAt > now else {
                throw StoreError(.notMember, "this invite has expired; ask for a new one")
            }
            let group = invite.group
            try Self.checkCanAdd(node, to: group, db)
            try db.execute(
                sql: "UPDATE invite SET used_at = ?, used_by = ? WHERE id = ?",
                arguments: [now, node.bytes, id]
            )
            let record = try Self.signAdd(node: node, log: log, to: group, now: now, by: identity, db)
            return (group, record)
        }
    }

    /// Throws `.notMember` unless this node may add `node` to `group` now: it is still an admin there, and `node` is
    /// not a member already (the invite is then left unused).
    private static func checkCanAdd(_ node: NodeID, to group: GroupID, _ db: Database) throws {
        guard try isAdmin(of: group, db) else {
            throw StoreError(.notMember, "this node is no longer an admin of the invite's group")
        }
        let already = try Bool.fetchOne(
            db,
            sql: "SELECT 1 FROM member WHERE group_id = ? AND node = ? AND removed_through IS NULL",
            arguments: [group.bytes, node.bytes]
        )
        guard already != true else {
            throw StoreError(
                .notMember,
                "you are already a member of this invite's group; the invite is left unused"
            )
        }
    }

    /// Signs and stores, with this node's live log in `group`, the record that adds `node` with `log`. Throws
    /// `.notMember` when this node has no live log there, or when `log` is already known (a member's, or one this
    /// node holds records of).
    static func signAdd(
        node: NodeID,
        log: AuthorID,
        to group: GroupID,
        now: Int64,
        by identity: NodeIdentity,
        _ db: Database
    ) throws -> VerifiedRecord {
        guard let salt = try liveLog(in: group, db)?.salt else {
            throw StoreError(.notMember, "this node has no log in the invite's group")
        }
        let known = try Bool.fetchOne(
            db,
            sql: "SELECT 1 FROM member WHERE log = ? UNION ALL SELECT 1 FROM log_head WHERE author = ? LIMIT 1",
            arguments: [log.bytes, log.bytes]
        )
        guard known != true else {
            throw StoreError(.notMember, "the joiner's log key is already in use; join again for a new one")
        }
        var ingest = Ingest(db: db, now: now)
        let record = try ingest.signAndStore(
            .member(MemberChange(group: group, action: .add, node: node, log: log)),
            by: identity.logKey(salt: salt)
        )
        try ingest.finish()
        return record
    }
}

/// An invite as the `invite` table holds it.
private struct StoredInvite {
    let secret: Data
    let group: GroupID
    /// Unix milliseconds.
    let expiresAt: Int64
    /// Unix milliseconds; nil while the invite is unused.
    let usedAt: Int64?
    /// The node that used it.
    let usedBy: Data?

    /// The invite with this id, or nil when this node made none.
    static func fetch(id: Data, _ db: Database) throws -> StoredInvite? {
        try Row.fetchOne(
            db,
            sql: "SELECT secret, group_id, expires_at, used_at, used_by FROM invite WHERE id = ?",
            arguments: [id]
        ).map {
            StoredInvite(
                secret: $0["secret"],
                group: GroupID(unchecked: $0["group_id"]),
                expiresAt: $0["expires_at"],
                usedAt: $0["used_at"],
                usedBy: $0["used_by"]
            )
        }
    }

    /// The record this used invite added `log` of `node` with, for a node whose answer was lost: nil unless `node`
    /// used it, that log is still a member, and the invite has not expired.
    func addRecord(node: NodeID, log: AuthorID, now: Int64, _ db: Database) throws -> VerifiedRecord? {
        guard usedBy == node.bytes,
            let again = try Data.fetchOne(
                db,
                sql: """
                    SELECT record.bytes FROM membership JOIN record ON record.id = membership.record_id
                    JOIN member ON member.log = membership.log AND member.removed_through IS NULL
                    WHERE membership.group_id = ? AND membership.node = ? AND membership.log = ?
                        AND membership.action = 1
                    """,
                arguments: [group.bytes, node.bytes, log.bytes]
            ),
            expiresAt > now
        else { return nil }
        return try SignedRecord(bytes: Array(again)).verify()
    }
}

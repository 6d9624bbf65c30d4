/// Who belongs to a group, as a deterministic function of the group's membership records (PROTOCOL.md §5.1):
/// every node that holds the same records computes the same members, whatever order they came in.
///
/// The rules:
/// - The **founder** (the author of the group record, whose log key is the group id) is a member and an admin, and
///   cannot be removed.
/// - **Admins** are the founder and every log that an admin made one (`admin`), found as a fixed point from the
///   founder. Only the founder removes an admin.
/// - A record **stands** when its author is an admin, or was one and the record is within what its removal kept
///   (its sequence ≤ the removal's `through`).
/// - **Members** are the admins, every log added by a standing `add`, and, in an open or network group, every log
///   that added itself (a self-add, the first record of its log).
/// - **Removal wins.** A log removed by a standing `remove` (of a non-admin, or of an admin by the founder) is not a
///   member, whatever adds there are, before or after; a node that rejoins does so with a new log key. Its records
///   up to `through` (the smallest of the removals') stay valid; later ones are refused.
public enum GroupRules {
    /// A member record as the rules need it: who signed it, where in its log, and the change.
    public struct Record: Sendable, Hashable {
        public var author: AuthorID
        public var sequence: UInt64
        public var change: MemberChange

        public init(author: AuthorID, sequence: UInt64, change: MemberChange) {
            self.author = author
            self.sequence = sequence
            self.change = change
        }
    }

    /// How the group came to be.
    public enum Origin: Sendable, Hashable {
        /// Founded by a group record: the founder's node, and whether anyone may join without an admin.
        case founded(node: NodeID, open: Bool)
        /// A network group (`--network NAME` or `--network-key FILE`): no founder and no admin; anyone who knows its
        /// id adds itself, and nobody can be removed.
        case network
    }

    /// One log of a group: its node, whether it is an admin, and, once removed, the last sequence that stays valid.
    public struct Member: Sendable, Hashable {
        public var node: NodeID
        public var admin: Bool
        /// Nil for a member; for a removed log, the last of its records that is kept.
        public var removedThrough: UInt64?

        public init(node: NodeID, admin: Bool, removedThrough: UInt64? = nil) {
            self.node = node
            self.admin = admin
            self.removedThrough = removedThrough
        }

        public var isMember: Bool { removedThrough == nil }

        /// Whether a record of this log at `sequence` is valid: always for a member, up to `through` for a removed
        /// log.
        public func accepts(sequence: UInt64) -> Bool { removedThrough.map { sequence <= $0 } ?? true }
    }

    /// The logs of a group: members and removed ones, by log key.
    public static func members(
        of group: GroupID,
        origin: Origin,
        records: [Record]
    ) -> [AuthorID: Member] {
        let records = records.filter { $0.change.group == group }
        var logs: [AuthorID: Member] = [:]
        if case .network = origin {
            for record in records where record.change.action == .add && record.change.log == record.author {
                note(record.change, admin: false, in: &logs)
            }
            return logs
        }
        guard case .founded(let founderNode, let open) = origin else { return logs }
        let founder = group.founder

        // Removals by the founder always stand: they may remove admins.
        var founderRemovals: [AuthorID: UInt64] = [:]
        for record in records where record.author == founder && record.change.action == .remove {
            founderRemovals[record.change.log] = min(
                founderRemovals[record.change.log] ?? .max,
                record.change.through
            )
        }
        func stands(_ record: Record, admins: Set<AuthorID>) -> Bool {
            guard admins.contains(record.author) else { return false }
            return founderRemovals[record.author].map { record.sequence <= $0 } ?? true
        }

        // Admins, as a fixed point from the founder (grants by an admin the founder removed count up to `through`).
        var everAdmin: Set<AuthorID> = [founder]
        var grew = true
        while grew {
            grew = false
            for record in records where record.change.action == .admin && !everAdmin.contains(record.change.log) {
                if stands(record, admins: everAdmin) {
                    everAdmin.insert(record.change.log)
                    grew = true
                }
            }
        }
        let admins = everAdmin.filter { founderRemovals[$0] == nil }

        logs[founder] = Member(node: founderNode, admin: true)
        for record in records.sorted(by: order) {
            let change = record.change
            switch change.action {
            case .admin where stands(record, admins: everAdmin):
                note(change, admin: admins.contains(change.log), in: &logs)
            case .add where stands(record, admins: everAdmin):
                note(change, admin: admins.contains(change.log), in: &logs)
            case .add where open && change.log == record.author:
                note(change, admin: false, in: &logs)
            default:
                break
            }
        }

        // Removals: the founder's, and standing ones of logs that never were admins (only the founder removes an
        // admin). Each removal also names the removed log's node, for a log removed before any add arrived here.
        var removals = founderRemovals
        var removedNodes: [AuthorID: NodeID] = [:]
        for record in records where record.change.action == .remove {
            let log = record.change.log
            if record.author != founder {
                guard stands(record, admins: everAdmin), !everAdmin.contains(log) else { continue }
                removals[log] = min(removals[log] ?? .max, record.change.through)
            }
            removedNodes[log] = min(removedNodes[log] ?? record.change.node, record.change.node)
        }
        for (log, through) in removals where log != founder {
            if var member = logs[log] {
                member.removedThrough = through
                member.admin = false
                logs[log] = member
            } else if let node = removedNodes[log] {
                // Removed before any add arrived here: kept as removed, so that a later add cannot bring it back.
                logs[log] = Member(node: node, admin: false, removedThrough: through)
            }
        }
        return logs
    }

    /// Records in a fixed order, so that the node a log is tied to does not depend on arrival order.
    private static func order(_ a: Record, _ b: Record) -> Bool {
        (a.author, a.sequence) < (b.author, b.sequence)
    }

    private static func note(_ change: MemberChange, admin: Bool, in logs: inout [AuthorID: Member]) {
        if var held = logs[change.log] {
            // Two records tie one log to two nodes: the smaller node id wins, on every node alike.
            if change.node < held.node { held.node = change.node }
            held.admin = held.admin || admin
            logs[change.log] = held
        } else {
            logs[change.log] = Member(node: change.node, admin: admin)
        }
    }
}

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
        /// An admin now: one that the founder has not removed.
        public var admin: Bool
        /// An admin now, or one that the founder removed: its member records up to `removedThrough` stand.
        public var wasAdmin: Bool
        /// Nil for a member; for a removed log, the last of its records that is kept.
        public var removedThrough: UInt64?

        public init(node: NodeID, admin: Bool, wasAdmin: Bool? = nil, removedThrough: UInt64? = nil) {
            self.node = node
            self.admin = admin
            self.wasAdmin = wasAdmin ?? admin
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
        switch origin {
        case .network:
            return selfAdded(records)
        case .founded(let founderNode, let open):
            let founded = Founded(founder: group.founder, records: records)
            var logs = founded.added(founderNode: founderNode, open: open)
            founded.applyRemovals(to: &logs)
            for log in logs.keys { logs[log]?.wasAdmin = founded.everAdmin.contains(log) }
            return logs
        }
    }

    /// The logs of a network group: every log that added itself, none an admin, none removed.
    private static func selfAdded(_ records: [Record]) -> [AuthorID: Member] {
        var logs: [AuthorID: Member] = [:]
        for record in records where record.change.action == .add && record.change.log == record.author {
            note(record.change, admin: false, in: &logs)
        }
        return logs
    }

    /// The records of a founded group with what follows from them alone: the founder's removals and who was ever an
    /// admin. Its methods work out the members from these.
    private struct Founded {
        /// The group's founder, whose log key is the group id.
        let founder: AuthorID
        /// The group's membership records, in any order.
        let records: [Record]
        /// For each log the founder removed, the last of its sequences that stays valid (the smallest `through`).
        /// Removals by the founder always stand: they may remove admins.
        let founderRemovals: [AuthorID: UInt64]
        /// The founder and every log a standing record ever made an admin, including ones the founder removed since.
        let everAdmin: Set<AuthorID>

        /// Reads the founder's removals and the admins, as a fixed point from the founder, out of `records`.
        init(founder: AuthorID, records: [Record]) {
            self.founder = founder
            self.records = records
            var founderRemovals: [AuthorID: UInt64] = [:]
            for record in records where record.author == founder && record.change.action == .remove {
                founderRemovals[record.change.log] = min(
                    founderRemovals[record.change.log] ?? .max,
                    record.change.through
                )
            }
            self.founderRemovals = founderRemovals
            self.everAdmin = Self.admins(from: founder, records: records, founderRemovals: founderRemovals)
        }

        /// Every log that was ever an admin, as a fixed point from the founder: grants by an admin the founder
        /// removed count up to that removal's `through`.
        private static func admins(
            from founder: AuthorID,
            records: [Record],
            founderRemovals: [AuthorID: UInt64]
        ) -> Set<AuthorID> {
            var everAdmin: Set<AuthorID> = [founder]
            var grew = true
            while grew {
                grew = false
                for record in records where record.change.action == .admin && !everAdmin.contains(record.change.log) {
                    if stands(record, admins: everAdmin, founderRemovals: founderRemovals) {
                        everAdmin.insert(record.change.log)
                        grew = true
                    }
                }
            }
            return everAdmin
        }

        /// Whether `record` stands: its author is one of `admins`, and the founder has not removed it, or removed it
        /// after this record.
        private static func stands(
            _ record: Record,
            admins: Set<AuthorID>,
            founderRemovals: [AuthorID: UInt64]
        ) -> Bool {
            guard admins.contains(record.author) else { return false }
            return founderRemovals[record.author].map { record.sequence <= $0 } ?? true
        }

        /// Whether `record` stands, judged against every log that was ever an admin.
        private func stands(_ record: Record) -> Bool {
            Self.stands(record, admins: everAdmin, founderRemovals: founderRemovals)
        }

        /// The founder, and every log a standing `admin` or `add` names or, in an open group, that added itself;
        /// admins are the ones the founder has not removed. Nothing is marked removed yet.
        func added(founderNode: NodeID, open: Bool) -> [AuthorID: Member] {
            let admins = everAdmin.filter { founderRemovals[$0] == nil }
            var logs: [AuthorID: Member] = [founder: Member(node: founderNode, admin: true)]
            for record in records.sorted(by: order) {
                let change = record.change
                switch change.action {
                case .admin where stands(record):
                    note(change, admin: admins.contains(change.log), in: &logs)
                case .add where stands(record):
                    note(change, admin: admins.contains(change.log), in: &logs)
                case .add where open && change.log == record.author:
                    note(change, admin: false, in: &logs)
                default:
                    break
                }
            }
            return logs
        }

        /// Marks removed logs in `logs`: the founder's removals, and standing ones of logs that never were admins
        /// (only the founder removes an admin). A log removed before any add arrived here is added as removed, with
        /// the node its removals name, so that a later add cannot bring it back.
        func applyRemovals(to logs: inout [AuthorID: Member]) {
            var removals = founderRemovals
            var removedNodes: [AuthorID: NodeID] = [:]
            for record in records where record.change.action == .remove {
                let log = record.change.log
                if record.author != founder {
                    guard stands(record), !everAdmin.contains(log) else { continue }
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
                    logs[log] = Member(node: node, admin: false, removedThrough: through)
                }
            }
        }
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

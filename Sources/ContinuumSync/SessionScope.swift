import ContinuumCore
import ContinuumSession
import Foundation
import NIOConcurrencyHelpers

/// The groups a session shares with its peer, settled by the MEMBERSHIP exchange (PROTOCOL.md §7.8.3), and what
/// follows from them: which logs the peer may be sent and may send. It shrinks when the peer is removed from a
/// group; the engine ends the session when nothing is left.
final class SessionScope: Sendable {
    let peer: NodeID
    /// The records the peer sent that live gossip may still find in the store (never sent back to it).
    let arrivals = ArrivalLedger()
    private let state: NIOLockedValueBox<(groups: Set<GroupID>, view: MembershipView)>

    init(peer: NodeID, groups: Set<GroupID>, view: MembershipView) {
        self.peer = peer
        state = NIOLockedValueBox((groups, view))
    }

    var groups: Set<GroupID> { state.withLockedValue { $0.groups } }

    /// Adds a group: one this node just let the peer join, or joined through it, while a session already existed.
    func add(_ group: GroupID) {
        state.withLockedValue { _ = $0.groups.insert(group) }
    }

    /// Takes a new view of the groups: a group from which the peer was removed leaves the scope. Returns the groups
    /// left.
    @discardableResult
    func update(_ view: MembershipView) -> Set<GroupID> {
        state.withLockedValue { state in
            state.view = view
            let peer = self.peer
            // A group this node now knows the peer in (a member record arrived) joins the scope.
            state.groups.formUnion(view.groupsShared(with: peer))
            state.groups = state.groups.filter { group in
                guard view.groups[group] != nil else { return false }
                // Removed: a log of the peer's in the group is removed, and none is a member.
                let logs = view.logs.values.filter { $0.group == group && $0.node == peer }
                return logs.isEmpty || logs.contains { $0.removedThrough == nil }
            }
            return state.groups
        }
    }

    /// Whether the peer may be sent, or send, this record of `author`: true or false when the author's group is
    /// known, nil when it is not (yet).
    func allows(_ author: AuthorID, sequence: UInt64) -> Bool? {
        state.withLockedValue { $0.view.accepts(author, sequence: sequence, in: $0.groups) }
    }

    /// Those of `authors` that are the peer's own logs.
    func logsOfPeer(among authors: [AuthorID]) -> Set<AuthorID> { Set(groupsOfPeerLogs(among: authors).keys) }

    /// Those of `authors` that are the peer's own logs, with the group of each.
    func groupsOfPeerLogs(among authors: [AuthorID]) -> [AuthorID: GroupID] {
        state.withLockedValue { state in
            var groups: [AuthorID: GroupID] = [:]
            for author in authors {
                guard let log = state.view.logs[author], log.node == peer else { continue }
                groups[author] = log.group
            }
            return groups
        }
    }

    /// Whether the peer may be sent the log of `author`.
    func shares(_ author: AuthorID) -> Bool {
        state.withLockedValue { state in
            state.view.logs[author].map { state.groups.contains($0.group) }
                ?? state.view.carriesAccountLog(author, in: state.groups)
        }
    }

    /// The part of a clock the peer may see: the logs of the groups shared, a removed log only up to what its
    /// removal kept (its later records, which this node may hold from before the removal, are not offered).
    func filter(_ clock: VectorClock) -> VectorClock {
        state.withLockedValue { state in
            var heads: [AuthorID: UInt64] = [:]
            for (author, head) in clock.heads {
                guard let log = state.view.logs[author] else {
                    // The account logs of the nodes of the groups shared (PROTOCOL.md §7.8.6).
                    if state.view.carriesAccountLog(author, in: state.groups) { heads[author] = head }
                    continue
                }
                guard state.groups.contains(log.group) else { continue }
                let shown = min(head, log.removedThrough ?? head)
                if shown > 0 { heads[author] = shown }
            }
            return VectorClock(heads)
        }
    }

    /// The last sequence of `author`'s log the peer may be sent: its removal's `through` for a removed log.
    func lastSendable(of author: AuthorID) -> UInt64? {
        state.withLockedValue { $0.view.logs[author]?.removedThrough }
    }

    /// What to do with a batch from the peer (PROTOCOL.md §7.8.6), by ``sort(_:groups:view:)`` with the groups
    /// shared and the view of now.
    func sort(_ records: [VerifiedRecord]) -> BatchSorting {
        state.withLockedValue { Self.sort(records, groups: $0.groups, view: $0.view) }
    }

    /// What to do with a batch from a peer with which `groups` are shared, by `view`: the records to store, and how
    /// many wait or are refused. Records of a log not known here as a member's are held back (not stored: its
    /// membership may still be on its way, and a later round brings them again); records of a removed member after
    /// what its removal kept are refused; records of a group the session does not share are not stored either (the
    /// peer's view of who is in which group may differ from this node's for a while: a removed member that has not
    /// heard of it, say). A group record, a member record signed by an admin and a self-add to an open group make
    /// their logs known for the rest of the batch.
    static func sort(_ records: [VerifiedRecord], groups: Set<GroupID>, view: MembershipView) -> BatchSorting {
        var sorter = BatchSorter(groups: groups, view: view)
        for record in records { sorter.sort(record) }
        return sorter.sorting
    }
}

/// Sorts one batch, record after record (``SessionScope/sort(_:groups:view:)``), keeping the logs it makes known.
private struct BatchSorter {
    let groups: Set<GroupID>
    let view: MembershipView
    /// Logs learned from this batch: their group, and whether they are admins.
    var learned: [AuthorID: (group: GroupID, admin: Bool)] = [:]
    /// Nodes of the logs learned from this batch: their account logs are carried too.
    var learnedNodes: Set<NodeID> = []
    /// Devices added to accounts by adds of this batch (signed by a device of the account).
    var learnedDevices: [NodeID: Set<AccountID>] = [:]
    var sorting = BatchSorting()

    mutating func sort(_ record: VerifiedRecord) {
        let header = record.header
        switch header.references {
        case .group: sortGroupRecord(record)
        case .member(let change) where change.log == header.author: sortSelfAdd(record, change)
        default: sortLogRecord(record)
        }
    }

    /// A group record: its founder's log is the group's first admin.
    private mutating func sortGroupRecord(_ record: VerifiedRecord) {
        let group = GroupID(founder: record.header.author)
        guard groups.contains(group) else {
            sorting.outOfScope.append("a group record of group \(group.short)")
            return
        }
        learned[record.header.author] = (group, true)
        sorting.keep.insert(record.id)
    }

    /// A log adding itself: kept for an open or network group, held back otherwise (an admin's record adds it).
    private mutating func sortSelfAdd(_ record: VerifiedRecord, _ change: MemberChange) {
        guard groups.contains(change.group) else {
            sorting.outOfScope.append("a member record of group \(change.group.short)")
            return
        }
        let info = view.groups[change.group]
        if info?.open == true || info?.network == true {
            learned[record.header.author] = (change.group, false)
            learnedNodes.insert(change.node)
            sorting.keep.insert(record.id)
        } else {
            sorting.held.append(record.ref)
        }
    }

    /// Any other record: kept when its log is a member of a shared group (an admin, for a member record).
    private mutating func sortLogRecord(_ record: VerifiedRecord) {
        let header = record.header
        guard let (group, admin, kept) = standing(header.author, header.sequence) else {
            sortAccountLogRecord(record)
            return
        }
        guard groups.contains(group) else {
            sorting.outOfScope.append("a record of \(header.author.short), a log of group \(group.short)")
            return
        }
        guard kept else {
            sorting.removed += 1
            return
        }
        if case .member(let change) = header.references {
            // Only admins change a group's members; the record may also be ahead of the grant that made its
            // author one, which a later round brings: not stored now either way.
            guard admin, change.group == group else {
                sorting.notAdmin.append(header.author)
                return
            }
            if change.action != .remove, view.logs[change.log]?.removedThrough == nil {
                learned[change.log] = (group, change.action == .admin)
                learnedNodes.insert(change.node)
            }
        }
        sorting.keep.insert(record.id)
    }

    /// A record of a log no group places: kept when it is a record of kinds 8 on (§2.8) in the account log of a node
    /// of a group shared, or of a device of a member account of one (§7.8.6); held back otherwise (the member record
    /// or the add that makes its log known may be on its way). An add makes its device's account log carried for the
    /// rest of the batch, and a log declaration its log a member of its group, as the store will derive (§5.1).
    private mutating func sortAccountLogRecord(_ record: VerifiedRecord) {
        let author = record.header.author
        let node = NodeID(unchecked: author.bytes)
        guard record.header.kind == .unknown,
            view.carriesAccountLog(author, in: groups) || (view.logs[author] == nil && learnedNodes.contains(node))
        else {
            sorting.held.append(record.ref)
            return
        }
        sorting.keep.insert(record.id)
        guard let body = record.record.body, let parsed = AccountRecord(body, author: author) else { return }
        switch parsed {
        case .founding where record.header.sequence == 1:
            learnedDevices[node, default: []].insert(AccountID(founding: record.id))
        case .deviceAdd(let account, let device, _) where isDevice(node, of: account):
            let added = NodeID(unchecked: device.bytes)
            learnedNodes.insert(added)
            learnedDevices[added, default: []].insert(account)
        case .logDeclaration(let account, let group, let log, _)
        where groups.contains(group) && isDevice(node, of: account) && isMemberAccount(account, of: group)
            && learned[log] == nil && view.logs[log] == nil:
            // A log placed by member records already keeps its place (and its admin's standing).
            learned[log] = (group, false)
        default:
            break
        }
    }

    /// Whether `account` is a member account of `group` (§5.1): in the view, or by a device learned in this batch
    /// that is the node of a member log.
    private func isMemberAccount(_ account: AccountID, of group: GroupID) -> Bool {
        if view.memberAccounts[account]?.contains(group) == true { return true }
        return view.logs.values.contains { log in
            log.group == group && log.removedThrough == nil && learnedDevices[log.node]?.contains(account) == true
        }
    }

    /// Whether `node` is a device of `account` in the view, or was added to it earlier in the batch.
    private func isDevice(_ node: NodeID, of account: AccountID) -> Bool {
        view.devices[node]?.contains(account) == true || learnedDevices[node]?.contains(account) == true
    }

    /// The group of `author`'s log, whether its member records stand (an admin, or one the founder removed: then up
    /// to what the removal kept, §5.1), and whether its record at `sequence` is one its removal (if any) kept; nil for
    /// a log not known.
    private func standing(_ author: AuthorID, _ sequence: UInt64) -> (GroupID, admin: Bool, kept: Bool)? {
        if let log = learned[author] { return (log.group, log.admin, true) }
        guard let log = view.logs[author] else { return nil }
        return (log.group, log.wasAdmin, log.accepts(sequence: sequence))
    }
}

/// How ``SessionScope/sort(_:)`` sorted a batch.
struct BatchSorting: Hashable {
    /// The records to store.
    var keep: Set<RecordID> = []
    /// Records of logs not known as members' yet: not stored (asked for again, ``HeldPositions``).
    var held: [RecordRef] = []
    /// How many records were held back.
    var heldBack: Int { held.count }
    /// Records of removed members after what their removal kept: not stored.
    var removed = 0
    /// Authors of member records who are not admins of the group (here, yet): those records are not stored.
    var notAdmin: [AuthorID] = []
    /// Records of groups the session does not share, described: not stored.
    var outOfScope: [String] = []
}

/// The store as one session sees it: only the logs and photos of the groups it shares with its peer (its
/// ``SessionScope``), and the peer's records noted as the peer's before they are stored.
struct ScopedStorage: SessionStorage {
    let base: any SyncStorage
    let scope: SessionScope

    func clock() async throws -> VectorClock { scope.filter(try await base.clock()) }

    func byteCount(of ranges: [AuthorID: ClosedRange<UInt64>]) async throws -> (records: UInt64, bytes: UInt64) {
        try await base.byteCount(of: ranges.filter { scope.shares($0.key) })
    }

    func storedRecords(
        of author: AuthorID,
        in range: ClosedRange<UInt64>,
        limit: Int,
        maxBytes: Int
    ) async throws -> [StoredRecord] {
        // A REQUEST for a log of another group is answered with nothing, as for a log not held; a removed log's
        // records after what its removal kept likewise.
        guard scope.shares(author) else { return [] }
        var range = range
        if let last = scope.lastSendable(of: author) {
            guard range.lowerBound <= last else { return [] }
            range = range.lowerBound...min(range.upperBound, last)
        }
        return try await base.storedRecords(of: author, in: range, limit: limit, maxBytes: maxBytes)
    }

    func mayHold(_ author: AuthorID, from sequence: UInt64) async -> Bool {
        await base.mayHold(author, from: sequence)
    }

    /// Stores the peer's records, noted as the peer's from before the transaction begins: gossip that finds them
    /// as soon as it commits, before the session has counted them as held by the peer, leaves the peer out.
    func ingest(_ batch: StoreBatch<VerifiedRecord>) async throws -> Ingested {
        var ingested = try await scope.arrivals.storing(batch.records.map(\.id)) { try await base.ingest(batch) }
        ingested.clock = scope.filter(ingested.clock)
        return ingested
    }

    func peerClocks(_ peer: AuthorID) async throws -> (sent: [UInt8]?, received: [UInt8]?) {
        try await base.peerClocks(peer)
    }

    func setPeerClock(_ peer: AuthorID, sent: [UInt8]?, received: [UInt8]?) async throws {
        try await base.setPeerClock(peer, sent: sent, received: received)
    }

    func groups(ofPosts posts: [PostID]) async throws -> [PostID: GroupID] { try await base.groups(ofPosts: posts) }

    func photoURL(_ hash: AssetHash) -> URL { base.photoURL(hash) }

    func smallPhoto(_ hash: AssetHash) async throws -> [UInt8]? { try await base.smallPhoto(hash) }

    /// Given to this peer: shown by a live post of a group the session shares.
    func givenPhotos(_ hashes: [AssetHash]) async throws -> [AssetHash: [UInt8]] {
        try await base.smallPhotos(hashes, shownInGroups: scope.groups)
    }

    /// Shown to this peer: by a live post of a group the session shares.
    func isPhotoShown(_ hash: AssetHash) async throws -> Bool {
        try await base.isPhotoShown(hash, inGroups: scope.groups)
    }
}

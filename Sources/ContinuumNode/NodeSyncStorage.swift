import ContinuumCore
import ContinuumSession
import ContinuumStore
import ContinuumSync
import ContinuumWire
import Foundation

/// The node's store seen through sync's port (``SyncStorage``): where the two are composed. It adds what the
/// store needs and sync does not know about: who is notified of what.
struct NodeSyncStorage: SyncStorage {
    let store: ContinuumStore

    func writeStamp() -> [Int]? { store.writeStamp() }
    /// Signs the records of a join (the inviter's add, the joiner's name).
    let identity: NodeIdentity
    /// Records from others on followed posts notify (and new posts, if configured).
    let policy: NotificationPolicy

    func clock() async throws -> VectorClock { try await store.clock() }

    func byteCount(of ranges: [AuthorID: ClosedRange<UInt64>]) async throws -> (records: UInt64, bytes: UInt64) {
        try await store.byteCount(of: ranges)
    }

    func storedRecords(
        of author: AuthorID,
        in range: ClosedRange<UInt64>,
        limit: Int,
        maxBytes: Int
    ) async throws
        -> [StoredRecord]
    {
        try await store.storedRecords(of: author, in: range, limit: limit, maxBytes: maxBytes)
    }

    func mayHold(_ author: AuthorID, from sequence: UInt64) -> Bool { store.mayHold(author, from: sequence) }

    func records(after rowid: Int64, limit: Int) async throws -> [StoredRecord] {
        try await store.records(after: rowid, limit: limit)
    }

    func lastRecordRowid() async throws -> Int64 { try await store.lastRecordRowid() }

    /// One transaction, then the clock; a record refused by a rule is reported with the rule's message.
    func ingest(_ batch: StoreBatch<VerifiedRecord>) async throws -> Ingested {
        let report = try await store.ingest(batch.parts.map { ($0.delivery, $0.records) }, notifying: policy)
        let broke = Dictionary(report.ignored.map { ($0.id, $0.error.message) }) { first, _ in first }
        return Ingested(stored: report.stored, forks: report.forks, brokeRules: broke, clock: try await store.clock())
    }

    func peerClocks(_ peer: AuthorID) async throws -> (sent: [UInt8]?, received: [UInt8]?) {
        try await store.peerClocks(peer)
    }

    func setPeerClock(_ peer: AuthorID, sent: [UInt8]?, received: [UInt8]?) async throws {
        try await store.setPeerClock(peer, sent: sent, received: received)
    }

    func rememberPeer(_ peer: AuthorID, name: String?, host: String, port: Int, state: String) async throws {
        try await store.rememberPeer(peer, name: name, host: host, port: port, state: state)
    }

    func updatePeer(_ peer: AuthorID, state: String, stats: SessionStats) async throws {
        try await store.updatePeer(
            peer,
            state: state,
            recordsIn: stats.recordsIn,
            recordsOut: stats.recordsOut,
            bytesIn: stats.bytesIn,
            bytesOut: stats.bytesOut
        )
    }

    func followedPosts() async throws -> Set<PostID> { try await store.followedPosts() }

    func notifications(after id: Int64) async throws -> [NotificationSummary] {
        try await store.notifications(after: id)
    }

    func lastNotificationID() async throws -> Int64 { try await store.lastNotificationID() }

    func missingPhotos(
        limit: Int,
        changedSince version: Int64?
    ) async throws -> (version: Int64, photos: [MissingPhoto]?) {
        try await store.missingPhotos(limit: limit, changedSince: version)
    }

    func missingPhotos(shownBy posts: [PostID]) async throws -> [MissingPhoto] {
        try await store.missingPhotos(shownBy: posts)
    }

    func peerLacks(_ peer: AuthorID) async throws -> [PeerLack] { try await store.peerLacks(peer) }

    func saveLacks(_ lacks: [PeerLack]) async throws { try await store.saveLacks(lacks) }

    func photoURL(_ hash: AssetHash) -> URL { store.assets.url(for: hash) }

    func smallPhoto(_ hash: AssetHash) async throws -> [UInt8]? { try await store.smallPhoto(hash) }

    func givenPhotos(_ hashes: [AssetHash]) async throws -> [AssetHash: [UInt8]] {
        try await store.smallPhotos(hashes, shownInGroups: nil)
    }

    func smallPhotos(_ hashes: [AssetHash], shownInGroups groups: Set<GroupID>) async throws -> [AssetHash: [UInt8]] {
        try await store.smallPhotos(hashes, shownInGroups: groups)
    }

    func commitSmallPhotos(_ photos: [(hash: AssetHash, bytes: [UInt8])]) async throws -> [Bool] {
        try await store.commitSmallPhotos(photos)
    }

    var partialPhotos: URL { store.assets.temporaryDirectory }

    func commitPhotos(_ photos: [(file: URL, hash: AssetHash, bytes: Int64)]) async throws -> [Bool] {
        try await store.commitFetchedPhotos(photos.map { FetchedPhoto(file: $0.file, hash: $0.hash, bytes: $0.bytes) })
    }

    func isPhotoShown(_ hash: AssetHash) async throws -> Bool { try await store.isPhotoShown(hash) }

    func isPhotoShown(_ hash: AssetHash, inGroups groups: Set<GroupID>) async throws -> Bool {
        try await store.isPhotoShown(hash, inGroups: groups)
    }

    func membershipView() async throws -> MembershipView { try await store.membershipView(node: identity.node) }

    func membershipProof(in group: GroupID) async throws -> [UInt8]? { try await store.membershipProof(in: group) }

    func groups(ofPosts posts: [PostID]) async throws -> [PostID: GroupID] { try await store.groups(ofPosts: posts) }

    func redeemInvite(
        id: [UInt8],
        node: NodeID,
        log: AuthorID,
        proves: @escaping @Sendable (Data) -> Bool
    ) async throws -> (group: GroupID, record: [UInt8]) {
        let (group, record) = try await store.redeemInvite(
            id: Data(id),
            node: node,
            log: log,
            proves: proves,
            by: identity
        )
        return (group, record.bytes)
    }

    func askToJoin(
        node: NodeID,
        log: AuthorID,
        name: String?,
        host: String,
        port: Int
    ) async throws
        -> JoinRequestAnswer
    {
        try await store.askToJoin(node: node, log: log, name: name, host: host, port: port)
    }

    func completeJoin(log: AuthorID, group: GroupID) async throws {
        try await store.completeJoin(log: log, group: group, by: identity)
    }

    func checkLink(ticket: [UInt8], proves: @escaping @Sendable (Data) -> Bool) async throws -> [[UInt8]] {
        try await store.checkLink(ticket: Data(ticket), proves: proves, by: identity)
    }

    func signDeviceAdd(
        ticket: [UInt8],
        device: AuthorID,
        consent: [UInt8],
        proves: @escaping @Sendable (Data) -> Bool
    ) async throws -> (record: [UInt8], groups: [GroupID]) {
        let (record, groups) = try await store.signDeviceAdd(
            ticket: Data(ticket),
            device: device,
            consent: Data(consent),
            proves: proves,
            by: identity
        )
        return (record.bytes, groups)
    }

    func canBeLinked() async throws -> Bool { try await store.canBeLinked(identity) }

    func recordLink(records: [[UInt8]], add: [UInt8], groups: [GroupID], name: String?) async throws -> Set<GroupID> {
        try await store.recordLink(records: records, add: add, groups: groups, name: name, by: identity)
    }

    func recoveryRecords(key: AuthorID) async throws -> [[UInt8]] { try await store.recoveryRecords(key: key) }

    func followStates() async throws -> [FollowEntry] {
        try await store.followStates(limit: WireLimits.maxFollowEntries).map {
            FollowEntry(post: $0.post, following: $0.following, changedAt: $0.changedAt)
        }
    }

    func mergeFollows(_ entries: [FollowEntry]) async throws -> Int {
        try await store.mergeFollows(
            entries.map { FollowState(post: $0.post, following: $0.following, changedAt: $0.changedAt) }
        )
    }

    func recordRecovery(
        records: [[UInt8]],
        recovery: NodeIdentity,
        name: String?
    ) async throws -> (records: [[UInt8]], groups: Set<GroupID>) {
        try await store.recordRecovery(records: records, recovery: recovery, name: name, by: identity)
    }

    func takeRecovery(_ records: [[UInt8]], key: AuthorID, device: AuthorID) async throws {
        try await store.takeRecovery(records, key: key, device: device)
    }
}

import ContinuumCore
import ContinuumSession
import Foundation

@testable import ContinuumSync

/// The sync port in memory, for the in-process tests of sessions and the engine: records with row ids, a clock, a
/// membership view, every batch stored, and the posts followed; peers, photos and joins are empty. Two faults can be
/// injected: `afterCommit` runs once a batch is in and before `ingest` returns, where the engine's store poll may find
/// the batch before the session that stored it has counted it as held by its peer; ``failLookups()`` makes the
/// lookups of posts' groups and of shown photos throw, as a store that cannot answer does.
actor MemorySyncStorage: SyncStorage {
    private var stored: [StoredRecord] = []
    private let view: MembershipView
    /// The records of every `ingest`, in order.
    private(set) var ingested: [[VerifiedRecord]] = []

    private var afterCommit: (@Sendable () async -> Void)?

    init(view: MembershipView) { self.view = view }

    func setAfterCommit(_ hook: @escaping @Sendable () async -> Void) { afterCommit = hook }

    private var lookupsFail = false
    struct LookupFailure: Error {}

    /// From now on, `groups(ofPosts:)` and both `isPhotoShown` throw ``LookupFailure``.
    func failLookups() { lookupsFail = true }

    /// Holds `bytes` as the record of `author` at `sequence`, unchecked (as if stored long ago).
    func hold(_ bytes: [UInt8], id: RecordID, author: AuthorID, sequence: UInt64) {
        stored.append(
            StoredRecord(rowid: Int64(stored.count + 1), id: id, author: author, sequence: sequence, bytes: bytes)
        )
    }

    func clock() -> VectorClock {
        var heads: [AuthorID: UInt64] = [:]
        for record in stored where record.sequence == heads[record.author, default: 0] + 1 {
            heads[record.author] = record.sequence
        }
        return VectorClock(heads)
    }

    func byteCount(of ranges: [AuthorID: ClosedRange<UInt64>]) -> (records: UInt64, bytes: UInt64) { (0, 0) }

    func storedRecords(
        of author: AuthorID,
        in range: ClosedRange<UInt64>,
        limit: Int,
        maxBytes: Int
    )
        -> [StoredRecord]
    {
        Array(stored.filter { $0.author == author && range.contains($0.sequence) }.prefix(limit))
    }

    /// Exact: whether a record of `author` at `sequence` or above is held.
    func mayHold(_ author: AuthorID, from sequence: UInt64) -> Bool {
        stored.contains { $0.author == author && $0.sequence >= sequence }
    }

    func records(after rowid: Int64, limit: Int) -> [StoredRecord] {
        Array(stored.filter { $0.rowid > rowid }.prefix(limit))
    }

    func lastRecordRowid() -> Int64 { stored.last?.rowid ?? 0 }
    nonisolated func writeStamp() -> [Int]? { nil }

    func ingest(_ batch: StoreBatch<VerifiedRecord>) async -> Ingested {
        ingested.append(batch.records)
        var new: [RecordID] = []
        for record in batch.records where !stored.contains(where: { $0.id == record.id }) {
            let header = record.header
            stored.append(
                StoredRecord(
                    rowid: Int64(stored.count + 1),
                    id: record.id,
                    author: header.author,
                    sequence: header.sequence,
                    bytes: record.bytes
                )
            )
            new.append(record.id)
        }
        await afterCommit?()
        return Ingested(stored: new, forks: [], brokeRules: [:], clock: clock())
    }

    func peerClocks(_ peer: AuthorID) -> (sent: [UInt8]?, received: [UInt8]?) { (nil, nil) }
    func setPeerClock(_ peer: AuthorID, sent: [UInt8]?, received: [UInt8]?) {}
    func rememberPeer(_ peer: AuthorID, name: String?, host: String, port: Int, state: String) {}
    func updatePeer(_ peer: AuthorID, state: String, stats: SessionStats) {}
    /// The posts followed here (none until ``follow(_:)``).
    private var follows: Set<PostID> = []

    /// Follows `post`, as `follow` writes it to the store; the engine reads it at ``SyncEngine/followsChanged()``.
    func follow(_ post: PostID) { follows.insert(post) }

    func followedPosts() -> Set<PostID> { follows }
    func notifications(after id: Int64) -> [NotificationSummary] { [] }
    func lastNotificationID() -> Int64 { 0 }
    func missingPhotos(limit: Int) -> [MissingPhoto] { [] }
    func peerLacks(_ peer: AuthorID) -> [PeerLack] { [] }
    func saveLacks(_ lacks: [PeerLack]) {}
    nonisolated func photoURL(_ hash: AssetHash) -> URL { URL(fileURLWithPath: "/nonexistent/\(hash.short)") }
    nonisolated var partialPhotos: URL { URL(fileURLWithPath: "/nonexistent/partial") }
    func commitPhotos(_ photos: [(file: URL, hash: AssetHash, bytes: Int64)]) -> [Bool] { photos.map { _ in false } }
    func smallPhoto(_ hash: AssetHash) -> [UInt8]? { nil }
    func givenPhotos(_ hashes: [AssetHash]) -> [AssetHash: [UInt8]] { [:] }
    func smallPhotos(_ hashes: [AssetHash], shownInGroups groups: Set<GroupID>) -> [AssetHash: [UInt8]] { [:] }
    func commitSmallPhotos(_ photos: [(hash: AssetHash, bytes: [UInt8])]) -> [Bool] { photos.map { _ in false } }
    func isPhotoShown(_ hash: AssetHash) throws -> Bool {
        if lookupsFail { throw LookupFailure() }
        return false
    }
    func isPhotoShown(_ hash: AssetHash, inGroups groups: Set<GroupID>) throws -> Bool {
        if lookupsFail { throw LookupFailure() }
        return false
    }
    func membershipView() -> MembershipView { view }
    func membershipProof(in group: GroupID) -> [UInt8]? { nil }
    func groups(ofPosts posts: [PostID]) throws -> [PostID: GroupID] {
        if lookupsFail { throw LookupFailure() }
        return [:]
    }

    func redeemInvite(
        id: [UInt8],
        node: NodeID,
        log: AuthorID,
        proves: @escaping @Sendable (Data) -> Bool
    )
        throws -> (group: GroupID, record: [UInt8])
    {
        throw CancellationError()
    }

    func askToJoin(node: NodeID, log: AuthorID, name: String?, host: String, port: Int) -> JoinRequestAnswer {
        .noAdmin
    }

    func completeJoin(log: AuthorID, group: GroupID) {}
}

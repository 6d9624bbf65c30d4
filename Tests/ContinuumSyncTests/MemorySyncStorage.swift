import ContinuumCore
import ContinuumSession
import Foundation

@testable import ContinuumSync

/// The sync port in memory, for the in-process tests of sessions and the engine: records with row ids, a clock, a
/// membership view, every batch stored, and the posts followed; photos as files in a directory of the store's own
/// (``holdPhoto(_:)``, ``lack(_:)``), for the photo path (a look reads the photos ``lack(_:)`` names; the photos of
/// posts stored here are missing to ``missingPhotos(shownBy:)`` too; a fetched photo is kept only while a post here
/// shows it, as the port says); peers and joins are empty. Five faults can be injected: `afterCommit` runs once a
/// batch is in and before `ingest` returns, where the engine's store poll may find the batch before the session that
/// stored it has counted it as held by its peer; `beforeIngest` runs before a batch goes in, with its records' ids,
/// and may hold it, as a slow disk would; ``failLookups()`` makes the lookups of posts' groups and of shown photos
/// throw, as a store that cannot answer does; `beforePhotoCommit` runs before a batch of fetched photos is committed,
/// and may hold it; `beforeLook` holds a look, as a large store's does.
actor MemorySyncStorage: SyncStorage {
    private var stored: [StoredRecord] = []
    private var view: MembershipView
    /// The records of every `ingest`, in order.
    private(set) var ingested: [[VerifiedRecord]] = []

    private var afterCommit: (@Sendable () async -> Void)?
    private var beforeIngest: (@Sendable ([RecordID]) async -> Void)?
    private var beforePhotoCommit: (@Sendable ([AssetHash]) async -> Void)?
    /// Photos held, with their sizes: each a file named by its hash in ``photoDirectory``.
    private var photos: [AssetHash: UInt64] = [:] { didSet { photoVersion += 1 } }
    /// Photos that posts here show and that are not here yet (``lack(_:)``).
    private var lacking: [MissingPhoto] = [] { didSet { photoVersion += 1 } }
    /// Counts the changes to what ``missingPhotos(limit:changedSince:)`` reads, as the store's triggers do.
    private var photoVersion: Int64 = 0
    /// How many times ``missingPhotos(limit:changedSince:)`` was asked, and how many of them read the list.
    private(set) var looks = (asked: 0, read: 0)
    /// How many times ``missingPhotos(shownBy:)`` was asked (for posts that arrived live).
    private(set) var arrivalLookups = 0
    /// How many times each photo was asked of ``isPhotoShown(_:)`` (the fetcher's watchdog asks, every second of a
    /// transfer), yielded as it is asked.
    private(set) var shownAsked: [AssetHash: Int] = [:]
    nonisolated let shownChecked: AsyncStream<AssetHash>
    private let shownCheckedNow: AsyncStream<AssetHash>.Continuation
    /// Runs at the start of every ``missingPhotos(limit:changedSince:)``, and may hold it, as a look through a large
    /// store takes long.
    private var beforeLook: (@Sendable () async -> Void)?
    /// Yields at every ``missingPhotos(limit:changedSince:)``: the fetcher looked.
    nonisolated let looked: AsyncStream<Void>
    private let lookedNow: AsyncStream<Void>.Continuation
    /// Where this store's photo files are, and its partial downloads (made when first written).
    nonisolated let photoDirectory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "continuum-memory-\(UUID().uuidString)",
        isDirectory: true
    )

    init(view: MembershipView) {
        self.view = view
        (looked, lookedNow) = AsyncStream.makeStream()
        (shownChecked, shownCheckedNow) = AsyncStream.makeStream()
    }

    /// Who is in which group from now on, as records stored through another session or written here would make it.
    func setView(_ view: MembershipView) { self.view = view }

    func setAfterCommit(_ hook: @escaping @Sendable () async -> Void) { afterCommit = hook }

    func setBeforeIngest(_ hook: @escaping @Sendable ([RecordID]) async -> Void) { beforeIngest = hook }

    func setBeforeLook(_ hook: @escaping @Sendable () async -> Void) { beforeLook = hook }

    func setBeforePhotoCommit(_ hook: @escaping @Sendable ([AssetHash]) async -> Void) { beforePhotoCommit = hook }

    /// Holds `bytes` as a photo that a live post here shows; its hash.
    func holdPhoto(_ bytes: [UInt8]) throws -> AssetHash {
        let hash = AssetHash.of(Data(bytes))
        try FileManager.default.createDirectory(at: photoDirectory, withIntermediateDirectories: true)
        try Data(bytes).write(to: photoURL(hash))
        photos[hash] = UInt64(bytes.count)
        return hash
    }

    /// A post here shows `photo`, which is not here yet: the fetcher's next look finds it missing.
    func lack(_ photo: MissingPhoto) { lacking.append(photo) }

    /// The bytes of a photo held; nil when it is not here.
    func photoBytes(_ hash: AssetHash) throws -> [UInt8]? {
        guard photos[hash] != nil else { return nil }
        return [UInt8](try Data(contentsOf: photoURL(hash)))
    }

    /// Removes this store's photo files.
    nonisolated func removeFiles() throws {
        if FileManager.default.fileExists(atPath: photoDirectory.path) {
            try FileManager.default.removeItem(at: photoDirectory)
        }
    }

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
        await beforeIngest?(batch.records.map(\.id))
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
    func missingPhotos(limit: Int, changedSince version: Int64?) async -> (version: Int64, photos: [MissingPhoto]?) {
        await beforeLook?()
        looks.asked += 1
        defer { lookedNow.yield() }
        guard version != photoVersion else { return (photoVersion, nil) }
        looks.read += 1
        return (photoVersion, Array(lacking.filter { photos[$0.hash] == nil }.prefix(limit)))
    }
    func peerLacks(_ peer: AuthorID) -> [PeerLack] { [] }
    func saveLacks(_ lacks: [PeerLack]) {}
    nonisolated func photoURL(_ hash: AssetHash) -> URL { photoDirectory.appendingPathComponent(hash.hex) }
    nonisolated var partialPhotos: URL { photoDirectory.appendingPathComponent("partial", isDirectory: true) }

    /// Moves each checked file that a post here shows to its name and holds it, once `beforePhotoCommit` (if set) has
    /// returned; removes the others.
    func commitPhotos(_ fetched: [(file: URL, hash: AssetHash, bytes: Int64)]) async throws -> [Bool] {
        await beforePhotoCommit?(fetched.map(\.hash))
        var kept: [Bool] = []
        for photo in fetched {
            let shown = lacking.contains { $0.hash == photo.hash } || posted.contains { $0.hash == photo.hash }
            kept.append(shown)
            guard shown else {
                try FileManager.default.removeItem(at: photo.file)
                continue
            }
            try? FileManager.default.removeItem(at: photoURL(photo.hash))  // None there: nothing to remove.
            try FileManager.default.moveItem(at: photo.file, to: photoURL(photo.hash))
            photos[photo.hash] = UInt64(photo.bytes)
        }
        return kept
    }
    func smallPhoto(_ hash: AssetHash) -> [UInt8]? { nil }
    func givenPhotos(_ hashes: [AssetHash]) -> [AssetHash: [UInt8]] { [:] }
    func smallPhotos(_ hashes: [AssetHash], shownInGroups groups: Set<GroupID>) -> [AssetHash: [UInt8]] { [:] }
    func commitSmallPhotos(_ photos: [(hash: AssetHash, bytes: [UInt8])]) -> [Bool] { photos.map { _ in false } }
    /// A photo held or lacked is shown by a live post here.
    func isPhotoShown(_ hash: AssetHash) throws -> Bool {
        shownAsked[hash, default: 0] += 1
        shownCheckedNow.yield(hash)
        return try shows(hash)
    }
    private func shows(_ hash: AssetHash) throws -> Bool {
        if lookupsFail { throw LookupFailure() }
        return photos[hash] != nil || lacking.contains { $0.hash == hash } || posted.contains { $0.hash == hash }
    }
    /// Those ``lack(_:)`` named for `posts`, and those of the posts held here, that are not here.
    func missingPhotos(shownBy posts: [PostID]) -> [MissingPhoto] {
        arrivalLookups += 1
        let asked = Set(posts)
        var seen: Set<AssetHash> = []
        return (lacking + posted).filter {
            asked.contains($0.post) && photos[$0.hash] == nil && seen.insert($0.hash).inserted
        }
    }
    /// The photos of the posts stored here (records whose body is a post), each of its author's group.
    private var posted: [MissingPhoto] {
        stored.compactMap { held in
            guard let content = try? SignedRecord(bytes: held.bytes).content,  // Stored verified: they decode.
                case .post(_, let photo, _) = content.body
            else { return nil }
            return MissingPhoto(
                hash: photo.sha256,
                bytes: photo.byteCount,
                post: PostID(held.id),
                groups: view.logs[held.author].map { [$0.group] } ?? []
            )
        }
    }
    func isPhotoShown(_ hash: AssetHash, inGroups groups: Set<GroupID>) throws -> Bool {
        try shows(hash)
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

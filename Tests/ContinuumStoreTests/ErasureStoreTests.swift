import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import GRDB
import Logging
import Synchronization
import Testing

@Suite("Erasure in the store: compaction after a delete, and a store closed before it")
struct ErasureStoreTests {
    /// A post by a new author and the delete of it, as a peer would send them. The photo's hash is that of the
    /// caption's bytes.
    static func postAndDelete(caption: String) -> [VerifiedRecord] {
        var factory = RecordFactory(authorCount: 1, seed: UInt64.random(in: 1...UInt64.max))
        let photo = PhotoReference(
            sha256: AssetHash.of(Data(caption.utf8)),
            byteCount: 10,
            mediaType: .jpeg,
            width: 1,
            height: 1
        )
        let post = factory.make(.post(caption: caption, photo: photo, location: nil), by: 0, at: .now())
        let delete = factory.make(.delete(targets: [post.id]), by: 0, at: .now())
        return [post, delete]
    }

    @Test("a store closed right after a peer's delete is not touched by the compaction that was waiting for it")
    func closedBeforeCompaction() async throws {
        let temporary = try TemporaryStore(onDisk: true)
        let report = try await temporary.store.ingest(
            Self.postAndDelete(caption: "closed before compaction \(UUID())")
        )
        #expect(report.stored.count == 2 && report.erasedText)
        try temporary.store.close()
        // The compaction was scheduled for a second after the erasure; on a closed pool it would crash this process.
        try await Task.sleep(for: .milliseconds(1500))
        // Still alive; and the store opens again, with the post deleted.
        let reopened = try ContinuumStore.open(temporary.directory, logger: Logger(label: "test"))
        defer { try? reopened.close() }
        #expect(try await reopened.counts().posts == 0)
    }

    @Test("finishing pending erasures before closing leaves no erased caption in the database files")
    func flushBeforeClose() async throws {
        let temporary = try TemporaryStore(onDisk: true)
        let caption = "flushed before close \(UUID())"
        _ = try await temporary.store.ingest(Self.postAndDelete(caption: caption))
        await temporary.store.finishPendingErasures()
        try temporary.store.close()
        let bytes = try Self.databaseFiles(of: temporary)
        #expect(!bytes.isEmpty)
        #expect(bytes.range(of: Data(caption.utf8)) == nil, "the caption is erased from the files")
    }

    static let author = try! NodeIdentity(seed: [UInt8](repeating: 61, count: 32))

    /// The bytes of the store's database file and its WAL.
    static func databaseFiles(of temporary: TemporaryStore) throws -> Data {
        let path = temporary.directory.databaseURL.path
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        // A WAL that is not there (truncated, or removed at close) holds nothing.
        bytes.append((try? Data(contentsOf: URL(fileURLWithPath: path + "-wal"))) ?? Data())
        return bytes
    }

    /// A connection of its own (as another process's would be) in a read transaction that began after `caption` was
    /// stored: the WAL cannot be truncated under it. `COMMIT` lets go.
    static func reader(holding caption: String, of temporary: TemporaryStore) async throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true  // The transaction outlives this access, on purpose.
        let reader = try DatabaseQueue(path: temporary.directory.databaseURL.path, configuration: configuration)
        try await reader.writeWithoutTransaction { db in
            try db.execute(sql: "BEGIN")
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM post WHERE caption = ?", arguments: [caption]) == 1)
        }
        return reader
    }

    /// A store that counts its hand-offs, holding a post of ``author``'s with `caption` (stored as a person's `post`
    /// command would), and a reader (``reader(holding:of:)``) that began after it.
    struct HeldWAL: Sendable {
        let temporary: TemporaryStore
        let store: ContinuumStore
        let handedOff = Count()
        let caption: String
        let post: RecordID
        let reader: DatabaseQueue

        init(caption: String) async throws {
            temporary = try TemporaryStore(onDisk: true)
            store = temporary.store.handingUnfinishedErasures { [handedOff] in handedOff.add() }
            self.caption = caption
            let photo = TestPhoto.reference(caption)
            post = try await store.append(.post(caption: caption, photo: photo, location: nil), by: author).id
            reader = try await ErasureStoreTests.reader(holding: caption, of: temporary)
        }

        /// Deletes the post, as a person's `delete` does.
        func delete() async throws { _ = try await store.append(.delete(targets: [post]), by: author) }

        /// Whether the caption's bytes are in the database file or its WAL.
        func filesHoldCaption() throws -> Bool {
            try ErasureStoreTests.databaseFiles(of: temporary).range(of: Data(caption.utf8)) != nil
        }

        func letGo() async throws { try await reader.writeWithoutTransaction { db in try db.execute(sql: "COMMIT") } }
    }

    /// A count that closures of any thread may add to.
    final class Count: Sendable {
        private let count = Mutex(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    /// Checks `condition` every few milliseconds until it holds (30 s at most, then fails): for what the store
    /// announces no event of (a commit seen from outside, a truncation done in the background).
    static func poll(_ what: String, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while try await !condition() {
            try #require(ContinuousClock.now < deadline, "timed out waiting until \(what)")
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test("a person's delete returns once a reader that held the WAL lets go, with the caption gone from the files")
    func deleteWaitsForAReader() async throws {
        let held = try await HeldWAL(caption: "waited for \(UUID())")
        let returned = Mutex(false)
        let deleting = Task {
            try await held.delete()
            returned.withLock { $0 = true }
        }
        // Once the delete has committed, its truncation waits for the reader, which then lets go.
        try await Self.poll("the delete committed") { try await held.store.post(PostID(held.post)) == nil }
        #expect(!returned.withLock { $0 }, "the delete waits for the reader")
        try await held.letGo()
        try await deleting.value
        #expect(try !held.filesHoldCaption(), "erased when delete returned")
        #expect(held.handedOff.value == 0, "nothing was left to the background")
        try held.reader.close()
    }

    @Test("a delete whose WAL a reader holds past the wait returns, says so, and is finished once the reader lets go")
    func truncationLeftToTheBackground() async throws {
        let held = try await HeldWAL(caption: "left to the background \(UUID())")
        try await held.delete()
        #expect(try await held.store.post(PostID(held.post)) == nil)
        #expect(held.handedOff.value == 1, "the hand-off was called once")
        #expect(try held.filesHoldCaption(), "the reader kept the text")
        try await held.letGo()
        try await Self.poll("the background truncated the WAL") { try !held.filesHoldCaption() }
        try held.reader.close()
    }

    @Test("a peer's lack of an erased photo is not kept, even when the fetcher saves it again after the erasure")
    func lackOfAnErasedPhoto() async throws {
        let temporary = try TemporaryStore()
        let records = Self.postAndDelete(caption: "lacked \(UUID())")
        guard case .post(_, let photo, _) = records[0].record.body else { throw StoreError(.notFound, "no post") }
        let peer = NodeIdentity.generate().author
        let lack = PeerLack(peer: peer, hash: photo.sha256, kind: .photo, retryAt: .now(), attempts: 1)
        _ = try await temporary.store.ingest([records[0]])
        try await temporary.store.saveLacks([lack])
        #expect(try await temporary.store.peerLacks(peer).map(\.hash) == [photo.sha256])

        _ = try await temporary.store.ingest([records[1]])
        #expect(try await temporary.store.peerLacks(peer).isEmpty, "the erasure removed the row")
        // The fetcher's memory still holds the lack and saves it again (a PHOTO_MISSING that was on its way).
        try await temporary.store.saveLacks([lack])
        #expect(try await temporary.store.peerLacks(peer).isEmpty, "the hash of an erased photo is not written back")
        #expect(try await !temporary.store.isPhotoShown(photo.sha256))
    }

    @Test("status counts only the photos that live posts show, with their bytes")
    func photosCountedOnlyWhileShown() async throws {
        let temporary = try TemporaryStore()
        // A photo stored for a post that never came (its signing failed): not the user's photo.
        let orphan = try await temporary.store.storePhoto(Data("an orphan photo \(UUID())".utf8))
        #expect(try await temporary.store.counts().photos == 0)
        #expect(try await temporary.store.hasPhoto(orphan), "the file is here; it is not counted")

        let records = Self.postAndDelete(caption: "counted \(UUID())")
        guard case .post(let caption, let photo, _) = records[0].record.body else {
            throw StoreError(.notFound, "no post")
        }
        _ = try await temporary.store.ingest([records[0]])
        let bytes = Data(caption.utf8)  // postAndDelete's photo hash is that of its caption's bytes
        #expect(AssetHash.of(bytes) == photo.sha256)
        _ = try await temporary.store.storePhoto(bytes)
        let counts = try await temporary.store.counts()
        #expect(counts.photos == 1 && counts.photoBytes == Int64(bytes.count))

        _ = try await temporary.store.ingest([records[1]])
        let after = try await temporary.store.counts()
        #expect(after.photos == 0 && after.photoBytes == 0)
    }

    @Test("a photo kept for a post that was then not signed is removed again; a photo a live post shows is not")
    func photoOfAFailedPost() async throws {
        let temporary = try TemporaryStore()
        let orphan = try await temporary.store.storePhoto(Data("kept for a failed post \(UUID())".utf8))
        try await temporary.store.dropPhotoIfUnshown(orphan)
        #expect(try await !temporary.store.hasPhoto(orphan))
        #expect(!FileManager.default.fileExists(atPath: temporary.store.assets.url(for: orphan).path))

        let records = Self.postAndDelete(caption: "shown \(UUID())")
        guard case .post(let caption, let photo, _) = records[0].record.body else {
            throw StoreError(.notFound, "no post")
        }
        _ = try await temporary.store.ingest([records[0]])
        _ = try await temporary.store.storePhoto(Data(caption.utf8))
        try await temporary.store.dropPhotoIfUnshown(photo.sha256)
        #expect(try await temporary.store.hasPhoto(photo.sha256), "a live post shows it: kept")
        #expect(FileManager.default.fileExists(atPath: temporary.store.assets.url(for: photo.sha256).path))
    }
}

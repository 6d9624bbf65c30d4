import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Logging
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
        var bytes = Data()
        for suffix in ["", "-wal"] {
            bytes.append(
                (try? Data(contentsOf: URL(fileURLWithPath: temporary.directory.databaseURL.path + suffix))) ?? Data()
            )
        }
        #expect(!bytes.isEmpty)
        #expect(bytes.range(of: Data(caption.utf8)) == nil, "the caption is erased from the files")
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

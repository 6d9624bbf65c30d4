import ContinuumCore
import ContinuumStore
import Foundation
import Logging
import Testing

@Suite("Erasure in the store: compaction after a delete, and a store closed before it")
struct ErasureStoreTests {
    /// A post by `identity` and the delete of it, as a peer would send them.
    static func postAndDelete(_ identity: NodeIdentity, caption: String) throws -> [VerifiedRecord] {
        let post = try identity.sign(
            RecordContent(
                author: identity.author,
                sequence: 1,
                previous: nil,
                createdAt: .now(),
                body: .post(
                    caption: caption,
                    photo: PhotoReference(
                        sha256: AssetHash.of(Data(caption.utf8)),
                        byteCount: 10,
                        mediaType: .jpeg,
                        width: 1,
                        height: 1
                    ),
                    location: nil
                )
            )
        )
        let delete = try identity.sign(
            RecordContent(
                author: identity.author,
                sequence: 2,
                previous: post.id,
                createdAt: .now(),
                body: .delete(targets: [post.id])
            )
        )
        return [post, delete]
    }

    @Test("a store closed right after a peer's delete is not touched by the compaction that was waiting for it")
    func closedBeforeCompaction() async throws {
        let temporary = try TemporaryStore()
        let report = try await temporary.store.ingest(
            try Self.postAndDelete(.generate(), caption: "closed before compaction \(UUID())")
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
        let temporary = try TemporaryStore()
        let caption = "flushed before close \(UUID())"
        _ = try await temporary.store.ingest(try Self.postAndDelete(.generate(), caption: caption))
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
}

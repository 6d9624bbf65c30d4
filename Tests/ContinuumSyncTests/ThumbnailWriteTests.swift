import ContinuumCore
import ContinuumMedia
import ContinuumStore
import Foundation
import Logging
import Testing

@testable import ContinuumSync

/// A thumbnail a peer sends is checked before the session's next frame is read, and written behind it: the frames
/// that follow (a photo's chunks) do not wait for the disk's sync of every thumbnail before them.
@Suite("Thumbnails from a peer: checked before the next frame, written behind it")
struct ThumbnailWriteTests {
    /// Holds whoever arrives until the test opens it, and counts the arrivals.
    actor Gate {
        private var isOpen = false
        private var held: [CheckedContinuation<Void, Never>] = []
        private var arrivalWaiters: [CheckedContinuation<Void, Never>] = []
        private(set) var arrivals = 0

        func pass() async {
            arrivals += 1
            for waiter in arrivalWaiters { waiter.resume() }
            arrivalWaiters = []
            if isOpen { return }
            await withCheckedContinuation { held.append($0) }
        }

        /// Returns once someone has arrived.
        func someoneArrived() async {
            if arrivals > 0 { return }
            await withCheckedContinuation { arrivalWaiters.append($0) }
        }

        func open() {
            isOpen = true
            for waiter in held { waiter.resume() }
            held = []
        }
    }

    /// Set once, read by the waits.
    actor Flag {
        private(set) var isSet = false
        func set() { isSet = true }
    }

    final class Directory: Sendable {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("continuum-thumbs-\(UUID().uuidString)")
        deinit {
            // Best effort: a temporary directory left behind is harmless.
            try? FileManager.default.removeItem(at: url)
        }
    }

    static let thumbnail = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/media/thumb-ok.jpg")

    @Test("a thumbnail checked leaves the frame reader before it is written; a copy meanwhile is ignored")
    func writtenBehindTheNextFrame() async throws {
        let directory = Directory()
        let gate = Gate()
        // The write is held after the file is written, where the service asks whether the photo is still shown.
        let service = ThumbnailService(
            assets: AssetStore(root: directory.url.appendingPathComponent("photos")),
            logger: Logger(label: "test"),
            isShown: { _ in
                await gate.pass()
                return true
            }
        )
        let fetcher = PhotoFetcher(
            store: MemorySyncStorage(view: MembershipView(groups: [:], logs: [:])),
            configuration: SyncConfiguration(),
            thumbnails: service,
            logger: Logger(label: "test")
        )
        let bytes = try [UInt8](Data(contentsOf: Self.thumbnail))
        let hash = AssetHash(unchecked: Data(repeating: 7, count: 32))
        let peer = AuthorID(unchecked: Data(repeating: 9, count: 32))
        await fetcher.askedForThumbnail(hash, of: peer)

        // Returns while the write is held: the gate opens only after this wait (a fetcher that wrote before returning
        // would not return, and the wait would fail at its limit).
        let (returned, returning) = AsyncStream<Void>.makeStream()
        let hasReturned = Flag()
        let handling = Task {
            let refusal = await fetcher.handle(.thumbnail(hash, bytes), from: peer)
            await hasReturned.set()
            returning.yield()
            return refusal
        }
        do {
            try await SyncFixtures.waitUntil("the frame reader is free while the write is held", returned) {
                await hasReturned.isSet
            }
        } catch {
            // Lets the write, and a fetcher that waited for it, end.
            await gate.open()
            throw error
        }
        #expect(await handling.value == nil)
        await gate.someoneArrived()
        #expect(FileManager.default.fileExists(atPath: service.provisionalURL(for: hash).path))
        #expect(await fetcher.thumbnailState(hash) == (wanted: true, writing: true))

        // The same thumbnail again while it is being written: ignored, and the want stays until the write ends.
        let again = await fetcher.handle(.thumbnail(hash, bytes), from: peer)
        #expect(again == nil)
        #expect(await fetcher.thumbnailState(hash) == (wanted: true, writing: true))

        await gate.open()
        await fetcher.thumbnailWritesDone()
        #expect(await fetcher.thumbnailState(hash) == (wanted: false, writing: false))
        #expect(await gate.arrivals == 1)
        let kept = try Data(contentsOf: service.provisionalURL(for: hash))
        #expect(try Thumbnailer.describe(jpeg: kept).width == 400)
    }

    @Test("a thumbnail that is not a JPEG is refused before the next frame, and nothing is written")
    func refusedBeforeTheNextFrame() async throws {
        let directory = Directory()
        let service = ThumbnailService(
            assets: AssetStore(root: directory.url.appendingPathComponent("photos")),
            logger: Logger(label: "test")
        )
        let fetcher = PhotoFetcher(
            store: MemorySyncStorage(view: MembershipView(groups: [:], logs: [:])),
            configuration: SyncConfiguration(),
            thumbnails: service,
            logger: Logger(label: "test")
        )
        let hash = AssetHash(unchecked: Data(repeating: 7, count: 32))
        let peer = AuthorID(unchecked: Data(repeating: 9, count: 32))
        await fetcher.askedForThumbnail(hash, of: peer)

        let refusal = await fetcher.handle(.thumbnail(hash, [0xFF, 0xD8, 0xFF, 0xD9]), from: peer)
        #expect(refusal?.code == .malformedFrame)
        #expect(refusal?.message.hasPrefix("THUMB_DATA refused: ") == true)
        await fetcher.thumbnailWritesDone()
        #expect(await fetcher.thumbnailState(hash) == (wanted: false, writing: false))
        #expect(!service.hasThumbnail(hash))
    }
}

extension PhotoFetcher {
    /// As ``requestThumbnails(_:engine:)`` leaves it after asking `peer` for the thumbnail.
    fileprivate func askedForThumbnail(_ hash: AssetHash, of peer: AuthorID) {
        thumbnailWants[hash] = (peer, .now, nil)
    }

    fileprivate func thumbnailState(_ hash: AssetHash) -> (wanted: Bool, writing: Bool) {
        (thumbnailWants[hash] != nil, keepingThumbnails.contains(hash))
    }

    fileprivate func thumbnailWritesDone() async {
        await thumbnailWrites?.value
    }
}

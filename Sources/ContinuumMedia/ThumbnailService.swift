import ContinuumCore
import ContinuumStore
import Dispatch
import Foundation
import Logging

/// Thumbnails of the photos of posts, made once per photo and kept on disk next to the photos.
///
/// - `photos/thumbs/ab/<sha256>.jpg`: this node's own: made from the original (``Thumbnailer/make(from:)``), or
///   the author's that the photo's posts sign, kept as it is (``check(peerThumbnail:for:expected:)``,
///   ``keep(_:for:)``).
/// - `photos/thumbs/ab/<sha256>.peer.jpg`: provisional, received from a peer before (or instead of) the original
///   and signed by no post; removed once this node has its own.
///
/// Files are written under `photos/tmp/`, synced and renamed into place, like photos. libvips work runs on one
/// thread of this service's own (not the cooperative pool, not an event loop), one photo at a time, and the files'
/// writes and syncs on another. The HTTP layer and the sync layer share one service per node.
public actor ThumbnailService {
    private let assets: AssetStore
    private let logger: Logger
    /// The thread libvips work runs on, one job at a time.
    private let queue = DispatchQueue(label: "continuum.thumbnails", qos: .utility)
    /// The thread thumbnail files are written and synced on, one at a time: not the cooperative pool, whose threads
    /// (two on a two-core machine) carry every session and transfer, and not libvips's, so that a write does not wait
    /// for a thumbnail being made.
    private let files = DispatchQueue(label: "continuum.thumbnails.files", qos: .utility)
    /// Thumbnails being made: a second request for the same photo waits for the first.
    private var making: [AssetHash: Task<URL?, any Error>] = [:]
    /// Photos whose original could not be made into a thumbnail (damaged): not tried again in this process.
    private var failed: [AssetHash: MediaError] = [:]
    /// Thumbnails made from originals by this service, for tests and logs.
    private(set) var madeCount = 0
    /// Whether a live post still shows a photo; nil: every photo counts as shown (a service without a store).
    private let isShown: (@Sendable (AssetHash) async -> Bool)?
    /// The thumbnails the live posts showing a photo commit to (PROTOCOL.md §2.5); nil: none (no store).
    private let committed: (@Sendable (AssetHash) async -> Set<AssetHash>)?
    /// Signed thumbnails kept from peers as they are, for tests and logs.
    private(set) var keptSignedCount = 0
    /// The bytes of a photo kept in the store rather than as a file (a small photo that came whole); nil: none.
    private let content: (@Sendable (AssetHash) async -> Data?)?
    /// `photos/thumbs`, as a path: a thumbnail's path is built from it as a string, and a URL only where one is
    /// needed (a URL built by path components for each existence check was a twentieth of a receiver's CPU on many
    /// small photos).
    private let thumbsPath: String

    /// A service whose thumbnails are only kept for photos that a live post of `store` shows: one made or received
    /// while its photo was being erased (PROTOCOL.md §2.6) is removed as soon as it is written.
    public init(store: ContinuumStore, logger: Logger) {
        self.init(
            assets: store.assets,
            logger: logger,
            isShown: { hash in
                do {
                    return try await store.isPhotoShown(hash)
                } catch {
                    // Errs on the side of keeping the thumbnail: the erasure itself removes the files it knows of,
                    // and a peer is only sent a thumbnail whose photo a live post shows.
                    logger.warning(
                        "checking whether a photo is still shown failed",
                        metadata: ["photo.sha256": "\(hash.short)", "error": "\(error)"]
                    )
                    return true
                }
            },
            committed: { hash in
                do {
                    return try await store.committedThumbnails(of: hash)
                } catch {
                    // As if no post committed to one: the peer's thumbnail is then checked whole and re-encoded, as
                    // an unsigned one is (PROTOCOL.md §7.4.19), which is always safe.
                    logger.warning(
                        "reading a photo's signed thumbnail failed",
                        metadata: ["photo.sha256": "\(hash.short)", "error": "\(error)"]
                    )
                    return []
                }
            },
            content: { hash in
                do {
                    return try await store.photoContent(hash)
                } catch {
                    // As if the photo were not here yet: no thumbnail is made now, and the next request tries again.
                    logger.warning(
                        "reading a photo kept in the store failed",
                        metadata: ["photo.sha256": "\(hash.short)", "error": "\(error)"]
                    )
                    return nil
                }
            }
        )
    }

    public init(
        assets: AssetStore,
        logger: Logger,
        isShown: (@Sendable (AssetHash) async -> Bool)? = nil,
        committed: (@Sendable (AssetHash) async -> Set<AssetHash>)? = nil,
        content: (@Sendable (AssetHash) async -> Data?)? = nil
    ) {
        self.assets = assets
        self.logger = logger
        self.isShown = isShown
        self.committed = committed
        self.content = content
        self.thumbsPath = assets.root.appendingPathComponent("thumbs", isDirectory: true).path
    }

    /// Ends this process's use of the image library (libvips): waits for the photo being worked on, if any, and
    /// refuses any later one. A process that made thumbnails calls it before it exits (see ``Vips/close()``).
    public static func closeImageLibrary() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            // Waits for a libvips call that may take a while: on a thread of its own, not the cooperative pool's.
            Thread.detachNewThread {
                Vips.close()
                done.resume()
            }
        }
    }

    /// Where this node's own thumbnail of a photo is kept.
    public nonisolated func ownURL(for hash: AssetHash) -> URL {
        URL(fileURLWithPath: ownPath(hash), isDirectory: false)
    }

    /// Where a thumbnail received from a peer is kept until this node makes its own.
    public nonisolated func provisionalURL(for hash: AssetHash) -> URL {
        URL(fileURLWithPath: provisionalPath(hash), isDirectory: false)
    }

    /// Where this node's own thumbnail of a photo is kept (``ownURL(for:)``), as a path.
    private nonisolated func ownPath(_ hash: AssetHash) -> String { thumbnailPath(hash, ending: ".jpg") }

    /// Where a peer's thumbnail is kept (``provisionalURL(for:)``), as a path.
    private nonisolated func provisionalPath(_ hash: AssetHash) -> String { thumbnailPath(hash, ending: ".peer.jpg") }

    private nonisolated func thumbnailPath(_ hash: AssetHash, ending: String) -> String {
        let hex = hash.hex
        return "\(thumbsPath)/\(hex.prefix(2))/\(hex)\(ending)"
    }

    /// True when a thumbnail of the photo is on disk, own or provisional.
    public nonisolated func hasThumbnail(_ hash: AssetHash) -> Bool {
        let manager = FileManager.default
        return manager.fileExists(atPath: ownPath(hash)) || manager.fileExists(atPath: provisionalPath(hash))
    }

    /// The thumbnail of a photo: this node's own (made now from the original if needed), else one received from
    /// a peer; nil when neither the original nor a received thumbnail is here. Throws when the original is here
    /// but cannot be decoded and no peer's thumbnail is.
    public func thumbnail(for hash: AssetHash) async throws -> URL? {
        if FileManager.default.fileExists(atPath: ownPath(hash)) { return ownURL(for: hash) }
        if let task = making[hash] { return try await task.value }
        guard let original = await original(hash) else { return provisionalIfHere(hash) }
        // The look at the store above let other requests in: one of them may have started the same thumbnail.
        if let task = making[hash] { return try await task.value }
        if let error = failed[hash] {
            if let provisional = provisionalIfHere(hash) { return provisional }
            throw error
        }
        let task = Task { () async throws -> URL? in
            try await self.make(hash, from: original)
        }
        making[hash] = task
        defer { making[hash] = nil }
        do {
            return try await task.value
        } catch let error as MediaError {
            failed[hash] = error
            logger.warning(
                "cannot make a thumbnail of a photo",
                metadata: ["photo.sha256": "\(hash.short)", "error": "\(error)"]
            )
            if let provisional = provisionalIfHere(hash) { return provisional }
            throw error
        }
    }

    /// The peer's thumbnail of a photo, when it is here.
    private nonisolated func provisionalIfHere(_ hash: AssetHash) -> URL? {
        FileManager.default.fileExists(atPath: provisionalPath(hash)) ? provisionalURL(for: hash) : nil
    }

    /// Makes the thumbnail in the background, if it is not there yet (a photo was just stored or arrived).
    /// Returns at once; `done` is called with true when a new thumbnail was made.
    public nonisolated func prepare(_ hash: AssetHash, done: (@Sendable (Bool) async -> Void)? = nil) {
        Task {
            let had = FileManager.default.fileExists(atPath: self.ownPath(hash))
            var made = false
            do {
                made = try await self.thumbnail(for: hash) == self.ownURL(for: hash)
            } catch is MediaError {
                // A damaged original: ``thumbnail(for:)`` logged it when it first failed.
            } catch {
                // No thumbnail now; the next request for it tries again.
                self.logger.warning(
                    "cannot make a thumbnail of a photo",
                    metadata: ["photo.sha256": "\(hash.short)", "error": "\(error)"]
                )
            }
            await done?(made && !had)
        }
    }

    /// A thumbnail a peer sent, checked (``check(peerThumbnail:for:expected:)``): what ``keep(_:for:)`` writes.
    public enum PeerThumbnail: Sendable {
        /// The author's, which every live post of the photo signs (its SHA-256): kept as this node's own.
        case signed(Data, sha256: AssetHash)
        /// Any other, checked whole and re-encoded: kept as provisional.
        case provisional(Data)
    }

    /// Checks a thumbnail a peer sent: the author's that the photo's posts sign is taken as it is
    /// (``signedThumbnail(_:for:expected:)``), any other is checked whole (``Thumbnailer/accept(peerThumbnail:)``).
    /// Nil when there is nothing to keep: this node holds that signed one already (or, for one not signed, any
    /// thumbnail of the photo, or the photo). Throws when the bytes are refused. Writes nothing: ``keep(_:for:)``
    /// does.
    /// `expected`: the signed thumbnail's SHA-256 as the store said when it was asked for; bytes with that hash
    /// need no look at the store now (``keep(_:for:)`` looks after the write).
    public func check(
        peerThumbnail bytes: [UInt8],
        for hash: AssetHash,
        expected: AssetHash? = nil
    ) async throws -> PeerThumbnail? {
        if let digest = await signedThumbnail(bytes, for: hash, expected: expected) {
            return isOwn(digest, of: hash) ? nil : .signed(Data(bytes), sha256: digest)
        }
        // With the photo here, this node makes its own (the peer's is still checked: a bad one is refused).
        let keep = !hasThumbnail(hash) && !assets.contains(hash)
        let checked = try await offPool { () throws(MediaError) in try Thumbnailer.accept(peerThumbnail: bytes) }
        guard keep, !hasThumbnail(hash) else { return nil }
        return .provisional(checked)
    }

    /// Checks a thumbnail a peer sent and keeps it (``check(peerThumbnail:for:expected:)``, then ``keep(_:for:)``).
    /// Returns false, storing nothing, when there is nothing to keep; throws when the bytes are refused.
    public func storeFromPeer(_ bytes: [UInt8], for hash: AssetHash) async throws -> Bool {
        guard let checked = try await check(peerThumbnail: bytes, for: hash) else { return false }
        return try await keep(checked, for: hash)
    }

    /// Writes a thumbnail ``check(peerThumbnail:for:expected:)`` passed, synced, unless its photo was erased
    /// meanwhile (or, for a provisional one, a thumbnail of the photo came meanwhile). True when it was kept.
    public func keep(_ thumbnail: PeerThumbnail, for hash: AssetHash) async throws -> Bool {
        switch thumbnail {
        case .signed(let bytes, let digest):
            guard !isOwn(digest, of: hash) else { return false }
            try await keepOwn(bytes, for: hash)
            let own = ownURL(for: hash)
            guard await keptUnlessErased(own, of: hash) else { return false }
            // A post that signs another thumbnail may have come meanwhile (the store then removed the files it found).
            guard await committed?(hash) == [digest] else {
                // Best effort, as in keptUnlessErased: a file left is replaced by the next contest or erasure.
                try? FileManager.default.removeItem(at: own)
                return false
            }
            keptSignedCount += 1
            logger.debug(
                "thumbnail kept as its author signed it",
                metadata: ["photo.sha256": "\(hash.short)", "thumbnail.bytes": "\(bytes.count)"]
            )
            return true
        case .provisional(let checked):
            guard !hasThumbnail(hash) else { return false }
            let url = provisionalURL(for: hash)
            try await write(checked, to: url)
            return await keptUnlessErased(url, of: hash)
        }
    }

    /// The SHA-256 of `bytes` when they are the author's thumbnail of the photo (PROTOCOL.md §7.4.19): the one that
    /// every live post showing the photo commits to. Nil when they are not (they are then checked as any peer's
    /// thumbnail).
    private func signedThumbnail(_ bytes: [UInt8], for hash: AssetHash, expected: AssetHash?) async -> AssetHash? {
        // What a receiver still checks of a signed thumbnail (PROTOCOL.md §7.4.19): its size, that it is a JPEG
        // whose frame header says at most 400 px a side (read, not decoded), and its hash.
        guard let committed, (1...Thumbnailer.maxPeerBytes).contains(bytes.count),
            bytes.starts(with: Thumbnailer.jpegStart), let frame = Thumbnailer.frameSize(ofJPEG: bytes),
            (1...Thumbnailer.maxSide).contains(frame.width), (1...Thumbnailer.maxSide).contains(frame.height)
        else { return nil }
        let digest = ThumbnailReference(of: bytes).sha256
        if digest == expected { return digest }
        // Only the one thumbnail that every live post of the photo signs: posts of one photo that sign different
        // ones (another author's post of the same photo) leave it to a thumbnail made from the photo.
        return await committed(hash) == [digest] ? digest : nil
    }

    /// Whether this node's own thumbnail of the photo is the one whose SHA-256 is `digest`.
    private nonisolated func isOwn(_ digest: AssetHash, of hash: AssetHash) -> Bool {
        guard let held = FileManager.default.contents(atPath: ownPath(hash)) else { return false }
        return ThumbnailReference(of: held).sha256 == digest
    }

    /// Keeps `thumbnail` as this node's own thumbnail of the photo, replacing any: the one it committed to when it
    /// signed the post (``Thumbnailer/make(from:)``'s bytes), or the author's from a peer. A peer's provisional one
    /// goes.
    public func keepOwn(_ thumbnail: Data, for hash: AssetHash) async throws {
        try await write(thumbnail, to: ownURL(for: hash))
        // Best effort, as in ``make(_:)``: a provisional one left is never used again (the own one comes first).
        try? FileManager.default.removeItem(at: provisionalURL(for: hash))
    }

    /// A thumbnail of `file` (``Thumbnailer/make(from:)``) on this service's thread, for the post that commits to it.
    public func makeThumbnail(of file: URL) async throws -> Data {
        try await offPool { () throws(MediaError) in try Thumbnailer.make(from: file) }
    }

    /// A thumbnail just written is removed again when no live post shows its photo any more: the erasure that
    /// committed meanwhile removed the files it found, and this one may have come after it. Checked after the
    /// write, so that an erasure either sees the file or is seen here.
    private func keptUnlessErased(_ url: URL, of hash: AssetHash) async -> Bool {
        guard let isShown, await !isShown(hash) else { return true }
        // Best effort: a file left is never sent (a peer only gets a thumbnail whose photo a live post shows), and
        // goes with the next erasure of the photo.
        try? FileManager.default.removeItem(at: url)
        logger.debug("a thumbnail of an erased photo was dropped", metadata: ["photo.sha256": "\(hash.short)"])
        return false
    }

    /// ``PhotoIntake/inspect(file:)`` on this service's thread, for callers on an event loop or the cooperative
    /// pool (the HTTP upload): the full decode of a large photo takes tens of milliseconds.
    public func inspect(file: URL) async throws -> (ImageInfo, PhotoMetadata) {
        try await offPool { () throws(MediaError) in try PhotoIntake.inspect(file: file) }
    }

    /// ``MetadataCleaner/removeLocation(from:to:)`` on this service's thread (exiv2 reads the whole file).
    public func removeLocation(from source: URL, to destination: URL) async throws -> MetadataCleaner.Outcome {
        try await offPool { () throws(MediaError) in try MetadataCleaner.removeLocation(from: source, to: destination) }
    }

    /// The bytes of the thumbnail to send a peer that asks (own or provisional), or nil.
    public func bytesForPeer(_ hash: AssetHash) async -> Data? {
        do {
            guard let url = try await thumbnail(for: hash) else { return nil }
            let data = try Data(contentsOf: url)
            return data.count <= Thumbnailer.maxPeerBytes ? data : nil
        } catch is MediaError {
            // A damaged original and no peer's thumbnail: ``thumbnail(for:)`` logged it when it first failed.
            return nil
        } catch {
            // Nil: the peer is told the thumbnail is missing, as when it is not here.
            logger.warning(
                "cannot read a thumbnail for a peer",
                metadata: ["photo.sha256": "\(hash.short)", "error": "\(error)"]
            )
            return nil
        }
    }

    /// A photo as it is here: its file, or its bytes kept in the store (a small photo that came whole).
    private enum Original {
        case file(URL)
        case bytes([UInt8])
    }

    /// The photo, if it is here: read once for its thumbnail.
    private func original(_ hash: AssetHash) async -> Original? {
        if assets.contains(hash) { return .file(assets.url(for: hash)) }
        return await content?(hash).map { .bytes([UInt8]($0)) }
    }

    private func make(_ hash: AssetHash, from original: Original) async throws -> URL? {
        let start = ContinuousClock.now
        let data = try await offPool { () throws(MediaError) -> Data in
            switch original {
            case .file(let file): try Thumbnailer.make(from: file)
            // In memory: no copy of the photo written for libvips to read.
            case .bytes(let bytes): try Thumbnailer.make(fromBytes: bytes)
            }
        }
        let elapsed = (ContinuousClock.now - start).components
        let milliseconds = elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000
        let own = ownURL(for: hash)
        try await write(data, to: own)
        guard await keptUnlessErased(own, of: hash) else { return nil }
        madeCount += 1
        // Most photos have no peer's thumbnail to remove; one that cannot be removed is never used again (the own
        // one comes first) and goes with the photo's erasure.
        try? FileManager.default.removeItem(at: provisionalURL(for: hash))
        logger.debug(
            "thumbnail made",
            metadata: [
                "photo.sha256": "\(hash.short)", "thumbnail.bytes": "\(data.count)",
                "thumbnail.ms": "\(milliseconds)",
            ]
        )
        return own
    }

    /// Runs blocking libvips work on this service's thread.
    private func offPool<T: Sendable>(_ work: @escaping @Sendable () throws(MediaError) -> T) async throws -> T {
        try await Self.run(on: queue, work)
    }

    /// Runs blocking work on `thread`, off the cooperative pool.
    private static func run<T: Sendable>(
        on thread: DispatchQueue,
        _ work: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            thread.async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Writes under `photos/tmp/`, syncs, renames into place, on the file thread (``files``).
    private func write(_ data: Data, to final: URL) async throws {
        let assets = assets
        try await Self.run(on: files) { try Self.writeDurably(data, to: final, assets: assets) }
    }

    private static func writeDurably(_ data: Data, to final: URL, assets: AssetStore) throws {
        let temp = try assets.makeTemporaryFile()
        do {
            let handle = try FileHandle(forWritingTo: temp)
            // Synced before it is closed, or the write failed already: the close cannot lose anything that counts.
            defer { try? handle.close() }
            try handle.write(contentsOf: data)
            try handle.synchronize()
            try FileManager.default.createDirectory(
                at: final.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
        } catch {
            // Best effort: the write already failed with its own error; a temp file left behind is removed once a
            // day old, when the store is next opened (``AssetStore/removeStaleTemporaryFiles(olderThan:)``).
            try? FileManager.default.removeItem(at: temp)
            throw StoreError(.io, "cannot write a thumbnail to \(temp.path): \(error.localizedDescription)")
        }
        guard rename(temp.path, final.path) == 0 else {
            let reason = String(cString: strerror(errno))
            // Best effort, as above: the rename's error is the one reported.
            try? FileManager.default.removeItem(at: temp)
            throw StoreError(.io, "cannot move a thumbnail into \(final.path): \(reason)")
        }
        let directory = open(final.deletingLastPathComponent().path, O_RDONLY)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }
}

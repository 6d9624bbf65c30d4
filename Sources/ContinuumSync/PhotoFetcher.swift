import ContinuumCore
import ContinuumMedia
import ContinuumSession
import ContinuumWire
import Crypto
import Foundation
import Logging

/// Fetches photos whose posts have arrived, one at a time, from any connected peer that has them.
///
/// Bytes go to `photos/tmp/<hash>.partial` as they arrive, with a running SHA-256, the one pass over them (TLS
/// authenticated each chunk on the way: PROTOCOL.md §7.4.10). The whole file is checked against the post's SHA-256,
/// then handed to the ``PhotoCommitter``, which syncs, renames into place and records many at once. A broken
/// transfer leaves the partial file, and the next request resumes from its end.
///
/// Thumbnails go first: each time it looks, the fetcher asks for the thumbnail of every missing photo that has
/// none (one THUMB_WANT each, to one peer, whatever the photo's size), then fetches photos. A thumbnail received
/// is checked and kept as provisional by the ``ThumbnailService``, which makes its own once the photo arrives.
actor PhotoFetcher {
    let store: any PhotoStorage
    let thumbnails: ThumbnailService?
    /// Thumbnails asked for and not yet answered: from which peer, since when, and the signed one expected if any.
    var thumbnailWants: [AssetHash: (peer: AuthorID, since: ContinuousClock.Instant, signed: AssetHash?)] = [:]
    /// Peers that said they have no thumbnail of a photo, and when to ask them again (``LackBook``).
    var thumbLacks = LackBook()
    /// An unanswered THUMB_WANT is forgotten after this long (and asked again).
    static let thumbnailTimeout: Duration = .seconds(30)
    /// THUMB_WANTs outstanding at once, over all peers.
    static let maxThumbnailWants = 64
    /// Thumbnails checked and being written, one after the other (``receivedThumbnail(_:_:from:)``): the last write.
    var thumbnailWrites: Task<Void, Never>?
    /// The photos whose thumbnails ``thumbnailWrites`` has yet to write.
    var keepingThumbnails: Set<AssetHash> = []
    let configuration: SyncConfiguration
    let logger: Logger
    weak var engine: SyncEngine?
    /// Makes whole photos durable and records them, many per sync.
    let committer: PhotoCommitter

    struct Transfer {
        let hash: AssetHash
        let expected: UInt64
        let peer: AuthorID
        let handle: FileHandle
        var hasher: SHA256
        var size: UInt64
        /// Bytes already in the partial file when the transfer began (a resume).
        let resumedFrom: UInt64
        /// Whether a post that shows the photo signs its author's thumbnail (``MissingPhoto/signsThumbnail``).
        let signsThumbnail: Bool
        let waiter: CheckedContinuation<Bool, Never>
        var lastProgress = ContinuousClock.now
        /// When its progress was last told (``progressInterval``); its start, at first.
        var progressTold = ContinuousClock.now
    }

    /// A transfer's progress is told (``SyncEvent/photoProgress(_:bytes:of:)``) at most this often: a progress bar
    /// needs no more, and each event costs a task and, for each subscriber (`watch`, a browser's event stream), a
    /// line written: one for every 256 KiB chunk took CPU from the transfer itself. A photo that comes within it
    /// tells none before it has arrived.
    static let progressInterval: Duration = .milliseconds(100)

    /// A transfer with no chunk for this long is abandoned (its partial file stays, to resume later).
    private static let stallTimeout: Duration = .seconds(30)

    /// Transfers under way, at most `configuration.parallelPhotoTransfers`.
    var transfers: [AssetHash: Transfer] = [:]
    /// Photos whose transfer a worker runs (a transfer is in `transfers` from its request to its end; this set
    /// also covers the moments before and after, so that a photo is never fetched twice at once).
    var fetching: Set<AssetHash> = []
    /// Photos of live posts being stored (``photosArriving(_:from:)``), counted once for each hand-over until the
    /// session says that store ended (``photosStored(_:from:)``): no post here shows them yet, and the watchdog does
    /// not take that for an erasure.
    var arriving: [AssetHash: Int] = [:]
    /// Photos to fetch and from whom, as the last look found them; workers take them in order.
    private var queue: [(MissingPhoto, AuthorID)] = []
    /// What the store last said is missing, and the version of what it read: a look that finds the store unchanged
    /// since keeps this list and chooses peers for it again.
    private var lastMissing: (version: Int64, photos: [MissingPhoto])?
    /// Transfers' tasks running (the queue's workers and arrived posts' transfers), at most
    /// `configuration.parallelPhotoTransfers`.
    var workers = 0
    /// Peers that said they do not have a photo. A peer may get it later (from someone else), so it is asked
    /// again, as ``LackBook`` says: after a back-off, one probe at a time, and when its clock moves.
    var photoLacks = LackBook()
    /// Small photos asked for many at once (``SmallBatches``).
    var batches = SmallBatches()
    /// Peers that sent a photo or thumbnail that failed its check: never asked for that one again (this run).
    var distrusted: Set<LackBook.Key> = []
    /// Peers with a session whose saved lacks are loaded: only they are asked.
    private var ready: [AuthorID: UUID] = [:]
    /// Sessions whose saved lacks are being loaded (a session that ends meanwhile is not made ready).
    private var joining: [AuthorID: UUID] = [:]
    /// Peers whose saved lacks were read from the store in this run.
    private var loaded: Set<AuthorID> = []
    /// How often the fetcher looks again by itself (for back-offs that came due).
    private static let lookAgainAfter: Duration = .seconds(2)
    private var skipped: Set<AssetHash> = []
    /// Photos over the size limit that a person asked for (`continuum-node fetch`).
    var onDemand: Set<AssetHash> = []

    /// Fetches a photo whatever its size, as soon as a connected peer has it.
    func fetchOnDemand(_ hash: AssetHash) {
        onDemand.insert(hash)
        wake.yield()
    }
    private let wakes: AsyncStream<Void>
    let wake: AsyncStream<Void>.Continuation
    /// Posts that arrived live, or photos of posts arriving, with the peer that sent them (``postsArrived(_:from:)``,
    /// ``photosArriving(_:from:)``).
    let arrivals: AsyncStream<(Arrival, peer: AuthorID)>
    let arrival: AsyncStream<(Arrival, peer: AuthorID)>.Continuation

    init(store: any PhotoStorage, configuration: SyncConfiguration, thumbnails: ThumbnailService?, logger: Logger) {
        self.store = store
        self.thumbnails = thumbnails
        self.configuration = configuration
        self.logger = logger
        committer = PhotoCommitter(store: store, logger: logger)
        (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        (arrivals, arrival) = AsyncStream.makeStream()
    }

    func attach(_ engine: SyncEngine) { self.engine = engine }

    /// Something changed (a post arrived): look for photos to fetch.
    func poke() {
        wake.yield()
    }

    /// A session with the peer began: it may be asked once its saved lacks are loaded.
    func peerJoined(_ peer: AuthorID, session: UUID) async {
        joining[peer] = session
        if loaded.insert(peer).inserted {
            do {
                let saved = try await store.peerLacks(peer)
                let (nowWall, now) = (Timestamp.now().milliseconds, ContinuousClock.now)
                photoLacks.load(Self.entries(saved, .photo, nowWall: nowWall, now: now), for: peer)
                thumbLacks.load(Self.entries(saved, .thumbnail, nowWall: nowWall, now: now), for: peer)
            } catch {
                // Without them the peer is asked again for what it lacked: bytes, not harm.
                loaded.remove(peer)
                logger.failure("reading what a peer lacked failed", error, level: .warning)
            }
        }
        // Only if this session is still the peer's (it may have ended, and another begun, while loading).
        guard joining[peer] == session else { return }
        joining[peer] = nil
        ready[peer] = session
        wake.yield()
    }

    /// A session received the peer's clock for a round. When it moved since the one the peer sent before
    /// (`moved`), what the peer lacked is due again, through one probe.
    func peerClockKnown(_ peer: AuthorID, moved: Bool) {
        guard moved else { return }
        photoLacks.news(from: peer, now: .now)
        thumbLacks.news(from: peer, now: .now)
        wake.yield()
    }

    /// Saves what changed in the lack books, so that a restart keeps them.
    private func saveLacks() async {
        let (nowWall, now) = (Timestamp.now().milliseconds, ContinuousClock.now)
        let photoChanges = Self.lacks(photoLacks.takeChanges(), .photo, nowWall: nowWall, now: now)
        let thumbChanges = Self.lacks(thumbLacks.takeChanges(), .thumbnail, nowWall: nowWall, now: now)
        do {
            try await store.saveLacks(photoChanges + thumbChanges)
        } catch {
            // Saved at the next look instead (the changes are marked again).
            logger.failure("saving what peers lacked failed", error, level: .warning)
            photoLacks.remark(photoChanges.map { LackBook.Key(peer: $0.peer, hash: $0.hash) })
            thumbLacks.remark(thumbChanges.map { LackBook.Key(peer: $0.peer, hash: $0.hash) })
        }
    }

    /// The fetch loop; runs for the node's lifetime.
    ///
    /// Transfers run beside the loop, at most `configuration.parallelPhotoTransfers` at once, so that a peer that
    /// does not answer a PHOTO_WANT (up to the stall timeout) holds back neither the thumbnails asked for on the
    /// next look nor the photos other peers can send.
    func run() async {
        wake.yield()
        // Back-offs come due with no event to say so: look again now and then (a local query, nothing is sent
        // unless something is due).
        let retry = Task { [wake] in
            while !Task.isCancelled {
                try? await Task.sleep(for: Self.lookAgainAfter)
                wake.yield()
            }
        }
        defer { retry.cancel() }
        await withDiscardingTaskGroup { group in
            // Arrived posts' photos are asked for beside the looks, never behind one (a look of a large store reads
            // every live post).
            group.addTask { await self.fetchArrivals() }
            for await _ in wakes {
                // While queued transfers make progress, a look would only cost them time: it reads the store and
                // stats every thumbnail on this actor, which also takes every transfer's chunks (about 10 % of the
                // photo rate). Once the queue drains, or when no transfer has had a chunk for 2 s (a stalled peer),
                // looks go on, so that THUMB_WANTs are never held back by a peer that does not answer.
                if !queue.isEmpty && transfersProgressing() { continue }
                if let engine, let missing = await missingPhotos() {
                    await requestThumbnails(missing, engine: engine)
                    await startTransfers(missing, engine: engine, in: &group)
                }
                await saveLacks()
            }
            group.cancelAll()
            // Shutting down: transfers still waiting for a peer end now (their partial files stay, to resume).
            for hash in Array(transfers.keys) { abandon(hash) }
        }
        // Thumbnails checked are written before the node goes on to close its store.
        await thumbnailWrites?.value
    }

    /// Queues the missing photos that a ready peer may be asked for (replacing the last look's queue), and starts
    /// workers, at most `configuration.parallelPhotoTransfers`, that take photos from the queue one after the
    /// other: a worker starts its next transfer the moment one ends, without waiting for a new look.
    private func startTransfers(
        _ missing: [MissingPhoto],
        engine: SyncEngine,
        in group: inout DiscardingTaskGroup
    ) async {
        var peers: [(peer: AuthorID, groups: Set<GroupID>)]?
        // Rebuilt, each choice counting the photos already given to each peer.
        queue = []
        batches.queued = [:]
        var load = transferLoad()
        for photo in missing where !Task.isCancelled && !fetching.contains(photo.hash) {
            if photo.bytes > configuration.maxPhotoBytes && !onDemand.contains(photo.hash) {
                if skipped.insert(photo.hash).inserted {
                    logger.warning(
                        "photo larger than --max-photo-mb: not fetched; its post shows without it",
                        metadata: ["photo.sha256": "\(photo.hash.short)", "photo.bytes": "\(photo.bytes)"]
                    )
                    await engine.emit(.photoSkipped(photo.hash, bytes: photo.bytes))
                }
                continue
            }
            if peers == nil { peers = await engine.connectedPeerGroups() }
            guard
                let peer = choose(photo.hash, among: Self.sharing(photo, peers ?? []), load: load, in: &photoLacks)
            else { continue }
            if batches(photo, to: peer) {
                batches.queued[peer, default: []].append(photo)
            } else {
                queue.append((photo, peer))
                load[peer, default: 0] += 1
            }
        }
        await sendBatches(engine)
        while workers < configuration.parallelPhotoTransfers, !self.queue.isEmpty, !Task.isCancelled {
            workers += 1
            group.addTask { await self.work(engine) }
        }
    }

    /// Whether some transfer had a chunk (or started) in the last `lookAgainAfter`.
    private func transfersProgressing() -> Bool {
        let now = ContinuousClock.now
        return transfers.values.contains { now - $0.lastProgress < Self.lookAgainAfter }
    }

    /// One transfer slot: fetches queued photos until the queue is empty.
    private func work(_ engine: SyncEngine) async {
        defer { workers -= 1 }
        while !Task.isCancelled, let (photo, peer) = nextQueued() {
            // The queue comes from the last look: a photo erased since is not fetched (§2.6).
            guard await isShown(photo.hash) else {
                forgetErased(photo.hash)
                fetching.remove(photo.hash)
                continue
            }
            let stored = await fetch(photo, from: peer, engine: engine)
            fetching.remove(photo.hash)
            // The queue drained with a photo stored: look again at once (its peer likely has more). Not after every
            // photo: a look reads the store and stats every thumbnail, on this actor, which also takes the chunks
            // of every transfer. One that failed leaves the next try to the next look, so that a failure cannot
            // spin.
            if stored && queue.isEmpty { wake.yield() }
        }
    }

    /// The next queued photo not being fetched already, taken (so that no other worker or look starts it).
    private func nextQueued() -> (MissingPhoto, AuthorID)? {
        while !queue.isEmpty {
            let next = queue.removeFirst()
            if fetching.insert(next.0.hash).inserted { return next }
        }
        return nil
    }

    /// The photos to look for (the last look's, when the store says nothing they depend on changed); nil (logged)
    /// when the store cannot say, and the next look tries again.
    private func missingPhotos() async -> [MissingPhoto]? {
        do {
            let look = try await store.missingPhotos(limit: 1000, changedSince: lastMissing?.version)
            if let photos = look.photos { lastMissing = (look.version, photos) }
            return lastMissing?.photos
        } catch {
            logger.failure("reading the missing photos failed", error)
            return nil
        }
    }

    /// This node's transfers per peer: those under way and those queued. A look counts them once and adds each photo
    /// it queues; counted again for every photo, a look of 1,000 photos took about a tenth of the receiver's CPU on
    /// many small photos (`continuum-bench vs-syncthing --small`).
    func transferLoad() -> [AuthorID: Int] {
        var load: [AuthorID: Int] = [:]
        for transfer in transfers.values { load[transfer.peer, default: 0] += 1 }
        for (_, peer) in queue { load[peer, default: 0] += 1 }
        return load
    }

    /// The first ready peer that may be asked for `hash` now, by `book`'s rules, the load spread by
    /// ``choose(_:among:load:ready:distrusted:in:now:)`` by `load` (``transferLoad()``).
    func choose(
        _ hash: AssetHash,
        among peers: [AuthorID],
        load: [AuthorID: Int],
        in book: inout LackBook
    ) -> AuthorID? {
        Self.choose(
            hash,
            among: peers,
            load: load,
            ready: Set(ready.keys),
            distrusted: distrusted,
            in: &book,
            now: .now
        )
    }

    /// A photo or thumbnail message from `peer`; the ERROR that refuses it, or nil.
    func handle(_ message: PhotoMessage, from peer: AuthorID) async -> WireError? {
        switch message {
        case .data(let hash, let offset, let chunk):
            do { try received(hash, offset: offset, chunk: chunk, from: peer) } catch { return error }
        case .end(let hash, let total): await ended(hash, total: total, from: peer)
        case .missing(let hash): missing(hash, from: peer)
        case .thumbnailMissing(let hash): thumbnailMissing(hash, from: peer)
        case .photos(let photos): await receivedPhotos(photos, from: peer)
        case .thumbnail(let hash, let bytes):
            // Checked before the next frame is read (a decode of at most 64 KiB, queued behind other libvips
            // work; written after it); a thumbnail that is not a small, whole JPEG counts as a malformed frame, like
            // any other.
            guard thumbnailArriving(hash, from: peer), let reason = await receivedThumbnail(hash, bytes, from: peer)
            else { break }
            return WireError(.malformedFrame, "THUMB_DATA refused: \(reason)")
        }
        return nil
    }

    func partialURL(_ hash: AssetHash) -> URL {
        store.partialPhotos.appendingPathComponent("\(hash.hex).partial", isDirectory: false)
    }

    /// One photo from one peer; true when it was stored.
    func fetch(_ photo: MissingPhoto, from peer: AuthorID, engine: SyncEngine) async -> Bool {
        guard let (handle, hasher, size) = openPartial(photo) else { return false }
        if size > 0 {
            logger.info(
                "resuming a photo",
                metadata: ["photo.sha256": "\(photo.hash.short)", "photo.offset": "\(size)"]
            )
        }
        let hash = photo.hash
        // Shutting down ends a transfer at once (its partial file stays, to resume): the node does not wait for
        // a peer's next chunk, nor for the stall watchdog.
        let stored = await withTaskCancellationHandler {
            await transfer(photo, from: peer, engine: engine, handle: handle, hasher: hasher, size: size)
        } onCancel: {
            Task { await self.abandon(hash) }
        }
        return stored
    }

    private func transfer(
        _ photo: MissingPhoto,
        from peer: AuthorID,
        engine: SyncEngine,
        handle: FileHandle,
        hasher: SHA256,
        size: UInt64
    ) async -> Bool {
        await withCheckedContinuation { (waiter: CheckedContinuation<Bool, Never>) in
            transfers[photo.hash] = Transfer(
                hash: photo.hash,
                expected: photo.bytes,
                peer: peer,
                handle: handle,
                hasher: hasher,
                size: size,
                resumedFrom: size,
                signsThumbnail: photo.signsThumbnail,
                waiter: waiter
            )
            let offset = size
            let hash = photo.hash
            Task {
                guard let session = await engine.session(for: peer) else {
                    // The peer left in the meantime.
                    self.abandon(hash)
                    return
                }
                await session.requestPhoto(hash, from: offset)
                // Watchdog: a request that goes unanswered does not block the fetcher, and a photo erased while it
                // comes (its post deleted) stops coming within a second, leaving nothing behind.
                while self.isCurrent(hash) {
                    try? await Task.sleep(for: .seconds(1))
                    await self.watch(hash)
                }
            }
            // Cancelled before the transfer was registered: the cancellation handler found nothing to end.
            if Task.isCancelled { abandon(hash) }
        }
    }

    /// The photo's partial file, opened for appending, with the hash and size of what is already in it (a
    /// download resumes there); nil when it cannot be used (logged; a file too long is removed).
    private func openPartial(_ photo: MissingPhoto) -> (FileHandle, SHA256, UInt64)? {
        let url = partialURL(photo.hash)
        let manager = FileManager.default
        // Opened, or made, by one `open` (the directory first only when it is missing).
        var descriptor = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        if descriptor < 0, errno == ENOENT {
            // When it cannot be made, the `open` below says why.
            try? manager.createDirectory(at: store.partialPhotos, withIntermediateDirectories: true)
            descriptor = open(url.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        }
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            logger.error("cannot open a photo's partial file", metadata: ["path": "\(url.path)", "error": "\(reason)"])
            return nil
        }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        var hasher = SHA256()
        var size: UInt64 = 0
        do {
            while let data = try handle.read(upToCount: 1 << 20), !data.isEmpty {
                hasher.update(data: data)
                size += UInt64(data.count)
            }
        } catch {
            logger.error("cannot read a photo's partial file", metadata: ["path": "\(url.path)", "error": "\(error)"])
            // Only read so far: closing cannot lose anything.
            try? handle.close()
            return nil
        }
        if size > photo.bytes {
            // Only read so far; and a partial file that cannot be removed is simply started again next time.
            try? handle.close()
            try? manager.removeItem(at: url)
            return nil
        }
        return (handle, hasher, size)
    }

    private func isCurrent(_ hash: AssetHash) -> Bool { transfers[hash] != nil }

    /// The watchdog's look at a transfer: dropped when no live post shows the photo any more, abandoned when it
    /// stalled. A photo whose post is still being stored (``arriving``) is shown by none yet and is kept; whether
    /// it is arriving is read before the store is asked, since a post is reported stored only once it is committed.
    private func watch(_ hash: AssetHash) async {
        let postArriving = arriving[hash] != nil
        if await !isShown(hash) {
            if !postArriving { dropErased(hash) }
        } else {
            abandonIfStalled(hash)
        }
    }

    /// Whether a live post still shows the photo; true when the store cannot say (the commit checks again).
    private func isShown(_ hash: AssetHash) async -> Bool {
        do {
            return try await store.isPhotoShown(hash)
        } catch {
            // Errs on the side of fetching: the commit checks again in its own transaction, and removes a photo no
            // live post shows.
            logger.failure("checking whether a photo is still shown failed", error, level: .warning)
            return true
        }
    }

    /// A photo erased while it was coming: the transfer ends, and its partial file goes.
    private func dropErased(_ hash: AssetHash) {
        guard transfers[hash] != nil else { return }
        logger.info(
            "a photo was erased while it was coming; transfer stopped",
            metadata: ["photo.sha256": "\(hash.short)"]
        )
        finish(hash, false)
        forgetErased(hash)
    }

    /// Keeps nothing about an erased photo: no partial file, no lack, no outstanding thumbnail request.
    private func forgetErased(_ hash: AssetHash) {
        // A partial file that cannot be removed now goes with the stale ones, a day later.
        try? FileManager.default.removeItem(at: partialURL(hash))
        photoLacks.arrived(hash)
        thumbLacks.arrived(hash)
        thumbnailWants[hash] = nil
        onDemand.remove(hash)
    }

    private func abandon(_ hash: AssetHash) { finish(hash, false) }

    private func abandonIfStalled(_ hash: AssetHash) {
        guard let transfer = transfers[hash], ContinuousClock.now - transfer.lastProgress > Self.stallTimeout
        else { return }
        logger.warning("a photo transfer stalled; will try again", metadata: ["photo.sha256": "\(hash.short)"])
        // Another peer goes first next time.
        photoLacks.lacked(hash, by: transfer.peer, now: .now)
        finish(hash, false)
    }

    func finish(_ hash: AssetHash, _ stored: Bool) {
        guard let transfer = transfers.removeValue(forKey: hash) else { return }
        // What was written stays for resuming; a close error loses at most the last chunk, which the next
        // attempt's hash of the file would not match (and it starts over).
        try? transfer.handle.close()
        transfer.waiter.resume(returning: stored)
    }

    /// The peer does not have it: try another, at once (in a mesh, a post often arrives through a peer that is
    /// still fetching its photo; waiting for the next periodic look cost up to 2 s).
    /// Only an answer to a request outstanding to that peer counts (others could fill the lack table).
    func missing(_ hash: AssetHash, from peer: AuthorID) {
        guard transfers[hash]?.peer == peer else { return }
        logger.info(
            "the peer does not have the photo (any more); another will be asked",
            metadata: ["photo.sha256": "\(hash.short)", "peer.id": "\(peer.short)"]
        )
        photoLacks.lacked(hash, by: peer, now: .now)
        finish(hash, false)
        wake.yield()
    }

    /// A session ended: a transfer from it stops, keeping its partial file for the next attempt.
    func peerLeft(_ peer: AuthorID, session: UUID) {
        if joining[peer] == session { joining[peer] = nil }
        // A newer session of the same peer keeps its state.
        guard ready[peer] == nil || ready[peer] == session else { return }
        for (hash, transfer) in transfers where transfer.peer == peer { finish(hash, false) }
        for (hash, want) in thumbnailWants where want.peer == peer {
            thumbnailWants[hash] = nil
            thumbnailSettled(hash)
        }
        ready[peer] = nil
        batchPeerLeft(peer)
        photoLacks.left(peer)
        thumbLacks.left(peer)
    }
}

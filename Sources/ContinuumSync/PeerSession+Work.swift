import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// What the session does besides performing its machine's actions: what the engine and the photo fetcher ask of
/// it (rounds, gossip, pushes, interest, photo requests), the workers that answer the peer's rounds and REQUESTs
/// with records from the store under the ACK window and serve photos and thumbnails from disk, and the clocks kept
/// between sessions.
extension PeerSession {
    // MARK: For the engine

    /// Starts an anti-entropy round; returns its number, or nil when the clock could not be read (the session is
    /// then closed with ERROR internal: a round never sends a made-up clock) or the session has ended. `uncorking`:
    /// the outbox is uncorked once the round's first messages are queued, before the peer's clock is written down
    /// (the session's opening: its first flight never waits for a database write).
    func startRound(uncorking: Bool = false) async -> UInt32? {
        let clock: VectorClock
        do {
            clock = try await store.clock()
        } catch {
            await fail(error, "reading this node's clock")
            return nil
        }
        guard let (number, actions) = machine.startRound(ourClock: clock) else { return nil }
        guard uncorking else {
            await runDetached(actions)
            return number
        }
        let sends = actions.prefix { if case .send = $0 { true } else { false } }
        await runDetached(Array(sends))
        outbox.uncork()
        await runDetached(Array(actions.dropFirst(sends.count)))
        return number
    }

    /// Live gossip of records just stored here (best effort: skipped while the peer is far behind).
    func gossip(_ records: [StoredRecord]) async {
        let records = records.filter { scope.shares($0.author) }
        guard !records.isEmpty else { return }
        await runDetached(
            machine.gossip(records.map(\.outgoing), backlog: outbox.backlog, highWater: Outbox.highWater)
        )
    }

    /// Tree push: records this node holds, announced to the peer (HAVE) in place of sent.
    func announce(_ records: [StoredRecord]) async {
        let records = records.filter { scope.shares($0.author) }
        guard !records.isEmpty else { return }
        await runDetached(machine.announce(records.map(\.outgoing)))
    }

    /// Records the peer follows, ahead of everything queued for it.
    func push(_ records: [StoredRecord]) async {
        let records = records.filter { scope.shares($0.author) }
        guard !records.isEmpty else { return }
        await runDetached(machine.push(records.map(\.outgoing)))
    }

    /// Tells the peer which posts to push to us (``SessionMachine/advertise(_:version:)``): only posts of the groups
    /// the session shares (and posts not held yet, which name no group).
    func advertise(_ wanted: [PostID: UInt8], version: UInt64) async {
        var wanted = wanted
        if !wanted.isEmpty {
            let groups: [PostID: GroupID]
            do {
                groups = try await store.groups(ofPosts: Array(wanted.keys))
            } catch {
                // Errs on the side of the groups: with no way to tell which posts the peer may hear of, nothing new
                // is advertised; the peer keeps the last advertisement until the next one.
                logger.failure("reading the groups of wanted posts failed; interest not advertised", error)
                return
            }
            let shared = scope.groups
            for (post, group) in groups where !shared.contains(group) { wanted[post] = nil }
        }
        await runDetached(machine.advertise(wanted, version: version))
    }

    /// Sends this node's follows to the peer, another device of its account.
    func sendFollows(_ entries: [FollowEntry]) async { await runDetached(machine.sendFollows(entries)) }

    /// Asks the peer for a thumbnail; its answer is taken (and any other THUMB_DATA refused).
    func requestThumbnail(_ hash: AssetHash) async { await runDetached(machine.askForThumbnail(hash)) }

    /// Asks the peer for a photo from `offset`; its chunks are taken until it ends the photo (and any other
    /// PHOTO_DATA refused).
    func requestPhoto(_ hash: AssetHash, from offset: UInt64) async {
        await runDetached(machine.askForPhoto(hash, from: offset))
    }

    /// Asks the peer for small photos whole (PHOTOS_WANT); each is taken once, in a PHOTOS.
    func requestPhotos(_ hashes: [AssetHash]) async { await runDetached(machine.askForPhotos(hashes)) }

    func takeStats() -> SessionStats { machine.takeStats() }

    func currentStats() -> SessionStats { machine.currentStats }

    /// Waits for the peer's DONE of one of our rounds; false on timeout or when the session ends first.
    func waitForRound(_ number: UInt32, timeout: Duration) async -> Bool {
        if machine.isFinished(round: number) { return true }
        guard !closed else { return false }
        let id = UUID()
        return await withCheckedContinuation { continuation in
            roundWaiters[number, default: [:]][id] = continuation
            spawn { session in
                // Cancelled when the session closes, which resumes the waiter itself.
                try? await Task.sleep(for: timeout)
                await session.expireWaiter(number, id)
            }
        }
    }

    func expireWaiter(_ number: UInt32, _ id: UUID) {
        roundWaiters[number]?.removeValue(forKey: id)?.resume(returning: false)
    }

    // MARK: Records

    /// A storage failure outside the machine's inputs (a worker's read): logged, told to the peer as ERROR
    /// internal, and the session ends.
    func fail(_ error: any Error, _ doing: String) async {
        guard !(error is CancellationError) else {
            // Shutting down: the session ends with the node's own goodbye.
            close()
            return
        }
        logger.error("storage failed; closing the session", metadata: ["while": "\(doing)", "error": "\(error)"])
        await runDetached(machine.failed(while: doing))
    }

    /// Answers the queued rounds and requests one after the other, so that a round's DONE follows its records.
    func runStreams() async {
        while let job = machine.nextStreamJob(), !Task.isCancelled {
            do {
                switch job {
                case .round(let number, let theirs): try await answer(clock: theirs, round: number)
                case .request(let ranges): try await stream(ranges, round: nil, resend: true)
                case .catchUp: try await stream(machine.catchUpRanges(ours: store.clock()), round: nil)
                }
            } catch {
                await fail(error, "reading the records the peer lacks")
                return
            }
        }
    }

    /// Answers the peer's clock: announce, then stream what it lacks, then DONE.
    private func answer(clock theirs: VectorClock, round number: UInt32) async throws {
        let ours = try await store.clock()
        var missing: [LogRange]?
        if ours.heads.count + theirs.heads.count > Self.bigClock, !machine.isRepeated(theirs: theirs, ours: ours) {
            missing = await Self.offThePool { Machine.missingRanges(theirs: theirs, ours: ours) }
        }
        switch machine.plan(round: number, theirs: theirs, ours: ours, missing: missing) {
        case .nothing:
            send(.offer(round: number, records: 0, bytes: 0))
            send(.done(round: number))
            answeredTheirRound()
        case .ranges(let ranges):
            let missing = Dictionary(uniqueKeysWithValues: ranges.map { ($0.author, $0.range) })
            let total = try await store.byteCount(of: missing)
            send(.offer(round: number, records: total.records, bytes: total.bytes))
            try await stream(ranges, round: number)
        }
    }

    /// Streams the records in `ranges`, in log order per author, in bounded batches under the ACK window; records
    /// the peer is known to hold or was already sent are left out.
    private func stream(_ ranges: [LogRange], round number: UInt32?, resend: Bool = false) async throws {
        for (author, range) in ranges.map({ ($0.author, $0.range) }) {
            var next = range.lowerBound
            while next <= range.upperBound, !Task.isCancelled {
                let records = try await store.storedRecords(
                    of: author,
                    in: next...range.upperBound,
                    limit: configuration.batchRecords,
                    maxBytes: WireLimits.maxBatchBytes
                )
                // Nothing more here in that range (the peer asked beyond what this node holds).
                guard let last = records.last else { break }
                await waitForWindow()
                guard !closed else { return }
                if let frame = machine.recordsFrame(records.map(\.outgoing), live: false, resend: resend) {
                    send(frame)
                }
                next = last.sequence + 1
            }
        }
        if let number, !Task.isCancelled {
            send(.done(round: number))
            answeredTheirRound()
        }
    }

    func runServes() async {
        while let job = machine.nextServeJob(), !Task.isCancelled {
            switch job {
            case .photo(let hash, let offset): await servePhoto(hash, from: offset)
            case .thumbnail(let hash): await serveThumbnail(hash)
            case .photos(let hashes): await servePhotos(hashes)
            }
        }
    }

    func flushTimerFired(_ generation: Int) async {
        await runDetached(machine.flushTimerFired(generation))
    }

    /// Tree repair: records the peer announced and that did not come by another path are asked of it.
    func repairTimerFired() async {
        let clock: VectorClock
        do {
            clock = try await store.clock()
        } catch {
            await fail(error, "reading this node's clock")
            return
        }
        await runDetached(machine.repair(ourClock: clock, now: .now))
    }

    // MARK: Clocks kept between sessions

    /// The clocks last exchanged with `peer`, from the store, read before the session starts (a CLOCK_SINCE of the
    /// peer is checked against them). A failure is logged and costs only bytes: the first round sends the whole
    /// clock, and a CLOCK_SINCE from the peer is answered with CLOCK_UNKNOWN.
    static func loadClocks(
        of peer: AuthorID,
        store: any SyncStorage,
        logger: Logger
    ) async -> (sent: VectorClock?, received: VectorClock?) {
        do {
            let (sent, received) = try await store.peerClocks(peer)
            // A stored clock that no longer decodes is as good as none (the whole clock goes instead).
            return (
                sent.flatMap { try? WireCodec.clock(from: $0) }, received.flatMap { try? WireCodec.clock(from: $0) }
            )
        } catch {
            logger.failure("reading the clocks last exchanged failed", error, level: .warning)
            return (nil, nil)
        }
    }

    /// Keeps the clock just exchanged for the next session. A failure costs only bytes (the next session's
    /// CLOCK_SINCE names a base the peer may not hold, and it asks for the whole clock), so it is logged, not fatal.
    func rememberClock(sent: VectorClock?, received: VectorClock?) async {
        do {
            try await store.setPeerClock(
                peer,
                sent: await sent.asyncMap(Self.clockBytes),
                received: await received.asyncMap(Self.clockBytes)
            )
        } catch {
            logger.failure("remembering the clock exchanged with the peer failed", error, level: .warning)
        }
    }

    /// Clocks of more entries than this are encoded and compared away from the cooperative pool
    /// (``offThePool(_:)``).
    static let bigClock = 4_096

    /// A clock's bytes as the store keeps them. A big clock is encoded on a dispatch thread: encoding sorts its
    /// entries, which for 100,000 of them takes long enough (about a second in a debug build) to hold up every other
    /// session if it ran on the cooperative pool.
    static func clockBytes(_ clock: VectorClock) async -> [UInt8] {
        guard clock.heads.count > bigClock else { return WireCodec.clockBytes(clock) }
        return await offThePool { WireCodec.clockBytes(clock) }
    }

    /// Runs pure, CPU-bound `work` on a dispatch thread and waits for it: the cooperative pool's threads (one a
    /// core) go on running the other sessions meanwhile, and the kernel shares the CPU between them and the work.
    static func offThePool<Value: Sendable>(_ work: @escaping @Sendable () -> Value) async -> Value {
        await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .utility).async { continuation.resume(returning: work()) }
        }
    }

    // MARK: Photos

    /// Sends a stored photo from `offset`, in chunks, under back-pressure. A photo erased meanwhile (no
    /// live post shows it any more) stops with PHOTO_MISSING: the open file would otherwise go on being read.
    func servePhoto(_ hash: AssetHash, from offset: UInt64) async {
        let url = store.photoURL(hash)
        // A photo file that cannot be opened is a photo this node has no file of: one kept in the store (a small
        // photo that came whole) is sent from there, any other is PHOTO_MISSING. The file first (no store read for
        // a photo not here as a file), then whether it is still shown.
        guard let handle = try? FileHandle(forReadingFrom: url) else {
            await serveStoredPhoto(hash, from: offset)
            return
        }
        guard await isShown(hash) else {
            // Only read from: closing cannot lose anything.
            try? handle.close()
            send(.photoMissing(hash))
            return
        }
        // Closing a file only read from cannot lose anything.
        defer { try? handle.close() }
        do {
            let total = try handle.seekToEnd()
            guard total > 0, offset <= total else {
                send(.photoMissing(hash))
                return
            }
            var position = offset
            var chunks = 0
            while position < total, !Task.isCancelled {
                chunks += 1
                if chunks % Self.chunksBetweenErasureChecks == 0, await !isShown(hash) {
                    send(.photoMissing(hash))
                    return
                }
                let chunk = try Self.read(handle, at: position, upTo: WireLimits.photoChunkBytes)
                guard !chunk.isEmpty else { break }
                // Fault injection for tests; a cancelled sleep ends the loop at its next check.
                if let delay = configuration.photoChunkDelay { try? await Task.sleep(for: delay) }
                // Under the socket's back-pressure: at most a few MiB of the photo wait in the outbox.
                await outbox.waitForRoom()
                guard !closed else { return }
                send(.photoData(hash, offset: position, chunk: chunk))
                machine.sentBytes(chunk.count)
                position += UInt64(chunk.count)
                // The session's writer, woken by the chunk, runs now: a worker of the cooperative pool that wakes a
                // task and goes on does not hand it to an idle worker, so without this the second chunk left only
                // once the rest of the photo (1.2 ms of reads for 2 MiB) had been read.
                await Task.yield()
            }
            if !Task.isCancelled { send(.photoEnd(hash, totalBytes: total)) }
        } catch {
            logger.warning("reading a photo failed", metadata: ["photo.sha256": "\(hash.short)", "error": "\(error)"])
            send(.photoMissing(hash))
        }
    }

    /// Up to `count` bytes of the file from `offset` (fewer only at its end), read straight into the array a
    /// PHOTO_DATA carries: no `Data` in between, and no copy.
    static func read(_ handle: FileHandle, at offset: UInt64, upTo count: Int) throws -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = 0
            while initialized < count {
                let read = pread(
                    handle.fileDescriptor,
                    buffer.baseAddress! + initialized,
                    count - initialized,
                    off_t(offset) + off_t(initialized)
                )
                if read > 0 {
                    initialized += read
                } else if read == 0 {
                    return
                } else if errno != EINTR {
                    throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
                }
            }
        }
    }

    /// How often a photo being sent is checked for erasure: every 16 chunks (4 MiB), one indexed lookup.
    static let chunksBetweenErasureChecks = 16

    /// Whether a live post of a group the session shares shows the photo; false when the store cannot say (this is
    /// what keeps another group's photo from the peer).
    func isShown(_ hash: AssetHash) async -> Bool {
        do {
            return try await store.isPhotoShown(hash)
        } catch {
            // Errs on the side of the groups: a photo the store cannot vouch for is not sent (PHOTO_MISSING or
            // THUMB_MISSING), as an erased one would not be.
            logger.failure("checking whether a photo is shown failed; not sending it", error, level: .warning)
            return false
        }
    }

    /// Sends the photo's thumbnail (this node's own or one received from a peer), or THUMB_MISSING.
    func serveThumbnail(_ hash: AssetHash) async {
        guard await isShown(hash), let data = await engine.thumbnails?.bytesForPeer(hash), !data.isEmpty else {
            send(.thumbMissing(hash))
            return
        }
        machine.sentBytes(data.count)
        await outbox.waitForRoom()
        send(.thumbData(hash, [UInt8](data)))
    }
}

extension Optional where Wrapped: Sendable {
    /// The wrapped value transformed by an async `transform`, or nil.
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async -> T) async -> T? {
        guard let value = self else { return nil }
        return await transform(value)
    }
}

extension StoredRecord {
    var outgoing: OutgoingRecord {
        OutgoingRecord(RecordRef(id: id, author: author, sequence: sequence), bytes: bytes)
    }
}

import ContinuumCore
import ContinuumStore
import ContinuumWire
import Foundation

/// What a session does for its peer: answering its rounds and REQUESTs with records, serving photos and
/// thumbnails, and telling it what to push. Each kind of work waits in a bounded queue, so that a peer's requests
/// cost this node bounded memory and tasks however fast they come (``SyncConfiguration/maxQueuedStreams``,
/// ``SyncConfiguration/maxQueuedServes``); one more is refused with ERROR *over budget*.
extension PeerSession {
    enum StreamJob {
        /// Answer the peer's clock of a round: OFFER, the records it lacks, DONE.
        case round(UInt32, theirs: VectorClock)
        /// Send the records in these ranges.
        case request([LogRange])
    }

    enum ServeJob {
        case photo(AssetHash, from: UInt64)
        case thumbnail(AssetHash)
    }

    // MARK: Queues

    func enqueue(_ job: StreamJob) throws(WireError) {
        guard !closed else { return }
        guard streamJobs.count < configuration.maxQueuedStreams else {
            throw WireError(
                .overBudget,
                "more than \(configuration.maxQueuedStreams) rounds and requests from the peer wait to be answered"
            )
        }
        streamJobs.append(job)
        guard !streaming else { return }
        streaming = true
        spawn { session in await session.runStreams() }
    }

    /// Answers the queued rounds and requests one after the other, so that a round's DONE follows its records.
    private func runStreams() async {
        while !streamJobs.isEmpty, !Task.isCancelled {
            let job = streamJobs.removeFirst()
            do {
                switch job {
                case .round(let number, let theirs): try await answer(clock: theirs, round: number)
                case .request(let ranges): try await stream(ranges, round: nil)
                }
            } catch {
                streaming = false
                await fail(error, "reading the records the peer lacks")
                return
            }
        }
        streaming = false
    }

    func enqueue(_ job: ServeJob) throws(WireError) {
        guard !closed else { return }
        guard serveJobs.count < configuration.maxQueuedServes else {
            throw WireError(
                .overBudget,
                "more than \(configuration.maxQueuedServes) photo and thumbnail requests from the peer wait to be served"
            )
        }
        serveJobs.append(job)
        guard servers < Self.maxServers else { return }
        servers += 1
        spawn { session in await session.runServes() }
    }

    private func runServes() async {
        while !serveJobs.isEmpty, !Task.isCancelled {
            switch serveJobs.removeFirst() {
            case .photo(let hash, let offset): await servePhoto(hash, from: offset)
            case .thumbnail(let hash): await serveThumbnail(hash)
            }
        }
        servers -= 1
    }

    // MARK: Records

    /// Answers the peer's clock: announce, then stream what it lacks, then DONE.
    private func answer(clock theirs: VectorClock, round number: UInt32) async throws {
        let ours = try await store.clock()
        if let answered, answered.theirs == theirs, answered.ours == ours {
            // Request skipping: the same question as last time, and nothing new here.
            await send(.offer(round: number, records: 0, bytes: 0))
            await send(.done(round: number))
            return
        }
        answered = (theirs, ours)
        let missing = ours.missing(from: theirs)
        let total = try await store.byteCount(of: missing)
        await send(.offer(round: number, records: total.records, bytes: total.bytes))
        let ranges = missing.sorted { $0.key < $1.key }.map { LogRange(author: $0.key, range: $0.value) }
        try await stream(ranges, round: number)
    }

    /// Streams the records in `ranges`, in log order per author, in bounded batches under the ACK window.
    private func stream(_ ranges: [LogRange], round number: UInt32?) async throws {
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
                for record in records { markSent(record) }
                await send(.records(live: false, records.map(\.bytes)))
                next = last.sequence + 1
            }
        }
        if let number, !Task.isCancelled { await send(.done(round: number)) }
    }

    private func waitForWindow() async {
        while inflight >= configuration.window, !Task.isCancelled, !closed {
            await withCheckedContinuation { windowWaiters.append($0) }
        }
    }

    func markSent(_ record: StoredRecord) {
        if record.sequence == sentClock[record.author] + 1 {
            sentClock.advance(record.author, to: record.sequence)
        } else {
            sentIDs.insert(record.id)
        }
    }

    // MARK: Interest

    /// Tells the peer which posts to push to us: everything the first time (a replacing INTEREST), then only what
    /// changed; at most ``WireLimits/maxInterestEntries`` entries per frame. The frames of one advertisement are
    /// queued together, ahead of everything else, so that two advertisements never interleave; one computed
    /// before the last one sent (an older `version`) is dropped.
    func advertise(_ wanted: [PostID: UInt8], version: UInt64) async {
        guard version > advertisedVersion else { return }
        advertisedVersion = version
        var entries: [PostInterest]
        let replace = advertised == nil
        if let advertised {
            entries = wanted.compactMap { post, hops in
                advertised[post] == hops ? nil : PostInterest(post: post, hops: hops)
            }
            entries += advertised.keys.filter { wanted[$0] == nil }.map { PostInterest(post: $0, hops: nil) }
            guard !entries.isEmpty else { return }
        } else {
            entries = wanted.map { PostInterest(post: $0.key, hops: $0.value) }
        }
        advertised = wanted
        entries.sort { $0.post < $1.post }
        var frames: [WireMessage] = []
        var start = 0
        repeat {
            let end = min(start + WireLimits.maxInterestEntries, entries.count)
            frames.append(.interest(replace: replace && start == 0, Array(entries[start..<end])))
            start = end
        } while start < entries.count
        await sendUrgent(frames)
    }

    // MARK: Photos

    /// Sends a stored photo from `offset`, in checksummed chunks, under back-pressure.
    func servePhoto(_ hash: AssetHash, from offset: UInt64) async {
        let url = store.assets.url(for: hash)
        // A photo file that cannot be opened is a photo this node cannot supply: PHOTO_MISSING says so.
        guard let handle = try? FileHandle(forReadingFrom: url) else {
            await send(.photoMissing(hash))
            return
        }
        // Closing a file only read from cannot lose anything.
        defer { try? handle.close() }
        do {
            let total = try handle.seekToEnd()
            guard total > 0, offset <= total else {
                await send(.photoMissing(hash))
                return
            }
            try handle.seek(toOffset: offset)
            var position = offset
            while position < total, !Task.isCancelled {
                guard let data = try handle.read(upToCount: WireLimits.photoChunkBytes), !data.isEmpty else { break }
                // Fault injection for tests; a cancelled sleep ends the loop at its next check.
                if let delay = configuration.photoChunkDelay { try? await Task.sleep(for: delay) }
                // Under the socket's back-pressure: at most a few MiB of the photo wait in the outbox.
                await outbox.waitForRoom()
                guard !closed else { return }
                await send(.photoData(hash, offset: position, chunk: [UInt8](data)))
                stats.bytesOut += Int64(data.count)
                position += UInt64(data.count)
            }
            if !Task.isCancelled { await send(.photoEnd(hash, totalBytes: total)) }
        } catch {
            logger.warning("reading a photo failed", metadata: ["photo.sha256": "\(hash.short)", "error": "\(error)"])
            await send(.photoMissing(hash))
        }
    }

    /// Sends the photo's thumbnail (this node's own or one received from a peer), or THUMB_MISSING.
    func serveThumbnail(_ hash: AssetHash) async {
        guard let data = await engine.thumbnails?.bytesForPeer(hash), !data.isEmpty else {
            await send(.thumbMissing(hash))
            return
        }
        stats.bytesOut += Int64(data.count)
        await outbox.waitForRoom()
        await send(.thumbData(hash, [UInt8](data)))
    }

    /// Asks the peer for a photo's thumbnail.
    func requestThumbnail(_ hash: AssetHash) async {
        await send(.thumbWant(hash))
    }

    /// Asks the peer for a photo from `offset`.
    func requestPhoto(_ hash: AssetHash, from offset: UInt64) async {
        await send(.photoWant(hash, offset: offset))
    }

}

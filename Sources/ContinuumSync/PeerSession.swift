import AsyncAlgorithms
import ContinuumCore
import ContinuumStore
import ContinuumWire
import Foundation
import Logging
import NIOConcurrencyHelpers

/// One authenticated session with one peer: the anti-entropy state machine, live gossip to the peer, and photo
/// serving. Messages go out through ``outbox``, which one writer task drains into the socket, so every send is
/// under the socket's back-pressure. Pushes go ahead of everything queued there: they wait in ``urgent``, which the
/// writer empties before each message it writes, and a `nil` in the outbox wakes the writer for them.
actor PeerSession {
    let peer: AuthorID
    let hello: Hello
    let initiator: Bool
    let host: String
    nonisolated let outbox = AsyncChannel<WireMessage?>()
    nonisolated let urgent = NIOLockedValueBox<[WireMessage]>([])
    private let engine: SyncEngine
    private let store: ContinuumStore
    private let configuration: SyncConfiguration
    private var logger: Logger
    /// Closes the TCP connection (when the engine ends this session, for example for a duplicate).
    private let closeConnection: @Sendable () -> Void

    /// What the peer is known to hold: its clock, merged with every ACK and every record it sent us.
    private(set) var peerClock = VectorClock()
    /// Per author, the records sent down this connection contiguously from the peer's clock; plus single ones.
    private var sentClock = VectorClock()
    private var sentIDs: Set<RecordID> = []
    /// RECORDS frames sent and not yet acknowledged.
    private var inflight = 0
    private var windowWaiters: [CheckedContinuation<Void, Never>] = []
    /// Our anti-entropy rounds: round number → waiters for the peer's DONE of our request.
    private var round: UInt32 = 0
    private var roundWaiters: [UInt32: [UUID: CheckedContinuation<Bool, Never>]] = [:]
    private var finishedRounds: Set<UInt32> = []
    /// True while the peer is streaming a round to us: gaps are checked at its DONE.
    private var receivingRound = false
    private var announced: (records: UInt64, bytes: UInt64) = (0, 0)
    private var received: (records: UInt64, bytes: UInt64) = (0, 0)
    /// The last clock the peer sent, and our clock when we answered it ("request skipping").
    private var answered: (theirs: VectorClock, ours: VectorClock)?
    /// The clock we last sent the peer at the start of a round, and the last it sent us, as the store keeps them
    /// between sessions (CLOCK_SINCE names one of them); loaded at the first round.
    private var lastSentClock: VectorClock?
    private var lastReceivedClock: VectorClock?
    private var loadedClocks = false
    private var clocksLoading: Task<(sent: VectorClock?, received: VectorClock?), Never>?
    /// Our clock at the start of each of our rounds not yet done, to send whole on CLOCK_UNKNOWN.
    private var roundClocks: [UInt32: VectorClock] = [:]
    /// What we last told the peer we want pushed (nil: nothing told yet).
    private var advertised: [PostID: UInt8]?
    private var advertisedVersion: UInt64 = 0
    private var tasks: [Task<Void, Never>] = []
    private(set) var lastReceived = ContinuousClock.now
    private(set) var stats = (recordsIn: Int64(0), recordsOut: Int64(0), bytesIn: Int64(0), bytesOut: Int64(0))
    /// Records pushed to the peer, and pushed by it, in this session.
    private(set) var pushes = (sent: 0, received: 0)

    init(
        peer: AuthorID,
        hello: Hello,
        initiator: Bool,
        host: String,
        engine: SyncEngine,
        store: ContinuumStore,
        configuration: SyncConfiguration,
        logger: Logger,
        closeConnection: @escaping @Sendable () -> Void = {}
    ) {
        self.closeConnection = closeConnection
        self.peer = peer
        self.hello = hello
        self.initiator = initiator
        self.host = host
        self.engine = engine
        self.store = store
        self.configuration = configuration
        var logger = logger
        logger[metadataKey: "peer.id"] = "\(peer.short)"
        self.logger = logger
    }

    func send(_ message: WireMessage) async {
        if case .records(_, let records) = message {
            inflight += 1
            stats.recordsOut += Int64(records.count)
            stats.bytesOut += Int64(records.reduce(0) { $0 + $1.count })
        }
        await outbox.send(message)
    }

    /// Starts an anti-entropy round: sends our clock; returns when the peer has sent what we lack (its DONE).
    ///
    /// When the peer was sent a clock before (in this session or an earlier one), only the entries that changed
    /// since go, as CLOCK_SINCE naming that clock; a peer that no longer holds it answers CLOCK_UNKNOWN and gets
    /// the whole clock.
    func startRound() async -> UInt32 {
        round += 1
        let current = round
        let clock = (try? await store.clock()) ?? VectorClock()
        await loadClocks()
        roundClocks[current] = clock
        if let base = lastSentClock, !base.heads.contains(where: { clock[$0.key] < $0.value }) {
            let changed = VectorClock(clock.heads.filter { base[$0.key] != $0.value })
            await send(.clockSince(round: current, base: WireCodec.clockDigest(base), changed))
        } else {
            await send(.clock(round: current, clock))
        }
        await rememberSent(clock)
        return current
    }

    /// The clocks last exchanged with this peer, from the store, once per session. Every caller waits for the
    /// same read: a CLOCK_SINCE that arrives while our first round is loading them must not be checked against
    /// nothing (that would answer CLOCK_UNKNOWN for a base we hold).
    private func loadClocks() async {
        guard !loadedClocks else { return }
        let loading =
            clocksLoading
            ?? Task { [store, peer] in
                guard let (sent, received) = try? await store.peerClocks(peer) else { return (nil, nil) }
                return (
                    sent: sent.flatMap { try? WireCodec.clock(from: $0) },
                    received: received.flatMap { try? WireCodec.clock(from: $0) }
                )
            }
        clocksLoading = loading
        let loaded = await loading.value
        guard !loadedClocks else { return }
        loadedClocks = true
        lastSentClock = loaded.sent
        lastReceivedClock = loaded.received
    }

    private func rememberSent(_ clock: VectorClock) async {
        await loadClocks()
        lastSentClock = clock
        try? await store.setPeerClock(peer, sent: WireCodec.clockBytes(clock))
    }

    /// The peer's clock for a round, whole (from CLOCK, or rebuilt from CLOCK_SINCE): remember it and answer it.
    private func received(clock: VectorClock, round number: UInt32) async {
        await loadClocks()
        lastReceivedClock = clock
        try? await store.setPeerClock(peer, received: WireCodec.clockBytes(clock))
        peerClock = peerClock.merging(clock)
        await answer(clock: clock, round: number)
    }

    /// Waits for the peer's DONE of one of our rounds; false on timeout or when the session ends first.
    func waitForRound(_ number: UInt32, timeout: Duration) async -> Bool {
        if finishedRounds.contains(number) { return true }
        let id = UUID()
        return await withCheckedContinuation { continuation in
            roundWaiters[number, default: [:]][id] = continuation
            Task {
                try? await Task.sleep(for: timeout)
                self.expireWaiter(number, id)
            }
        }
    }

    private func expireWaiter(_ number: UInt32, _ id: UUID) {
        roundWaiters[number]?.removeValue(forKey: id)?.resume(returning: false)
    }

    /// Tells the peer why (an ERROR, ahead of anything still queued), then ends the session.
    func close(reporting error: WireError) async {
        urgent.withLockedValue { $0.append(.error(error)) }
        // The writer sends queued urgent frames before its next message; give it that message, unless the
        // connection is already stuck (then the ERROR is lost, and the close below ends it anyway).
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.outbox.send(nil) }
            group.addTask { try? await Task.sleep(for: .seconds(1)) }
            await group.next()
            group.cancelAll()
        }
        close()
    }

    /// Ends the session's background work.
    func close() {
        for task in tasks { task.cancel() }
        tasks.removeAll()
        for waiter in windowWaiters { waiter.resume() }
        windowWaiters.removeAll()
        for (_, waiters) in roundWaiters { for waiter in waiters.values { waiter.resume(returning: false) } }
        roundWaiters.removeAll()
        outbox.finish()
        closeConnection()
    }

    // MARK: Receiving

    func receive(_ message: WireMessage) async throws {
        lastReceived = .now
        if !pending.isEmpty && !message.carriesRecords {
            // Everything before this message is stored before it is acted on (a DONE's gap check, a CLOCK's
            // answer).
            try await flush()
        }
        switch message {
        case .hello:
            throw WireError(.unexpectedMessage, "HELLO after the handshake")
        case .error(let error):
            logger.notice("peer reported an error", metadata: ["error": "\(error)"])
            throw PeerReportedError(error: error)
        case .ping(let nonce):
            await send(.pong(nonce))
        case .pong:
            break
        case .clock(let number, let clock):
            await received(clock: clock, round: number)
        case .clockSince(let number, let base, let changes):
            await loadClocks()
            if let last = lastReceivedClock, WireCodec.clockDigest(last) == base {
                await received(clock: VectorClock(last.heads.merging(changes.heads) { $1 }), round: number)
            } else {
                logger.info(
                    "the peer's clock names a base this node does not hold; asking for it whole",
                    metadata: ["sync.round": "\(number)", "sync.base": "\(base)"]
                )
                await send(.clockUnknown(round: number))
            }
        case .clockUnknown(let number):
            guard let clock = roundClocks[number] else {
                throw WireError(.unexpectedMessage, "CLOCK_UNKNOWN for round \(number), which this node did not start")
            }
            logger.info(
                "the peer does not hold the base of our clock; sending it whole",
                metadata: ["sync.round": "\(number)"]
            )
            await send(.clock(round: number, clock))
            await rememberSent(clock)
        case .offer(_, let records, let bytes):
            receivingRound = true
            announced = (records, bytes)
            received = (0, 0)
        case .records(let live, let batch):
            try await ingest(batch, delivery: live ? .live : .catchUp)
        case .push(let batch):
            pushes.received += batch.count
            try await ingest(batch, delivery: .push)
        case .interest(let replace, let entries):
            try await engine.receivedInterest(from: peer, replace: replace, entries)
        case .ack(let clock):
            peerClock = peerClock.merging(clock)
            inflight = max(0, inflight - 1)
            if inflight < configuration.window, !windowWaiters.isEmpty {
                windowWaiters.removeFirst().resume()
            }
        case .request(let ranges):
            spawn { session in await session.stream(ranges, round: nil) }
        case .done(let number):
            roundClocks[number] = nil
            receivingRound = false
            announced = (0, 0)
            finishedRounds.insert(number)
            for waiter in (roundWaiters.removeValue(forKey: number) ?? [:]).values { waiter.resume(returning: true) }
            await engine.emit(.roundFinished(with: peer, round: number))
            await requestGaps()
        case .photoWant(let hash, let offset):
            spawn { session in await session.servePhoto(hash, from: offset) }
        case .photoData(let hash, let offset, let chunk):
            stats.bytesIn += Int64(chunk.count)
            try await engine.photos.received(hash, offset: offset, chunk: chunk, from: peer)
        case .photoEnd(let hash, let total):
            await engine.photos.ended(hash, total: total, from: peer)
        case .photoMissing(let hash):
            await engine.photos.missing(hash, from: peer)
        case .thumbWant(let hash):
            spawn { session in await session.serveThumbnail(hash) }
        case .thumbData(let hash, let bytes):
            stats.bytesIn += Int64(bytes.count)
            guard await engine.photos.thumbnailArriving(hash, from: peer) else { break }
            // Checked before the next frame is read (a decode of at most 64 KiB, queued behind other libvips
            // work); a thumbnail that is not a small, whole JPEG counts as a malformed frame, like any other.
            if let reason = await engine.photos.receivedThumbnail(hash, bytes, from: peer) {
                throw WireError(.malformedFrame, "THUMB_DATA refused: \(reason)")
            }
        case .thumbMissing(let hash):
            await engine.photos.thumbnailMissing(hash, from: peer)
        }
    }

    private func spawn(_ work: @escaping @Sendable (PeerSession) async -> Void) {
        tasks.removeAll { $0.isCancelled }
        tasks.append(Task { await work(self) })
    }

    /// Verified records waiting to be stored together, by how they came, and how many RECORDS frames they came
    /// in (each is acknowledged once stored; PUSH frames are not).
    private var pending: [(delivery: Delivery, records: [VerifiedRecord])] = []
    private var pendingCount = 0
    private var pendingFrames = 0
    private var pendingLive = false
    private var flushGeneration = 0

    /// Verifies a batch on every core. Batches are then stored several at a time, in one transaction (fewer,
    /// larger transactions write each index page once for many records), and acknowledged once stored.
    private func ingest(_ batch: [[UInt8]], delivery: Delivery) async throws(WireError) {
        let live = delivery != .catchUp
        let results = await BatchVerifier.verify(batch, concurrency: configuration.verifyConcurrency)
        var verified: [VerifiedRecord] = []
        verified.reserveCapacity(results.count)
        for result in results {
            switch result {
            case .success(let record): verified.append(record)
            case .failure(let error):
                // Trust nothing from the wire: a peer that sends an invalid record is disconnected.
                throw WireError(.badRecord, "invalid record: \(error)")
            }
        }
        let bytes = batch.reduce(0) { $0 + $1.count }
        stats.recordsIn += Int64(batch.count)
        stats.bytesIn += Int64(bytes)
        pending.append((delivery, verified))
        pendingCount += verified.count
        if delivery != .push { pendingFrames += 1 }
        pendingLive = pendingLive || live
        if !live {
            received.records += UInt64(batch.count)
            received.bytes += UInt64(bytes)
        }
        if live || pendingCount >= configuration.flushRecords {
            try await flush()
        } else {
            // Store what is pending soon even if no more frames come (the end of a REQUEST's answer).
            flushGeneration += 1
            let generation = flushGeneration
            spawn { session in
                try? await Task.sleep(for: .milliseconds(30))
                await session.flushIfIdle(generation)
            }
        }
    }

    private func flushIfIdle(_ generation: Int) async {
        guard generation == flushGeneration, !pending.isEmpty else { return }
        do {
            try await flush()
        } catch {
            logger.notice("closing the session", metadata: ["reason": "\(error)"])
            await outbox.send(.error(error))
            close()
        }
    }

    /// Stores the pending records in one transaction, acknowledges every frame they came in, and tells the
    /// engine.
    private func flush() async throws(WireError) {
        guard !pending.isEmpty else { return }
        let groups = pending
        let verified = groups.flatMap(\.records)
        let frames = pendingFrames
        let live = pendingLive
        pending = []
        pendingCount = 0
        pendingFrames = 0
        pendingLive = false
        let report: IngestReport
        do {
            report = try await store.ingest(groups, notifying: engine.policy)
        } catch {
            logger.error("storing records failed", metadata: ["error": "\(error)"])
            throw WireError(.internal, "the receiving node could not store the records")
        }
        // The peer holds what it sent; never send those back.
        var touched = Set<AuthorID>()
        for record in verified {
            touched.insert(record.content.author)
            if record.content.sequence == peerClock[record.content.author] + 1 {
                peerClock.advance(record.content.author, to: record.content.sequence)
            } else if !peerClock.covers(record.content.author, record.content.sequence) {
                // Out of order: remember the single record (in order, the clock covers it for free).
                sentIDs.insert(record.id)
            }
        }
        let clock = (try? await store.clock()) ?? VectorClock()
        let heads = VectorClock(Dictionary(uniqueKeysWithValues: touched.map { ($0, clock[$0]) }))
        for _ in 0..<frames { await send(.ack(heads)) }
        if announced.records > 0 {
            await engine.emit(
                .progress(
                    from: peer,
                    records: received.records,
                    ofRecords: announced.records,
                    bytes: received.bytes,
                    ofBytes: announced.bytes
                )
            )
        }
        for fork in report.forks { await engine.emit(.forkDetected(fork)) }
        if let broken = report.ignored.first(where: { rejection in
            verified.contains { $0.id == rejection.id && $0.content.author == peer }
        }) {
            // The peer itself signed a record that breaks a rule (such as an edit of someone else's post). It is
            // kept in the log, where no view applies it, but the peer is not trusted further.
            throw WireError(.badRecord, "the peer signed a record that breaks a rule: \(broken.error.message)")
        }
        if !report.stored.isEmpty {
            await engine.didStore(from: self, count: report.stored.count)
        }
        // A live record beyond our contiguous head means we missed some: ask for them (unless a round is
        // streaming them to us right now).
        // Pushed records are not checked: they jump the queue, so the records before them are usually still on
        // their way by live gossip (and a round finds any that are not).
        if live && !receivingRound {
            var gaps: [LogRange] = []
            let gossiped = groups.filter { $0.delivery == .live }.flatMap(\.records)
            for record in gossiped where record.content.sequence > clock[record.content.author] + 1 {
                let author = record.content.author
                gaps.append(LogRange(author: author, range: (clock[author] + 1)...(record.content.sequence - 1)))
            }
            if !gaps.isEmpty { await send(.request(gaps)) }
        }
    }

    /// After the peer's round: anything its clock covers that we still lack is a gap; request it.
    private func requestGaps() async {
        guard let clock = try? await store.clock() else { return }
        let gaps = peerClock.missing(from: clock).map { LogRange(author: $0.key, range: $0.value) }
        if !gaps.isEmpty {
            logger.debug("requesting gaps", metadata: ["sync.ranges": "\(gaps.count)"])
            await send(.request(Array(gaps.prefix(WireLimits.maxRanges))))
        }
    }

    // MARK: Sending

    /// Answers the peer's clock: announce, then stream what it lacks, then DONE.
    private func answer(clock theirs: VectorClock, round number: UInt32) async {
        guard let ours = try? await store.clock() else { return }
        if let answered, answered.theirs == theirs, answered.ours == ours {
            // Request skipping: the same question as last time, and nothing new here.
            await send(.offer(round: number, records: 0, bytes: 0))
            await send(.done(round: number))
            return
        }
        answered = (theirs, ours)
        let missing = ours.missing(from: theirs)
        let total = (try? await store.byteCount(of: missing)) ?? (records: 0, bytes: 0)
        await send(.offer(round: number, records: total.records, bytes: total.bytes))
        let ranges = missing.sorted { $0.key < $1.key }.map { LogRange(author: $0.key, range: $0.value) }
        spawn { session in await session.stream(ranges, round: number) }
    }

    /// Streams the records in `ranges`, in log order per author, in bounded batches under the ACK window.
    private func stream(_ ranges: [LogRange], round number: UInt32?) async {
        for (author, range) in ranges.map({ ($0.author, $0.range) }) {
            var next = range.lowerBound
            while next <= range.upperBound, !Task.isCancelled {
                guard
                    let records = try? await store.storedRecords(
                        of: author,
                        in: next...range.upperBound,
                        limit: configuration.batchRecords,
                        maxBytes: WireLimits.maxBatchBytes
                    ), let last = records.last
                else { break }
                await waitForWindow()
                for record in records { markSent(record) }
                await send(.records(live: false, records.map(\.bytes)))
                next = last.sequence + 1
            }
        }
        if let number, !Task.isCancelled { await send(.done(round: number)) }
    }

    private func waitForWindow() async {
        while inflight >= configuration.window, !Task.isCancelled {
            await withCheckedContinuation { windowWaiters.append($0) }
        }
    }

    private func markSent(_ record: StoredRecord) {
        if record.sequence == sentClock[record.author] + 1 {
            sentClock.advance(record.author, to: record.sequence)
        } else {
            sentIDs.insert(record.id)
        }
    }

    /// Live gossip: sends the records this peer is not known to hold and has not been sent on this connection.
    func gossip(_ records: [StoredRecord]) async {
        for chunk in Self.frames(unsent(records)) { await send(.records(live: true, chunk)) }
    }

    /// Push: like gossip, but ahead of everything already queued for the peer, and not acknowledged.
    func push(_ records: [StoredRecord]) async {
        let records = unsent(records)
        guard !records.isEmpty else { return }
        pushes.sent += records.count
        stats.recordsOut += Int64(records.count)
        stats.bytesOut += Int64(records.reduce(0) { $0 + $1.bytes.count })
        let frames = Self.frames(records).map { WireMessage.push($0) }
        urgent.withLockedValue { $0 += frames }
        await outbox.send(nil)
    }

    /// Messages the writer sends before the next one from the outbox.
    nonisolated func takeUrgent() -> [WireMessage] {
        urgent.withLockedValue { queued in
            defer { queued = [] }
            return queued
        }
    }

    /// The records the peer is not known to hold and that were not sent down this connection; marks them sent.
    private func unsent(_ records: [StoredRecord]) -> [StoredRecord] {
        var batch: [StoredRecord] = []
        for record in records {
            if peerClock.covers(record.author, record.sequence) || sentClock.covers(record.author, record.sequence)
                || sentIDs.contains(record.id)
            {
                continue
            }
            markSent(record)
            batch.append(record)
        }
        return batch
    }

    /// Record bytes cut into frames within both limits: record count and bytes.
    private static func frames(_ records: [StoredRecord]) -> [[[UInt8]]] {
        var frames: [[[UInt8]]] = []
        var chunk: [[UInt8]] = []
        var size = 0
        for record in records {
            if chunk.count == WireLimits.maxRecordsPerBatch || size + record.bytes.count > WireLimits.maxBatchBytes {
                frames.append(chunk)
                chunk = []
                size = 0
            }
            chunk.append(record.bytes)
            size += record.bytes.count
        }
        if !chunk.isEmpty { frames.append(chunk) }
        return frames
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
        urgent.withLockedValue { $0 += frames }
        await outbox.send(nil)
    }

    // MARK: Photos

    /// Sends a stored photo from `offset`, in checksummed chunks, under back-pressure.
    private func servePhoto(_ hash: AssetHash, from offset: UInt64) async {
        let url = store.assets.url(for: hash)
        guard let handle = try? FileHandle(forReadingFrom: url) else {
            await send(.photoMissing(hash))
            return
        }
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
                if let delay = configuration.photoChunkDelay { try? await Task.sleep(for: delay) }
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
    private func serveThumbnail(_ hash: AssetHash) async {
        guard let data = await engine.thumbnails?.bytesForPeer(hash), !data.isEmpty else {
            await send(.thumbMissing(hash))
            return
        }
        stats.bytesOut += Int64(data.count)
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

    func takeStats() -> (recordsIn: Int64, recordsOut: Int64, bytesIn: Int64, bytesOut: Int64) {
        defer { stats = (0, 0, 0, 0) }
        return stats
    }
}

/// An ERROR frame received from the peer: the session ends without answering it.
struct PeerReportedError: Error {
    let error: WireError
}

extension WireMessage {
    fileprivate var carriesRecords: Bool {
        if case .records = self { true } else { false }
    }
}

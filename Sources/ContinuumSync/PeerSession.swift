import AsyncAlgorithms
import ContinuumCore
import ContinuumStore
import ContinuumWire
import Foundation
import Logging
import NIOConcurrencyHelpers

/// One authenticated session with one peer: the anti-entropy state machine, live gossip to the peer, and photo
/// serving. Messages go out through ``outbox``, which one writer task drains into the socket. Queuing there never
/// waits (a peer that does not read holds up nobody else); pushes, INTEREST and ERROR go ahead of the rest; bulk
/// senders wait for room; a peer that lets too much pile up is disconnected (``Outbox``).
actor PeerSession {
    let peer: AuthorID
    let hello: Hello
    let initiator: Bool
    let host: String
    nonisolated let outbox = Outbox()
    /// Tells this session from another with the same peer.
    nonisolated let token = UUID()
    /// Live gossip skipped for a backlog: a round catches the peer up once it has read it.
    private var gossipSkipped = false
    /// Set by ``close()``: no new work starts after it.
    private(set) var closed = false
    let engine: SyncEngine
    let store: ContinuumStore
    let configuration: SyncConfiguration
    var logger: Logger
    /// Closes the TCP connection (when the engine ends this session, for example for a duplicate).
    private let closeConnection: @Sendable () -> Void

    /// What the peer is known to hold: its clock, merged with every ACK and every record it sent us.
    private(set) var peerClock = VectorClock()
    /// Per author, the records sent down this connection contiguously from the peer's clock; plus single ones.
    var sentClock = VectorClock()
    var sentIDs: Set<RecordID> = []
    /// RECORDS frames sent and not yet acknowledged.
    var inflight = 0
    var windowWaiters: [CheckedContinuation<Void, Never>] = []
    /// Our anti-entropy rounds: round number → waiters for the peer's DONE of our request.
    private var round: UInt32 = 0
    private var roundWaiters: [UInt32: [UUID: CheckedContinuation<Bool, Never>]] = [:]
    private var finishedRounds: Set<UInt32> = []
    /// True while the peer is streaming a round to us: gaps are checked at its DONE.
    private var receivingRound = false
    private var announced: (records: UInt64, bytes: UInt64) = (0, 0)
    private var received: (records: UInt64, bytes: UInt64) = (0, 0)
    /// The last clock the peer sent, and our clock when we answered it ("request skipping").
    var answered: (theirs: VectorClock, ours: VectorClock)?
    /// The clock we last sent the peer at the start of a round, and the last it sent us, as the store keeps them
    /// between sessions (CLOCK_SINCE names one of them); loaded at the first round.
    private var lastSentClock: VectorClock?
    private var lastReceivedClock: VectorClock?
    private var loadedClocks = false
    private var clocksLoading: Task<(sent: VectorClock?, received: VectorClock?), Never>?
    /// Our clock at the start of each of our rounds not yet done, to send whole on CLOCK_UNKNOWN.
    private var roundClocks: [UInt32: VectorClock] = [:]
    /// What we last told the peer we want pushed (nil: nothing told yet).
    var advertised: [PostID: UInt8]?
    var advertisedVersion: UInt64 = 0
    /// Background work of this session (streams, serves, delayed flushes), removed as each finishes.
    private var tasks: [UUID: Task<Void, Never>] = [:]
    /// Rounds and REQUESTs of the peer waiting to be answered, in order; one task answers them.
    var streamJobs: [StreamJob] = []
    var streaming = false
    /// PHOTO_WANTs and THUMB_WANTs waiting to be served, by at most ``maxServers`` tasks (as many as a fetcher asks for at once).
    var serveJobs: [ServeJob] = []
    var servers = 0
    static let maxServers = 8
    private(set) var lastReceived = ContinuousClock.now
    var stats = (recordsIn: Int64(0), recordsOut: Int64(0), bytesIn: Int64(0), bytesOut: Int64(0))
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

    /// Queues a message for the peer without waiting; a peer that has let more than ``Outbox/cap`` bytes pile up
    /// is not reading, and its session ends.
    func send(_ message: WireMessage) async {
        if case .records(_, let records) = message {
            inflight += 1
            stats.recordsOut += Int64(records.count)
            stats.bytesOut += Int64(records.reduce(0) { $0 + $1.count })
        }
        if !outbox.enqueue(message) { await overflowed() }
    }

    /// Queues messages ahead of everything else waiting (pushes, INTEREST).
    func sendUrgent(_ messages: [WireMessage]) async {
        for message in messages where !outbox.enqueue(message, urgent: true) {
            await overflowed()
            return
        }
    }

    private func overflowed() async {
        guard !closed else { return }
        logger.notice("the peer does not read what it is sent; closing the session")
        await close(reporting: WireError(.timeout, "the peer has not read the last \(Outbox.cap >> 20) MiB sent to it"))
    }

    /// Starts an anti-entropy round: sends our clock; returns when the peer has sent what we lack (its DONE).
    ///
    /// When the peer was sent a clock before (in this session or an earlier one), only the entries that changed
    /// since go, as CLOCK_SINCE naming that clock; a peer that no longer holds it answers CLOCK_UNKNOWN and gets
    /// the whole clock.
    /// Nil when the store could not be read: the session is then closed with ERROR internal (a round must never
    /// send a made-up clock).
    func startRound() async -> UInt32? {
        round += 1
        let current = round
        let clock: VectorClock
        do {
            clock = try await store.clock()
        } catch {
            await fail(error, "reading this node's clock")
            return nil
        }
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
            ?? Task { [store, peer, logger] in
                let sent: [UInt8]?
                let received: [UInt8]?
                do {
                    (sent, received) = try await store.peerClocks(peer)
                } catch {
                    // Safe to go on without them: the next round sends the whole clock, and a CLOCK_SINCE from the
                    // peer is answered with CLOCK_UNKNOWN.
                    logger.failure("reading the clocks last exchanged failed", error, level: .warning)
                    return (nil, nil)
                }
                // A stored clock that no longer decodes is as good as none (the whole clock goes instead).
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
        await persistClock(sent: clock)
    }

    /// Keeps the clock just exchanged for the next session. A failure costs only bytes (the next session's
    /// CLOCK_SINCE names a base the peer may not hold, and it asks for the whole clock), so it is logged, not fatal.
    private func persistClock(sent: VectorClock? = nil, received: VectorClock? = nil) async {
        do {
            try await store.setPeerClock(
                peer,
                sent: sent.map(WireCodec.clockBytes),
                received: received.map(WireCodec.clockBytes)
            )
        } catch {
            logger.failure("remembering the clock exchanged with the peer failed", error, level: .warning)
        }
    }

    /// A storage failure during the session: logged, told to the peer as ERROR internal, and the session ends.
    func fail(_ error: any Error, _ doing: String) async {
        guard !(error is CancellationError) else {
            // Shutting down: the session ends with the node's own goodbye.
            close()
            return
        }
        logger.error("storage failed; closing the session", metadata: ["while": "\(doing)", "error": "\(error)"])
        await close(reporting: WireError(.internal, "the node failed while \(doing)"))
    }

    /// The peer's clock for a round, whole (from CLOCK, or rebuilt from CLOCK_SINCE): remember it and answer it.
    private func received(clock: VectorClock, round number: UInt32) async throws(WireError) {
        await loadClocks()
        let moved = lastReceivedClock.map { $0 != clock } ?? false
        if clock != lastReceivedClock {
            lastReceivedClock = clock
            await persistClock(received: clock)
        }
        peerClock = peerClock.merging(clock)
        await engine.photos.peerClockKnown(peer, moved: moved)
        try enqueue(.round(number, theirs: clock))
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
        guard !closed else { return }
        outbox.enqueue(.error(error), urgent: true)
        // The writer sends it next; wait at most a second for that (a peer that does not read never gets it, and
        // the close below ends the session anyway). Polled: the outbox has no "written" event, and this runs once
        // per session at most.
        let deadline = ContinuousClock.now + .seconds(1)
        while !outbox.isDrained, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        close()
    }

    /// Ends the session's background work.
    func close() {
        closed = true
        for task in tasks.values { task.cancel() }
        tasks.removeAll()
        streamJobs.removeAll()
        serveJobs.removeAll()
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
            try await received(clock: clock, round: number)
        case .clockSince(let number, let base, let changes):
            await loadClocks()
            if let last = lastReceivedClock, WireCodec.clockDigest(last) == base {
                try await received(clock: VectorClock(last.heads.merging(changes.heads) { $1 }), round: number)
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
            try enqueue(.request(ranges))
        case .done(let number):
            roundClocks[number] = nil
            receivingRound = false
            announced = (0, 0)
            finishedRounds.insert(number)
            for waiter in (roundWaiters.removeValue(forKey: number) ?? [:]).values { waiter.resume(returning: true) }
            await engine.emit(.roundFinished(with: peer, round: number))
            try await requestGaps()
        case .photoWant(let hash, let offset):
            try enqueue(.photo(hash, from: offset))
        case .photoData(let hash, let offset, let chunk):
            stats.bytesIn += Int64(chunk.count)
            try await engine.photos.received(hash, offset: offset, chunk: chunk, from: peer)
        case .photoEnd(let hash, let total):
            await engine.photos.ended(hash, total: total, from: peer)
        case .photoMissing(let hash):
            await engine.photos.missing(hash, from: peer)
        case .thumbWant(let hash):
            try enqueue(.thumbnail(hash))
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

    /// Runs `work` in the background until it finishes or the session closes.
    func spawn(_ work: @escaping @Sendable (PeerSession) async -> Void) {
        guard !closed else { return }
        let id = UUID()
        tasks[id] = Task {
            await work(self)
            self.finished(id)
        }
    }

    private func finished(_ id: UUID) { tasks[id] = nil }

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
            await close(reporting: error)
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
            logger.failure("storing records failed", error)
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
        let clock = try await receivingClock()
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

    /// This node's clock while receiving: a store that cannot say ends the session with ERROR internal.
    private func receivingClock() async throws(WireError) -> VectorClock {
        do {
            return try await store.clock()
        } catch {
            logger.failure("reading this node's clock failed", error)
            throw WireError(.internal, "the receiving node could not read its clock")
        }
    }

    /// After the peer's round: anything its clock covers that we still lack is a gap; request it.
    private func requestGaps() async throws(WireError) {
        let clock = try await receivingClock()
        let gaps = peerClock.missing(from: clock).map { LogRange(author: $0.key, range: $0.value) }
        if !gaps.isEmpty {
            logger.debug("requesting gaps", metadata: ["sync.ranges": "\(gaps.count)"])
            await send(.request(Array(gaps.prefix(WireLimits.maxRanges))))
        }
    }

    // MARK: Sending

    /// Live gossip: sends the records this peer is not known to hold and has not been sent on this connection.
    ///
    /// Live gossip is best effort: while more than ``Outbox/highWater`` bytes wait for a slow peer, records are not
    /// queued for it (nor marked sent); once it has caught up, a round sends it what it missed.
    func gossip(_ records: [StoredRecord]) async {
        guard outbox.backlog < Outbox.highWater else {
            gossipSkipped = true
            return
        }
        if gossipSkipped {
            gossipSkipped = false
            spawn { session in _ = await session.startRound() }
        }
        for chunk in Self.frames(unsent(records)) { await send(.records(live: true, chunk)) }
    }

    /// Push: like gossip, but ahead of everything already queued for the peer, and not acknowledged.
    func push(_ records: [StoredRecord]) async {
        let records = unsent(records)
        guard !records.isEmpty else { return }
        pushes.sent += records.count
        stats.recordsOut += Int64(records.count)
        stats.bytesOut += Int64(records.reduce(0) { $0 + $1.bytes.count })
        await sendUrgent(Self.frames(records).map { WireMessage.push($0) })
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

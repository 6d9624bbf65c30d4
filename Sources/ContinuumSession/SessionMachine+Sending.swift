import ContinuumCore
import ContinuumWire

extension SessionMachine {
    // MARK: Our rounds

    /// Starts an anti-entropy round with our clock as it is now: the whole clock, or only the entries that changed
    /// since the clock last sent to the peer (CLOCK_SINCE naming it; a peer that no longer holds it answers
    /// CLOCK_UNKNOWN and gets the whole clock). Nil once the session has ended.
    public mutating func startRound(ourClock clock: VectorClock) -> (round: UInt32, actions: [Action])? {
        guard phase == .open else { return nil }
        round += 1
        roundClocks[round] = clock
        let message: WireMessage
        if let base = lastSent, !base.heads.contains(where: { clock[$0.key] < $0.value }) {
            let changed = VectorClock(clock.heads.filter { base[$0.key] != $0.value })
            message = .clockSince(round: round, base: WireCodec.clockDigest(base), changed)
        } else {
            message = .clock(round: round, clock)
        }
        lastSent = clock
        return (round, [.send(message), .rememberClock(sent: clock, received: nil)])
    }

    // MARK: The peer's rounds and requests

    /// Queues a round or REQUEST of the peer; one more than ``Configuration/maxQueuedStreams`` is refused.
    mutating func enqueue(_ job: StreamJob) -> [Action] {
        guard streamJobs.count < configuration.maxQueuedStreams else {
            return refuse(
                WireError(
                    .overBudget,
                    "more than \(configuration.maxQueuedStreams) rounds and requests from the peer wait to be answered"
                )
            )
        }
        streamJobs.append(job)
        guard !streaming else { return [] }
        streaming = true
        return [.startStreaming]
    }

    /// The next round or REQUEST to answer, in the order they came; nil when none waits (the worker then ends).
    public mutating func nextStreamJob() -> StreamJob? {
        guard phase == .open, !streamJobs.isEmpty else {
            streaming = false
            return nil
        }
        return streamJobs.removeFirst()
    }

    /// How to answer the peer's clock of a round, given ours now.
    public mutating func plan(round number: UInt32, theirs: VectorClock, ours: VectorClock) -> RoundPlan {
        plan(round: number, theirs: theirs, ours: ours, missing: nil)
    }

    /// ``plan(round:theirs:ours:)`` with the ranges the peer lacks worked out already (``missingRanges(theirs:ours:)``,
    /// which the executor may compute away from the session, for big clocks).
    public mutating func plan(
        round number: UInt32,
        theirs: VectorClock,
        ours: VectorClock,
        missing: [LogRange]?
    ) -> RoundPlan {
        if isRepeated(theirs: theirs, ours: ours) { return .nothing }
        answered = (theirs, ours)
        return .ranges(missing ?? Self.missingRanges(theirs: theirs, ours: ours))
    }

    /// True when the peer asks the same question as last time and nothing changed here: the answer is nothing.
    public func isRepeated(theirs: VectorClock, ours: VectorClock) -> Bool {
        guard let answered else { return false }
        return answered.theirs == theirs && answered.ours == ours
    }

    /// The ranges of our clock that the peer's lacks, by author.
    public static func missingRanges(theirs: VectorClock, ours: VectorClock) -> [LogRange] {
        ours.missing(from: theirs).sorted { $0.key < $1.key }.map { LogRange(author: $0.key, range: $0.value) }
    }

    /// A RECORDS frame of the records in `records` that the peer is not known to hold and that were not sent down
    /// this connection (marked sent now); nil when there are none. The caller waits for ``windowOpen`` first.
    ///
    /// With `resend` (answering the peer's REQUEST), records sent before on this connection go again, unless the
    /// peer's clock covers them: a receiver may have held some back (PROTOCOL.md §7.8.6) and asks for them once it can
    /// take them.
    public mutating func recordsFrame(_ records: [OutgoingRecord], live: Bool, resend: Bool = false) -> WireMessage? {
        let unsent =
            resend ? records.filter { !peerClock.covers($0.ref.author, $0.ref.sequence) } : unsent(records)
        guard !unsent.isEmpty else { return nil }
        inflight += 1
        count(unsent)
        return .records(live: live, unsent.map(\.bytes))
    }

    // MARK: Photos and thumbnails

    /// Queues a PHOTO_WANT or THUMB_WANT of the peer; one more than ``Configuration/maxQueuedServes`` is refused.
    mutating func enqueue(_ job: ServeJob) -> [Action] {
        guard serveJobs.count < configuration.maxQueuedServes else {
            return refuse(
                WireError(
                    .overBudget,
                    "more than \(configuration.maxQueuedServes) photo and thumbnail requests from the peer wait to be served"
                )
            )
        }
        serveJobs.append(job)
        guard servers < configuration.maxServers else { return [] }
        servers += 1
        return [.startServer]
    }

    /// The next photo or thumbnail to serve; nil when none waits (that worker then ends).
    public mutating func nextServeJob() -> ServeJob? {
        guard phase == .open, !serveJobs.isEmpty else {
            servers -= 1
            return nil
        }
        return serveJobs.removeFirst()
    }

    /// Asks the peer for a photo from `offset` (PHOTO_WANT): its PHOTO_DATA is taken until it ends the photo with
    /// PHOTO_END or PHOTO_MISSING.
    public mutating func askForPhoto(_ hash: AssetHash, from offset: UInt64) -> [Action] {
        guard phase == .open else { return [] }
        photosAsked[hash, default: 0] += 1
        return [.send(.photoWant(hash, offset: offset))]
    }

    /// Asks the peer for small photos whole (PHOTOS_WANT, at most ``WireLimits/maxPhotosPerBatch``): each is taken
    /// once, in a PHOTOS, whole or said not given.
    public mutating func askForPhotos(_ hashes: [AssetHash]) -> [Action] {
        guard phase == .open, !hashes.isEmpty else { return [] }
        for hash in hashes { photosBatchAsked[hash, default: 0] += 1 }
        return [.send(.photosWant(hashes))]
    }

    /// Asks the peer for a photo's thumbnail (THUMB_WANT): one THUMB_DATA or THUMB_MISSING is taken in answer.
    public mutating func askForThumbnail(_ hash: AssetHash) -> [Action] {
        guard phase == .open else { return [] }
        thumbnailsAsked[hash, default: 0] += 1
        return [.send(.thumbWant(hash))]
    }

    /// Counts bytes sent that are not records (photo chunks, thumbnails).
    public mutating func sentBytes(_ count: Int) { stats.bytesOut += Int64(count) }

    // MARK: Gossip, push and interest

    /// Live gossip of records just stored here. Best effort: while `backlog` bytes wait for the peer, at or above
    /// `highWater`, nothing is queued (nor marked sent); once it has caught up, a round sends what it missed.
    public mutating func gossip(_ records: [OutgoingRecord], backlog: Int, highWater: Int) -> [Action] {
        guard phase == .open else { return [] }
        guard eager else { return announce(records) }
        guard backlog < highWater else {
            gossipSkipped = true
            return []
        }
        var actions: [Action] = []
        if gossipSkipped {
            gossipSkipped = false
            actions += catchUp()
        }
        let unsent = unsent(records)
        count(unsent)
        for frame in Self.frames(unsent) {
            inflight += 1
            actions.append(.send(.records(live: true, frame)))
        }
        return actions
    }

    /// After gossip was skipped: the records the peer lacks by what we know of its clock are streamed to it
    /// (``StreamJob/catchUp``), as a REQUEST's answer is; they are filtered like any, so nothing goes twice. When
    /// the queue is full, the next round catches the peer up instead.
    mutating func catchUp() -> [Action] {
        guard !streamJobs.contains(.catchUp), streamJobs.count < configuration.maxQueuedStreams else { return [] }
        streamJobs.append(.catchUp)
        guard !streaming else { return [] }
        streaming = true
        return [.startStreaming]
    }

    /// The ranges a ``StreamJob/catchUp`` sends, given our clock now: what the peer's clock lacks.
    public func catchUpRanges(ours: VectorClock) -> [LogRange] {
        ours.missing(from: peerClock).sorted { $0.key < $1.key }.map { LogRange(author: $0.key, range: $0.value) }
    }

    /// Push: like gossip, but ahead of everything queued for the peer, and not acknowledged.
    public mutating func push(_ records: [OutgoingRecord]) -> [Action] {
        guard phase == .open else { return [] }
        guard eager else { return announce(records) }
        let unsent = unsent(records)
        guard !unsent.isEmpty else { return [] }
        stats.pushesSent += unsent.count
        count(unsent)
        return [.sendUrgent(Self.frames(unsent).map { .push($0) })]
    }

    /// Lazy push, on a link the peer pruned: HAVE with the ranges of the records the peer is not known to hold, in
    /// place of the records. They are not marked sent: the peer asks for those it still lacks after a while.
    public mutating func announce(_ records: [OutgoingRecord]) -> [Action] {
        guard phase == .open else { return [] }
        let unknown = records.map(\.ref).filter { ref in
            !(peerClock.covers(ref.author, ref.sequence) || sentClock.covers(ref.author, ref.sequence)
                || sentIDs.contains(ref.id))
        }
        stats.announced += unknown.count
        let ranges = LogRange.coalescing(unknown.lazy.map { (author: $0.author, sequence: $0.sequence) })
        var actions: [Action] = []
        var start = 0
        while start < ranges.count {
            let end = min(start + WireLimits.maxRanges, ranges.count)
            actions.append(.send(.have(Array(ranges[start..<end]))))
            start = end
        }
        return actions
    }

    /// Tells the peer which posts to push to us: everything the first time (a replacing INTEREST), then only what
    /// changed; at most ``WireLimits/maxInterestEntries`` entries per frame, queued together ahead of everything
    /// else. An advertisement computed before the last one sent (an older `version`) is dropped.
    public mutating func advertise(_ wanted: [PostID: UInt8], version: UInt64) -> [Action] {
        guard phase == .open, version > advertisement?.version ?? 0 else { return [] }
        let previous = advertisement
        // When nothing changed, `wanted` is what was advertised: only the version moves.
        advertisement = Advertisement(interest: wanted, version: version)
        var entries: [PostInterest]
        let replace = previous == nil
        if let advertised = previous?.interest {
            entries = wanted.compactMap { post, hops in
                advertised[post] == hops ? nil : PostInterest(post: post, hops: hops)
            }
            entries += advertised.keys.filter { wanted[$0] == nil }.map { PostInterest(post: $0, hops: nil) }
            guard !entries.isEmpty else { return [] }
        } else {
            entries = wanted.map { PostInterest(post: $0.key, hops: $0.value) }
        }
        entries.sort { $0.post < $1.post }
        var frames: [WireMessage] = []
        var start = 0
        repeat {
            let end = min(start + WireLimits.maxInterestEntries, entries.count)
            frames.append(.interest(replace: replace && start == 0, Array(entries[start..<end])))
            start = end
        } while start < entries.count
        return [.sendUrgent(frames)]
    }

    /// This node's follows, for a peer that is a device of its account (PROTOCOL.md §7.8.21): ahead of what waits.
    public mutating func sendFollows(_ entries: [FollowEntry]) -> [Action] {
        guard phase == .open else { return [] }
        return [.sendUrgent([.follows(Array(entries.prefix(WireLimits.maxFollowEntries)))])]
    }

    // MARK: What was sent

    /// The records the peer is not known to hold and that were not sent down this connection; marks them sent.
    private mutating func unsent(_ records: [OutgoingRecord]) -> [OutgoingRecord] {
        var batch: [OutgoingRecord] = []
        for record in records {
            let ref = record.ref
            if peerClock.covers(ref.author, ref.sequence) || sentClock.covers(ref.author, ref.sequence)
                || sentIDs.contains(ref.id)
            {
                continue
            }
            // In order after what the peer holds or was sent: the clock covers it (no set grows).
            if ref.sequence == max(sentClock[ref.author], peerClock[ref.author]) + 1 {
                sentClock.advance(ref.author, to: ref.sequence)
            } else {
                sentIDs.insert(ref.id)
            }
            batch.append(record)
        }
        return batch
    }

    private mutating func count(_ records: [OutgoingRecord]) {
        stats.recordsOut += Int64(records.count)
        stats.bytesOut += Int64(records.reduce(0) { $0 + $1.bytes.count })
    }

    /// Record bytes cut into frames within both limits: record count and bytes.
    static func frames(_ records: [OutgoingRecord]) -> [[[UInt8]]] {
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
}

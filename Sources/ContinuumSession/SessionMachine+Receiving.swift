import ContinuumCore
import ContinuumWire

extension SessionMachine {
    /// A message from the peer, received at `now`: charged to its budget, then acted on, or held back until the
    /// verification or store under way has finished.
    public mutating func receive(_ message: WireMessage, now: ContinuousClock.Instant) -> [Action] {
        guard phase == .open else { return [] }
        if let error = budget.charge(message, now: now) { return refuse(error) }
        if intake.isBusy {
            // Beside a store, the next frame of records is verified at once (on the other cores while the batch is
            // written); anything else waits for what is under way.
            if message.carriesRecords, intake.mayVerifyBesideStore(below: configuration.readAheadRecords) {
                return act(on: message, now: now)
            }
            intake.hold(message, at: now)
            return []
        }
        if !intake.pending.isEmpty && !message.carriesRecords {
            // Everything before this message is stored before it is acted on (a DONE's gap check, a CLOCK's answer):
            // the store starts, and the message waits for it.
            let actions = flush()
            intake.hold(message, at: now)
            return actions
        }
        return act(on: message, now: now)
    }

    private mutating func act(on message: WireMessage, now: ContinuousClock.Instant) -> [Action] {
        switch message {
        case .hello:
            return refuse(WireError(.unexpectedMessage, "HELLO after the handshake"))
        case .membership, .joined, .linking, .consent, .linked, .recovery:
            return refuse(WireError(.unexpectedMessage, "\(message.typeName) after the handshake"))
        case .error(let error):
            close()
            return [.peerRefused(error)]
        case .ping(let nonce):
            return [.send(.pong(nonce))]
        case .pong, .optional:
            // An optional message this node does not know is ignored (PROTOCOL.md §7.3), once charged.
            return []
        case .clock, .clockSince, .clockUnknown, .offer, .done:
            return actOnRound(message)
        case .records(let live, let batch):
            intake.startVerifying()
            return [.verify(batch, live ? .live : .catchUp)]
        case .push(let batch):
            stats.pushesReceived += batch.count
            intake.startVerifying()
            return [.verify(batch, .push)]
        case .interest(let replace, let entries):
            return [.interest(replace: replace, entries)]
        case .follows(let entries):
            return [.follows(entries)]
        case .ack(let clock):
            peerClock.merge(clock)
            inflight = max(0, inflight - 1)
            return windowOpen ? [.windowOpened] : []
        case .request(let ranges):
            return enqueue(.request(ranges))
        case .have(let ranges):
            return announced(ranges, now: now)
        case .tree(let eager):
            // The link's state is one for both directions (PlumTree): pruned by the peer, this side announces to it
            // and expects announcements (and may graft); grafted, both send eagerly.
            self.eager = eager
            peerEager = eager
            return []
        case .photoWant(let hash, let offset):
            return enqueue(.photo(hash, from: offset))
        case .thumbWant(let hash):
            return enqueue(.thumbnail(hash))
        case .photosWant(let hashes):
            return enqueue(.photos(hashes))
        case .photos(let photos):
            return receivedPhotos(photos)
        case .photoData, .photoEnd, .photoMissing, .thumbData, .thumbMissing:
            return receivedPhoto(message)
        }
    }

    /// The messages of rounds: the peer's clock (whole, as a change, or asked for whole), its OFFER and its DONE.
    private mutating func actOnRound(_ message: WireMessage) -> [Action] {
        switch message {
        case .clock(let number, let clock):
            return receivedClock(clock, round: number)
        case .clockSince(let number, let base, let changes):
            return receivedClockSince(base: base, changes, round: number)
        case .clockUnknown(let number):
            return peerLacksBase(round: number)
        case .offer(_, let records, let bytes):
            peerRound = PeerRound(announced: (records, bytes))
            return []
        default:
            guard case .done(let number) = message else { preconditionFailure("not a message of rounds") }
            roundClocks[number] = nil
            peerRound = nil
            finishedRounds.insert(number)
            // Only the recent rounds are waited for.
            if number > 64 { finishedRounds.remove(number - 64) }
            return [.roundFinished(number), .checkGaps]
        }
    }

    /// A photo or thumbnail message, for the photo fetcher. Data is taken only for a photo or thumbnail this node
    /// asked the peer for (``askForPhoto(_:from:)``, ``askForThumbnail(_:)``) and that the peer has not ended yet:
    /// any other is refused, so that a peer cannot make this node take data it never wanted.
    private mutating func receivedPhoto(_ message: WireMessage) -> [Action] {
        switch message {
        case .photoData(let hash, let offset, let chunk):
            guard photosAsked[hash] != nil else { return refuse(Self.unsolicited("PHOTO_DATA", "a photo", hash)) }
            stats.bytesIn += Int64(chunk.count)
            return [.photo(.data(hash, offset: offset, chunk: chunk))]
        case .photoEnd(let hash, let total):
            Self.answered(hash, in: &photosAsked)
            return [.photo(.end(hash, totalBytes: total))]
        case .photoMissing(let hash):
            Self.answered(hash, in: &photosAsked)
            return [.photo(.missing(hash))]
        case .thumbData(let hash, let bytes):
            guard thumbnailsAsked[hash] != nil else {
                return refuse(Self.unsolicited("THUMB_DATA", "a thumbnail", hash))
            }
            Self.answered(hash, in: &thumbnailsAsked)
            stats.bytesIn += Int64(bytes.count)
            return [.photo(.thumbnail(hash, bytes))]
        default:
            guard case .thumbMissing(let hash) = message else { preconditionFailure("not a photo message") }
            Self.answered(hash, in: &thumbnailsAsked)
            return [.photo(.thumbnailMissing(hash))]
        }
    }

    /// Small photos in answer to PHOTOS_WANT: each must be one this node asked the peer for (``askForPhotos(_:)``)
    /// and not answered yet, or the whole message is refused.
    private mutating func receivedPhotos(_ photos: [SmallPhoto]) -> [Action] {
        if let stray = photos.first(where: { photosBatchAsked[$0.hash] == nil }) {
            return refuse(Self.unsolicited("PHOTOS", "a photo", stray.hash))
        }
        for photo in photos {
            Self.answered(photo.hash, in: &photosBatchAsked)
            stats.bytesIn += Int64(photo.bytes?.count ?? 0)
        }
        return [.photo(.photos(photos))]
    }

    private static func unsolicited(_ type: String, _ what: String, _ hash: AssetHash) -> WireError {
        WireError(.unexpectedMessage, "\(type) for \(what) this node did not ask the peer for (\(hash.short))")
    }

    /// One request for `hash` is answered (its end, or that the peer lacks it).
    private static func answered(_ hash: AssetHash, in asked: inout [AssetHash: Int]) {
        guard let count = asked[hash] else { return }
        asked[hash] = count > 1 ? count - 1 : nil
    }

    /// The peer's clock for a round, whole: remembered for the next session, merged into what the peer holds, and
    /// queued to be answered.
    private mutating func receivedClock(_ clock: VectorClock, round number: UInt32) -> [Action] {
        var actions: [Action] = []
        // Compared once: for a big clock, comparing is a good part of the work.
        let changed = clock != lastReceived
        let moved = lastReceived != nil && changed
        if changed {
            lastReceived = clock
            lastReceivedDigest = nil
            actions.append(.rememberClock(sent: nil, received: clock))
        }
        // The same clock as the last one this session merged adds nothing to what the peer holds.
        if changed || !receivedClockMerged { peerClock.merge(clock) }
        receivedClockMerged = true
        actions.append(.peerClockKnown(moved: moved))
        return actions + enqueue(.round(number, theirs: clock))
    }

    /// CLOCK_SINCE: the peer's clock as the changes since the clock it last sent.
    private mutating func receivedClockSince(
        base: ClockDigest,
        _ changes: VectorClock,
        round number: UInt32
    )
        -> [Action]
    {
        guard let last = lastReceived, digestOfLastReceived() == base else {
            // A base this node does not hold (any more): ask for the clock whole.
            return [.send(.clockUnknown(round: number))]
        }
        return receivedClock(VectorClock(last.heads.merging(changes.heads) { $1 }), round: number)
    }

    /// The digest of ``lastReceived``, computed once per clock (it encodes the whole clock).
    private mutating func digestOfLastReceived() -> ClockDigest? {
        guard let last = lastReceived else { return nil }
        if let lastReceivedDigest { return lastReceivedDigest }
        let digest = WireCodec.clockDigest(last)
        lastReceivedDigest = digest
        return digest
    }

    /// CLOCK_UNKNOWN: the peer does not hold the base of our CLOCK_SINCE; it gets the clock whole.
    private mutating func peerLacksBase(round number: UInt32) -> [Action] {
        guard let clock = roundClocks[number] else {
            return refuse(
                WireError(.unexpectedMessage, "CLOCK_UNKNOWN for round \(number), which this node did not start")
            )
        }
        lastSent = clock
        return [.send(.clock(round: number, clock)), .rememberClock(sent: clock, received: nil)]
    }

    // MARK: Records

    /// The records of the last `.verify`: `records` all valid, `held` those of the frame that this node held
    /// already (found by the executor before verification, and never verified). The held ones are charged to the
    /// peer's budget: ``PeerBudget/heldRecord`` each when the peer knew this node held them (the last clock sent to
    /// it or an ACK covers them), ``PeerBudget/heldRecordCrossing`` when it could not know (they came from another
    /// peer since). A peer that keeps sending what it knows this node holds is refused.
    public mutating func verified(
        _ records: [Record],
        delivery: Delivery,
        bytes: Int,
        held: [RecordRef] = []
    ) -> [Action] {
        let released = intake.endVerifying()
        guard phase == .open else { return [] }
        if !held.isEmpty {
            let known = held.count { $0.sequence <= max(lastSent?[$0.author] ?? 0, acknowledged[$0.author]) }
            let units =
                Double(known) * PeerBudget.heldRecord + Double(held.count - known) * PeerBudget.heldRecordCrossing
            if let error = budget.charge(units, for: "\(held.count) records held already") { return refuse(error) }
            // The peer knows now that they are held here: sent again, they cost the full price.
            for ref in held { acknowledged.advance(ref.author, to: ref.sequence) }
        }
        stats.recordsIn += Int64(records.count + held.count)
        stats.bytesIn += Int64(bytes)
        intake.pending.append(.init(delivery: delivery, records: records, held: held))
        let live = delivery != .catchUp
        if !live {
            peerRound?.received.records += UInt64(records.count + held.count)
            peerRound?.received.bytes += UInt64(bytes)
        }
        // Stored now, or soon even if no more frames come (the end of a REQUEST's answer).
        let store: [Action] =
            live || intake.pending.count >= configuration.flushRecords
            ? flush() : [.scheduleFlush(generation: intake.nextFlushGeneration())]
        return store + drain(released) + verifyBesideStore()
    }

    /// While a store is under way: the frame of records held first, if any, is verified now (as one that came now
    /// would be, ``receive(_:now:)``).
    private mutating func verifyBesideStore() -> [Action] {
        guard phase == .open, let next = intake.takeFrameBesideStore(below: configuration.readAheadRecords) else {
            return []
        }
        return act(on: next.message, now: next.at)
    }

    /// A record of the last `.verify` is not validly signed: the peer is not trusted further.
    public mutating func verificationFailed(_ reason: String) -> [Action] {
        _ = intake.endVerifying()  // The session ends: the messages that waited are dropped.
        return refuse(WireError(.badRecord, "invalid record: \(reason)"))
    }

    /// The quiet time after the last catch-up frame has passed.
    public mutating func flushTimerFired(_ generation: Int) -> [Action] {
        guard generation == intake.flushGeneration else { return [] }
        return flush()
    }

    /// Hands out what is pending as one batch, unless a store is under way: what is pending then goes when that store
    /// is done (``stored(_:)``).
    mutating func flush() -> [Action] {
        guard phase == .open, let batch = intake.startStoring() else { return [] }
        return [.store(batch)]
    }

    /// The last `.store` is done: acknowledge its frames, note what the peer holds, ask for gaps in live gossip,
    /// then go on with what waited.
    public mutating func stored(_ outcome: StoreOutcome) -> [Action] {
        guard let (storing, released) = intake.endStoring() else { return [] }
        let (batch, frames, live) = (storing.batch, storing.frames, storing.live)
        guard phase == .open else { return [] }
        if outcome.wasted + outcome.raced > 0,
            let error = budget.charge(
                Double(outcome.wasted) * PeerBudget.wastedRecord + Double(outcome.raced)
                    * PeerBudget.heldRecordCrossing,
                for: "\(outcome.wasted + outcome.raced) records verified for nothing"
            )
        {
            return refuse(error)
        }
        let touched = peerHolds(batch.refs)
        let heads = VectorClock(Dictionary(uniqueKeysWithValues: touched.map { ($0, outcome.clock[$0]) }))
        if frames > 0 { acknowledged.merge(heads) }
        var actions: [Action] = Array(repeating: .send(.ack(heads)), count: frames)
        if let round = peerRound, round.announced.records > 0 {
            let (records, bytes) = round.received
            actions.append(
                .progress(
                    records: records,
                    ofRecords: round.announced.records,
                    bytes: bytes,
                    ofBytes: round.announced.bytes
                )
            )
        }
        let peer = self.peer
        let signedByPeer = { (ref: RecordRef) in ref.author == peer || outcome.peerLogs.contains(ref.author) }
        if let broken = batch.records.map(\.ref).first(where: { signedByPeer($0) && outcome.brokeRules[$0.id] != nil })
        {
            // The peer itself signed a record that breaks a rule (such as an edit of someone else's post). It is
            // kept in the log, where no view applies it, but the peer is not trusted further.
            let rule = outcome.brokeRules[broken.id] ?? ""
            return actions + refuse(WireError(.badRecord, "the peer signed a record that breaks a rule: \(rule)"))
        }
        if outcome.stored > 0 { actions.append(.storedFromPeer(outcome.stored)) }
        actions += pruneIfAnotherPathIsFirst(batch, outcome)
        if live && !receivingRound {
            actions += requestGaps(in: batch, ourClock: outcome.clock)
        }
        // A whole batch verified beside this store goes to the next at once, and the frame that waited behind it is
        // verified beside that one; otherwise what waited is acted on in order.
        if intake.pending.count >= configuration.flushRecords { actions += flush() }
        actions += drain(released) + verifyBesideStore()
        // What was verified while this batch was stored goes next, at once: nothing else would hand it to a store
        // (its flush timer may have fired during this store, and a live frame would wait for the peer's next message).
        if !intake.isBusy { actions += flush() }
        return actions
    }

    /// The peer holds what it sent: never send those back. Returns the authors of `records`.
    private mutating func peerHolds(_ records: [RecordRef]) -> Set<AuthorID> {
        var authors = Set<AuthorID>()
        for record in records {
            authors.insert(record.author)
            if record.sequence == peerClock[record.author] + 1 {
                peerClock.advance(record.author, to: record.sequence)
            } else if !peerClock.covers(record.author, record.sequence) {
                // Out of order: remember the single record (in order, the clock covers it for free).
                sentIDs.insert(record.id)
            }
        }
        return authors
    }

    /// A live record beyond our contiguous head means we missed some: ask for them. Pushed records are not checked:
    /// they jump the queue, so the records before them are usually still on their way by live gossip (and a round
    /// finds any that are not).
    /// A gap is asked for once per session: the peer answers in order, and a round finds what it could not send.
    private mutating func requestGaps(in batch: StoreBatch<Record>, ourClock clock: VectorClock) -> [Action] {
        var gaps: [LogRange] = []
        for part in batch.parts where part.delivery == .live {
            for record in part.refs {
                // Beyond what we hold, what was asked for, and the records before it in this batch.
                let from = max(clock[record.author], requestedGaps[record.author]) + 1
                requestedGaps.advance(record.author, to: record.sequence)
                guard record.sequence > from else { continue }
                gaps.append(LogRange(author: record.author, range: from...(record.sequence - 1)))
            }
        }
        return gaps.isEmpty ? [] : [.send(.request(Array(gaps.prefix(WireLimits.maxRanges))))]
    }

    /// HAVE: the peer holds these records. What it holds is noted (never sent to it); what this node may lack is
    /// pulled once ``Configuration/treeRepairDelay`` has passed since it was announced, unless it arrives by the tree
    /// meanwhile.
    private mutating func announced(_ ranges: [LogRange], now: ContinuousClock.Instant) -> [Action] {
        for entry in ranges {
            let author = entry.author
            if entry.range.lowerBound <= peerClock[author] + 1, entry.range.upperBound > peerClock[author] {
                peerClock.advance(author, to: entry.range.upperBound)
            }
            let announcement = announcedByPeer[author]
            guard entry.range.upperBound > announcement?.last ?? 0 else { continue }
            guard announcement != nil || announcedByPeer.count < configuration.maxAnnouncedAuthors else { continue }
            announcedByPeer[author] = Announcement(last: entry.range.upperBound, since: announcement?.since ?? now)
        }
        guard !repairScheduled, !announcedByPeer.isEmpty else { return [] }
        repairScheduled = true
        return [.scheduleRepair(after: configuration.treeRepairDelay)]
    }

    /// The repair timer, at `now`: records announced at least ``Configuration/treeRepairDelay`` ago and still
    /// missing here are asked for with a REQUEST (each at most once per session, like a live gap), and the link is
    /// grafted back into the tree (TREE eager) if it was pruned, so that what follows comes eagerly by it.
    /// Announcements younger than the delay wait for the next timer.
    public mutating func repair(ourClock clock: VectorClock, now: ContinuousClock.Instant) -> [Action] {
        repairScheduled = false
        guard phase == .open else { return [] }
        var missing: [LogRange] = []
        var waiting: Duration?
        for (author, announcement) in announcedByPeer.sorted(by: { $0.key < $1.key }) {
            let last = announcement.last
            let age = now - announcement.since
            if age < configuration.treeRepairDelay, clock[author] < last {
                // Announced recently: it may still come by the tree.
                waiting = min(waiting ?? .seconds(3600), configuration.treeRepairDelay - age)
                continue
            }
            announcedByPeer[author] = nil
            let from = max(clock[author], requestedGaps[author]) + 1
            guard from <= last else { continue }
            requestedGaps.advance(author, to: last)
            missing.append(LogRange(author: author, range: from...last))
        }
        var actions: [Action] = []
        if let waiting {
            repairScheduled = true
            actions.append(.scheduleRepair(after: waiting))
        }
        guard !missing.isEmpty else { return actions }
        if !peerEager {
            peerEager = true
            eager = true
            stats.grafts += 1
            actions.append(.sendUrgent([.tree(eager: true)]))
        }
        var start = 0
        while start < missing.count {
            let end = min(start + WireLimits.maxRanges, missing.count)
            actions.append(.send(.request(Array(missing[start..<end]))))
            start = end
        }
        return actions
    }

    /// The last `.store` failed: the peer is told, and the session ends.
    public mutating func storeFailed() -> [Action] {
        _ = intake.endStoring()  // The session ends: the messages that waited are dropped.
        return refuse(WireError(.internal, "the receiving node could not store the records"))
    }

    /// A stored batch of only records held already, sent eagerly by a neighbour that is not this node's tree
    /// parent: another path brings them first. The link is pruned both ways (PlumTree): from now on each side only
    /// announces new records to the other.
    private mutating func pruneIfAnotherPathIsFirst(_ batch: StoreBatch<Record>, _ outcome: StoreOutcome) -> [Action] {
        // A copy of a record this session asked for (a live gap, a repair) or brought before is not a second path:
        // the peer answered a REQUEST and its live frame crossed the answer. Only copies of records new to this
        // session say that another path brings them first.
        let newToSession = batch.refs.contains { $0.sequence > requestedGaps[$0.author] }
        guard outcome.duplicatesOnly, !outcome.fromTreeParent, outcome.fromNeighbour, newToSession,
            configuration.treePush, peerEager, batch.parts.allSatisfy({ $0.delivery != .catchUp })
        else { return [] }
        peerEager = false
        eager = false
        stats.prunes += 1
        return [.sendUrgent([.tree(eager: false)])]
    }

    /// After the peer's round (`.checkGaps`): anything its clock covers that we still lack is a gap; ask for it.
    public mutating func checkGaps(ourClock: VectorClock) -> [Action] {
        guard phase == .open else { return [] }
        let gaps = peerClock.missing(from: ourClock).sorted { $0.key < $1.key }
            .map { LogRange(author: $0.key, range: $0.value) }
        return gaps.isEmpty ? [] : [.send(.request(Array(gaps.prefix(WireLimits.maxRanges))))]
    }

    /// Acts on `released`, the messages that waited for what has just finished, in order, until one needs a
    /// verification or a store again: the rest wait for that.
    private mutating func drain(_ released: [Intake.Held]) -> [Action] {
        var actions: [Action] = []
        var waiting = released[...]
        while phase == .open, !intake.isBusy, let next = waiting.first {
            if !intake.pending.isEmpty && !next.message.carriesRecords {
                actions += flush()
                break
            }
            waiting.removeFirst()
            actions += act(on: next.message, now: next.at)
        }
        // Ended: what waited is dropped, as ``close()`` drops what is held.
        if phase == .open { intake.hold(waiting) }
        return actions
    }
}
